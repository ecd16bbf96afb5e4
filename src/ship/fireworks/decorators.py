"""What a metric's `@reward_function(...)` decorators declare, read with Python's ast.

rwb deploy runs this with the workspace's interpreter: the Python source comes on
stdin, and one JSON object goes to stdout:
  {"requirements": [...]}                      the string items, in source order
  {"syntax_error": {"line": N, "message": M}}  the source does not parse
Standard library only.
"""

import ast
import json
import sys


def _is_reward_function(func):
    """`reward_function` or `anything.reward_function`."""
    if isinstance(func, ast.Name):
        return func.id == "reward_function"
    return isinstance(func, ast.Attribute) and func.attr == "reward_function"


def _strings(node):
    """The string items of a list or tuple literal (a lone string is one item)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def decorator_requirements(source):
    """The `requirements=` strings of every `@reward_function(...)` in `source`,
    stripped, without blanks or repeats, in source order."""
    calls = []
    for node in ast.walk(ast.parse(source)):
        for decorator in getattr(node, "decorator_list", ()):
            if isinstance(decorator, ast.Call) and _is_reward_function(decorator.func):
                calls.append(decorator)
    calls.sort(key=lambda call: (call.lineno, call.col_offset))
    found = []
    for call in calls:
        for keyword in call.keywords:
            if keyword.arg != "requirements":
                continue
            for item in _strings(keyword.value):
                item = item.strip()
                if item and item not in found:
                    found.append(item)
    return found


def main():
    source = sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        answer = {"requirements": decorator_requirements(source)}
    except SyntaxError as e:
        answer = {"syntax_error": {"line": e.lineno or 0, "message": e.msg or str(e)}}
    except (ValueError, RecursionError) as e:
        answer = {"syntax_error": {"line": 0, "message": str(e)}}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
