"""An ms-swift reward plugin (--external_plugins plugin.py --reward_funcs ...), in the
shape of swift/rewards/orm.py: a class built once as Class(args=training_args), its
instance called per batch with the completions' text and every dataset column batched
as keywords (`solution`, `messages`, ...). Install ms-swift to subclass its own ORM."""

import re

try:
    from swift.rewards import ORM
except ImportError:  # ms-swift not installed: the same base, for this workspace

    class ORM:
        def __init__(self, args=None, **kwargs):
            self.args = args

        def __call__(self, completions, **kwargs):
            raise NotImplementedError


class Gsm8kAccuracy(ORM):
    def __call__(self, completions, solution, **kwargs):
        out = []
        for completion, truth in zip(completions, solution):
            found = re.findall(r"The answer is (-?[\d,]+)", completion)
            out.append(1.0 if found and found[-1].replace(",", "") == truth else 0.0)
        return out


class Brevity(ORM):
    """Reads a training argument, as ms-swift's rewards read theirs."""

    def __init__(self, args=None, **kwargs):
        super().__init__(args)
        self.max_words = args.brevity_max_words

    def __call__(self, completions, **kwargs):
        return [1.0 if len(c.split()) <= self.max_words else 0.0 for c in completions]
