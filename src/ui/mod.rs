//! The terminal UI: app state, rendering, keymap and themes. It draws and reacts to keys;
//! it never spawns processes or opens sockets.

pub mod app;
pub mod deploy_target;
pub mod highlight;
pub mod keymap;
pub mod layout;
pub mod placement;
pub mod theme;
pub mod view;
