"""rwb's bundled reward_kit must behave like the real reward-kit 0.4.1.

Every case in cases.py runs in this process against the bundled package
(src/engine/python/reward_kit), and its result is compared with the real package's
result recorded in expected_041.json (one subTest per case).

When RWB_REAL_REWARD_KIT_PYTHON names an interpreter that has the real reward-kit
0.4.1 (e.g. /work/rk-venv/bin/python), run_cases.py also runs under it and its output
is compared with expected_041.json, so a stale reference is caught. Regenerate with:

    /work/rk-venv/bin/python tests/python/run_cases.py > tests/python/expected_041.json
"""

import difflib
import importlib.util
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "src", "engine", "python"))
RUN_CASES = os.path.join(HERE, "run_cases.py")
EXPECTED_PATH = os.path.join(HERE, "expected_041.json")
REAL_PYTHON_ENV = "RWB_REAL_REWARD_KIT_PYTHON"
THIRD_PARTY = ("pydantic", "pydantic_core", "openai")

# Filled by setUpModule.
STATE = {}


def _forget_reward_kit():
    for name in [m for m in sys.modules if m == "reward_kit" or m.startswith("reward_kit.")]:
        del sys.modules[name]


def setUpModule():
    """Import the bundled reward_kit (first on sys.path), then cases.py, and run it."""
    _forget_reward_kit()
    before = set(sys.modules)
    sys.path.insert(0, BUNDLED_DIR)
    try:
        import reward_kit

        spec = importlib.util.spec_from_file_location("rwb_reward_kit_cases", os.path.join(HERE, "cases.py"))
        cases = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cases)
    finally:
        sys.path.remove(BUNDLED_DIR)
    STATE["reward_kit"] = reward_kit
    STATE["new_modules"] = set(sys.modules) - before
    STATE["cases"] = cases
    STATE["actual"] = cases.run_all()
    with open(EXPECTED_PATH, encoding="utf-8") as f:
        STATE["expected"] = json.load(f)


def canonical(value):
    """The text two results are compared by: key order, int/float and bool/int kept."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def flatten(value, path="$"):
    """One line per leaf, "path: value"; multi-line strings are split into "| " lines
    so a difference inside an error message shows up line by line."""
    if isinstance(value, dict):
        lines = [] if value else ["%s: {}" % path]
        for key, item in value.items():
            lines.extend(flatten(item, "%s.%s" % (path, key)))
        return lines
    if isinstance(value, (list, tuple)):
        lines = [] if value else ["%s: []" % path]
        for index, item in enumerate(value):
            lines.extend(flatten(item, "%s[%d]" % (path, index)))
        return lines
    if isinstance(value, str) and "\n" in value:
        return ["%s:" % path] + ["    | " + line for line in value.split("\n")]
    return ["%s: %s" % (path, json.dumps(value, ensure_ascii=False))]


def result_diff(name, expected, actual):
    """A unified diff of one case: expected (real reward-kit) vs actual."""
    diff = difflib.unified_diff(
        flatten(expected, name),
        flatten(actual, name),
        fromfile="real reward-kit 0.4.1 (expected_041.json)",
        tofile="actual",
        lineterm="",
    )
    return "\n".join(diff)


class CompareMixin:
    def compare_all(self, expected, actual, label):
        missing = [name for name in expected if name not in actual]
        extra = [name for name in actual if name not in expected]
        self.assertEqual(missing, [], "%s: cases in expected_041.json that did not run" % label)
        self.assertEqual(
            extra, [], "%s: cases missing from expected_041.json (regenerate it with the real package)" % label
        )
        for name, want in expected.items():
            with self.subTest(case=name):
                got = actual.get(name)
                if canonical(got) != canonical(want):
                    self.fail("%s differs from the real reward-kit:\n%s" % (name, result_diff(name, want, got)))


class BundledRewardKitTest(CompareMixin, unittest.TestCase):
    def test_imported_package_is_the_bundled_one(self):
        reward_kit = STATE["reward_kit"]
        self.assertTrue(getattr(reward_kit, "RWB_BUNDLED", False), reward_kit.__file__)
        self.assertEqual(
            os.path.dirname(os.path.dirname(os.path.realpath(reward_kit.__file__))), os.path.realpath(BUNDLED_DIR)
        )
        self.assertIs(STATE["cases"].reward_kit, reward_kit)

    def test_bundled_package_needs_no_third_party_modules(self):
        loaded = sorted(m for m in STATE["new_modules"] if m.split(".")[0] in THIRD_PARTY)
        self.assertEqual(loaded, [])

    def test_cases_match_real_reward_kit(self):
        self.compare_all(STATE["expected"], STATE["actual"], "bundled")

    def test_run_cases_script_bundled(self):
        """run_cases.py --bundled runs under this interpreter and prints every case."""
        proc = subprocess.run(
            [sys.executable, RUN_CASES, "--bundled"], capture_output=True, timeout=120, cwd=HERE
        )
        self.assertEqual(proc.returncode, 0, proc.stderr.decode("utf-8", "replace"))
        printed = json.loads(proc.stdout.decode("utf-8"))
        self.assertEqual(list(printed), list(STATE["expected"]))


@unittest.skipUnless(
    os.environ.get(REAL_PYTHON_ENV), "set %s to an interpreter with reward-kit 0.4.1" % REAL_PYTHON_ENV
)
class RealRewardKitReferenceTest(CompareMixin, unittest.TestCase):
    """expected_041.json is still what the real package produces."""

    def test_interpreter_has_real_reward_kit(self):
        python = os.environ[REAL_PYTHON_ENV]
        probe = "import reward_kit; print(getattr(reward_kit, 'RWB_BUNDLED', False), reward_kit.__version__)"
        proc = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120, cwd=HERE)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(), ["False", "0.4.1"])

    def test_reference_is_current(self):
        python = os.environ[REAL_PYTHON_ENV]
        proc = subprocess.run([python, RUN_CASES], capture_output=True, timeout=300, cwd=HERE)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode("utf-8", "replace"))
        self.compare_all(STATE["expected"], json.loads(proc.stdout.decode("utf-8")), "real")


if __name__ == "__main__":
    unittest.main()
