"""Reads a Hugging Face Qwen3 `config.json` into the few numbers kern's tools
need (docs/causal-lm-manifest.md), and computes the rope cos/sin cache.

Shared by gen_qwen3_manifest.py, gen_random_weights.py, export_qwen3.py and
convert_hf.py. Standard library only. Every field it reads is type-checked
(hf_config.py, shared with later families); what it does not read: anything
that does not change the exported layout or the manifest (tokenizer fields,
torch_dtype, ...).
"""

import math
import struct
from dataclasses import dataclass

import hf_config
from hf_config import ConfigError, flag, json_type, object_or_null, positive_int, positive_number, string


@dataclass(frozen=True)
class Qwen3Config:
    """Model geometry, in elements. E = hidden, H = query heads, KV = kv heads,
    D = head_dim, I = intermediate, V = vocab, L = layers."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    max_position: int
    rope_theta: float
    rms_norm_eps: float
    tie_word_embeddings: bool

    @property
    def qkv_rows(self):
        """Rows of the merged qkv projection: (H + 2 KV) D."""
        return (self.heads + 2 * self.kv_heads) * self.head_dim


def load_config(path):
    """Parses `path` (a HF Qwen3 config.json). Raises a ContentError, its
    message starting with `path`, on a file that is not UTF-8 JSON with an
    object at the top (json_in.py: nesting, NaN, duplicate keys included),
    or a config that is not Qwen3-shaped (parse_config); OSError when it
    cannot be read."""
    return hf_config.load(path, parse_config)


def parse_config(cfg):
    """A Qwen3Config from a parsed JSON object. Every field read is
    type-checked (hf_config.py); refused: another model_type, rope scaling,
    sliding-window attention, attention biases, an activation other than
    silu, heads not divisible by kv heads, an odd head_dim."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
    model_type = cfg.get("model_type")
    if model_type != "qwen3":
        raise ConfigError(f"config.model_type: expected \"qwen3\", found {hf_config.shown(model_type)}")
    if object_or_null(cfg, "rope_scaling"):
        raise ConfigError("config.rope_scaling: rope scaling is not supported (plain neox rope only)")
    if flag(cfg, "use_sliding_window", False):
        raise ConfigError("config.use_sliding_window: sliding-window attention is not supported (every layer "
                          "attends to the whole context)")
    if flag(cfg, "attention_bias", False):
        raise ConfigError("config.attention_bias: true is not supported (the exported layout has no biases)")
    if string(cfg, "hidden_act", "silu") != "silu":
        raise ConfigError(f"config.hidden_act: expected \"silu\", found {hf_config.shown(cfg['hidden_act'])}")
    hidden = positive_int(cfg, "hidden_size")
    heads = positive_int(cfg, "num_attention_heads")
    kv_heads = positive_int(cfg, "num_key_value_heads", heads)
    if heads % kv_heads != 0:
        raise ConfigError(f"config.num_attention_heads: {heads} is not a multiple of "
                          f"num_key_value_heads {kv_heads}")
    head_dim = positive_int(cfg, "head_dim", hidden // heads if hidden % heads == 0 else None)
    if head_dim % 2 != 0:
        raise ConfigError(f"config.head_dim: {head_dim} is odd (rope rotates pairs)")
    return Qwen3Config(
        hidden=hidden,
        layers=positive_int(cfg, "num_hidden_layers"),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=positive_int(cfg, "intermediate_size"),
        vocab=positive_int(cfg, "vocab_size"),
        max_position=positive_int(cfg, "max_position_embeddings"),
        rope_theta=positive_number(cfg, "rope_theta", 10000.0),
        rms_norm_eps=positive_number(cfg, "rms_norm_eps", 1e-6),
        tie_word_embeddings=flag(cfg, "tie_word_embeddings", False),
    )


def rope_cache_row_bytes(cfg, position):
    """Row `position` of `rope.cos_sin_cache` as little-endian f32 bytes:
    `cos[0..D/2) | sin[0..D/2)` of `position * theta^(-2i/D)`, computed in
    float64 and rounded once to f32 (docs/kernels.md, rope)."""
    half = cfg.head_dim // 2
    angles = [position * cfg.rope_theta ** (-2.0 * i / cfg.head_dim) for i in range(half)]
    return struct.pack(f"<{2 * half}f", *([math.cos(a) for a in angles] + [math.sin(a) for a in angles]))


def rope_cache_bytes(cfg):
    """Yields the whole `rope.cos_sin_cache` [max_position, D] f32, one row at a time."""
    for p in range(cfg.max_position):
        yield rope_cache_row_bytes(cfg, p)


def exported_tensors(cfg):
    """The exported layout (docs/causal-lm-manifest.md, Weights) in file order as
    (name, safetensors dtype, shape). f32 tensors come first so that every
    tensor starts at a multiple of its element size in a hole-free file."""
    E, D, V = cfg.hidden, cfg.head_dim, cfg.vocab
    out = [("rope.cos_sin_cache", "F32", [cfg.max_position, D]), ("k_scale", "F32", [1]), ("v_scale", "F32", [1]),
           ("model.embed_tokens.weight", "BF16", [V, E])]
    for layer in range(cfg.layers):
        out += layer_tensors(cfg, f"model.layers.{layer}.")
    out += [("model.norm.weight", "BF16", [E]), ("lm_head.weight", "BF16", [V, E])]
    return out


def layer_tensors(cfg, prefix):
    """(name, safetensors dtype, shape) of one decoder layer's tensors under
    `prefix` (e.g. "model.layers.3."), with qkv_proj and gate_up_proj merged."""
    E, D, I = cfg.hidden, cfg.head_dim, cfg.intermediate
    return [(prefix + "input_layernorm.weight", "BF16", [E]),
            (prefix + "self_attn.qkv_proj.weight", "BF16", [cfg.qkv_rows, E]),
            (prefix + "self_attn.q_norm.weight", "BF16", [D]),
            (prefix + "self_attn.k_norm.weight", "BF16", [D]),
            (prefix + "self_attn.o_proj.weight", "BF16", [E, cfg.heads * D]),
            (prefix + "post_attention_layernorm.weight", "BF16", [E]),
            (prefix + "mlp.gate_up_proj.weight", "BF16", [2 * I, E]),
            (prefix + "mlp.down_proj.weight", "BF16", [E, I])]
