"""Typed reads of a Hugging Face config.json's fields, shared by every
model family's config module (qwen3_config.py): each field kern reads is
checked for its JSON type, booleans included ("false", a string, is
refused, never read as Python's truthy bool("false")), and every message
names the field: `config.KEY: expected ..., found VALUE (a TYPE)`.
Standard library only.
"""

import json
import math

import json_in
from tool_io import ContentError


class ConfigError(ContentError):
    """A config.json that is not a config kern can run (exit 1)."""


def json_type(value):
    """The JSON name of a parsed value's type."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


def shown(value):
    """`value` as JSON, cut to 60 characters, and its type: `"false" (a string)`;
    `null` alone."""
    if value is None:
        return "null"
    text = json.dumps(value)
    return f"{text[:60]}{'...' if len(text) > 60 else ''} ({json_type(value)})"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(cfg, key, default=None):
    """cfg[key] (or `default` when absent), a JSON integer > 0."""
    value = cfg.get(key, default)
    if not _is_int(value) or value <= 0:
        raise ConfigError(f"config.{key}: expected a positive integer, found {shown(value)}")
    return value


def positive_number(cfg, key, default):
    """cfg[key] (or `default` when absent), a finite JSON number > 0, as a float."""
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"config.{key}: expected a positive number, found {shown(value)}")
    return float(value)


def flag(cfg, key, default):
    """cfg[key] (or `default` when absent), a JSON boolean: true or false,
    nothing else (no string, number or null)."""
    value = cfg.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"config.{key}: expected true or false, found {shown(value)}")
    return value


def string(cfg, key, default=None):
    """cfg[key] (or `default` when absent), a JSON string."""
    value = cfg.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"config.{key}: expected a string, found {shown(value)}")
    return value


def object_or_null(cfg, key):
    """cfg[key]: a JSON object, {} when absent or null."""
    value = cfg.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"config.{key}: expected an object or null, found {shown(value)}")
    return value


def load(path, parse):
    """parse(the JSON object in `path`); every ConfigError's message starts
    with `path`. json_in's errors (not UTF-8, too deep, invalid) are exit 1
    too; OSError when the file cannot be read."""
    cfg = json_in.load(path)
    try:
        if not isinstance(cfg, dict):
            raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
        return parse(cfg)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
