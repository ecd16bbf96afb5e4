"""Unit tests of src/ship/fireworks/decorators.py, which rwb deploy runs with the
workspace's interpreter to read what `@reward_function(...)` decorators declare."""

import importlib.util
import io
import json
import os
import sys
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.normpath(os.path.join(HERE, "..", "..", "src", "ship", "fireworks", "decorators.py"))


def _load():
    spec = importlib.util.spec_from_file_location("rwb_decorators_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


D = _load()


def answer_for(source):
    """What main() prints for `source` on stdin, parsed."""
    out = io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(source.encode("utf-8")))
    try:
        with redirect_stdout(out):
            D.main()
    finally:
        sys.stdin = old_stdin
    return json.loads(out.getvalue())


class DecoratorRequirements(unittest.TestCase):
    def test_plain_and_dotted_decorators_in_source_order(self):
        source = (
            "import reward_kit\n"
            "@reward_kit.reward_function(requirements=('regex',))\n"
            "def b(messages): pass\n"
            "class Holder:\n"
            "    @reward_function(requirements=['numpy', ' numpy ', '', 'scipy'])\n"
            "    def a(self, messages): pass\n"
        )
        self.assertEqual(D.decorator_requirements(source), ["regex", "numpy", "scipy"])

    def test_only_string_items_of_the_requirements_keyword(self):
        source = (
            "@reward_function(id='requirements', requirements=[pin('x'), 'a' 'b', 3, REQS])\n"
            "@other(requirements=['not-this'])\n"
            "def f(messages): pass\n"
        )
        self.assertEqual(D.decorator_requirements(source), ["ab"])

    def test_a_lone_string_is_one_requirement(self):
        source = "@reward_function(requirements='torch')\ndef f(m): pass\n"
        self.assertEqual(D.decorator_requirements(source), ["torch"])

    def test_bare_decorators_and_strings_declare_nothing(self):
        source = (
            "@reward_function\n"
            "def f(m):\n"
            "    return \"@reward_function(requirements=['fake'])\"\n"
        )
        self.assertEqual(D.decorator_requirements(source), [])

    def test_main_answers_json(self):
        self.assertEqual(
            answer_for("@reward_function(requirements=['é'])\ndef f(m): pass\n"),
            {"requirements": ["é"]},
        )
        answer = answer_for("def f(:\n")
        self.assertEqual(set(answer), {"syntax_error"})
        self.assertEqual(answer["syntax_error"]["line"], 1)
        self.assertTrue(answer["syntax_error"]["message"])
        # a null byte is a ValueError or a SyntaxError, depending on the version
        self.assertEqual(set(answer_for("x = 1\n\0")), {"syntax_error"})


if __name__ == "__main__":
    unittest.main()
