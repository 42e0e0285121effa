"""The Qwen2 family's config reader (`Qwen2ForCausalLM`, model_type qwen2:
Qwen2 and Qwen2.5 dense): a bias on the q, k and v projections (not o), no
q/k norm, plain neox RoPE from `rope_theta`; docs/causal-lm-manifest.md
"Qwen2.5". A present but disabled window (`use_sliding_window: false`, the
published configs) is accepted; an active one is refused.
"""

import hf_config
from decoder_config import ConfigError, parse_geometry, refuse_softcapping
from hf_config import flag, json_type, object_or_null


def parse_qwen2(cfg):
    """A DecoderConfig from a parsed Qwen2 config object. Refused: another
    model_type, rope scaling, `use_sliding_window: true`, logit
    soft-capping, an activation other than silu."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
    model_type = cfg.get("model_type")
    if model_type != "qwen2":
        raise ConfigError(f"config.model_type: expected \"qwen2\", found {hf_config.shown(model_type)}")
    rs = object_or_null(cfg, "rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) != "default":
        raise ConfigError(f"config.rope_scaling: {hf_config.shown(rs)} is not supported for model_type qwen2 "
                          "(supported: null or rope_type \"default\")")
    if flag(cfg, "use_sliding_window", False):
        raise ConfigError("config.use_sliding_window: sliding-window attention is not supported (found true; "
                          "supported: false)")
    refuse_softcapping(cfg)
    return parse_geometry(cfg, "qwen2", qk_norm=False, qkv_bias=True)
