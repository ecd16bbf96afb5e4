"""The wire: the bytes of every line a worker reads and writes (see the protocol in
__init__.py), when results are sent, and the mark page rwb reads when a worker dies.

The per-sample hot paths live here: _sample reads a sample line, _plain_line and
_result_line write a plain result's line with one % format instead of the encoder.
Keep them that way: a run over a file calls them once per sample.
"""

import json
import marshal
import math
import struct

from .results import _RESULT_FIELDS, _plain_parts


PROTOCOL_VERSION = 1


# Results are sent in chunks: at this many, when the last send was this long ago, or
# at the end of a batch. rwb names the interval in the fork command ("flush_ms"):
# short where a served request waits for its result (held back longer, its client
# idles, and so does the worker once the batches in flight run dry), longer for a run
# over a file, where each send wakes three of rwb's threads (at ~1.5 ms a call, one
# send per result cost rwb ~100 us of CPU per result).
FLUSH_COUNT = 64
FLUSH_SECONDS = 0.001


# The shared mark page: slot 0 is the sample a one-at-a-time evaluation is on; slots
# 1..MARK_SLOTS the samples evaluations in flight together are on (-1: free). rwb
# reads it when the worker dies (src/engine/worker.rs) and caps concurrency at
# MARK_SLOTS.
MARK_SLOTS = 256


# One encoder for every protocol line: json.dumps builds a new one per call when given
# options, which costs about a third of writing a result.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# One decoder for every sample line (json.loads of bytes first guesses their encoding).
_DECODER = json.JSONDecoder()
# What reads a sample rwb sent as marshal data (see _sample).
_marshal_loads = marshal.loads
# How _ENCODER writes a string (quoted, escaped, not ASCII-only).
_quoted = json.encoder.encode_basestring


def _dumps(obj):
    return (_ENCODER.encode(obj) + "\n").encode("utf-8")


# The decoder's scanner: one JSON value at an offset, without the whitespace checks
# around it that decode() makes with regular expressions.
_scan = _DECODER.scan_once
_JSON_SPACE = " \t\n\r"


def _sample(raw):
    """A sample line (UTF-8 bytes rwb checked is a JSON object) as a dict; or, when
    its last byte is a zero (never a JSON line's), the marshal data of the dict
    json.loads reads from the line, which rwb wrote instead (read in about half the
    time of the JSON; marshal.loads ignores the zero after the data)."""
    if raw and raw[-1] == 0:
        return _marshal_loads(raw)
    text = raw.decode("utf-8")
    try:
        value, end = _scan(text, 0)
    except StopIteration:  # leading whitespace, or not JSON: decode() says which
        return _DECODER.decode(text)
    if end == len(text) or not text[end:].strip(_JSON_SPACE):
        return value
    return _DECODER.decode(text)


# Writes a sample id into a slot of the mark page.
_MARK = struct.Struct("<q")
# The protocol line of a plain result: what _dumps writes for it, key for key.
_PLAIN_LINE = '{"i":%d,"ms":%r,"ok":{"score":%r,"is_score_valid":%s,"reason":%s,"metrics":{},"step_outputs":null,"error":null}%s}\n'
_RESULT_KEYS = ("i", "ms", "ok")
_RESULT_KEYS_OUT = ("i", "ms", "ok", "out")


def _result_line(message):
    """A result message as its protocol line: the bytes _dumps(message) gives, written
    directly when the result is plain (finite float score, str or no reason, nothing
    else; about a quarter of the encoder's cost), else by _dumps. Raises what _dumps
    raises (ValueError for text that is not UTF-8, ...)."""
    keys = tuple(message)
    ok = message.get("ok")
    if keys != _RESULT_KEYS and keys != _RESULT_KEYS_OUT or type(ok) is not dict:
        return _dumps(message)
    ident, ms, out = message["i"], message["ms"], message.get("out")
    score, valid, reason = ok.get("score"), ok.get("is_score_valid"), ok.get("reason")
    plain = (
        tuple(ok) == _RESULT_FIELDS
        and type(ident) is int
        and type(ms) is float
        and math.isfinite(ms)
        and type(score) is float
        and math.isfinite(score)
        and (valid is True or valid is False)
        and (reason is None or type(reason) is str)
        and type(ok["metrics"]) is dict
        and not ok["metrics"]
        and ok["step_outputs"] is None
        and ok["error"] is None
        and (out is None and len(keys) == 3 or type(out) is str)
    )
    if not plain:
        return _dumps(message)
    text = _PLAIN_LINE % (
        ident,
        ms,
        score,
        "true" if valid else "false",
        "null" if reason is None else _quoted(reason),
        "" if out is None else ',"out":' + _quoted(out),
    )
    return text.encode("utf-8")


# The protocol line run_pointwise writes for a plain result: the call's time in whole
# nanoseconds ("ns", where every other line has "ms": the float digits of "ms" cost
# more to write than the rest of the line), the score as repr writes it (exactly:
# %r of bytes is ascii(), which for a float is repr), the reason JSON-quoted. Bytes,
# formatted as bytes: nothing to encode afterwards.
_PLAIN_RESULT_LINE = b'{"i":%d,"ns":%d,"ok":{"score":%r,"is_score_valid":true,"reason":%s,"metrics":{},"step_outputs":null,"error":null}}\n'


def _plain_line(ident, ns, value):
    """The protocol line of sample `ident`'s result, its call `ns` nanoseconds long,
    when `value` is a plain dict result (see _plain_parts), else None: the same result
    _as_result reads from it, written without building it. None too for a reason
    that is not UTF-8 text (a lone surrogate), which the general path reports."""
    parts = _plain_parts(value)
    if parts is None:
        return None
    score, reason = parts
    if reason is None:
        return _PLAIN_RESULT_LINE % (ident, ns, score, b"null")
    try:
        quoted = _quoted(reason).encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _PLAIN_RESULT_LINE % (ident, ns, score, quoted)
