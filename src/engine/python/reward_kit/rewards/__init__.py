"""reward_kit.rewards is not part of rwb's bundled reward_kit."""

raise ImportError(
    "reward_kit.rewards (reward-kit's built-in reward functions) is not bundled with rwb. "
    "Install reward-kit in the interpreter rwb uses: "
    'pip install -U "pip>=25.3" && pip install --uploaded-prior-to 2025-07-14T00:00:00Z reward-kit==0.4.1'
)
