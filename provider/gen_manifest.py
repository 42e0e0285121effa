#!/usr/bin/python3
"""gen_manifest.py CONFIG.json -o MANIFEST.json [--tokens-max 512] [--kernels-dir DIR | --unpinned] [--kernels fused|fused-qk-separate|unfused] [--max-batch 8] [--tp N]

Writes a kern manifest v2 (SPEC §3) for a Hugging Face config.json of a
decoder-only transformer of a supported family (decoder_config.py: Qwen3,
Qwen3-MoE, Llama 3.x, Mistral, Qwen2.5; picked by `architectures`, else
`model_type`): exactly the buffers, kernels (docs/kernels.md ABIs) and
programs `prefill` / `decode` of docs/causal-lm-manifest.md, the same for
every family but for the family's own pieces (q/k norm or none, the rope
cache's scaling, the qkv bias, the sparse MLP of a mixture of experts:
router + selected experts, docs/kernels.md §18).
`gen_qwen3_manifest.py` is this tool under its first name. `--kernels fused` (the default) gives
`decode` the fused decode kernels (docs/kernels.md §11-13a: 5 launches per
layer, 3 around them; q/k norm + RoPE + the KV-cache write folded into the
attention); `--kernels fused-qk-separate` the same with those as their own
launch (6 per layer, for A/B); `--kernels unfused` keeps the original kernel
set (12 per layer). Both read the same weights; `prefill` is the same in both. Both
decode programs end with the sampling dispatch (`sample_dispatch`: per-row
temperature, top_k, top_p, min_p and seed inputs; docs/causal-lm-manifest.md
"Sampling") and the step advance. The fused manifest also gets `decode_batch`,
the batched decode over up to `--max-batch` sequences (default 8,
docs/batching.md), with the same sampling dispatch over its rows (row r's
own inputs, RNG counter batch_positions[r]). The output is deterministic:
keys in the order this file inserts them, 2-space indent, one trailing newline
(provider/json_out.py), so regenerating a checked-in manifest is byte-identical.

--kernels-dir DIR pins every non-extern step to the file in DIR that holds
its symbol and writes that file's sha256 (SPEC §3 `cubin` + `sha256`). A file
named `<symbol>.cubin` / `<symbol>.fatbin` wins; otherwise the one `.cubin` /
`.fatbin` whose bytes contain the symbol name (uncompressed ELF string table).
Without it, the generator pins to `build/kernels` of the repository it runs
from when that directory exists (the build stages the CUDA fatbins there),
and otherwise says on stderr where it looked; `--unpinned` writes no pins
(the runtime then searches every loaded module, and kern-verify warns W0001).

`--tp N` (1, 2, 4 or 8) writes the manifest every rank of an N-rank
tensor-parallel world runs (provider/tensor_parallel.py, docs/parallel.md):
meta.world N, the rank's share of the heads, KV heads and intermediate rows,
o_proj and down_proj as split-K GEMMs followed by an all-reduce; the
unfused kernel set, with decode_batch over `--max-batch` sequences. `--tp 1` is the one-rank twin whose
bits TP = N reproduces.

Config values the manifest passes as i32 kernel parameters (vocab_size,
hidden_size, ...) must fit in an i32; a config that breaks this is refused.
The manifest is written atomically (provider/tool_io.py).

Exit status: 0 on success, 1 on a bad config or a kernels dir without a
symbol, 2 on bad usage or a file or directory that cannot be read or written.
"""

import argparse
import copy
import hashlib
import math
import os
import sys

from json_out import F32, dumps
from decoder_config import ConfigError, load_config
from tool_io import check_output_path, run, write_atomic
import tensor_parallel

PAGE = 16          # KV cache block size (tokens per page), docs/kernels.md
ATTN_SPLITS = 16   # attention_decode split-KV count S
# kern_attention_decode_bf16's S (docs/kernels.md §13): KV * 32 = 256 blocks for the 4B at one row, all
# resident at once (3 per SM), twice the warps reading the cache per SM of 16 splits.
ATTN_FUSED_SPLITS = 32
ARGMAX_CHUNKS = 64 # argmax partial chunks per row
GEMV_COLS = 8      # output columns per gemv block (docs/kernels.md §11)
GEMV_FILL_BLOCKS = 264  # split-K until a gemv has this many blocks (2 per SM of a 132-SM H100/H200)
GEMV_MAX_SPLITS = 8
GEMV_MAX_ROWS = 8  # decode gemv rows (tokens) at most: decode is 1, speculative verify up to 8
MOE_COLS = 4       # output columns per block of the expert GEMVs (a warp each, docs/kernels.md §18)
TOK = {"sym": "tokens"}
SAMPLE_THREADS = 256   # kern_sample_bf16's block (its scan order is defined for it, docs/kernels.md §17)
SAMPLE_KEYS = 65536    # histogram bins per row: one per bf16 bit pattern
SAMPLE_ROWS = GEMV_MAX_ROWS  # rows the sampling inputs and histogram hold (decode rows at most)
# The per-row sampling inputs (docs/causal-lm-manifest.md "Sampling"), written by the caller when they change.
SAMPLING_INPUTS = (("sample_temperature", "f32"), ("sample_top_k", "i32"), ("sample_top_p", "f32"),
                   ("sample_min_p", "f32"), ("sample_seed", "i64"))
# kern's built-in GEMMs (docs/kernels.md, kernel 10); every generator names them from here.
EXTERN_PREFIX = "extern:"
GEMM_SYMBOL = EXTERN_PREFIX + "cublaslt_bf16_tn"          # c = a . w^T
GEMM_ACC_SYMBOL = EXTERN_PREFIX + "cublaslt_bf16_tn_acc"  # c += a . w^T


def buf(name, offset=0):
    return {"buf": name, "offset": offset} if offset else {"buf": name}


def i32(v):
    return {"i32": v}


def step(symbol, params, block, grid, args):
    return {"symbol": symbol, "params": params, "block": block, "grid": grid, "args": args}


def identity_kernel(symbol, params, block, grid):
    """A one-step kernel whose step takes exactly the interface params."""
    args = [{"arg": i} for i in range(len(params))]
    return {"params": params, "impl": {"steps": [step(symbol, params, block, grid, args)]}}


BF16_IN, BF16_OUT, BF16_INOUT = "in buffer<bf16>", "out buffer<bf16>", "inout buffer<bf16>"
F32_IN = "in buffer<f32>"
ATTN_PARAMS = [BF16_IN, "in ptr", "in buffer<i32>", "in buffer<i32>", "in buffer<i32>",
               F32_IN, F32_IN, BF16_OUT, "i32", "i32", "i32", "i32", "i64", "f32"]


ROPE_NEOX = 1       # rope_flags bit 0: neox pairs (i, i + D/2), as HF's rotate_half
ROPE_NO_QK_NORM = 2  # rope_flags bit 1: no per-head q/k RMSNorm before the rotation (docs/kernels.md §12)


def rope_flags(c):
    """The u8 rope_flags of the q/k kernels (§12, §13a, §15a): neox, and
    whether the family skips the q/k norm (Llama) or has it (Qwen3: 1, the
    value every Qwen3 manifest has always passed)."""
    return {"u8": ROPE_NEOX | (0 if c.qk_norm else ROPE_NO_QK_NORM)}


def qk_label(c):
    """The dispatch label's prefix for the q/k norm: "qk_norm+" or nothing."""
    return "qk_norm+" if c.qk_norm else ""


def qk_norm_weights(c, w):
    """The q_norm / k_norm weight args of layer prefix `w`; without q/k norm
    the kernels read neither (rope_flags), and the args name `qkv`, a bf16
    buffer every program has, so that the ABI stays one."""
    if c.qk_norm:
        return [buf(w + "self_attn.q_norm.weight"), buf(w + "self_attn.k_norm.weight")]
    return [buf("qkv"), buf("qkv")]


def qk_norm_rope_cache_kernel(c, rows=TOK):
    """kern_qk_norm_rope_cache_bf16 (docs/kernels.md §12): grid one warp per
    head item (H + 2 KV, 4 per block) by `rows` tokens."""
    H, KV = c.heads, c.kv_heads
    qk = step("kern_qk_norm_rope_cache_bf16",
              [BF16_IN, BF16_IN, BF16_IN, "in buffer<i64>", F32_IN, BF16_OUT, "inout ptr", "in buffer<i64>",
               F32_IN, F32_IN, "i32", "i32", "i32", "i32", "i32", "i64", "f32", "u8"],
              [128, 1, 1], [math.ceil((H + 2 * KV) / 4), rows, 1], [{"arg": i} for i in range(18)])
    qk["pdl"] = True
    return {"params": qk["params"], "impl": {"steps": [qk]}}


def bias_add_kernel(rows=TOK):
    """kern_bias_add_bf16 (docs/kernels.md §6a): x += bias in place, one block per row."""
    return identity_kernel("kern_bias_add_bf16", [BF16_INOUT, BF16_IN, "i32", "i32", "i32"], [256, 1, 1],
                           [rows, 1, 1])


