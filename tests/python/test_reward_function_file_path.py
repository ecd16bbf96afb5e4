"""rwb's one addition to the bundled RewardFunction: func_path="file.py::func", the
way rwb names a function in a file (reward-kit 0.4.1 takes module paths only)."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "src", "engine", "python"))


class FilePathTest(unittest.TestCase):
    def setUp(self):
        for name in [m for m in sys.modules if m == "reward_kit" or m.startswith("reward_kit.")]:
            del sys.modules[name]
        sys.path.insert(0, BUNDLED_DIR)
        self.addCleanup(sys.path.remove, BUNDLED_DIR)
        from reward_kit.reward_function import RewardFunction

        self.RewardFunction = RewardFunction
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def test_a_function_in_a_file(self):
        path = os.path.join(self.dir.name, "judge.py")
        with open(path, "w") as f:
            f.write("def score(messages, ground_truth=None, **kw):\n    return {'score': len(messages) / 4}\n")
        rf = self.RewardFunction(func_path=path + "::score")
        self.assertEqual(rf([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]).score, 0.5)

    def test_a_missing_file_or_function_says_which(self):
        missing = os.path.join(self.dir.name, "none.py")
        with self.assertRaises(ImportError) as caught:
            self.RewardFunction(func_path=missing + "::score")
        self.assertEqual(
            str(caught.exception), "Failed to load function from path %s::score: no file %s" % (missing, missing)
        )
        path = os.path.join(self.dir.name, "empty.py")
        open(path, "w").close()
        with self.assertRaises(ImportError) as caught:
            self.RewardFunction(func_path=path + "::score")
        self.assertEqual(
            str(caught.exception),
            "Failed to load function from path %s::score: module 'empty' has no attribute 'score'" % path,
        )


if __name__ == "__main__":
    unittest.main()
