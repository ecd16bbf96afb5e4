"""Unit tests of swallowed.per_sample: the exceptions a batched evaluator swallows in
the project's files, tied to the samples that raised them (SPEC §16)."""

import importlib
import importlib.util
import os
import tempfile
import textwrap
import unittest

import test_worker_helpers  # noqa: F401  (imports the worker package by path)

swallowed = importlib.import_module("rwb_py_under_test.swallowed")

BATCH = textwrap.dedent(
    """\
    def parse(text):
        return float(text)

    def reward(texts):
        out = []
        for t in texts:
            try:
                out.append(parse(t))
            except ValueError:
                out.append(0.0)
        try:
            {False: 0}[len(texts) > 2]
        except KeyError:
            pass
        return out
    """
)


class PerSampleTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = os.path.realpath(self.dir.name)
        path = os.path.join(self.root, "batch_reward.py")
        with open(path, "w") as f:
            f.write(BATCH)
        spec = importlib.util.spec_from_file_location("batch_reward_under_test", path)
        self.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)
        self.calls = []

    def tearDown(self):
        self.dir.cleanup()

    def call(self, part):
        self.calls.append(list(part))
        self.module.reward(part)
        return None

    def test_each_exception_goes_to_the_sample_that_raised_it_alone(self):
        found = swallowed.per_sample([self.root], self.call, ["1", "x", "2"])
        value_error = ("ValueError", "batch_reward.py:8")
        key_error = ("KeyError", "batch_reward.py:12")
        self.assertEqual(found, [[key_error], [value_error, key_error], [key_error]])
        # the batch once, then each sample alone
        self.assertEqual(self.calls, [["1", "x", "2"], ["1"], ["x"], ["2"]])

    def test_a_batch_that_swallows_nothing_is_called_once(self):
        found = swallowed.per_sample([self.root], self.call, ["1", "2"])
        self.assertEqual(found, [[], []])
        self.assertEqual(self.calls, [["1", "2"]])

    def test_outside_the_project_nothing_is_counted(self):
        elsewhere = tempfile.mkdtemp()
        try:
            found = swallowed.per_sample([os.path.realpath(elsewhere)], self.call, ["x", "y"])
        finally:
            os.rmdir(elsewhere)
        self.assertEqual(found, [[], []])


if __name__ == "__main__":
    unittest.main()