def bias_dispatch(c, p, w, rows, kernel="bias_add"):
    """The qkv bias added to `qkv` after its projection (Qwen2), over `rows`
    rows (an expression); [] for a family without it."""
    if not c.qkv_bias:
        return []
    return [dispatch(p + "qkv_bias", kernel,
                     [buf("qkv"), buf(w + "self_attn.qkv_proj.bias"), rows, i32(c.qkv_rows), i32(c.qkv_rows)])]


def has_dense_mlp(c):
    """Whether any layer has the dense MLP (Qwen3-MoE: the mlp_only_layers,
    or the layers decoder_sparse_step skips)."""
    return any(not c.is_moe(layer) for layer in range(c.layers))


def moe_kernels(c, rows=TOK, suffix=""):
    """The mixture-of-experts kernels (docs/kernels.md §18) over `rows` rows
    (an expression: the tokens, or the decode_batch rows with `suffix`
    "_batch"); {} for a dense model. The expert count, top-k and sizes are
    literals of the dispatches; the grids are literals per shape."""
    if not c.moe_layers:
        return {}
    E, I, K = c.hidden, c.moe_intermediate, c.experts_per_tok
    i32s = ["i32"] * 5
    return {
        "moe_router" + suffix: identity_kernel(
            "kern_moe_router_bf16", [BF16_IN, BF16_IN, "out buffer<f32>", "out buffer<i32>"] + ["i32"] * 4 + ["u8"],
            [128, 1, 1], [rows, 1, 1]),
        "moe_gate_up" + suffix: identity_kernel(
            "kern_moe_gate_up_bf16", [BF16_IN, BF16_IN, "in buffer<i32>", BF16_OUT] + i32s,
            [128, 1, 1], [math.ceil(I / MOE_COLS), K, rows]),
        "moe_down" + suffix: identity_kernel(
            "kern_moe_down_bf16", [BF16_IN, BF16_IN, "in buffer<i32>", F32_IN, BF16_INOUT] + i32s,
            [128, 1, 1], [math.ceil(E / MOE_COLS), rows, 1]),
    }


def moe_dispatches(c, p, w, rows, suffix=""):
    """The sparse MLP of one layer after its post-attention norm wrote
    `normed` (docs/causal-lm-manifest.md "Qwen3-MoE"): the router, the
    selected experts' gate/up + SiLU*mul, their down projections weighted
    and added to `residual` in place. `rows`: the row count expression."""
    E, X, I, K = c.hidden, c.experts, c.moe_intermediate, c.experts_per_tok
    return [
        dispatch(p + "mlp.router", "moe_router" + suffix,
                 [buf("normed"), buf(w + "mlp.gate.weight"), buf("moe_topk_weights"), buf("moe_topk_ids"), rows,
                  i32(X), i32(E), i32(K), {"u8": 1 if c.norm_topk_prob else 0}]),
        dispatch(p + "mlp.experts.gate_up_proj+silu_and_mul", "moe_gate_up" + suffix,
                 [buf("normed"), buf(w + "mlp.experts.gate_up_proj.weight"), buf("moe_topk_ids"), buf("moe_act"),
                  rows, i32(X), i32(I), i32(E), i32(K)]),
        dispatch(p + "mlp.experts.down_proj+residual", "moe_down" + suffix,
                 [buf("moe_act"), buf(w + "mlp.experts.down_proj.weight"), buf("moe_topk_ids"),
                  buf("moe_topk_weights"), buf("residual"), rows, i32(X), i32(E), i32(I), i32(K)]),
    ]


def kernels(c):
    """The kernel table (docs/kernels.md), in that page's order. A family
    without q/k norm gets kern_qk_norm_rope_cache_bf16 (rope_flags: no norm)
    in place of the head norms, rope and the KV-cache write."""
    ks = base_kernels(c)
    if c.qkv_bias:
        ks["bias_add"] = bias_add_kernel()
    ks.update(moe_kernels(c))
    if not has_dense_mlp(c):
        del ks["silu_and_mul"]  # the dense prefill MLP's only
    if not c.qk_norm:
        for name in ("head_rmsnorm_q", "head_rmsnorm_k", "rope", "kv_cache_write"):
            del ks[name]
        ks["qk_norm_rope_cache"] = qk_norm_rope_cache_kernel(c)
    return ks


def base_kernels(c):
    """kernels(c) of a family with q/k norm."""
    H, D = c.heads, c.head_dim
    head_norm_params = [BF16_IN, BF16_IN, BF16_OUT, "i32", "i32", "i32", "i32", "i32", "f32"]
    partial_params = ATTN_PARAMS[:7] + ["out buffer<f32>", "out buffer<f32>"] + ATTN_PARAMS[8:] + ["i32"]
    reduce_params = [F32_IN, F32_IN, BF16_OUT, "i32", "i32", "i32", "i32"]
    return {
        "embedding": identity_kernel(
            "kern_embedding_bf16", ["in buffer<i64>", BF16_IN, BF16_OUT, "i32", "i32", "i32"],
            [128, 1, 1], [TOK, 1, 1]),
        "rmsnorm": identity_kernel(
            "kern_rmsnorm_bf16", [BF16_IN, BF16_IN, BF16_OUT, "i32", "i32", "f32"],
            [256, 1, 1], [TOK, 1, 1]),
        "add_rmsnorm": identity_kernel(
            "kern_add_rmsnorm_bf16", [BF16_IN, BF16_INOUT, BF16_IN, BF16_OUT, "i32", "i32", "f32"],
            [256, 1, 1], [TOK, 1, 1]),
        # One kernel per head count: the grid (one warp per head, 4 per block)
        # is an expression over symbols only, so q (H heads) and k (KV heads)
        # need their own impl; both launch the same symbol.
        "head_rmsnorm_q": identity_kernel(
            "kern_head_rmsnorm_bf16", head_norm_params, [128, 1, 1],
            [{"ceil_div": [{"mul": [TOK, H]}, 4]}, 1, 1]),
        "head_rmsnorm_k": identity_kernel(
            "kern_head_rmsnorm_bf16", head_norm_params, [128, 1, 1],
            [{"ceil_div": [{"mul": [TOK, c.kv_heads]}, 4]}, 1, 1]),
        "rope": identity_kernel(
            "kern_rope_bf16",
            ["in buffer<i64>", BF16_INOUT, BF16_INOUT, F32_IN, "i32", "i32", "i32", "i32", "i32", "i32", "u8"],
            [128, 1, 1], [TOK, 1, 1]),
        "silu_and_mul": identity_kernel(
            "kern_silu_and_mul_bf16", [BF16_IN, BF16_OUT, "i32", "i32"], [256, 1, 1], [TOK, 1, 1]),
        "kv_cache_write": identity_kernel(
            "kern_reshape_and_cache_bf16",
            [BF16_IN, BF16_IN, "inout ptr", "in buffer<i64>", F32_IN, F32_IN,
             "i32", "i32", "i32", "i32", "i32", "i64"],
            [128, 1, 1], [TOK, 1, 1]),
        "attention_decode": {
            "params": ATTN_PARAMS,
            "impl": {
                "scratch": {
                    "partial_o": {"dtype": "f32", "shape": ["tokens", H * ATTN_SPLITS * D]},
                    "partial_ml": {"dtype": "f32", "shape": ["tokens", H * ATTN_SPLITS * 2]},
                },
                "steps": [
                    step("kern_paged_attention_partial_bf16", partial_params, [128, 1, 1],
                         [H, ATTN_SPLITS, TOK],
                         [{"arg": i} for i in range(7)]
                         + [{"scratch": "partial_o"}, {"scratch": "partial_ml"}]
                         + [{"arg": i} for i in range(8, 14)] + [i32(ATTN_SPLITS)]),
                    step("kern_paged_attention_reduce_bf16", reduce_params, [128, 1, 1], [H, TOK, 1],
                         [{"scratch": "partial_o"}, {"scratch": "partial_ml"}, {"arg": 7},
                          {"arg": 8}, {"arg": 9}, {"arg": 11}, i32(ATTN_SPLITS)]),
                ],
            },
        },
        "attention_prefill": identity_kernel(
            "kern_paged_attention_prefill_bf16", ATTN_PARAMS, [128, 1, 1], [H, TOK, 1]),
        "argmax": {
            "params": [BF16_IN, "out buffer<i64>", "i32", "i32"],
            "impl": {
                "scratch": {
                    "partial_val": {"dtype": "f32", "shape": ["tokens", ARGMAX_CHUNKS]},
                    "partial_idx": {"dtype": "i32", "shape": ["tokens", ARGMAX_CHUNKS]},
                },
                "steps": [
                    step("kern_argmax_partial_bf16",
                         [BF16_IN, "out buffer<f32>", "out buffer<i32>", "i32", "i32", "i32"],
                         [256, 1, 1], [ARGMAX_CHUNKS, TOK, 1],
                         [{"arg": 0}, {"scratch": "partial_val"}, {"scratch": "partial_idx"},
                          {"arg": 2}, {"arg": 3}, i32(ARGMAX_CHUNKS)]),
                    step("kern_argmax_reduce",
                         [F32_IN, "in buffer<i32>", "out buffer<i64>", "i32", "i32"],
                         [64, 1, 1], [TOK, 1, 1],
                         [{"scratch": "partial_val"}, {"scratch": "partial_idx"}, {"arg": 1},
                          {"arg": 2}, i32(ARGMAX_CHUNKS)]),
                ],
            },
        },
        "gemm": identity_kernel(
            GEMM_SYMBOL, [BF16_IN, BF16_IN, BF16_OUT, "i32", "i32", "i32"],
            [1, 1, 1], [1, 1, 1]),
        # The decode step advance: feeds the sampled token back and moves the
        # step counters on the device (docs/causal-lm-manifest.md, "Who writes what").
        "sample": sample_kernel(),
        "decode_advance": identity_kernel(
            "kern_decode_advance",
            ["in buffer<i64>", "in buffer<i32>", "inout buffer<i64>", "inout buffer<i64>", "inout buffer<i64>",
             "inout buffer<i32>", "i32", "i32", "i32"],
            [1, 1, 1], [1, 1, 1]),
    }


