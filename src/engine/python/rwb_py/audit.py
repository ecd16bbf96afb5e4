"""What an evaluator reaches outside itself, for `rwb check` (SPEC §16, §18): network
connections, subprocesses, shell commands and files opened for writing during a
checked call, seen through Python's audit hooks (`sys.addaudithook`), and whether the
policy's own text is what runs: a completion compiled and run in the reward's process
(`exec`, `eval`, `compile`), or made into a subprocess's arguments or a shell command.

The hook is added only when a worker first runs a check (a hook cannot be removed;
a normal run never adds it) and records only while `Recording` is active. It sees
this process only: what a child process does is its own.
"""

import os
import sys
from urllib.parse import urlsplit

_recording = None
_installed = False
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

# While recording: per sample, its completion (`completion_text`); what each
# finding of completion text came from (finding -> sample indexes); and per file name
# a compile of completion text waiting for its `exec` ((samples, source)).
_texts = None
_from = None
_compiled = None
# The addresses of rwb's sandbox (read when a recording starts).
_sandbox = ()

# A completion's line counts when it holds this many characters (a bare `pass` or a
# fence does not); text runs a completion when it holds this many characters of the
# completion's lines, or all of them for a shorter completion.
_MIN_LINE = 6
_MIN_MATCH = 24
# The lines of a completion compared, and the characters of a command or source kept.
_MAX_LINES = 400
_MAX_SHOWN = 2000

# Prefixes of the findings rwb reads (src/trust/audit.rs).
IN_PROCESS = "runs completion text in-process (exec): "
IN_SUBPROCESS = "runs completion text in a subprocess: "
IN_SHELL = "runs completion text in a shell: "
IN_SANDBOX = "runs code in rwb's sandbox: "


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


def _may_write(path):
    """Whether `path` (or the folder it would be made in) is writable here: in rwb's
    box a read-only one is refused (EROFS)."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return os.access(probe, os.W_OK)


def _sandbox_addresses():
    """The addresses of rwb's sandbox a worker was given (its socket, its URL)."""
    out = set()
    if os.environ.get("RWB_SANDBOX_SOCKET"):
        out.add(os.environ["RWB_SANDBOX_SOCKET"])
    for name in ("RWB_SANDBOX_URL", "SANDBOX_FUSION_ENDPOINT"):
        url = os.environ.get(name)
        if url:
            try:
                parts = urlsplit(url)
                out.add("%s:%s" % (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)))
            except ValueError:
                pass
    return out


def _strings(value, out):
    """The strings in `value`: of a message only its content (not its role)."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in ([value["content"]] if "content" in value else value.values()):
            _strings(item, out)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, out)
    return out


def completion_text(sample):
    """`sample`'s completion (the policy's text; the whole sample's strings when it
    has no conversation rwb knows) as its audit compares it: its significant lines,
    stripped, and all its text."""
    from .styles.samples import parts

    try:
        part = parts(sample).completion
    except Exception:
        part = sample
    texts = _strings(part, [])
    lines = set()
    for text in texts:
        for line in text.splitlines()[:_MAX_LINES]:
            line = line.strip()
            if len(line) >= _MIN_LINE:
                lines.add(line)
    return lines, "\n".join(texts)


def _completions_in(text):
    """The indexes of the samples whose completion `text` holds (enough of its lines),
    or that hold `text` (a piece of a completion run on its own)."""
    if not _texts or not text:
        return []
    hits = []
    stripped = text.strip()
    for i, (lines, whole) in enumerate(_texts):
        total = sum(len(line) for line in lines)
        found = sum(len(line) for line in lines if line in text)
        if (found and found >= min(_MIN_MATCH, total)) or (len(stripped) >= _MIN_LINE and stripped in whole):
            hits.append(i)
    return hits


def _shown(text):
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "…"


def _add(found, what, samples):
    found.append(what)
    _from.setdefault(what, set()).update(samples)


def _started(found, command, of_completion, plain):
    """A command started: `of_completion` when it is made of a completion's text."""
    hits = _completions_in(command)
    if hits:
        _add(found, of_completion + _shown(command), hits)
    else:
        found.append(plain + command)


def _source_text(source):
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source).decode("utf-8", "replace")
    return source if isinstance(source, str) else None


def _hook(event, args):
    found = _recording
    if found is None:
        return
    try:
        if event == "socket.connect":
            address = _address(args[1])
            if address in _sandbox:
                found.append(IN_SANDBOX + address)
            else:
                found.append("calls the network: " + address)
        elif event == "subprocess.Popen":
            _started(found, _command(args[1], args[0]), IN_SUBPROCESS, "runs a subprocess: ")
        elif event == "os.system":
            _started(found, _command(args[0]), IN_SHELL, "runs a shell command: ")
        elif event == "compile":
            source, filename = args[0], args[1]
            text = _source_text(source)
            if text is not None:
                hits = _completions_in(text)
                if hits:
                    _compiled[str(filename)] = (hits, text)
            elif _compiled:
                # an AST compiled (`compile(ast.parse(text), name, ...)`, whose event
                # names no file): it carries the completion when a parse of completion
                # text came before it, and is the next code run that is no file's
                _compiled[None] = list(_compiled.values())[-1]
        elif event == "exec":
            if not _compiled:
                return
            filename = getattr(args[0], "co_filename", None)
            seen = _compiled.get(filename)
            if seen is None and None in _compiled and not os.path.exists(str(filename)):
                seen = _compiled.pop(None)
            if seen is not None:
                _add(found, IN_PROCESS + _shown(seen[1]), seen[0])
        elif event == "open":
            path, mode, flags = args
            if isinstance(path, int) or not _writes(mode, flags):
                return
            path = os.fsdecode(path)
            if path.endswith(".pyc") or "__pycache__" in path or path == os.devnull:
                return
            path = os.path.abspath(path)
            if _may_write(path):
                found.append("writes " + path)
            else:
                found.append("tried to write %s (refused)" % path)
    except Exception:
        pass


class Recording:
    """`with Recording(texts) as found:` lists what the code run inside reached, each
    thing once, in the order first reached. `texts` holds, per sample of the call, its
    completion (`completion_text`); `samples_of(finding)` then gives the
    indexes of the samples whose completion a finding ran (None for the others)."""

    def __init__(self, texts=None):
        self.texts = list(texts or [])
        self.of = {}

    def __enter__(self):
        global _recording, _installed, _texts, _from, _compiled, _sandbox
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
        self.found = []
        _texts, _from, _compiled = self.texts, self.of, {}
        _sandbox = _sandbox_addresses()
        _recording = self.found
        return self.found

    def __exit__(self, *exc):
        global _recording, _texts, _from, _compiled
        _recording = None
        _texts, _from, _compiled = None, None, None
        unique = list(dict.fromkeys(self.found))
        self.found[:] = unique
        return False

    def samples_of(self, finding):
        return self.of.get(finding)
