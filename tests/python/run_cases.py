"""Runs every case in cases.py and prints one JSON object: {case name: result}.

    python run_cases.py              # the reward_kit the interpreter imports (the real one)
    python run_cases.py --bundled    # rwb's bundled stand-in from src/engine/python

The reference expected_041.json is this script's output under the real reward-kit 0.4.1:

    /work/rk-venv/bin/python tests/python/run_cases.py > tests/python/expected_041.json
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "src", "engine", "python"))


def dumps(results):
    """The one output format (shared with the tests): indented, key order kept, UTF-8."""
    return json.dumps(results, indent=1, ensure_ascii=False, allow_nan=False)


def main(argv):
    if "--bundled" in argv[1:]:
        sys.path.insert(0, BUNDLED_DIR)
    sys.path.insert(0, HERE)
    import cases

    sys.stdout.reconfigure(encoding="utf-8")
    sys.stdout.write(dumps(cases.run_all()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
