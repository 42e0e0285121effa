#!/usr/bin/python3
"""gguf_from_exported.py CONFIG.json EXPORTED.safetensors -o MODEL.gguf --gguf-py DIR

Converts kern's exported weights (docs/causal-lm-manifest.md) of a Qwen3,
Qwen3-MoE (`qwen3moe`: ffn_gate_inp F32 [X, E], ffn_{gate,up}_exps [X, I, E],
ffn_down_exps [X, E, I]; every layer sparse, norm_topk_prob true, as
llama.cpp's qwen3moe assumes),
Qwen2 or Llama / Mistral config into a llama.cpp `qwen3`, `qwen2` (q, k, v
biases as F32 `attn_{q,k,v}.bias`) or `llama` GGUF for the
oracle (oracles.md): matrices BF16 (a byte copy), norms F32 (bf16 widened
exactly), `tokenizer.ggml.model = none` with the vocab size in
`ARCH.vocab_size`. For `llama`, as llama.cpp's own converter does: the q and
k rows are permuted from HF's rotate_half layout to llama.cpp's interleaved
RoPE pairs (LlamaModel.permute), and llama3 rope scaling becomes the
`rope_freqs.weight` factors (LlamaModel.generate_extra_tensors), computed
here from the config, not from kern's cache. The merged tensors are split back by
rows: qkv_proj -> attn_q [H D], attn_k [KV D], attn_v [KV D]; gate_up_proj ->
ffn_gate [I], ffn_up [I]; lm_head -> output. The rope cache and kv scales are
not carried: llama.cpp computes rope itself from `rope.freq_base` (which is
the point: an independent implementation).

Uses llama.cpp's own GGUF writer (gguf-py from the bundle, --gguf-py) and numpy.
"""

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "provider"))

import safetensors_io as st  # noqa: E402
from decoder_config import load_config  # noqa: E402


def bf16_rows(f, name):
    """The bf16 tensor `name` as a 2-D uint16 array of raw bits (rows, cols)."""
    dtype, shape, _, _ = f.tensors[name]
    if dtype != "BF16" or len(shape) != 2:
        raise ValueError(f"{name}: expected a 2-D BF16 tensor, found {dtype} {shape}")
    return np.frombuffer(f.read(name), dtype="<u2").reshape(shape)


def bf16_stack(f, name):
    """The stacked-experts bf16 tensor `name` [X, rows, cols] as raw uint16 bits."""
    dtype, shape, _, _ = f.tensors[name]
    if dtype != "BF16" or len(shape) != 3:
        raise ValueError(f"{name}: expected a 3-D BF16 tensor, found {dtype} {shape}")
    return np.frombuffer(f.read(name), dtype="<u2").reshape(shape)


def bf16_to_f32(f, name):
    dtype, shape, _, _ = f.tensors[name]
    if dtype != "BF16":
        raise ValueError(f"{name}: expected BF16, found {dtype}")
    bits = np.frombuffer(f.read(name), dtype="<u2").astype(np.uint32) << 16
    return bits.view(np.float32).reshape(shape)


