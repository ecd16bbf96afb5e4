"""What an exception becomes on a row: its bare type name, message, a traceback
without rwb's own frames, and the innermost project line it passed (for the source
pane).
"""

import os
import sys
import traceback

from .paths import RUNTIME_DIR, _is_project_file


# modules whose distribution on PyPI has another name
_DISTRIBUTIONS = {
    "yaml": "pyyaml",
    "sklearn": "scikit-learn",
    "cv2": "opencv-python",
    "PIL": "pillow",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "Levenshtein": "python-Levenshtein",
}


def missing_module_hint(exc, roots):
    """For a module that is not installed (not a project file): where to install it,
    naming the interpreter rwb runs the evaluator with and how to choose another.
    None for any other error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    for root in roots:
        if os.path.exists(os.path.join(root, top + ".py")) or os.path.isdir(os.path.join(root, top)):
            return None  # a project module: the import itself is wrong
    if top == "reward_kit":
        return None  # its own message says how to install reward-kit
    dist = _DISTRIBUTIONS.get(top, top)
    return (
        "%r is not installed in the interpreter rwb runs this evaluator with (%s): "
        "install it with `%s -m pip install %s`, or run rwb with --python PATH "
        "(or python = \"PATH\" in rwb.toml) for an interpreter that has it"
        % (top, sys.executable, sys.executable, dist)
    )


def _error_info(exc, roots, kind=None, skip_frames=0):
    """Describe an exception: bare type name, message, a traceback without rwb's own
    frames, and the innermost frame that lies in the project (for the source pane)."""
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(RUNTIME_DIR + os.sep)]
    text = "Traceback (most recent call last):\n" if frames else ""
    text += "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(exc), exc))
    where_file, where_line = None, None
    for frame, lineno in traceback.walk_tb(tb):
        path = os.path.realpath(frame.f_code.co_filename)
        if _is_project_file(path, roots):
            where_file, where_line = path, lineno
    if isinstance(exc, SyntaxError) and exc.filename:
        path = os.path.realpath(exc.filename)
        if _is_project_file(path, roots):
            where_file, where_line = path, exc.lineno
    info = {"type": kind or type(exc).__name__, "message": str(exc), "traceback": text}
    if where_file:
        root = roots[0]
        if where_file.startswith(root + os.sep):
            where_file = os.path.relpath(where_file, root)
        info["file"] = where_file
        info["line"] = where_line
    return info
