"""What an evaluator reaches outside itself, for `rwb check` (SPEC §16): network
connections, subprocesses, shell commands and files opened for writing during a
checked call, seen through Python's audit hooks (`sys.addaudithook`).

The hook is added only when a worker first runs a check (a hook cannot be removed;
a normal run never adds it) and records only while `Recording` is active.
"""

import os
import sys

_recording = None
_installed = False
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _address(address):
    if isinstance(address, tuple) and len(address) >= 2:
        return "%s:%s" % (address[0], address[1])
    if isinstance(address, bytes):
        return address.decode("utf-8", "replace")
    return str(address)


def _command(argv, executable=None):
    if isinstance(argv, (list, tuple)):
        return " ".join(os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in argv)
    if argv is None:
        return str(executable)
    return os.fsdecode(argv) if isinstance(argv, bytes) else str(argv)


def _writes(mode, flags):
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _hook(event, args):
    found = _recording
    if found is None:
        return
    try:
        if event == "socket.connect":
            found.append("calls the network: " + _address(args[1]))
        elif event == "subprocess.Popen":
            found.append("runs a subprocess: " + _command(args[1], args[0]))
        elif event == "os.system":
            found.append("runs a shell command: " + _command(args[0]))
        elif event == "open":
            path, mode, flags = args
            if isinstance(path, int) or not _writes(mode, flags):
                return
            path = os.fsdecode(path)
            if path.endswith(".pyc") or "__pycache__" in path:
                return
            found.append("writes " + path)
    except Exception:
        pass


class Recording:
    """`with Recording() as found:` lists what the code run inside reached, each
    thing once, in the order first reached."""

    def __enter__(self):
        global _recording, _installed
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
        self.found = []
        _recording = self.found
        return self.found

    def __exit__(self, *exc):
        global _recording
        _recording = None
        unique = list(dict.fromkeys(self.found))
        self.found[:] = unique
        return False