def sample_kernel(rows=TOK):
    """kern_sample_bf16 (docs/kernels.md §17), one block per row: `rows` is
    the grid's row expression (the decode rows symbol)."""
    return identity_kernel(
        "kern_sample_bf16",
        [BF16_IN, "inout buffer<i64>", F32_IN, "in buffer<i32>", F32_IN, F32_IN, "in buffer<i64>", "in buffer<i64>",
         "inout ptr", "i32", "i32", "i32"],
        [SAMPLE_THREADS, 1, 1], [rows, 1, 1])


def sampling_buffers(rows=SAMPLE_ROWS):
    """The per-row sampling inputs, `rows` entries each (zero = greedy:
    temperature 0; the caller writes them when a row's request changes)."""
    return {name: {"dtype": dtype, "shape": [rows], "class": "input"} for name, dtype in SAMPLING_INPUTS}


def sampling_state(rows=SAMPLE_ROWS):
    """The sampler's histogram state: i32 [rows, 65536], zero when allocated
    and left zero by every launch (a state, so no plan overlays it)."""
    return {"sample_histogram": {"bytes_fixed": 4 * SAMPLE_KEYS * rows, "align": 256}}


def sample_dispatch(c, rows=TOK, max_rows=SAMPLE_ROWS, logits="logits", next_token="next_token",
                    positions="positions", kernel="sample"):
    """The decode program's sampling dispatch, after the argmax and before
    `advance`: rows whose temperature is > 0 replace their argmax id in
    `next_token` by a sampled one (RNG counter: the row's position); greedy
    rows keep it. `rows` is the rows argument (an expression), `max_rows`
    the rows the sampling inputs and histogram hold, `kernel` the kernel
    whose grid counts those rows (`sample_batch` for decode_batch)."""
    return dispatch("sample", kernel,
                    [buf(logits), buf(next_token)] + [buf(name) for name, _ in SAMPLING_INPUTS]
                    + [buf(positions), {"state": "sample_histogram", "offset": 0}, rows, i32(c.vocab),
                       i32(max_rows)])


