"""Which files are rwb's own and which the project's: the answer tracebacks, import
reports and error locations all ask for.

rwb's own files (this package, the entry script beside it and the bundled reward_kit
in compat/) live in the runtime folder rwb writes them to; they are hidden from
tracebacks and never reported as an evaluator's imports.
"""

import os


# rwb's own files (this worker and the bundled reward_kit): hidden from tracebacks
RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SITE_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def _is_project_file(path, roots):
    if not path:
        return False
    if any(marker in path for marker in _SITE_MARKERS):
        return False
    return any(path == r or path.startswith(r + os.sep) for r in roots)


def _file_of(module):
    """A module's `__file__`, or None (also when a lazy module raises on access)."""
    try:
        return getattr(module, "__file__", None)
    except Exception:
        return None


def _module_file(module):
    path = getattr(module, "__file__", None)
    if not path:
        return None
    return os.path.realpath(path)
