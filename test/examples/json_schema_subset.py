"""A small JSON Schema (draft 2020-12) validator: exactly the keywords the
upstream manifest schema (shared/reference/kern-manifest-v2.schema.json, read
from beside the checkout, never copied) uses, standard library only.

Supported: $ref (local "#/..."), anyOf, oneOf, const, enum, type (incl.
lists), properties, required, additionalProperties (false or a schema),
items, prefixItems, minItems, maxItems, minimum, maximum, pattern, default
and description (ignored), format (only the integer widths: int32, uint32,
uint8, uint64, int64, uint, float are range-checked). An unknown keyword
raises, so the subset never silently accepts something it does not check.
"""

import re

_IGNORED = {"$schema", "$id", "$defs", "title", "description", "default"}
_FORMAT_RANGES = {
    "int32": (-2**31, 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "uint8": (0, 255),
    "uint64": (0, 2**64 - 1),
    "int64": (-2**63, 2**63 - 1),
    "uint": (0, 2**64 - 1),
}


def _is_type(value, name):
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    raise ValueError(f"unknown type {name}")


class Validator:
    """Validates documents against one root schema; errors are (json pointer, message)."""

    def __init__(self, root):
        self.root = root

    def _resolve(self, ref):
        if not ref.startswith("#/"):
            raise ValueError(f"unsupported $ref {ref}")
        node = self.root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def errors(self, value, schema=None, path=""):
        """All violations as a list of (pointer, message); empty when valid."""
        schema = self.root if schema is None else schema
        out = []
        for key, arg in schema.items():
            if key in _IGNORED:
                continue
            check = getattr(self, "_kw_" + key.lstrip("$"), None)
            if check is None:
                raise ValueError(f"unsupported keyword {key} at schema for {path or '/'}")
            out += check(value, arg, schema, path)
        return out

    def _kw_ref(self, v, arg, _s, path):
        return self.errors(v, self._resolve(arg), path)

    def _kw_anyOf(self, v, arg, _s, path):
        if any(not self.errors(v, sub, path) for sub in arg):
            return []
        return [(path, "matches none of anyOf")]

    def _kw_oneOf(self, v, arg, _s, path):
        n = sum(1 for sub in arg if not self.errors(v, sub, path))
        return [] if n == 1 else [(path, f"matches {n} of oneOf (needs exactly 1)")]

    def _kw_const(self, v, arg, _s, path):
        return [] if v == arg and type(v) is type(arg) else [(path, f"expected {arg!r}")]

    def _kw_enum(self, v, arg, _s, path):
        return [] if v in arg else [(path, f"{v!r} not in {arg}")]

    def _kw_type(self, v, arg, _s, path):
        names = arg if isinstance(arg, list) else [arg]
        return [] if any(_is_type(v, n) for n in names) else [(path, f"expected type {arg}")]

    def _kw_properties(self, v, arg, _s, path):
        if not isinstance(v, dict):
            return []
        out = []
        for k, sub in arg.items():
            if k in v:
                out += self.errors(v[k], sub, f"{path}/{k}")
        return out

    def _kw_required(self, v, arg, _s, path):
        if not isinstance(v, dict):
            return []
        return [(path, f"missing required {k}") for k in arg if k not in v]

    def _kw_additionalProperties(self, v, arg, schema, path):
        if not isinstance(v, dict):
            return []
        known = schema.get("properties", {})
        out = []
        for k, item in v.items():
            if k in known:
                continue
            if arg is False:
                out.append((f"{path}/{k}", "unknown field"))
            elif arg is not True:
                out += self.errors(item, arg, f"{path}/{k}")
        return out

    def _kw_items(self, v, arg, schema, path):
        if not isinstance(v, list):
            return []
        start = len(schema.get("prefixItems", []))
        out = []
        for i in range(start, len(v)):
            out += self.errors(v[i], arg, f"{path}/{i}")
        return out

    def _kw_prefixItems(self, v, arg, _s, path):
        if not isinstance(v, list):
            return []
        out = []
        for i, sub in enumerate(arg[:len(v)]):
            out += self.errors(v[i], sub, f"{path}/{i}")
        return out

    def _kw_minItems(self, v, arg, _s, path):
        return [(path, f"fewer than {arg} items")] if isinstance(v, list) and len(v) < arg else []

    def _kw_maxItems(self, v, arg, _s, path):
        return [(path, f"more than {arg} items")] if isinstance(v, list) and len(v) > arg else []

    def _kw_minimum(self, v, arg, _s, path):
        ok = not _is_type(v, "number") or v >= arg
        return [] if ok else [(path, f"{v} < minimum {arg}")]

    def _kw_maximum(self, v, arg, _s, path):
        ok = not _is_type(v, "number") or v <= arg
        return [] if ok else [(path, f"{v} > maximum {arg}")]

    def _kw_pattern(self, v, arg, _s, path):
        ok = not isinstance(v, str) or re.search(arg, v) is not None
        return [] if ok else [(path, f"{v!r} does not match {arg}")]

    def _kw_format(self, v, arg, _s, path):
        if arg in ("float", "double") or not _is_type(v, "integer"):
            return []
        lo, hi = _FORMAT_RANGES[arg]
        return [] if lo <= v <= hi else [(path, f"{v} out of {arg} range")]
