"""Deterministic, readable JSON text for generated manifests.

Rules (so output is byte-identical across runs and machines):
- keys keep the order in which the generator inserted them (dicts are
  ordered); nothing is sorted behind the generator's back;
- 2-space indent; a container is written on one line, `{"a": 1, "b": [1, 2]}`,
  when it nests at most two levels deep (a list of scalars, a list of small
  objects) or when its one-line form fits in WIDTH columns (indent and key
  included); otherwise one member per line;
- floats are written as the shortest decimal that reads back as the same f32
  (manifest floats are f32 literals), always with a '.' or an exponent;
- the text ends with one newline.
"""

import json
import struct

WIDTH = 100


class F32(float):
    """A float to be written as an f32 literal (shortest round-tripping form)."""


def f32_text(value):
    """Shortest `%g` text that parses back to the same f32 as `value`."""
    target = struct.pack("<f", value)
    for precision in range(1, 18):
        text = "%.*g" % (precision, value)
        if struct.pack("<f", float(text)) == target:
            break
    if "." not in text and "e" not in text and "inf" not in text and "nan" not in text:
        text += ".0"
    return text


def _scalar(value):
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f32_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _one_line(value):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_scalar(k)}: {_one_line(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_one_line(v) for v in value) + "]"
    return _scalar(value)


def _depth(value):
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _write(value, indent, prefix_len, out):
    line = _one_line(value)
    if _depth(value) <= 2 or indent + prefix_len + len(line) <= WIDTH:
        out.append(line)
        return
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        out.append("{\n")
        for i, (k, v) in enumerate(value.items()):
            key = f"{_scalar(k)}: "
            out.append(pad + key)
            _write(v, indent + 2, len(key), out)
            out.append(",\n" if i + 1 < len(value) else "\n")
        out.append(" " * indent + "}")
    else:
        out.append("[\n")
        for i, v in enumerate(value):
            out.append(pad)
            _write(v, indent + 2, 0, out)
            out.append(",\n" if i + 1 < len(value) else "\n")
        out.append(" " * indent + "]")


def dumps(value):
    """The document as text, newline-terminated."""
    out = []
    _write(value, 0, 0, out)
    out.append("\n")
    return "".join(out)
