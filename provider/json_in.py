"""Reads the JSON files the provider tools take (config.json, the draft
config, model.safetensors.index.json, safetensors headers) with the limits
of kern's C++ readers (docs/runtime.md, "Hostile inputs"), so that every
malformed file is one line naming it (provider/tool_io.py), never a
traceback (standard library only):

- UTF-8 only: "PATH: not UTF-8 text: byte 0xff at offset 16";
- nesting beyond MAX_DEPTH arrays/objects is refused before parsing
  (Python's parser recurses: 100,000 levels would be a RecursionError):
  "PATH:1:129: arrays/objects nest deeper than 128 levels";
- syntax errors at their line and column: "PATH:1:16: invalid JSON: ...";
- NaN, Infinity and numbers beyond the f64 range (1e400) are not JSON
  numbers: refused, as RFC 8259 and the C++ readers do;
- a key twice in one object is refused ("duplicate key"), as the manifest
  reader does: which value Python keeps (the last) is not the file's
  business to decide.
"""

import json
import math
import re

from tool_io import ContentError

MAX_DEPTH = 128  # as common/json_depth.h's kMaxJsonDepth

# A string (escapes skipped) or a bracket: the only tokens that matter to depth.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.S)


class JsonError(ContentError):
    """A file that is not the JSON the tools read (exit 1)."""


def too_deep_at(text, max_depth=MAX_DEPTH):
    """The offset of the first '[' or '{' that opens level max_depth + 1 of
    `text` (strings skipped), or None. O(len(text)); `text` need not be
    valid JSON (the parser reports syntax errors)."""
    depth = 0
    for m in _STRUCTURE.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > max_depth:
                return m.start()
        elif c in "]}":
            depth = max(depth - 1, 0)
    return None


def _line_col(text, offset):
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class _Refused(Exception):
    """Raised by the parser hooks; turned into a JsonError by loads."""


def _no_constant(name):
    raise _Refused(f"invalid JSON: {name} is not a JSON number")


def _finite(literal):
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused(f"invalid JSON: the number {literal[:40]} is beyond the f64 range")
    return value


def _unique_keys(pairs):
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise _Refused(f"duplicate key {json.dumps(key)[:80]}")
        seen.add(key)
    return dict(pairs)


def loads(raw, where):
    """The JSON value of the bytes `raw`; JsonError, its message starting
    with `where` (the file's path), on anything listed in the module doc."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonError(f"{where}: not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}") from None
    at = too_deep_at(text)
    if at is not None:
        line, col = _line_col(text, at)
        raise JsonError(f"{where}:{line}:{col}: arrays/objects nest deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as e:
        raise JsonError(f"{where}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except _Refused as e:
        raise JsonError(f"{where}: {e}") from None
    except ValueError as e:  # an integer of more than sys.get_int_max_str_digits() digits
        raise JsonError(f"{where}: invalid JSON: {str(e)[:120]}") from None
    except RecursionError:  # not reached below MAX_DEPTH; kept so no input can give a traceback
        raise JsonError(f"{where}: arrays/objects nest too deep to parse") from None


def load(path):
    """loads() of the file `path`; OSError (exit 2) when it cannot be read."""
    with open(path, "rb") as f:
        raw = f.read()
    return loads(raw, path)
