"""The Qwen3 family's config reader (`Qwen3ForCausalLM`, model_type qwen3):
a per-head q/k RMSNorm, plain neox RoPE, no biases (docs/causal-lm-manifest.md).
Also re-exports the shared pieces (decoder_config.py) under the names the
Qwen3-only tools and tests have always imported.
"""

import hf_config
from decoder_config import (ConfigError, DecoderConfig, exported_tensors, layer_tensors,  # noqa: F401
                            parse_geometry, refuse_softcapping, rope_cache_bytes, rope_cache_row_bytes)
from hf_config import flag, json_type, object_or_null

Qwen3Config = DecoderConfig


def load_config(path):
    """Parses `path`, a HF Qwen3 config.json (decoder_config.load_config
    reads any supported family). Raises a ContentError, its message
    starting with `path`, on a file that is not UTF-8 JSON with an object at
    the top or a config that is not Qwen3-shaped (parse_config); OSError
    when it cannot be read."""
    return hf_config.load(path, parse_config)


def parse_config(cfg):
    """A DecoderConfig from a parsed Qwen3 config object. Every field read is
    type-checked (hf_config.py); refused: another model_type, rope scaling,
    sliding-window attention, attention biases, logit soft-capping, an
    activation other than silu, heads not divisible by kv heads, an odd
    head_dim."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
    model_type = cfg.get("model_type")
    if model_type != "qwen3":
        raise ConfigError(f"config.model_type: expected \"qwen3\", found {hf_config.shown(model_type)}")
    refuse_qwen3_unsupported(cfg)
    return parse_geometry(cfg, "qwen3")


def refuse_qwen3_unsupported(cfg):
    """Qwen3's refusals, shared with Qwen3-MoE (qwen3_moe_config.py): rope
    scaling, sliding-window attention, attention biases, soft-capping."""
    if object_or_null(cfg, "rope_scaling"):
        raise ConfigError("config.rope_scaling: rope scaling is not supported (plain neox rope only)")
    if flag(cfg, "use_sliding_window", False):
        raise ConfigError("config.use_sliding_window: sliding-window attention is not supported (every layer "
                          "attends to the whole context)")
    if flag(cfg, "attention_bias", False):
        raise ConfigError("config.attention_bias: true is not supported (the exported layout has no biases)")
    refuse_softcapping(cfg)
