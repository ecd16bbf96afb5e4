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


def refused_write_hint(exc, roots):
    """For a write the box refused (SPEC §18: a contained reward's filesystem is
    read-only but for its temporary folders, ~/.cache and `[sandbox] writable`): the
    path, why, and the rwb.toml line that allows it. None for any other error."""
    if not isinstance(exc, OSError) or exc.errno != 30 or os.environ.get("RWB_CONTAINED") != "1":
        return None
    path = exc.filename if isinstance(exc.filename, str) else None
    if not path:
        return None
    path = os.path.abspath(path)
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    root = roots[0] if roots else ""
    shown = os.path.relpath(folder, root) + "/" if root and folder.startswith(root + os.sep) else folder
    return (
        "rwb contains rewards and refused to write %s: outside TMPDIR, /tmp and ~/.cache the files "
        "are read-only to them; to let rewards write there, add writable = [%r] under [sandbox] in "
        "rwb.toml (or run with --no-contain)" % (path, shown)
    )


def _error_info(exc, roots, kind=None, skip_frames=0):
    """Describe an exception: bare type name, message, a traceback without rwb's own
    frames, and the innermost frame that lies in the project (for the source pane)."""
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    text = _format(exc, tb)
    where_file, where_line = _project_line(tb, roots)
    cause = exc.__cause__
    if cause is not None and cause.__traceback__ is not None:
        # a wrapper's error (verifiers' TaskError) raised from the user's: the user's
        # traceback first, as Python prints the chain, and its line for the source pane
        text = _format(cause, cause.__traceback__) + _CHAINED + text
        if where_file is None:
            where_file, where_line = _project_line(cause.__traceback__, roots)
    if isinstance(exc, SyntaxError) and exc.filename:
        path = os.path.realpath(exc.filename)
        if _is_project_file(path, roots):
            where_file, where_line = path, exc.lineno
    info = {"type": kind or type(exc).__name__, "message": str(exc), "traceback": text}
    refused = refused_write_hint(exc, roots)
    if refused:
        info["message"] = "%s (%s)" % (info["message"], refused)
    if where_file:
        root = roots[0]
        if where_file.startswith(root + os.sep):
            where_file = os.path.relpath(where_file, root)
        info["file"] = where_file
        info["line"] = where_line
    return info


_CHAINED = "\nThe above exception was the direct cause of the following exception:\n\n"


def _format(exc, tb):
    """The traceback of `exc` from `tb`, without rwb's own frames."""
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(RUNTIME_DIR + os.sep)]
    text = "Traceback (most recent call last):\n" if frames else ""
    text += "".join(traceback.format_list(frames))
    return text + "".join(traceback.format_exception_only(type(exc), exc))


def _project_line(tb, roots):
    """(file, line) of the innermost frame of `tb` in the project, or (None, None)."""
    where_file, where_line = None, None
    for frame, lineno in traceback.walk_tb(tb):
        path = os.path.realpath(frame.f_code.co_filename)
        if _is_project_file(path, roots):
            where_file, where_line = path, lineno
    return where_file, where_line