def permute(rows, heads):
    """llama.cpp's LlamaModel.permute: each head's rows from HF's halves
    (i, i + D/2) to interleaved pairs (2i, 2i + 1)."""
    return rows.reshape(heads, 2, rows.shape[0] // heads // 2, rows.shape[1]).swapaxes(1, 2).reshape(rows.shape)


def llama3_rope_factors(c):
    """llama.cpp's LlamaModel rope_freqs: per frequency, the divisor of
    theta^(-2i/D) (1, factor, or the interpolation's), f32 [D/2]."""
    s = c.rope_llama3
    low_wavelen = s.original_max_position / s.low_freq_factor
    high_wavelen = s.original_max_position / s.high_freq_factor
    out = []
    for i in range(0, c.head_dim, 2):
        freq = 1.0 / (c.rope_theta ** (i / c.head_dim))
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(s.factor)
        else:
            smooth = (s.original_max_position / wavelen - s.low_freq_factor) / (s.high_freq_factor -
                                                                                s.low_freq_factor)
            out.append(1 / ((1 - smooth) / s.factor + smooth))
    return np.array(out, dtype=np.float32)


def convert(config_path, weights_path, out_path, gguf_py):
    sys.path.insert(0, gguf_py)
    import gguf  # noqa: E402  (llama.cpp's writer, from the bundle)

    c = load_config(config_path)
    H, KV, D, I = c.heads, c.kv_heads, c.head_dim, c.intermediate
    arch = ("qwen3moe" if c.moe_layers else "qwen3") if c.qk_norm else "qwen2" if c.qkv_bias else "llama"
    if c.moe_layers and (len(c.moe_layers) != c.layers or not c.norm_topk_prob):
        # llama.cpp's qwen3moe makes every layer sparse and always renormalises the top-k weights.
        raise ValueError("llama.cpp's qwen3moe needs every layer sparse and norm_topk_prob: true")
    w = gguf.GGUFWriter(out_path, arch)
    w.add_name("kern-oracle")
    w.add_vocab_size(c.vocab)
    w.add_context_length(c.max_position)
    w.add_embedding_length(c.hidden)
    w.add_feed_forward_length(I)
    if c.moe_layers:
        w.add_expert_count(c.experts)
        w.add_expert_used_count(c.experts_per_tok)
        w.add_expert_feed_forward_length(c.moe_intermediate)
    w.add_block_count(c.layers)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_rope_freq_base(c.rope_theta)
    w.add_rope_dimension_count(D)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    w.add_tokenizer_model("none")

    bf16 = gguf.GGMLQuantizationType.BF16

    def matrix(gguf_name, bits):
        # uint8 bytes + raw_dtype: gguf-py turns the byte shape into elements.
        w.add_tensor(gguf_name, np.ascontiguousarray(bits).view(np.uint8), raw_dtype=bf16)

    with st.SafetensorsFile(weights_path) as f:
        matrix("token_embd.weight", bf16_rows(f, "model.embed_tokens.weight"))
        for layer in range(c.layers):
            p, b = f"model.layers.{layer}.", f"blk.{layer}."
            qkv = bf16_rows(f, p + "self_attn.qkv_proj.weight")
            gate_up = None if c.is_moe(layer) else bf16_rows(f, p + "mlp.gate_up_proj.weight")
            w.add_tensor(b + "attn_norm.weight", bf16_to_f32(f, p + "input_layernorm.weight"))
            q, k = qkv[:H * D], qkv[H * D:(H + KV) * D]
            if arch == "llama":
                q, k = permute(q, H), permute(k, KV)
            matrix(b + "attn_q.weight", q)
            matrix(b + "attn_k.weight", k)
            matrix(b + "attn_v.weight", qkv[(H + KV) * D:])
            if c.qkv_bias:  # qwen2: f32 biases, split as the rows
                bias = bf16_to_f32(f, p + "self_attn.qkv_proj.bias")
                w.add_tensor(b + "attn_q.bias", np.ascontiguousarray(bias[:H * D]))
                w.add_tensor(b + "attn_k.bias", np.ascontiguousarray(bias[H * D:(H + KV) * D]))
                w.add_tensor(b + "attn_v.bias", np.ascontiguousarray(bias[(H + KV) * D:]))
            if c.qk_norm:
                w.add_tensor(b + "attn_q_norm.weight", bf16_to_f32(f, p + "self_attn.q_norm.weight"))
                w.add_tensor(b + "attn_k_norm.weight", bf16_to_f32(f, p + "self_attn.k_norm.weight"))
            matrix(b + "attn_output.weight", bf16_rows(f, p + "self_attn.o_proj.weight"))
            w.add_tensor(b + "ffn_norm.weight", bf16_to_f32(f, p + "post_attention_layernorm.weight"))
            if c.is_moe(layer):  # qwen3moe: the router (F32, as llama.cpp's converter keeps it) and stacked experts
                MI = c.moe_intermediate
                w.add_tensor(b + "ffn_gate_inp.weight", bf16_to_f32(f, p + "mlp.gate.weight"))
                experts = bf16_stack(f, p + "mlp.experts.gate_up_proj.weight")  # [X, 2 MI, E]
                matrix(b + "ffn_gate_exps.weight", experts[:, :MI])
                matrix(b + "ffn_up_exps.weight", experts[:, MI:])
                matrix(b + "ffn_down_exps.weight", bf16_stack(f, p + "mlp.experts.down_proj.weight"))
            else:
                matrix(b + "ffn_gate.weight", gate_up[:I])
                matrix(b + "ffn_up.weight", gate_up[I:])
                matrix(b + "ffn_down.weight", bf16_rows(f, p + "mlp.down_proj.weight"))
        w.add_tensor("output_norm.weight", bf16_to_f32(f, "model.norm.weight"))
        if c.rope_llama3 is not None:
            w.add_tensor("rope_freqs.weight", llama3_rope_factors(c))
        matrix("output.weight", bf16_rows(f, "lm_head.weight"))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
    w.close()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("config")
    ap.add_argument("weights")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory (from the bundle)")
    args = ap.parse_args(argv)
    convert(args.config, args.weights, args.output, args.gguf_py)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
