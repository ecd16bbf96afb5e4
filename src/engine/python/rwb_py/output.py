"""What user code prints: captured per evaluation (Capture) and returned with its
result, and routed to the evaluation that printed it while several run together
(RoutedOutput).
"""

import contextvars
import io


OUTPUT_LIMIT = 64 * 1024


class Capture(io.TextIOBase):
    """A text stream that collects everything written to it (stdout and stderr)."""

    def __init__(self):
        self._parts = []
        self._size = 0

    def writable(self):
        return True

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        if self._size < OUTPUT_LIMIT:
            self._parts.append(text)
        self._size += len(text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def written(self):
        """Whether anything was written since the last take()."""
        return bool(self._parts)

    def take(self):
        if not self._parts:
            return None
        text = "".join(self._parts)
        if self._size > OUTPUT_LIMIT:
            text = text[:OUTPUT_LIMIT] + "\n[rwb: output cut at %d of %d characters]" % (OUTPUT_LIMIT, self._size)
        self._parts = []
        self._size = 0
        return text


# The capture of the evaluation running in this thread or asyncio task while several
# are in flight (None: the worker's own capture). A context variable: each thread and
# each asyncio task sees its own value.
_OUTPUT = contextvars.ContextVar("rwb_output", default=None)


class RoutedOutput(io.TextIOBase):
    """sys.stdout and sys.stderr once evaluations run together: each write goes to
    the capture of the evaluation that made it, else to the worker's capture."""

    def __init__(self, default):
        self.default = default

    def writable(self):
        return True

    def write(self, text):
        return (_OUTPUT.get() or self.default).write(text)

    def flush(self):
        pass

    def isatty(self):
        return False
