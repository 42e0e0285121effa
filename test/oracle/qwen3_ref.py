"""A numpy model of kern's Qwen3 pipeline on exported weights: the kernels of
docs/kernels.md composed as docs/causal-lm-manifest.md composes them, with every
store rounded to bf16 (nearest-even) exactly where a kernel stores, f32 math
in between. It is not an oracle (we wrote it); it cross-checks the llama.cpp
oracle's setup (GGUF conversion, C program) without kern-run, and estimates
how far bf16 activations move logits from llama.cpp's f32 residual stream.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "provider"))

import safetensors_io as st  # noqa: E402


def bf16(x):
    """Rounds f32 values to bf16 (nearest-even), returned as f32."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


def load_weights(path):
    """name -> f32 array (bf16 values widened exactly)."""
    out = {}
    with st.SafetensorsFile(path) as f:
        for name, (dtype, shape, _, _) in f.tensors.items():
            raw = f.read(name)
            if dtype == "BF16":
                out[name] = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
            else:
                out[name] = np.frombuffer(raw, dtype="<f4").reshape(shape).copy()
    return out


def rmsnorm(x, w, eps):
    x = x.astype(np.float32)
    return bf16(x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps)) * w)


def rope(x, pos, cache, is_neox):
    """x [T, heads, D] bf16 values; rotates in f32 and rounds once."""
    d = x.shape[-1]
    cos = cache[pos, : d // 2][:, None, :]
    sin = cache[pos, d // 2:][:, None, :]
    if is_neox:
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
    else:
        x1, x2 = x[..., 0::2], x[..., 1::2]
    y1, y2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    out = np.empty_like(x)
    if is_neox:
        out[..., : d // 2], out[..., d // 2:] = y1, y2
    else:
        out[..., 0::2], out[..., 1::2] = y1, y2
    return bf16(out)


class Model:
    """Runs prefill/decode over one sequence, keeping a per-layer bf16 KV cache."""

    def __init__(self, cfg, weights, is_neox=True):
        self.c, self.w, self.is_neox = cfg, weights, is_neox
        self.k = [np.zeros((0, cfg.kv_heads, cfg.head_dim), np.float32) for _ in range(cfg.layers)]
        self.v = [np.zeros((0, cfg.kv_heads, cfg.head_dim), np.float32) for _ in range(cfg.layers)]

    def forward(self, ids, with_head):
        """Feeds `ids` at the next positions; returns bf16 logits [T, V] of all rows when with_head."""
        c, w = self.c, self.w
        H, KV, D, eps = c.heads, c.kv_heads, c.head_dim, c.rms_norm_eps
        start = self.k[0].shape[0]
        T = len(ids)
        pos = np.arange(start, start + T)
        residual = w["model.embed_tokens.weight"][np.asarray(ids)]
        proj = None
        for layer in range(c.layers):
            p = f"model.layers.{layer}."
            if proj is not None:
                residual = bf16(residual + proj)
            normed = rmsnorm(residual, w[p + "input_layernorm.weight"], eps)
            qkv = bf16(normed @ w[p + "self_attn.qkv_proj.weight"].T)
            q = rmsnorm(qkv[:, : H * D].reshape(T, H, D), w[p + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(qkv[:, H * D:(H + KV) * D].reshape(T, KV, D), w[p + "self_attn.k_norm.weight"], eps)
            v = qkv[:, (H + KV) * D:].reshape(T, KV, D)
            q = rope(q, pos, w["rope.cos_sin_cache"], self.is_neox)
            k = rope(k, pos, w["rope.cos_sin_cache"], self.is_neox)
            self.k[layer] = np.concatenate([self.k[layer], k])
            self.v[layer] = np.concatenate([self.v[layer], v])
            kk = np.repeat(self.k[layer], H // KV, axis=1)  # [ctx, H, D]
            vv = np.repeat(self.v[layer], H // KV, axis=1)
            scores = np.einsum("thd,chd->htc", q, kk) * np.float32(1.0 / np.sqrt(D))
            ctx = kk.shape[0]
            mask = np.arange(ctx)[None, :] > (pos[:, None])
            scores = np.where(mask[None], -np.inf, scores).astype(np.float32)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            attn = bf16(np.einsum("htc,chd->thd", probs, vv).reshape(T, H * D))
            proj = bf16(attn @ w[p + "self_attn.o_proj.weight"].T)
            residual = bf16(residual + proj)
            normed = rmsnorm(residual, w[p + "post_attention_layernorm.weight"], eps)
            gate_up = bf16(normed @ w[p + "mlp.gate_up_proj.weight"].T)
            g, u = gate_up[:, : c.intermediate], gate_up[:, c.intermediate:]
            act = bf16(g / (1 + np.exp(-g)) * u)
            proj = bf16(act @ w[p + "mlp.down_proj.weight"].T)
        if not with_head:
            return None
        residual = bf16(residual + proj)
        normed = rmsnorm(residual, w["model.norm.weight"], eps)
        return bf16(normed @ w["lm_head.weight"].T)


def greedy(cfg, weights, prompt, steps, is_neox=True):
    """(generated ids, bf16 logits of the step that produced the last id)."""
    m = Model(cfg, weights, is_neox)
    if len(prompt) > 1:
        m.forward(prompt[:-1], with_head=False)
    logits = m.forward(prompt[-1:], with_head=True)[-1]
    ids = [int(np.argmax(logits))]
    while len(ids) < steps:
        logits = m.forward(ids[-1:], with_head=True)[-1]
        ids.append(int(np.argmax(logits)))
    return ids, logits