def gemv_splits(n, k):
    """Split-K count of a decode gemv (docs/kernels.md §11): from (n, k) only,
    never from the token count, so a row's bits do not depend on m. Enough
    splits to give the chip GEMV_FILL_BLOCKS blocks, each split keeping at
    least one 8-element group per lane (32 groups)."""
    tiles = math.ceil(n / GEMV_COLS)
    want = math.ceil(GEMV_FILL_BLOCKS / tiles)
    return max(1, min(want, GEMV_MAX_SPLITS, math.ceil(k / 8) // 32))


def norm_gemv_name(base, rows):
    """The kernel name of a norm-prologue gemv sized for `rows` a rows: the
    base name for decode's 1 row, `<base>_m<rows>` otherwise (verify)."""
    return base if rows == 1 else f"{base}_m{rows}"


def gemv_kernel(symbol, n, k, norm, rows_per_col=1, argmax=False, rows=1):
    """A decode gemv kernel for one weight shape (the grid is a literal per
    shape, as for head_rmsnorm). Interface params: a, [norm_weight], w, c,
    counters, i32 m, n, k, lda, ldc, [f32 eps]; the split-K partials are
    scratch. With `argmax` (interface: ..., out next_token after counters),
    the per-tile argmax partials are scratch too and the kernel's last tile
    block reduces them into next_token (docs/kernels.md §11). A norm
    variant's dynamic shared memory holds `rows` normalised rows (the rows
    its program launches: decode 1; the kernel refuses more)."""
    splits = gemv_splits(n, k)
    tiles = math.ceil(n / GEMV_COLS)
    c_access = BF16_INOUT if symbol == "kern_gemv_acc_bf16" else BF16_OUT
    params = [BF16_IN] + ([BF16_IN] if norm else []) + [BF16_IN, c_access, "inout ptr"]
    if argmax:
        params.append("out buffer<i64>")
    params += ["i32"] * 5 + (["f32"] if norm else [])
    na = len(params)
    i_m = na - (6 if norm else 5)
    scalars = [{"arg": i} for i in range(i_m, i_m + 5)] + [i32(splits)] + ([{"arg": na - 1}] if norm else [])
    i_c = 3 if norm else 2
    # Decode-only scratch is sized for the rows a gemv takes at most (the
    # kernels do nothing above GEMV_MAX_ROWS), not for the prefill chunk.
    scratch = {"partial": {"dtype": "f32",
                           "shape": [GEMV_MAX_ROWS, splits * n * rows_per_col if splits > 1 else 1]}}
    args = [{"arg": i} for i in range(i_c + 1)] + [{"scratch": "partial"}, {"arg": i_c + 1}]
    step_params = params[:i_c + 1] + ["out buffer<f32>", "inout ptr"]
    if argmax:
        scratch["argmax_val"] = {"dtype": "f32", "shape": [GEMV_MAX_ROWS, tiles]}
        scratch["argmax_idx"] = {"dtype": "i32", "shape": [GEMV_MAX_ROWS, tiles]}
        args += [{"scratch": "argmax_val"}, {"scratch": "argmax_idx"}, {"arg": i_c + 2}]
        step_params += ["out buffer<f32>", "out buffer<i32>", "out buffer<i64>"]
    step_params += ["i32"] * 6 + (["f32"] if norm else [])
    s = step(symbol, step_params, [128, 1, 1], [tiles, splits, 1], args + scalars)
    if norm:  # the normalised rows, sized for the rows the program launches (5 KB at m = 1, not 40)
        s["shared_mem"] = rows * 2 * k
    s["pdl"] = True
    return {"params": params, "impl": {"scratch": scratch, "steps": [s]}}


def qkv_attention_kernel(c, symbol, splits, max_rows, rows_sym):
    """q/k norm + RoPE + KV write folded into the decode attention (docs/kernels.md
    §13a `kern_attention_decode_qkv_bf16`, §15a `kern_attention_decode_batch_qkv_bf16`,
    one ABI): interface params qkv, q_norm_weight, k_norm_weight, cos_sin_cache,
    kv_cache, block_tables, seq_lens, k_scale, v_scale, counters, out, i32
    num_seqs, num_heads, num_kv_heads, head_dim, i64 page_stride, f32 scale, i32
    pages_per_seq, qkv_stride, f32 eps, u8 is_neox; the split scratch holds
    `max_rows` rows, the grid [KV, splits, rows_sym]."""
    H, D = c.heads, c.head_dim
    params = [BF16_IN, BF16_IN, BF16_IN, F32_IN, "inout ptr", "in buffer<i32>", "in buffer<i32>", F32_IN, F32_IN,
              "inout ptr", BF16_OUT, "i32", "i32", "i32", "i32", "i64", "f32", "i32", "i32", "f32", "u8"]
    s = step(symbol, params[:9] + ["out buffer<f32>", "out buffer<f32>"] + params[9:18] + ["i32"] + params[18:],
             [128, 1, 1], [c.kv_heads, splits, rows_sym],
             [{"arg": i} for i in range(9)] + [{"scratch": "partial_o"}, {"scratch": "partial_ml"}]
             + [{"arg": i} for i in range(9, 18)] + [i32(splits)] + [{"arg": i} for i in range(18, 21)])
    s["pdl"] = True
    return {
        "params": params,
        "impl": {
            "scratch": {
                "partial_o": {"dtype": "f32", "shape": [max_rows, H * splits * D]},
                "partial_ml": {"dtype": "f32", "shape": [max_rows, H * splits * 2]},
            },
            "steps": [s],
        },
    }


def fused_kernels(c, row_buckets=(1,), fold_qk=True):
    """The fused decode kernels (docs/kernels.md §11-13), one gemv kernel per
    weight shape; the norm-prologue gemvs once per row count in `row_buckets`
    (their shared memory is sized for it: norm_gemv_name). With `fold_qk`,
    one-row programs get the attention that folds in q/k norm + RoPE + the KV
    write (`attention_decode_qkv`, §13a); the separate `qk_norm_rope_cache` +
    `attention_decode_fused` pair is there for row counts above 1 (speculative
    verify) or without `fold_qk` (--kernels fused-qk-separate, A/B)."""
    E, H, KV, D, I, V = c.hidden, c.heads, c.kv_heads, c.head_dim, c.intermediate, c.vocab
    attn_params = ATTN_PARAMS[:7] + ["inout ptr"] + ATTN_PARAMS[7:]
    attn = step("kern_attention_decode_bf16",
                ATTN_PARAMS[:7] + ["out buffer<f32>", "out buffer<f32>", "inout ptr"] + ATTN_PARAMS[7:]
                + ["i32"], [128, 1, 1], [KV, ATTN_FUSED_SPLITS, TOK],
                [{"arg": i} for i in range(7)] + [{"scratch": "partial_o"}, {"scratch": "partial_ml"}]
                + [{"arg": i} for i in range(7, 15)] + [i32(ATTN_FUSED_SPLITS)])
    attn["pdl"] = True
    def per_rows(base, *a, **kw):
        return {norm_gemv_name(base, r): gemv_kernel(*a, **kw, rows=r) for r in row_buckets}

    dense_mlp = {**per_rows("gemv_gate_up", "kern_gemv_rmsnorm_silu_mul_bf16", I, E, norm=True, rows_per_col=2),
                 "gemv_down_proj": gemv_kernel("kern_gemv_acc_bf16", E, I, norm=False)}

    pair = {
        "qk_norm_rope_cache": qk_norm_rope_cache_kernel(c),
        "attention_decode_fused": {
            "params": attn_params,
            "impl": {
                "scratch": {  # decode rows only (the kernel does nothing above GEMV_MAX_ROWS)
                    "partial_o": {"dtype": "f32", "shape": [GEMV_MAX_ROWS, H * ATTN_FUSED_SPLITS * D]},
                    "partial_ml": {"dtype": "f32", "shape": [GEMV_MAX_ROWS, H * ATTN_FUSED_SPLITS * 2]},
                },
                "steps": [attn],
            },
        },
    }
    folded = {"attention_decode_qkv": qkv_attention_kernel(c, "kern_attention_decode_qkv_bf16", ATTN_FUSED_SPLITS,
                                                           GEMV_MAX_ROWS, TOK)}
    return {
        **per_rows("gemv_qkv", "kern_gemv_rmsnorm_bf16", c.qkv_rows, E, norm=True),
        **(pair if not fold_qk or any(r > 1 for r in row_buckets) else {}),
        **(folded if fold_qk and 1 in row_buckets else {}),
        "gemv_o_proj": gemv_kernel("kern_gemv_acc_bf16", E, H * D, norm=False),
        **(dense_mlp if has_dense_mlp(c) else {}),
        **per_rows("lm_head_argmax", "kern_gemv_rmsnorm_argmax_bf16", V, E, norm=True, argmax=True),
    }


def counter_slots(c):
    """i32 counters of the `decode_counters` state: the split-K tile counters
    of the largest split gemv, the attention's one per (query row, kv head),
    or the lm_head's tile counters and its argmax counter after them."""
    gemvs = [(c.qkv_rows, c.hidden), (c.hidden, c.heads * c.head_dim), (c.intermediate, c.hidden),
             (c.hidden, c.intermediate)]
    tiles = [math.ceil(n / GEMV_COLS) for n, k in gemvs if gemv_splits(n, k) > 1]
    return max([GEMV_MAX_ROWS * c.kv_heads, math.ceil(c.vocab / GEMV_COLS) + 1] + tiles)


def block_table_pages(c):
    """Pages of the block table: enough for max_position_embeddings tokens."""
    return math.ceil(c.max_position / PAGE)


def buffers(c, fused=True):
    """Inputs, the output, workspace and weights (docs/causal-lm-manifest.md)."""
    E, D, I, V = c.hidden, c.head_dim, c.intermediate, c.vocab
    # The step inputs the decode program maintains itself are carries: the
    # caller writes them for prefill chunks and once before the first decode;
    # each decode step's `advance` dispatch writes the next step's values.
    out = {
        "token_ids": {"dtype": "i64", "shape": ["tokens"], "class": "carry"},
        "positions": {"dtype": "i64", "shape": ["tokens"], "class": "carry"},
        "slot_mapping": {"dtype": "i64", "shape": ["tokens"], "class": "carry"},
        "seq_lens": {"dtype": "i32", "shape": [1], "class": "carry"},
        "cu_seqlens_q": {"dtype": "i32", "shape": [2], "class": "input"},
        "block_table": {"dtype": "i32", "shape": [block_table_pages(c)], "class": "input"},
        "next_token": {"dtype": "i64", "shape": ["tokens"], "class": "output"},
    }
    out.update(sampling_buffers())
    dense = has_dense_mlp(c)
    for name, width in (("residual", E), ("normed", E), ("qkv", c.qkv_rows), ("q_normed", c.heads * D),
                        ("k_normed", c.kv_heads * D), ("attn_out", c.heads * D), ("proj_out", E),
                        ("gate_up", 2 * I), ("act", I)):
        if name == "k_normed" and not c.qk_norm:
            continue  # k goes from qkv to the cache in one launch (qk_norm_rope_cache)
        if name in ("gate_up", "act") and not dense:
            continue  # every layer is sparse: no dense MLP reads them
        out[name] = {"dtype": "bf16", "shape": ["tokens", width], "class": "workspace"}
    if c.moe_layers:  # the router's choice per row and the selected experts' activations (§18)
        K = c.experts_per_tok
        out["moe_topk_weights"] = {"dtype": "f32", "shape": ["tokens", K], "class": "workspace"}
        out["moe_topk_ids"] = {"dtype": "i32", "shape": ["tokens", K], "class": "workspace"}
        out["moe_act"] = {"dtype": "bf16", "shape": ["tokens", K * c.moe_intermediate], "class": "workspace"}
    # Only decode computes logits. The fused lm_head_argmax takes at most
    # GEMV_MAX_ROWS rows (decode 1, speculative verify the block), so the
    # buffer has those rows, not the prefill chunk's (155 MB for Qwen3-4B at
    # 512); the unfused lm_head GEMM takes `tokens` rows.
    out["logits"] = {"dtype": "bf16", "shape": [GEMV_MAX_ROWS if fused else "tokens", V], "class": "workspace"}

    def weight(name, shape, dtype="bf16"):
        out[name] = {"dtype": dtype, "shape": shape, "class": "weight"}

    weight("model.embed_tokens.weight", [V, E])
    for layer in range(c.layers):
        p = f"model.layers.{layer}."
        weight(p + "input_layernorm.weight", [E])
        weight(p + "self_attn.qkv_proj.weight", [c.qkv_rows, E])
        if c.qkv_bias:
            weight(p + "self_attn.qkv_proj.bias", [c.qkv_rows])
        if c.qk_norm:
            weight(p + "self_attn.q_norm.weight", [D])
            weight(p + "self_attn.k_norm.weight", [D])
        weight(p + "self_attn.o_proj.weight", [E, c.heads * D])
        weight(p + "post_attention_layernorm.weight", [E])
        if c.is_moe(layer):
            X, MI = c.experts, c.moe_intermediate
            weight(p + "mlp.gate.weight", [X, E])
            weight(p + "mlp.experts.gate_up_proj.weight", [X, 2 * MI, E])
            weight(p + "mlp.experts.down_proj.weight", [X, E, MI])
        else:
            weight(p + "mlp.gate_up_proj.weight", [2 * I, E])
            weight(p + "mlp.down_proj.weight", [E, I])
    weight("model.norm.weight", [E])
    weight("lm_head.weight", [V, E])
    weight("rope.cos_sin_cache", [c.max_position, D], "f32")
    weight("k_scale", [1], "f32")
    weight("v_scale", [1], "f32")
    return out


def dispatch(label, kernel, args):
    return {"kernel": kernel, "label": label, "args": args}


def gemm(label, a, w, out, n, k):
    return dispatch(label, "gemm", [buf(a), buf(w), buf(out), TOK, i32(n), i32(k)])


def layer_dispatches(c, layer, attention, prefix="", state="kv_cache", state_layers=None):
    """The 12 dispatches of one decoder layer (docs/causal-lm-manifest.md, Programs);
    9 for a family without q/k norm (one qk_norm_rope_cache launch, rope_flags
    3, in place of the head norms, rope and the KV-cache write).
    `prefix` is put before the labels and weight names ("draft." for the
    speculative draft's layers, docs/speculative.md), `state` names the paged
    KV state and `state_layers` its layer count (default: the target's)."""
    E, H, KV, D, I = c.hidden, c.heads, c.kv_heads, c.head_dim, c.intermediate
    p = f"{prefix}layers.{layer}."
    w = f"{prefix}layers.{layer}." if prefix else f"model.layers.{layer}."
    eps = F32(c.rms_norm_eps)
    page_stride = (state_layers or c.layers) * PAGE * KV * 2 * D  # elements between pages
    kv_base = {"state": state, "offset": layer * PAGE * KV * 2 * D * 2}  # literal layer region
    qkv_width = c.qkv_rows
    if layer == 0 or (not prefix and residual_complete(c, layer - 1)):
        first = dispatch(p + "input_layernorm", "rmsnorm",
                         [buf("residual"), buf(w + "input_layernorm.weight"), buf("normed"), TOK, i32(E),
                          {"f32": eps}])
    else:
        first = dispatch(p + "input_layernorm", "add_rmsnorm",
                         [buf("proj_out"), buf("residual"), buf(w + "input_layernorm.weight"), buf("normed"),
                          TOK, i32(E), {"f32": eps}])
    if c.qk_norm:
        qk = qk_dispatches(c, p, w, eps, kv_base, page_stride)
    else:  # one launch: RoPE on q into q_normed, and k, v into the cache (docs/kernels.md §12)
        qk = [dispatch(p + "rope+kv_cache_write", "qk_norm_rope_cache",
                       [buf("qkv"), *qk_norm_weights(c, w), buf("positions"), buf("rope.cos_sin_cache"),
                        buf("q_normed"), kv_base, buf("slot_mapping"), buf("k_scale"), buf("v_scale"), TOK, i32(H),
                        i32(KV), i32(D), i32(qkv_width), {"i64": page_stride}, {"f32": eps}, rope_flags(c)])]
    return [
        first,
        gemm(p + "qkv_proj", "normed", w + "self_attn.qkv_proj.weight", "qkv", qkv_width, E),
        *bias_dispatch(c, p, w, TOK),
        *qk,
        dispatch(p + "attention", attention,
                 [buf("q_normed"), kv_base, buf("block_table"), buf("seq_lens"), buf("cu_seqlens_q"),
                  buf("k_scale"), buf("v_scale"), buf("attn_out"), TOK, i32(H), i32(KV), i32(D),
                  {"i64": page_stride}, {"f32": F32(1.0 / math.sqrt(D))}]),
        gemm(p + "o_proj", "attn_out", w + "self_attn.o_proj.weight", "proj_out", E, H * D),
        dispatch(p + "post_attention_layernorm", "add_rmsnorm",
                 [buf("proj_out"), buf("residual"), buf(w + "post_attention_layernorm.weight"), buf("normed"),
                  TOK, i32(E), {"f32": eps}]),
        *(moe_dispatches(c, p, w, TOK) if c.is_moe(layer) and not prefix else [
            gemm(p + "gate_up_proj", "normed", w + "mlp.gate_up_proj.weight", "gate_up", 2 * I, E),
            dispatch(p + "silu_and_mul", "silu_and_mul", [buf("gate_up"), buf("act"), TOK, i32(I)]),
            gemm(p + "down_proj", "act", w + "mlp.down_proj.weight", "proj_out", E, I)]),
    ]


def residual_complete(c, layer):
    """Whether `residual` holds the whole stream after `layer` of the
    prefill / unfused program: a sparse MLP adds into it in place
    (kern_moe_down_bf16), a dense one leaves its down_proj in `proj_out`
    for the next add_rmsnorm."""
    return c.is_moe(layer)


def qk_dispatches(c, p, w, eps, kv_base, page_stride):
    """q_norm, k_norm, rope and the KV-cache write of layer_dispatches: four
    launches (docs/kernels.md §3-6)."""
    H, KV, D = c.heads, c.kv_heads, c.head_dim
    qkv_width = c.qkv_rows
    return [
        dispatch(p + "q_norm", "head_rmsnorm_q",
                 [buf("qkv"), buf(w + "self_attn.q_norm.weight"), buf("q_normed"),
                  {"expr": {"mul": [TOK, H]}}, i32(H), i32(D), i32(qkv_width), i32(H * D), {"f32": eps}]),
        dispatch(p + "k_norm", "head_rmsnorm_k",
                 [buf("qkv", H * D * 2), buf(w + "self_attn.k_norm.weight"), buf("k_normed"),
                  {"expr": {"mul": [TOK, KV]}}, i32(KV), i32(D), i32(qkv_width), i32(KV * D), {"f32": eps}]),
        dispatch(p + "rope", "rope",
                 [buf("positions"), buf("q_normed"), buf("k_normed"), buf("rope.cos_sin_cache"), TOK,
                  i32(H), i32(KV), i32(D), i32(H * D), i32(KV * D), {"u8": 1}]),
        dispatch(p + "kv_cache_write", "kv_cache_write",
                 [buf("k_normed"), buf("qkv", (H + KV) * D * 2), kv_base, buf("slot_mapping"),
                  buf("k_scale"), buf("v_scale"), TOK, i32(KV), i32(D), i32(KV * D), i32(qkv_width),
                  {"i64": page_stride}]),
    ]


# Split-K / split-KV arrival counters (docs/kernels.md §11, §13): a fixed-size
# state, zero when allocated and returned to zero by every launch using it.
COUNTERS = {"state": "decode_counters", "offset": 0}


def fused_layer_dispatches(c, layer, rows=1, batch=None, fold_qk=True):
    """The fused decode dispatches of one layer (docs/causal-lm-manifest.md): 5
    when q/k norm + RoPE + the KV write are folded into the attention
    (`fold_qk`, one query row per sequence: decode and decode_batch), else 6
    (speculative verify's `rows` > 1 causal rows, or --kernels
    fused-qk-separate). The residual stream lives in `residual`; o_proj and
    down_proj add into it in place (kern_gemv_acc_bf16), the norms are gemv
    prologues sized for `rows` rows at most (norm_gemv_name). With `batch` (a
    BatchDecode), the batched program's: `batch` sequences, the batch step
    inputs and the per-sequence attention (docs/batching.md)."""
    E, H, KV, D, I = c.hidden, c.heads, c.kv_heads, c.head_dim, c.intermediate
    n = BATCH if batch else TOK  # the row count symbol of every dispatch below
    p, w = f"layers.{layer}.", f"model.layers.{layer}."
    eps = {"f32": F32(c.rms_norm_eps)}
    page_stride = c.layers * PAGE * KV * 2 * D
    kv_base = {"state": "kv_cache", "offset": layer * PAGE * KV * 2 * D * 2}
    cnt = COUNTERS
    if fold_qk and (batch or rows == 1):
        # One query row per sequence: its new k / v lie in one split, so one launch (docs/kernels.md §13a).
        attention = [dispatch(p + qk_label(c) + "rope+kv_cache_write+attention",
                              batch.qkv_kernel if batch else "attention_decode_qkv",
                              [buf("qkv"), *qk_norm_weights(c, w),
                               buf("rope.cos_sin_cache"), kv_base,
                               buf(batch.block_tables if batch else "block_table"),
                               buf(batch.seq_lens if batch else "seq_lens"), buf("k_scale"), buf("v_scale"), cnt,
                               buf("attn_out"), n, i32(H), i32(KV), i32(D), {"i64": page_stride},
                               {"f32": F32(1.0 / math.sqrt(D))}, i32(block_table_pages(c)), i32(c.qkv_rows), eps,
                               rope_flags(c)])]
    else:
        attention = separate_qk_attention(c, p, w, n, batch, kv_base, page_stride, eps)
    return [
        dispatch(p + "input_layernorm+qkv_proj", norm_gemv_name("gemv_qkv", rows),
                 [buf("residual"), buf(w + "input_layernorm.weight"), buf(w + "self_attn.qkv_proj.weight"),
                  buf("qkv"), cnt, n, i32(c.qkv_rows), i32(E), i32(E), i32(c.qkv_rows), eps]),
        *bias_dispatch(c, p, w, n, "bias_add_batch" if batch else "bias_add"),
        *attention,
        dispatch(p + "o_proj+residual", "gemv_o_proj",
                 [buf("attn_out"), buf(w + "self_attn.o_proj.weight"), buf("residual"), cnt, n, i32(E),
                  i32(H * D), i32(H * D), i32(E)]),
        *(fused_moe_dispatches(c, p, w, n, batch) if c.is_moe(layer) else fused_dense_mlp(c, p, w, n, rows, eps)),
    ]


def fused_moe_dispatches(c, p, w, n, batch):
    """The sparse MLP of a fused decode layer: the post-attention RMSNorm
    (its own launch: the router and the experts read `normed`), then
    moe_dispatches over `n` rows."""
    suffix = "_batch" if batch else ""
    return [dispatch(p + "post_attention_layernorm", "rmsnorm" + suffix,
                     [buf("residual"), buf(w + "post_attention_layernorm.weight"), buf("normed"), n, i32(c.hidden),
                      {"f32": F32(c.rms_norm_eps)}]),
            *moe_dispatches(c, p, w, n, suffix)]


def fused_dense_mlp(c, p, w, n, rows, eps):
    """The dense MLP of a fused decode layer: two gemv launches."""
    E, I = c.hidden, c.intermediate
    cnt = COUNTERS
    return [
        dispatch(p + "post_attention_layernorm+gate_up_proj+silu_and_mul", norm_gemv_name("gemv_gate_up", rows),
                 [buf("residual"), buf(w + "post_attention_layernorm.weight"), buf(w + "mlp.gate_up_proj.weight"),
                  buf("act"), cnt, n, i32(I), i32(E), i32(E), i32(I), eps]),
        dispatch(p + "down_proj+residual", "gemv_down_proj",
                 [buf("act"), buf(w + "mlp.down_proj.weight"), buf("residual"), cnt, n, i32(E), i32(I), i32(I),
                  i32(E)]),
    ]


def separate_qk_attention(c, p, w, n, batch, kv_base, page_stride, eps):
    """q/k norm + RoPE + KV write as its own launch, then the attention
    (docs/kernels.md §12 + §13 / §15): speculative verify's causal rows, and
    --kernels fused-qk-separate."""
    H, KV, D = c.heads, c.kv_heads, c.head_dim
    cnt = COUNTERS
    return [
        dispatch(p + qk_label(c) + "rope+kv_cache_write", batch.qk_kernel if batch else "qk_norm_rope_cache",
                 [buf("qkv"), *qk_norm_weights(c, w),
                  buf(batch.positions if batch else "positions"), buf("rope.cos_sin_cache"), buf("q_normed"),
                  kv_base, buf(batch.slot_mapping if batch else "slot_mapping"),
                  buf("k_scale"), buf("v_scale"), n, i32(H), i32(KV), i32(D), i32(c.qkv_rows),
                  {"i64": page_stride}, eps, rope_flags(c)]),
        batch.attention(c, p, kv_base, page_stride) if batch else
        dispatch(p + "attention", "attention_decode_fused",
                 [buf("q_normed"), kv_base, buf("block_table"), buf("seq_lens"), buf("cu_seqlens_q"),
                  buf("k_scale"), buf("v_scale"), cnt, buf("attn_out"), n, i32(H), i32(KV), i32(D),
                  {"i64": page_stride}, {"f32": F32(1.0 / math.sqrt(D))}]),
    ]


def fused_decode_program(c, rows=1, sampling=True, fold_qk=True):
    """The fused decode (1 row; `rows` > 1: the same dispatches over the
    norm gemvs sized for that many rows, speculative verify's); `sampling`
    adds the sampling dispatch after the lm_head argmax (the speculative
    programs stay greedy); `fold_qk`: fused_layer_dispatches'."""
    out = [dispatch("embed_tokens", "embedding",
                    [buf("token_ids"), buf("model.embed_tokens.weight"), buf("residual"), TOK,
                     i32(c.hidden), i32(c.vocab)])]
    for layer in range(c.layers):
        out += fused_layer_dispatches(c, layer, rows, fold_qk=fold_qk)
    out.append(dispatch("norm+lm_head+argmax", norm_gemv_name("lm_head_argmax", rows),
                        [buf("residual"), buf("model.norm.weight"), buf("lm_head.weight"), buf("logits"),
                         COUNTERS, buf("next_token"), TOK, i32(c.vocab), i32(c.hidden),
                         i32(c.hidden), i32(c.vocab), {"f32": F32(c.rms_norm_eps)}]))
    if sampling:
        out.append(sample_dispatch(c))
    out.append(advance_dispatch(c))
    return {"dispatches": out}


def advance_dispatch(c):
    """The last dispatch of every decode program: next_token and the step
    counters fed to the next decode step (docs/causal-lm-manifest.md, "Who writes what")."""
    return dispatch("advance", "decode_advance",
                    [buf("next_token"), buf("block_table"), buf("token_ids"), buf("positions"),
                     buf("slot_mapping"), buf("seq_lens"), TOK, i32(block_table_pages(c)), i32(PAGE)])


def program(c, attention, with_head):
    out = [dispatch("embed_tokens", "embedding",
                    [buf("token_ids"), buf("model.embed_tokens.weight"), buf("residual"), TOK,
                     i32(c.hidden), i32(c.vocab)])]
    for layer in range(c.layers):
        out += layer_dispatches(c, layer, attention)
    if with_head:
        final_norm = (dispatch("norm", "rmsnorm", [buf("residual"), buf("model.norm.weight"), buf("normed"), TOK,
                                                   i32(c.hidden), {"f32": F32(c.rms_norm_eps)}])
                      if residual_complete(c, c.layers - 1) else
                      dispatch("norm", "add_rmsnorm",
                               [buf("proj_out"), buf("residual"), buf("model.norm.weight"), buf("normed"), TOK,
                                i32(c.hidden), {"f32": F32(c.rms_norm_eps)}]))
        out += [
            final_norm,
            gemm("lm_head", "normed", "lm_head.weight", "logits", c.vocab, c.hidden),
            dispatch("argmax", "argmax", [buf("logits"), buf("next_token"), TOK, i32(c.vocab)]),
            sample_dispatch(c),
            advance_dispatch(c),
        ]
    return {"dispatches": out}


# ---- prefill_last (docs/causal-lm-manifest.md "prefill_last"): the last
# prefill chunk, ending in its last row's next token. The prefill's
# dispatches, then the final norm, lm_head, argmax and sampling on that row
# only (moved to row 0 by kern_last_row: a buffer offset is a literal, so no
# dispatch can name row tokens - 1) and the step advance, so the carries end
# as the first decode step leaves them and the decode loop goes on unchanged.

ONE = i32(1)  # the one row prefill_last's head computes


def one_row_kernel(kernel):
    """A copy of `kernel` whose grids and scratch count one row where they
    count `tokens` (the same symbols: the head of prefill_last)."""
    k = copy.deepcopy(kernel)
    for st in k["impl"]["steps"]:
        st["grid"] = [1 if g == TOK else g for g in st["grid"]]
    for sc in k["impl"].get("scratch", {}).values():
        sc["shape"] = [1 if d == "tokens" else d for d in sc["shape"]]
    return k


def prefill_last_kernels(c, ks, fused):
    """The kernels prefill_last's head adds to the table `ks`: the last-row
    move (docs/kernels.md §14a; an untyped `ptr`: it moves bf16 rows and the
    i64 positions) and the one-row variants of the final norm, the unfused
    argmax and the sampling (their grids count `tokens` elsewhere)."""
    out = {
        "last_row": identity_kernel("kern_last_row", ["inout ptr", "i32", "i32"], [256, 1, 1], [1, 1, 1]),
        "sample_last": sample_kernel(rows=1),
    }
    if not residual_complete(c, c.layers - 1):
        out["add_rmsnorm_last"] = one_row_kernel(ks["add_rmsnorm"])
    elif not fused:
        out["rmsnorm_last"] = one_row_kernel(ks["rmsnorm"])
    if not fused:
        out["argmax_last"] = one_row_kernel(ks["argmax"])
    return out


def last_row(label, buffer, row_bytes):
    """Row tokens - 1 of `buffer` moved to its row 0 (kern_last_row)."""
    return dispatch(label, "last_row", [buf(buffer), TOK, i32(row_bytes)])


def prefill_last_program(c, fused):
    """prefill_last: `prefill`'s dispatches, then on the chunk's last row
    only: the final RMSNorm, the lm_head and argmax (fused: decode's
    `lm_head_argmax` at one row; unfused: a one-row GEMM and argmax), the
    sampling (RNG counter: that row's position) and `advance` at one row:
    next_token[0] is the id after the prompt, and token_ids / positions /
    slot_mapping / seq_lens hold the first decode step's inputs, as after
    the first `decode` (docs/causal-lm-manifest.md "Who writes what")."""
    E, V = c.hidden, c.vocab
    eps = {"f32": F32(c.rms_norm_eps)}
    pending = not residual_complete(c, c.layers - 1)  # a dense last layer left its down_proj in proj_out
    out = list(program(c, "attention_prefill", with_head=False)["dispatches"])
    out.append(last_row("last_row.residual", "residual", 2 * E))
    if pending:
        out.append(last_row("last_row.proj_out", "proj_out", 2 * E))
    # The sampling counter and advance read positions[0]: the last row's position.
    out.append(last_row("last_row.positions", "positions", 8))
    if pending:
        out.append(dispatch("norm", "add_rmsnorm_last", [buf("proj_out"), buf("residual"), buf("model.norm.weight"),
                                                         buf("normed"), ONE, i32(E), eps]))
    if fused:  # decode's head: the norm as the gemv's prologue over the whole stream in `residual`
        out.append(dispatch("norm+lm_head+argmax", "lm_head_argmax",
                            [buf("residual"), buf("model.norm.weight"), buf("lm_head.weight"), buf("logits"),
                             COUNTERS, buf("next_token"), ONE, i32(V), i32(E), i32(E), i32(V), eps]))
    else:
        if not pending:
            out.append(dispatch("norm", "rmsnorm_last", [buf("residual"), buf("model.norm.weight"), buf("normed"),
                                                         ONE, i32(E), eps]))
        out += [dispatch("lm_head", "gemm", [buf("normed"), buf("lm_head.weight"), buf("logits"), ONE, i32(V),
                                             i32(E)]),
                dispatch("argmax", "argmax_last", [buf("logits"), buf("next_token"), ONE, i32(V)])]
    out.append(sample_dispatch(c, rows=ONE, kernel="sample_last"))
    adv = advance_dispatch(c)
    adv["args"][6] = ONE
    out.append(adv)
    return {"dispatches": out}


def manifest(c, tokens_max, model_label, fused=True, max_batch=None, fold_qk=True):
    """The whole manifest as an ordered dict tree. `max_batch` (fused only;
    None: none) adds the batched decode program (docs/batching.md);
    `fold_qk` (fused only): q/k norm + RoPE + the KV write folded into the
    decode attention (docs/kernels.md §13a, §15a), else their own launch."""
    ks = kernels(c)
    states = {"kv_cache": {"bytes_per_token": c.layers * c.kv_heads * 2 * c.head_dim * 2, "align": 256}}
    states.update(sampling_state())
    ks.update(prefill_last_kernels(c, ks, fused))
    if fused:
        del ks["attention_decode"], ks["argmax"]  # the unfused decode's only
        ks.update(fused_kernels(c, fold_qk=fold_qk))
        states["decode_counters"] = {"bytes_fixed": 4 * counter_slots(c), "align": 256}
    doc = {
        "meta": {"version": 2, "model": model_label},
        "symbols": {"tokens": {"min": 1, "max": tokens_max}},
        "states": states,
        "buffers": buffers(c, fused),
        "kernels": ks,
        "programs": {
            "prefill": program(c, "attention_prefill", with_head=False),
            "decode": (fused_decode_program(c, fold_qk=fold_qk) if fused
                       else program(c, "attention_decode", with_head=True)),
            "prefill_last": prefill_last_program(c, fused),
        },
    }
    if fused and max_batch is not None:
        add_batch_decode(doc, c, max_batch, fold_qk)
    return doc


# ---- The batched decode (docs/batching.md): one token per sequence per step
# over up to `max_batch` sequences, each with its own position, KV slot,
# length and row of the block tables [max_batch, pages]. Everything it adds
# is named batch_* / *_batch so the batch-1 programs stay byte-identical.

BATCH = {"sym": "batch"}
MAX_BATCH_DEFAULT = 8


class BatchDecode:
    """What the batched program's layers use instead of the batch-1 decode's
    (fused_layer_dispatches' `batch`)."""
    qk_kernel = "qk_norm_rope_cache_batch"
    qkv_kernel = "attention_decode_batch_qkv"
    positions = "batch_positions"
    slot_mapping = "batch_slot_mapping"
    block_tables = "batch_block_tables"
    seq_lens = "batch_seq_lens"

    def attention(self, c, p, kv_base, page_stride):
        return dispatch(p + "attention", "attention_decode_batch",
                        [buf("q_normed"), kv_base, buf("batch_block_tables"), buf("batch_seq_lens"),
                         buf("k_scale"), buf("v_scale"), COUNTERS, buf("attn_out"), BATCH, i32(c.heads),
                         i32(c.kv_heads), i32(c.head_dim), {"i64": page_stride},
                         {"f32": F32(1.0 / math.sqrt(c.head_dim))}, i32(block_table_pages(c))])


def batch_buffers(c):
    """The batched step inputs (docs/batching.md): carries the program's
    `advance_batch` moves on, and the per-sequence block tables (-1 padded)."""
    return {
        "batch_token_ids": {"dtype": "i64", "shape": ["batch"], "class": "carry"},
        "batch_positions": {"dtype": "i64", "shape": ["batch"], "class": "carry"},
        "batch_slot_mapping": {"dtype": "i64", "shape": ["batch"], "class": "carry"},
        "batch_seq_lens": {"dtype": "i32", "shape": ["batch"], "class": "carry"},
        "batch_block_tables": {"dtype": "i32", "shape": ["batch", block_table_pages(c)], "class": "input"},
    }


def batch_kernels(c, max_batch, fold_qk=True):
    """The kernels of the batched program that the batch-1 decode lacks: the
    per-sequence attention (with `fold_qk`, the one folding in q/k norm + RoPE
    + the KV write, docs/kernels.md §15a; else qk_norm_rope_cache_batch +
    attention_decode_batch) and advance, and the batch-row variants of the
    kernels whose grid counts rows (their launch is the same symbol)."""
    H, KV, D = c.heads, c.kv_heads, c.head_dim
    base = kernels(c)
    # The norm gemvs and lm_head sized for max_batch rows (norm_gemv_name).
    fused = fused_kernels(c, row_buckets=(max_batch,))
    norm_gemvs = {name: k for name, k in fused.items()
                  if name in (norm_gemv_name("gemv_qkv", max_batch), norm_gemv_name("gemv_gate_up", max_batch))}
    embed = base["embedding"]
    embed["impl"]["steps"][0]["grid"] = [BATCH, 1, 1]
    qk = fused["qk_norm_rope_cache"]
    qk["impl"]["steps"][0]["grid"] = [math.ceil((H + 2 * KV) / 4), BATCH, 1]
    head = fused[norm_gemv_name("lm_head_argmax", max_batch)]
    # The batched attentions split each row's context as the batch-1 decode's
    # attention does (ATTN_FUSED_SPLITS): the same splits give the same f32
    # sums, so a row's bits equal `decode`'s alone (a sampled draw depends on
    # every bit of the logits, not only on their argmax).
    attn_params = [BF16_IN, "in ptr", "in buffer<i32>", "in buffer<i32>", F32_IN, F32_IN, "inout ptr", BF16_OUT,
                   "i32", "i32", "i32", "i32", "i64", "f32", "i32"]
    attn = step("kern_attention_decode_batch_bf16",
                attn_params[:6] + ["out buffer<f32>", "out buffer<f32>"] + attn_params[6:] + ["i32"],
                [128, 1, 1], [KV, ATTN_FUSED_SPLITS, BATCH],
                [{"arg": i} for i in range(6)] + [{"scratch": "partial_o"}, {"scratch": "partial_ml"}]
                + [{"arg": i} for i in range(6, 15)] + [i32(ATTN_FUSED_SPLITS)])
    attn["pdl"] = True
    separate = {
        "qk_norm_rope_cache_batch": qk,
        "attention_decode_batch": {
            "params": attn_params,
            "impl": {
                "scratch": {
                    "partial_o": {"dtype": "f32", "shape": [max_batch, H * ATTN_FUSED_SPLITS * D]},
                    "partial_ml": {"dtype": "f32", "shape": [max_batch, H * ATTN_FUSED_SPLITS * 2]},
                },
                "steps": [attn],
            },
        },
    }
    folded = {"attention_decode_batch_qkv": qkv_attention_kernel(c, "kern_attention_decode_batch_qkv_bf16",
                                                                 ATTN_FUSED_SPLITS, max_batch, BATCH)}
    moe = moe_kernels(c, BATCH, "_batch")
    if moe:  # the sparse layers' post-attention norm is its own launch (fused_moe_dispatches)
        moe["rmsnorm_batch"] = identity_kernel("kern_rmsnorm_bf16", [BF16_IN, BF16_IN, BF16_OUT, "i32", "i32", "f32"],
                                               [256, 1, 1], [BATCH, 1, 1])
    return {
        **norm_gemvs,
        **moe,
        **({"bias_add_batch": bias_add_kernel(BATCH)} if c.qkv_bias else {}),
        "embedding_batch": embed,
        **(folded if fold_qk else separate),
        "lm_head_argmax_batch": head,
        "sample_batch": sample_kernel(BATCH),
        "decode_advance_batch": identity_kernel(
            "kern_decode_advance_batch",
            ["in buffer<i64>", "in buffer<i32>", "inout buffer<i64>", "inout buffer<i64>", "inout buffer<i64>",
             "inout buffer<i32>", "i32", "i32", "i32"],
            [64, 1, 1], [{"ceil_div": [BATCH, 64]}, 1, 1]),
    }


def batch_decode_program(c, max_batch, fold_qk=True):
    """decode_batch: the fused decode over `batch` sequences, one token each,
    then the sampling dispatch over the `batch` rows (row r: its own
    sampling inputs, RNG counter batch_positions[r]; greedy rows keep the
    argmax) and advance_batch (row r's next inputs from row r's token)."""
    out = [dispatch("embed_tokens", "embedding_batch",
                    [buf("batch_token_ids"), buf("model.embed_tokens.weight"), buf("residual"), BATCH,
                     i32(c.hidden), i32(c.vocab)])]
    for layer in range(c.layers):
        out += fused_layer_dispatches(c, layer, rows=max_batch, batch=BatchDecode(), fold_qk=fold_qk)
    out.append(dispatch("norm+lm_head+argmax", "lm_head_argmax_batch",
                        [buf("residual"), buf("model.norm.weight"), buf("lm_head.weight"), buf("logits"),
                         COUNTERS, buf("next_token"), BATCH, i32(c.vocab), i32(c.hidden),
                         i32(c.hidden), i32(c.vocab), {"f32": F32(c.rms_norm_eps)}]))
    out.append(sample_dispatch(c, rows=BATCH, positions="batch_positions", kernel="sample_batch"))
    out.append(dispatch("advance", "decode_advance_batch",
                        [buf("next_token"), buf("batch_block_tables"), buf("batch_token_ids"),
                         buf("batch_positions"), buf("batch_slot_mapping"), buf("batch_seq_lens"), BATCH,
                         i32(block_table_pages(c)), i32(PAGE)]))
    return {"dispatches": out}


def add_batch_decode(doc, c, max_batch, fold_qk=True):
    """Adds the `batch` symbol (1 .. max_batch), the batch buffers and
    kernels and the `decode_batch` program to a fused manifest."""
    doc["symbols"]["batch"] = {"min": 1, "max": max_batch}
    doc["buffers"].update(batch_buffers(c))
    doc["kernels"].update(batch_kernels(c, max_batch, fold_qk))
    doc["programs"]["decode_batch"] = batch_decode_program(c, max_batch, fold_qk)


I32_MAX = 2**31 - 1


def check_i32_ranges(c, tokens_max, path):
    """Raises ConfigError when a config value (or a product of them) that the
    manifest passes as an i32 kernel parameter exceeds 2^31 - 1: kern-verify
    would reject the manifest, so say which config value is too large."""
    H, KV, D = c.heads, c.kv_heads, c.head_dim
    values = [
        ("hidden_size", c.hidden),
        ("num_attention_heads", H),
        ("num_key_value_heads", KV),
        ("head_dim", D),
        ("intermediate_size", c.intermediate),
        ("vocab_size", c.vocab),
        ("2 x intermediate_size", 2 * c.intermediate),
        ("num_attention_heads x head_dim", H * D),
        ("num_key_value_heads x head_dim", KV * D),
        ("(num_attention_heads + 2 x num_key_value_heads) x head_dim", c.qkv_rows),
        ("--tokens-max x num_attention_heads", tokens_max * H),
    ]
    for what, value in values:
        if value > I32_MAX:
            raise ConfigError(f"{path}: {what} = {value} exceeds {I32_MAX}, the largest i32 kernel parameter "
                              f"the manifest can pass")


def check_i32_literals(doc, path):
    """Backstop of check_i32_ranges: every {"i32": v} literal in the manifest
    fits in an i32, else ConfigError naming its JSON pointer."""
    def walk(node, pointer):
        if isinstance(node, dict):
            if set(node) == {"i32"} and isinstance(node["i32"], int) and not -I32_MAX - 1 <= node["i32"] <= I32_MAX:
                raise ConfigError(f"{path}: the manifest's {pointer} = {node['i32']} is outside the i32 range "
                                  f"(a config value is too large)")
            for k, v in node.items():
                walk(v, f"{pointer}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{pointer}/{i}")
    walk(doc, "")


def default_label(c):
    return (f"{c.family} E={c.hidden} L={c.layers} H={c.heads} KV={c.kv_heads} D={c.head_dim} "
            f"I={c.intermediate} V={c.vocab}")


def find_kernel_file(kernels_dir, symbol):
    """(file name relative to kernels_dir, sha256 hex) of the one kernel file holding `symbol`."""
    names = sorted(n for n in os.listdir(kernels_dir) if n.endswith((".cubin", ".fatbin")))
    for ext in (".cubin", ".fatbin"):
        if symbol + ext in names:
            names = [symbol + ext]
            break
    else:
        needle = b"\0" + symbol.encode() + b"\0"
        hits = []
        for n in names:
            with open(os.path.join(kernels_dir, n), "rb") as f:
                if needle in f.read():
                    hits.append(n)
        if len(hits) != 1:
            found = ", ".join(hits) if hits else "none"
            raise ConfigError(f"--kernels-dir {kernels_dir}: symbol {symbol} must be in exactly one "
                              f".cubin/.fatbin file, found {found}")
        names = hits
    with open(os.path.join(kernels_dir, names[0]), "rb") as f:
        return names[0], hashlib.sha256(f.read()).hexdigest()


def pin_kernels(doc, kernels_dir):
    """Adds `cubin` + `sha256` after `symbol` in every non-extern step."""
    for kernel in doc["kernels"].values():
        steps = kernel["impl"]["steps"]
        for i, s in enumerate(steps):
            if s["symbol"].startswith(EXTERN_PREFIX):
                continue
            name, digest = find_kernel_file(kernels_dir, s["symbol"])
            pinned = {"symbol": s["symbol"], "cubin": name, "sha256": digest}
            pinned.update((k, v) for k, v in s.items() if k != "symbol")
            steps[i] = pinned


# The build's staged CUDA fatbins beside this file's repository (kernels-src/cuda/meson.build).
DEFAULT_KERNELS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "kernels")


def add_pin_options(ap):
    """--kernels-dir DIR and --unpinned, shared by the manifest generators."""
    pins = ap.add_mutually_exclusive_group()
    pins.add_argument("--kernels-dir", help="directory of built kernel files to pin steps to (cubin + sha256); "
                                            f"default: {DEFAULT_KERNELS_DIR} when it exists")
    pins.add_argument("--unpinned", action="store_true", help="write no cubin/sha256 pins")


def resolve_kernels_dir(args, tool):
    """The directory to pin steps to, or None: --kernels-dir, else the
    repository's build/kernels when it exists (else a note on stderr saying
    where the generator looked), nothing with --unpinned."""
    if args.unpinned:
        return None
    if args.kernels_dir:
        return args.kernels_dir
    if os.path.isdir(DEFAULT_KERNELS_DIR):
        return DEFAULT_KERNELS_DIR
    print(f"{tool}: note: steps not pinned: no --kernels-dir, and {DEFAULT_KERNELS_DIR} does not exist "
          "(build kern with nvcc to stage the fatbins there, or pass --kernels-dir DIR; --unpinned says this is "
          "intended)", file=sys.stderr)
    return None


def main(argv, tool="gen_manifest"):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="HF config.json (Qwen3, Qwen3-MoE, Llama 3.x, Mistral or Qwen2.5; decoder_config.py)")
    ap.add_argument("-o", "--output", required=True, help="manifest to write")
    ap.add_argument("--tokens-max", type=int, default=512, help="upper bound of the `tokens` symbol (default 512)")
    add_pin_options(ap)
    ap.add_argument("--model", help="meta.model label (default: derived from the geometry)")
    ap.add_argument("--max-batch", type=int, default=MAX_BATCH_DEFAULT,
                    help=f"sequences of the batched decode program decode_batch (1 to {GEMV_MAX_ROWS}, the fused "
                         f"decode kernels' row limit; default {MAX_BATCH_DEFAULT}; docs/batching.md); "
                         "0: no batched program. Fused kernels only")
    ap.add_argument("--kernels", choices=("fused", "fused-qk-separate", "unfused"), default="fused",
                    help="decode kernel set: fused (default; docs/kernels.md §11-13a: 5 launches per layer, q/k "
                         "norm + RoPE + KV write folded into the attention), fused-qk-separate (the same with "
                         "those as their own launch, 6 per layer: the first fused set, for A/B) or unfused (the "
                         "original 12 launches per layer); prefill is the same")
    ap.add_argument("--tp", type=int, help="tensor-parallel world size (1, 2, 4 or 8): the manifest of every rank "
                                           "(docs/parallel.md); implies --kernels unfused")
    args = ap.parse_args(argv)
    if not 1 <= args.tokens_max <= I32_MAX:
        ap.error(f"--tokens-max must be from 1 to {I32_MAX}")
    if args.tp is not None and args.tp not in tensor_parallel.TP_CHOICES:
        ap.error(f"--tp must be one of {', '.join(map(str, tensor_parallel.TP_CHOICES))}")
    if not 0 <= args.max_batch <= GEMV_MAX_ROWS:
        ap.error(f"--max-batch must be from 0 to {GEMV_MAX_ROWS} (the fused decode kernels take at most "
                 f"{GEMV_MAX_ROWS} rows)")
    check_output_path(args.output, inputs=[("config", args.config)])
    c = load_config(args.config)
    check_i32_ranges(c, args.tokens_max, args.config)
    fused = args.kernels != "unfused"
    if args.tp is not None:
        tensor_parallel.check(c, args.tp, args.config)
        doc = tensor_parallel.manifest(sys.modules[__name__], c, args.tp, args.tokens_max,
                                       args.model or f"{default_label(c)}-tp{args.tp}", max_batch=args.max_batch)
    else:
        doc = manifest(c, args.tokens_max, args.model or default_label(c), fused=fused,
                       max_batch=args.max_batch if fused and args.max_batch > 0 else None,
                       fold_qk=args.kernels == "fused")
    check_i32_literals(doc, args.config)
    kernels_dir = resolve_kernels_dir(args, tool)
    if kernels_dir:
        pin_kernels(doc, kernels_dir)
    text = dumps(doc)
    write_atomic(args.output, lambda f: f.write(text), binary=False)
    return 0


if __name__ == "__main__":
    sys.exit(run("gen_manifest", main, sys.argv[1:]))
