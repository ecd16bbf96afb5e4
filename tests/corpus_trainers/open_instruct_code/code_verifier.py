"""A code verifier written in the shape of allenai/open-instruct's CodeVerifier
(open_instruct/ground_truth_utils.py at e6c3044aa6201c8bfa4573c1b03142af599e730d,
class CodeVerifier): built once with a CodeVerifierConfig whose fields the
constructor reads at once, scored by a truly asynchronous `async_call` (the trainer
awaits it; its `__call__` only runs `async_call` to its end). open-instruct posts the
program and tests to a code-execution API; this one runs them in a thread of its own
process, the same shape without a server. The code is ours.
"""

import asyncio
import dataclasses
import json
import re


@dataclasses.dataclass
class VerifierConfig:
    @classmethod
    def from_args(cls, *sources):
        wanted = [f.name for f in dataclasses.fields(cls)]
        values = {}
        for source in sources:
            if source is None:
                continue
            for name in wanted:
                if hasattr(source, name):
                    values[name] = getattr(source, name)
        return cls(**values)


@dataclasses.dataclass
class CodeVerifierConfig(VerifierConfig):
    code_api_url: str
    code_max_execution_time: float
    code_pass_rate_reward_threshold: float
    code_apply_perf_penalty: bool


@dataclasses.dataclass
class VerificationResult:
    score: float
    cost: float = 0.0
    reasoning: str | None = None


class CodeVerifier:
    """The pass rate of the label's tests (a JSON list of assert statements) on the
    last fenced code block of the reply; below the config's threshold it is 0."""

    def __init__(self, verifier_config):
        self.name = "code"
        self.weight = 1.0
        self.verifier_config = verifier_config
        # read when built, as open-instruct's CodeVerifier does
        self.pass_rate_reward_threshold = verifier_config.code_pass_rate_reward_threshold
        self.apply_perf_penalty = verifier_config.code_apply_perf_penalty

    @classmethod
    def get_config_class(cls):
        return CodeVerifierConfig

    @staticmethod
    def extract_python_code(model_output):
        blocks = re.findall(r"```(?:python)?(.*?)```", model_output, re.DOTALL)
        return blocks[-1].strip() if blocks else model_output

    @staticmethod
    def run_tests(program, tests):
        """1 or 0 for each test, run after the program in a fresh namespace."""
        passes = []
        for test in tests:
            scope = {}
            try:
                exec(program, scope)
                exec(test, scope)
                passes.append(1)
            except Exception:
                passes.append(0)
        return passes

    async def async_call(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        program = self.extract_python_code(prediction)
        try:
            tests = json.loads(label) if isinstance(label, str) else label
            passes = await asyncio.to_thread(self.run_tests, program, tests)
            pass_rate = sum(passes) / len(passes) if passes else 0.0
            score = 0.0 if pass_rate < self.pass_rate_reward_threshold else pass_rate
            return VerificationResult(score=score)
        except Exception:
            # open-instruct logs a warning and scores the sample 0
            return VerificationResult(score=0.0)

    def __call__(self, tokenized_prediction, prediction, label, query=None, rollout_state=None):
        return asyncio.run(self.async_call(tokenized_prediction, prediction, label, query))
