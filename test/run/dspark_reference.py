"""An independent numpy reference of a DSpark draft round (SPEC §8,
docs/speculative.md), written from the public definitions (Qwen3; DFlash's
`dflash/model.py`: fc over the concatenated tapped layer outputs,
hidden_norm, draft layers whose k/v run over [context; block] with
non-causal attention, final norm, the target's lm_head; DSpark's Markov
chain), reading kern's exported weights (the same file kern-run reads).

It shares no code with kern: plain f32 numpy math, rounded to bf16 where a
kern kernel stores bf16 (docs/kernels.md: every kernel output is one bf16
rounding of f32 math), so kern-run and this reference differ only by f32
summation order and by where the fused decode kernels skip a rounding.
`causal=True` or `tap_shift=-1` give the deliberately broken drafts the
test must reject.
"""

import numpy as np


def bf16(x):
    """Round an f32 array to bf16 (nearest-even), kept in f32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return (u & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


class Weights:
    """Exported tensors by name as f32 arrays (bf16 widened exactly)."""

    def __init__(self, st_module, path):
        self._f = st_module.SafetensorsFile(path)

    def __call__(self, name):
        dtype, shape, _, _ = self._f.tensors[name]
        raw = self._f.read(name)
        if dtype == "BF16":
            return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
        assert dtype == "F32", name
        return np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float32)

    def close(self):
        self._f.close()


class Geometry:
    def __init__(self, cfg):
        self.E, self.H, self.KV, self.D = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim
        self.I, self.V, self.eps = cfg.intermediate, cfg.vocab, np.float32(cfg.rms_norm_eps)


def rmsnorm(x, w, eps):
    """bf16(x / sqrt(mean(x^2) + eps) * w) per row of the last axis."""
    x = x.astype(np.float32)
    inv = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32) + eps)
    return bf16(x * inv * w)


def matmul(a, w):
    """bf16(a @ w^T), f32 accumulation (w is [n, k])."""
    return bf16(a.astype(np.float32) @ w.T.astype(np.float32))


def rope(x, positions, cache):
    """Neox RoPE of x [T, heads, D] at `positions` with rows cos | sin."""
    half = x.shape[-1] // 2
    cos = cache[positions, :half][:, None, :]
    sin = cache[positions, half:][:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return bf16(np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1))


def attention(q, k, v, g, causal_from=None):
    """q [T, H, D], k/v [N, KV, D]; query t sees keys [0, N) (non-causal) or
    [0, causal_from + t] (causal). Returns bf16 [T, H * D]."""
    T, N = q.shape[0], k.shape[0]
    out = np.zeros((T, g.H, g.D), np.float32)
    group = g.H // g.KV
    for t in range(T):
        n = N if causal_from is None else causal_from + t + 1
        for h in range(g.H):
            kv = h // group
            s = (k[:n, kv, :] @ q[t, h, :]) * np.float32(1.0 / np.sqrt(g.D))
            p = np.exp(s - s.max())
            out[t, h] = (p @ v[:n, kv, :]) / p.sum()
    return bf16(out.reshape(T, g.H * g.D))


def mlp(x, w, p, g):
    gu = matmul(x, w(p + "mlp.gate_up_proj.weight"))
    gate, up = gu[:, :g.I], gu[:, g.I:]
    return matmul(bf16(gate / (1.0 + np.exp(-gate)) * up), w(p + "mlp.down_proj.weight"))


def layer(x_residual, proj, w, p, g, positions, cache, kv_source=None, causal_from=None):
    """One Qwen3 decoder layer on [T, E]: returns (residual, proj_out, k, v),
    the layer's output being bf16(residual + proj_out). `kv_source` (ctx k, v)
    is prepended to the keys and values (the DFlash draft); `causal_from`
    makes the attention causal from that key index."""
    residual = x_residual if proj is None else bf16(x_residual + proj)
    x = rmsnorm(residual, w(p + "input_layernorm.weight"), g.eps)
    qkv = matmul(x, w(p + "self_attn.qkv_proj.weight"))
    T = x.shape[0]
    q = qkv[:, :g.H * g.D].reshape(T, g.H, g.D)
    k = qkv[:, g.H * g.D:(g.H + g.KV) * g.D].reshape(T, g.KV, g.D)
    v = qkv[:, (g.H + g.KV) * g.D:].reshape(T, g.KV, g.D)
    q = rope(rmsnorm(q, w(p + "self_attn.q_norm.weight"), g.eps), positions, cache)
    k = rope(rmsnorm(k, w(p + "self_attn.k_norm.weight"), g.eps), positions, cache)
    keys, values = k, v
    if kv_source is not None:
        keys, values = np.concatenate([kv_source[0], k]), np.concatenate([kv_source[1], v])
    att = attention(q, keys, values, g, causal_from)
    proj = matmul(att, w(p + "self_attn.o_proj.weight"))
    residual = bf16(residual + proj)
    x = rmsnorm(residual, w(p + "post_attention_layernorm.weight"), g.eps)
    return residual, mlp(x, w, p, g), k, v


def target_taps(w, g, cfg_layers, ids, taps):
    """The target over `ids` (positions 0..): the output of every layer in
    `taps` ([T, E] each); layer -1 is the embedding (the broken draft's
    off-by-one: a layer's input instead of its output)."""
    cache = w("rope.cos_sin_cache")
    positions = np.arange(len(ids))
    h = w("model.embed_tokens.weight")[np.asarray(ids)]
    outputs = {-1: h}
    residual, proj = h, None
    for layer_index in range(cfg_layers):
        residual, proj, _, _ = layer(residual, proj, w, f"model.layers.{layer_index}.", g, positions, cache,
                                     causal_from=0)
        outputs[layer_index] = bf16(residual + proj)
    return [outputs[t] for t in taps]


def draft_round(w, g, cfg_layers, draft, context_ids, anchor, causal=False, tap_shift=0):
    """The draft pass + Markov chain at anchor position len(context_ids):
    returns (logits [block, V] as kern's draft_logits holds them after the
    chain: row 0 the anchor's base logits, row i + 1 base + Markov of drafted
    row i; drafted ids [block - 1])."""
    n, B = len(context_ids), draft.block
    cache = w("rope.cos_sin_cache")
    taps = target_taps(w, g, cfg_layers, context_ids, [t + tap_shift for t in draft.taps])
    fc_out = matmul(taps[0], w("draft.fc.0.weight"))
    for j in range(1, len(taps)):
        fc_out = bf16(fc_out + taps[j] @ w(f"draft.fc.{j}.weight").T)
    ctx = rmsnorm(fc_out, w("draft.hidden_norm.weight"), g.eps)
    ctx_pos, blk_pos = np.arange(n), np.arange(n, n + B)
    h = w("model.embed_tokens.weight")[np.asarray([anchor] + [draft.mask_token] * (B - 1))]
    residual, proj = h, None
    for layer_index in range(draft.layers):
        p = f"draft.layers.{layer_index}."
        kv = matmul(ctx, w(p + "self_attn.qkv_proj.weight")[g.H * g.D:])
        k = kv[:, :g.KV * g.D].reshape(n, g.KV, g.D)
        v = kv[:, g.KV * g.D:].reshape(n, g.KV, g.D)
        k = rope(rmsnorm(k, w(p + "self_attn.k_norm.weight"), g.eps), ctx_pos, cache)
        residual, proj, _, _ = layer(residual, proj, w, p, g, blk_pos, cache, kv_source=(k, v),
                                     causal_from=n if causal else None)
    normed = rmsnorm(bf16(residual + proj), w("draft.norm.weight"), g.eps)
    logits = matmul(normed, w("lm_head.weight"))
    w1, w2 = w("draft.markov_w1.weight"), w("draft.markov_w2.weight")
    drafted, prev = [], anchor
    for i in range(B - 1):
        logits[i + 1] = bf16(logits[i + 1] + w2 @ w1[prev])
        prev = int(np.argmax(logits[i + 1]))  # first maximum: ties -> smallest index
        drafted.append(prev)
    return logits, drafted
