//! The Fireworks API client: deploy evaluators and preview them remotely.
