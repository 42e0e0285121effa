"""The geometry of a decoder-only transformer (a causal LM) read from a
Hugging Face `config.json`: the few numbers kern's provider tools need
(docs/causal-lm-manifest.md), the exported weight layout, and the rope
cos/sin cache. One reader per family (`qwen3_config.py`, `llama_config.py`)
turns its config into a DecoderConfig; `load_config` picks the family from
`architectures` (else `model_type`) and refuses an unknown one by name.

Shared by gen_manifest.py, gen_random_weights.py, export_qwen3.py and
convert_hf.py. Standard library only. Every field a reader reads is
type-checked (hf_config.py); what none reads: anything that does not change
the exported layout or the manifest (tokenizer fields, torch_dtype, ...).
"""

import math
import struct
from dataclasses import dataclass

import hf_config
from hf_config import ConfigError, json_type


@dataclass(frozen=True)
class RopeLlama3:
    """`rope_scaling` with `rope_type: "llama3"` (HF transformers
    `_compute_llama3_parameters`): frequencies whose wavelength exceeds
    original_max_position / low_freq_factor are divided by `factor`, those
    below original_max_position / high_freq_factor kept, and those between
    interpolated."""

    factor: float
    low_freq_factor: float
    high_freq_factor: float
    original_max_position: int


@dataclass(frozen=True)
class DecoderConfig:
    """Model geometry, in elements. E = hidden, H = query heads, KV = kv heads,
    D = head_dim, I = intermediate, V = vocab, L = layers. `family` names the
    reader (and the manifest's default label); `qk_norm`: a per-head RMSNorm
    on q and k before RoPE (Qwen3), absent in Llama; `qkv_bias`: a bias on the
    q, k and v projections (Qwen2), merged as `self_attn.qkv_proj.bias`;
    `rope_llama3`: None for
    plain RoPE; `eos_token_ids`: the config's eos_token_id (one or a list)."""

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
    family: str = "qwen3"
    qk_norm: bool = True
    qkv_bias: bool = False
    rope_llama3: RopeLlama3 = None
    eos_token_ids: tuple = ()
    # Mixture of experts (Qwen3-MoE; 0 / () for a dense model): experts per
    # sparse layer, experts per token (top-k), each expert's intermediate
    # size, whether the top-k weights are renormalised to sum 1, and the
    # sparse layers' indices (the others have the dense MLP of `intermediate`).
    experts: int = 0
    experts_per_tok: int = 0
    moe_intermediate: int = 0
    norm_topk_prob: bool = False
    moe_layers: tuple = ()

    @property
    def qkv_rows(self):
        """Rows of the merged qkv projection: (H + 2 KV) D."""
        return (self.heads + 2 * self.kv_heads) * self.head_dim

    def is_moe(self, layer):
        """Whether decoder layer `layer` has the sparse (mixture-of-experts) MLP."""
        return layer in self.moe_layers


def families():
    """{architectures string: (model_type, parse(cfg) -> DecoderConfig)} of
    every family the tools implement (imported here: the readers import this
    module)."""
    import llama_config
    import qwen2_config
    import qwen3_config
    import qwen3_moe_config
    return {"Qwen3ForCausalLM": ("qwen3", qwen3_config.parse_config),
            "Qwen3MoeForCausalLM": ("qwen3_moe", qwen3_moe_config.parse_qwen3_moe),
            "LlamaForCausalLM": ("llama", llama_config.parse_llama),
            "MistralForCausalLM": ("mistral", llama_config.parse_mistral),
            "Qwen2ForCausalLM": ("qwen2", qwen2_config.parse_qwen2)}


def load_config(path):
    """Parses `path` (a HF config.json of a supported family). Raises a
    ContentError, its message starting with `path`, on a file that is not
    UTF-8 JSON with an object at the top (json_in.py: nesting, NaN,
    duplicate keys included), an unknown architecture, or a config its
    family's reader refuses; OSError when it cannot be read."""
    return hf_config.load(path, parse_config)


