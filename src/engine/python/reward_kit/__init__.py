"""rwb's bundled, standard-library stand-in for the reward_kit package (0.4.1 API).

rwb puts this package on sys.path only when the interpreter cannot import the real
reward-kit, so reward-kit-style evaluators run with no install. It provides the
decorator, the models and RewardFunction (local and remote); the built-in reward
functions (`reward_kit.rewards`) are not bundled: install reward-kit in the
interpreter to use them.
"""

from .models import (
    EvaluateResult,
    Message,
    MetricResult,
    MetricRewardOutput,
    RewardOutput,
    StepOutput,
)
from .reward_function import RewardFunction
from .typed_interface import reward_function

__version__ = "0.4.1+rwb-bundled"
RWB_BUNDLED = True

__all__ = [
    "Message",
    "MetricResult",
    "EvaluateResult",
    "StepOutput",
    "reward_function",
    "RewardFunction",
    "RewardOutput",
    "MetricRewardOutput",
]
