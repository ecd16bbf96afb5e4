"""Unit tests of audit.Recording: what a checked call reaches, and whether what runs
is the policy's own text (SPEC §16, §18): a completion exec'd or eval'd in-process,
or made into a subprocess or a shell command; a parse alone is not a run."""

import ast
import importlib
import os
import subprocess
import sys
import tempfile
import unittest

import test_worker_helpers  # noqa: F401  (imports the worker package by path)

audit = importlib.import_module("rwb_py_under_test.audit")

SOLUTION = "def add(a, b):\n    return a + b\n"
COMPLETION = "Here is my answer:\n```python\n" + SOLUTION + "```"
OTHER = "def mul(a, b):\n    return a * b  # a different completion\n"


def sample(completion):
    return {"prompt": "write add", "completion": completion}


def record(fn, *completions):
    recording = audit.Recording([audit.completion_text(sample(c)) for c in completions])
    with recording as found:
        fn()
    return found, recording


class RecordingTest(unittest.TestCase):
    def test_exec_and_eval_of_the_completion_are_runs_in_process(self):
        def run():
            namespace = {}
            code = COMPLETION.split("```python\n")[1].split("```")[0]
            exec(code + "\nassert add(1, 2) == 3\n", namespace)

        found, recording = record(run, COMPLETION)
        self.assertEqual(len(found), 1, found)
        self.assertTrue(found[0].startswith(audit.IN_PROCESS), found)
        self.assertIn("return a + b", found[0])
        self.assertEqual(recording.samples_of(found[0]), {0})

        found, _ = record(lambda: eval("__import__('os').getpid() + 1000000"), "__import__('os').getpid() + 1000000")
        self.assertTrue(found and found[0].startswith(audit.IN_PROCESS), found)

    def test_a_parse_alone_runs_nothing_and_other_code_is_not_the_completions(self):
        found, _ = record(lambda: ast.parse(SOLUTION), COMPLETION)
        self.assertEqual(found, [])
        found, _ = record(lambda: exec("x = 'import os and more'\n", {}), COMPLETION)
        self.assertEqual(found, [])
        # a compiled AST of completion text, then run, is a run
        found, _ = record(lambda: exec(compile(ast.parse(SOLUTION), "<sol>", "exec"), {}), COMPLETION)
        self.assertTrue(found and found[0].startswith(audit.IN_PROCESS), found)

    def test_a_subprocess_or_shell_built_from_the_completion_is_named_and_tied_to_its_sample(self):
        script = SOLUTION + "assert add(1, 2) == 3\n"
        found, recording = record(
            lambda: subprocess.run([sys.executable, "-c", script], check=True), OTHER, COMPLETION
        )
        self.assertEqual(found, [audit.IN_SUBPROCESS + "%s -c %s" % (sys.executable, script)])
        self.assertEqual(recording.samples_of(found[0]), {1}, "the second sample's completion")
        found, _ = record(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), COMPLETION)
        self.assertEqual(found, ["runs a subprocess: %s -c pass" % sys.executable])
        shell = "echo rm -rf ~/nothing-at-all > /dev/null"
        found, _ = record(lambda: os.system(shell), shell)
        self.assertEqual(found, [audit.IN_SHELL + shell])
        found, _ = record(lambda: os.system("true"), COMPLETION)
        self.assertEqual(found, ["runs a shell command: true"])

    def test_a_short_line_of_a_long_completion_is_not_enough(self):
        long = "import sys\n" + SOLUTION * 3
        found, _ = record(lambda: subprocess.run([sys.executable, "-c", "import sys"], check=True), long)
        self.assertEqual(found, ["runs a subprocess: %s -c import sys" % sys.executable])

    def test_writes_are_absolute_and_a_refused_one_says_so(self):
        with tempfile.TemporaryDirectory() as folder:
            cwd = os.getcwd()
            os.chdir(folder)
            try:
                here = os.getcwd()
                found, _ = record(lambda: open("out.txt", "w").close(), COMPLETION)
            finally:
                os.chdir(cwd)
            self.assertEqual(found, ["writes " + os.path.join(here, "out.txt")])
            locked = os.path.join(folder, "locked")
            os.mkdir(locked, 0o500)
            try:
                target = os.path.join(locked, "x.txt")

                def write():
                    try:
                        open(target, "w").close()
                    except OSError:
                        pass

                found, _ = record(write, COMPLETION)
                if os.access(locked, os.W_OK):  # root: nothing is refused it
                    self.assertEqual(found, ["writes " + target])
                else:
                    self.assertEqual(found, ["tried to write %s (refused)" % target])
            finally:
                os.chmod(locked, 0o700)


if __name__ == "__main__":
    unittest.main()
