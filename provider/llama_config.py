"""The Llama family's config reader: `LlamaForCausalLM` (model_type llama:
Llama 3.x) and `MistralForCausalLM` (model_type mistral) where its config is
a Llama one. No q/k norm, no biases, neox RoPE (HF's rotate_half on its q/k
layout) with `rope_theta` and optionally `rope_scaling` of rope_type llama3
folded into the cos/sin cache (decoder_config.inv_freq);
docs/causal-lm-manifest.md "Llama 3.x and Mistral".
"""

import hf_config
from decoder_config import ConfigError, RopeLlama3, parse_geometry, refuse_softcapping
from hf_config import flag, json_type, object_or_null, positive_int, positive_number


def rope_llama3(cfg):
    """The RopeLlama3 of cfg.rope_scaling, or None when it is absent, null,
    empty or of rope_type default. Refused: any other rope_type (linear,
    dynamic, yarn, longrope, ...), and llama3 fields that are missing or
    not positive numbers, or high_freq_factor <= low_freq_factor."""
    rs = object_or_null(cfg, "rope_scaling")
    if not rs:
        return None
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "default":
        return None
    if kind != "llama3":
        raise ConfigError(f"config.rope_scaling.rope_type: {hf_config.shown(kind)} is not supported (supported: "
                          "\"default\", \"llama3\", or no rope_scaling)")
    def number(key):
        try:
            return positive_number(rs, key, None)
        except ConfigError as e:
            raise ConfigError(str(e).replace("config.", "config.rope_scaling.", 1)) from None
    factor, low, high = number("factor"), number("low_freq_factor"), number("high_freq_factor")
    try:
        original = positive_int(rs, "original_max_position_embeddings")
    except ConfigError as e:
        raise ConfigError(str(e).replace("config.", "config.rope_scaling.", 1)) from None
    if high <= low:
        raise ConfigError(f"config.rope_scaling.high_freq_factor: {high:g} must exceed low_freq_factor {low:g}")
    return RopeLlama3(factor, low, high, original)


def common(cfg, model_type):
    """The checks and fields Llama and Mistral share; refuses biases
    (attention_bias, mlp_bias), logit soft-capping and another model_type."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
    found = cfg.get("model_type")
    if found != model_type:
        raise ConfigError(f"config.model_type: expected \"{model_type}\", found {hf_config.shown(found)}")
    for key in ("attention_bias", "mlp_bias"):
        if flag(cfg, key, False):
            raise ConfigError(f"config.{key}: true is not supported for model_type {model_type} (supported: false)")
    refuse_softcapping(cfg)
    return rope_llama3(cfg)


def parse_llama(cfg):
    """A DecoderConfig from a parsed Llama config object (Llama 2, 3, 3.1,
    3.2 geometries)."""
    rope = common(cfg, "llama")
    return parse_geometry(cfg, "llama", qk_norm=False, rope_llama3=rope)


def parse_mistral(cfg):
    """A DecoderConfig from a parsed Mistral config object whose attention is
    a Llama one: `sliding_window` null or absent (Mistral 7B v0.1's 4096
    window is refused: every layer here attends to the whole context)."""
    rope = common(cfg, "mistral")
    window = cfg.get("sliding_window")
    if window is not None:
        raise ConfigError(f"config.sliding_window: sliding-window attention is not supported (found "
                          f"{hf_config.shown(window)}; supported: null)")
    return parse_geometry(cfg, "mistral", qk_norm=False, rope_llama3=rope)