def parse_config(cfg):
    """A DecoderConfig from a parsed config object: the family is
    `architectures[0]` when the field is there, else the one whose
    `model_type` the config names."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"expected a JSON object at the top level, found {json_type(cfg)}")
    known = families()
    supported = ", ".join(known)
    if "architectures" in cfg:
        archs = cfg["architectures"]
        if not isinstance(archs, list) or len(archs) != 1 or not isinstance(archs[0], str):
            raise ConfigError(f"config.architectures: expected an array of one string, found {hf_config.shown(archs)}")
        if archs[0] not in known:
            raise ConfigError(f"config.architectures: {archs[0]} is not supported (supported: {supported})")
        return known[archs[0]][1](cfg)
    by_type = {model_type: parse for model_type, parse in known.values()}
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or model_type not in by_type:
        raise ConfigError(f"config.model_type: {hf_config.shown(model_type)} is not a supported model type and the "
                          f"config has no architectures (supported: {', '.join(by_type)})")
    return by_type[model_type](cfg)


def eos_token_ids(cfg):
    """The config's eos_token_id as a tuple: absent or null (), a
    non-negative integer, or an array of them (Llama 3 lists three)."""
    value = cfg.get("eos_token_id")
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError(f"config.eos_token_id: expected a token id or an array of them, found "
                              f"{hf_config.shown(value)}")
    return tuple(items)


def inv_freq(cfg):
    """The D/2 rotary frequencies in float64: theta^(-2i/D), then the
    llama3 scaling of `cfg.rope_llama3` as HF transformers applies it
    (`_compute_llama3_parameters`: wavelength 2 pi / f against
    original_max_position / low_freq_factor and / high_freq_factor)."""
    half = cfg.head_dim // 2
    freqs = [cfg.rope_theta ** (-2.0 * i / cfg.head_dim) for i in range(half)]
    s = cfg.rope_llama3
    if s is None:
        return freqs
    low_wavelen = s.original_max_position / s.low_freq_factor
    high_wavelen = s.original_max_position / s.high_freq_factor
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(f)
        elif wavelen > low_wavelen:
            out.append(f / s.factor)
        else:
            smooth = (s.original_max_position / wavelen - s.low_freq_factor) / (s.high_freq_factor -
                                                                                s.low_freq_factor)
            out.append((1 - smooth) * f / s.factor + smooth * f)
    return out


def rope_cache_row_bytes(cfg, position, freqs=None):
    """Row `position` of `rope.cos_sin_cache` as little-endian f32 bytes:
    `cos[0..D/2) | sin[0..D/2)` of `position * inv_freq(cfg)[i]`, computed
    in float64 and rounded once to f32 (docs/kernels.md, rope). `freqs`:
    inv_freq(cfg), when the caller has it."""
    half = cfg.head_dim // 2
    freqs = inv_freq(cfg) if freqs is None else freqs
    angles = [position * freqs[i] for i in range(half)]
    return struct.pack(f"<{2 * half}f", *([math.cos(a) for a in angles] + [math.sin(a) for a in angles]))


def rope_cache_bytes(cfg):
    """Yields the whole `rope.cos_sin_cache` [max_position, D] f32, one row at a time."""
    freqs = inv_freq(cfg)
    for p in range(cfg.max_position):
        yield rope_cache_row_bytes(cfg, p, freqs)


def exported_tensors(cfg):
    """The exported layout (docs/causal-lm-manifest.md, Weights) in file order as
    (name, safetensors dtype, shape). f32 tensors come first so that every
    tensor starts at a multiple of its element size in a hole-free file."""
    E, D, V = cfg.hidden, cfg.head_dim, cfg.vocab
    out = [("rope.cos_sin_cache", "F32", [cfg.max_position, D]), ("k_scale", "F32", [1]), ("v_scale", "F32", [1]),
           ("model.embed_tokens.weight", "BF16", [V, E])]
    for layer in range(cfg.layers):
        out += layer_tensors(cfg, f"model.layers.{layer}.", cfg.is_moe(layer))
    out += [("model.norm.weight", "BF16", [E]), ("lm_head.weight", "BF16", [V, E])]
    return out


def layer_tensors(cfg, prefix, moe=False):
    """(name, safetensors dtype, shape) of one decoder layer's tensors under
    `prefix` (e.g. "model.layers.3."), with qkv_proj and gate_up_proj merged;
    q_norm / k_norm and the qkv bias only for a family that has them. A
    sparse layer (`moe`) has the router `mlp.gate.weight [X, E]` and every
    expert stacked: `mlp.experts.gate_up_proj.weight [X, 2 I, E]` (expert x's
    gate rows, then its up rows) and `mlp.experts.down_proj.weight [X, E, I]`
    (X experts, I = moe_intermediate) in place of the dense MLP."""
    E, D, I = cfg.hidden, cfg.head_dim, cfg.intermediate
    qk_norm = [(prefix + "self_attn.q_norm.weight", "BF16", [D]),
               (prefix + "self_attn.k_norm.weight", "BF16", [D])] if cfg.qk_norm else []
    bias = [(prefix + "self_attn.qkv_proj.bias", "BF16", [cfg.qkv_rows])] if cfg.qkv_bias else []
    return [(prefix + "input_layernorm.weight", "BF16", [E]),
            (prefix + "self_attn.qkv_proj.weight", "BF16", [cfg.qkv_rows, E]),
            *bias,
            *qk_norm,
            (prefix + "self_attn.o_proj.weight", "BF16", [E, cfg.heads * D]),
            (prefix + "post_attention_layernorm.weight", "BF16", [E]),
            *(moe_mlp_tensors(cfg, prefix) if moe else
              [(prefix + "mlp.gate_up_proj.weight", "BF16", [2 * I, E]),
               (prefix + "mlp.down_proj.weight", "BF16", [E, I])])]


def moe_mlp_tensors(cfg, prefix):
    """The sparse MLP's tensors of layer_tensors: router, stacked experts."""
    E, X, I = cfg.hidden, cfg.experts, cfg.moe_intermediate
    return [(prefix + "mlp.gate.weight", "BF16", [X, E]),
            (prefix + "mlp.experts.gate_up_proj.weight", "BF16", [X, 2 * I, E]),
            (prefix + "mlp.experts.down_proj.weight", "BF16", [X, E, I])]


def parse_geometry(cfg, family, **extra):
    """The DecoderConfig of the fields every family shares, each
    type-checked (hf_config.py): hidden_size, num_hidden_layers, heads (any
    count, kv heads dividing them), head_dim (from the config or
    hidden_size / num_attention_heads; even: rope rotates pairs),
    intermediate_size, vocab_size, max_position_embeddings, rope_theta,
    rms_norm_eps, tie_word_embeddings, eos_token_id; a hidden_act other
    than silu is refused. `extra`: the family's own fields."""
    from hf_config import flag, positive_int, positive_number, string
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
    return DecoderConfig(
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
        family=family,
        eos_token_ids=eos_token_ids(cfg),
        **extra)


def refuse_softcapping(cfg):
    """Logit soft-capping (Gemma 2's `final_logit_softcapping`,
    `attn_logit_softcapping`) changes the logits or the attention scores:
    refused when set."""
    for key in ("final_logit_softcapping", "attn_logit_softcapping"):
        if cfg.get(key) is not None:
            raise ConfigError(f"config.{key}: logit soft-capping is not supported (found "
                              f"{hf_config.shown(cfg[key])}; supported: null or absent)")
