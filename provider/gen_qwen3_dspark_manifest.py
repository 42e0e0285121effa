#!/usr/bin/python3
"""gen_qwen3_dspark_manifest.py CONFIG.json DRAFT.json -o MANIFEST.json [--tokens-max 512] [--kernels-dir DIR | --unpinned]

Writes a speculative-decoding kern manifest (SPEC §8, docs/speculative.md):
the target Qwen3 of CONFIG.json (HF config) plus a DSpark draft (a DFlash
block draft + a Markov head) described by DRAFT.json (provider/dspark_config.py),
in one manifest: the draft's weights under `draft.`, its own paged KV state
`draft_kv`, the carry `draft_fc_out` for the tapped target features,
`meta.spec = {block, mask_token}` and six programs:

  prefill           the target's prompt chunks (unfused kernels) + the taps
  decode            plain fused decode (exactly gen_qwen3_manifest.py's)
  decode_spec       fused decode + the taps, no step advance (the last prompt
                    token; its inputs stay for draft_precompute)
  verify            fused decode over `block` rows (anchor + drafted) + the
                    taps, `block` greedy predictions, no step advance
  draft             the DFlash pass over `block` rows (anchor, mask...) with
                    non-causal attention over context + block, the target's
                    lm_head, then the Markov chain (gather, beta = 1 GEMV,
                    argmax per drafted row; `prev` read on the device)
  draft_precompute  hidden_norm(draft_fc_out) -> each draft layer's k/v of
                    the accepted rows -> k_norm, RoPE -> draft_kv

Each tap is one GEMM with a column block of DFlash's `fc` placed where the
tapped layer's output is complete (the first plain, the others accumulating,
beta = 1): no concat buffer. Tap convention: the layer's OUTPUT (DFlash's
`hidden_states[layer_id + 1]`). Output is deterministic (json_out.py);
--kernels-dir, its default (the repository's build/kernels when it exists)
and --unpinned work as in gen_qwen3_manifest.py.

Exit status: 0 on success, 1 on a bad config, 2 on bad usage or a file that
cannot be read or written.
"""

import argparse
import sys

import gen_manifest as g
from dspark_config import draft_tensors, load_draft_config
from gen_manifest import TOK, buf, dispatch, i32
from json_out import F32, dumps
from qwen3_config import load_config
from tool_io import check_output_path, run, write_atomic


def spec_kernels(c, d):
    """Kernels the speculative programs add to the fused kernel table."""
    H = c.heads
    kernels = {
        "attention_noncausal": g.identity_kernel("kern_paged_attention_noncausal_bf16", g.ATTN_PARAMS,
                                                 [128, 1, 1], [H, TOK, 1]),
        "gemm_acc": g.identity_kernel(g.GEMM_ACC_SYMBOL, [g.BF16_IN, g.BF16_IN, g.BF16_INOUT, "i32",
                                                                      "i32", "i32"], [1, 1, 1], [1, 1, 1]),
        # One row of the Markov chain: the embedding and argmax kernels with
        # constant grids and scratch (the chain runs at tokens = block).
        "embedding_row": g.identity_kernel("kern_embedding_bf16", ["in buffer<i64>", g.BF16_IN, g.BF16_OUT, "i32",
                                                                   "i32", "i32"], [128, 1, 1], [1, 1, 1]),
        "argmax_row": {
            "params": [g.BF16_IN, "out buffer<i64>", "i32", "i32"],
            "impl": {
                "scratch": {
                    "partial_val": {"dtype": "f32", "shape": [1, g.ARGMAX_CHUNKS]},
                    "partial_idx": {"dtype": "i32", "shape": [1, g.ARGMAX_CHUNKS]},
                },
                "steps": [
                    g.step("kern_argmax_partial_bf16",
                           [g.BF16_IN, "out buffer<f32>", "out buffer<i32>", "i32", "i32", "i32"],
                           [256, 1, 1], [g.ARGMAX_CHUNKS, 1, 1],
                           [{"arg": 0}, {"scratch": "partial_val"}, {"scratch": "partial_idx"},
                            {"arg": 2}, {"arg": 3}, i32(g.ARGMAX_CHUNKS)]),
                    g.step("kern_argmax_reduce", [g.F32_IN, "in buffer<i32>", "out buffer<i64>", "i32", "i32"],
                           [64, 1, 1], [1, 1, 1],
                           [{"scratch": "partial_val"}, {"scratch": "partial_idx"}, {"arg": 1},
                            {"arg": 2}, i32(g.ARGMAX_CHUNKS)]),
                ],
            },
        },
    }
    return kernels


def spec_buffers(c, d):
    """The target's buffers plus the draft's (docs/speculative.md, Buffers)."""
    out = g.buffers(c)
    E, KV, D, V = c.hidden, c.kv_heads, c.head_dim, c.vocab
    out["draft_ids"] = {"dtype": "i64", "shape": ["tokens"], "class": "input"}
    out["draft_tokens"] = {"dtype": "i64", "shape": [d.block - 1], "class": "output"}
    out["draft_fc_out"] = {"dtype": "bf16", "shape": ["tokens", E], "class": "carry"}
    # An output so that its rows survive the round (the reference test dumps them).
    out["draft_logits"] = {"dtype": "bf16", "shape": [d.block, V], "class": "output"}
    out["markov_embed"] = {"dtype": "bf16", "shape": [1, d.markov_dim], "class": "workspace"}
    out["draft_ctx_kv"] = {"dtype": "bf16", "shape": ["tokens", 2 * KV * D], "class": "workspace"}
    for name, dtype, shape in draft_tensors(c, d):
        out[name] = {"dtype": dtype.lower(), "shape": shape, "class": "weight"}
    return out


def tap_dispatch(c, j, layer):
    """Tap j (target layer `layer`'s output, in `residual`): draft_fc_out (+)=
    residual @ draft.fc.j^T; the first tap writes, the others accumulate."""
    kernel = "gemm" if j == 0 else "gemm_acc"
    return dispatch(f"tap.{j}.layers.{layer}", kernel,
                    [buf("residual"), buf(f"draft.fc.{j}.weight"), buf("draft_fc_out"), TOK, i32(c.hidden),
                     i32(c.hidden)])


def with_taps_after(c, d, dispatches, tap_after):
    """`dispatches` with tap j inserted after the dispatch labelled
    tap_after(layer) for each tapped layer."""
    where = {tap_after(layer): (j, layer) for j, layer in enumerate(d.taps)}
    out = []
    for x in dispatches:
        out.append(x)
        if x["label"] in where:
            out.append(tap_dispatch(c, *where.pop(x["label"])))
    assert not where, f"tap points not found: {sorted(where)}"
    return out


def prefill_program(c, d):
    """The unfused prefill + taps. A layer's output is complete in `residual`
    once the next layer's input_layernorm has added it; the last layer's, once
    the final norm's add has (appended only when the last layer is tapped)."""
    dispatches = g.program(c, "attention_prefill", with_head=False)["dispatches"]
    if c.layers - 1 in d.taps:
        dispatches.append(dispatch("norm", "add_rmsnorm",
                                   [buf("proj_out"), buf("residual"), buf("model.norm.weight"), buf("normed"), TOK,
                                    i32(c.hidden), {"f32": F32(c.rms_norm_eps)}]))

    def after(layer):
        return f"layers.{layer + 1}.input_layernorm" if layer + 1 < c.layers else "norm"
    return {"dispatches": with_taps_after(c, d, dispatches, after)}


def fused_with_taps(c, d, advance, rows=1):
    """The fused decode program + taps (after each tapped layer's down_proj,
    which completes the layer's output in `residual`); without the step
    advance for verify. `rows`: the a rows its norm gemvs are sized for
    (decode_spec 1, verify the block)."""
    dispatches = g.fused_decode_program(c, rows, sampling=False)["dispatches"]  # speculative decoding stays greedy
    if not advance:
        dispatches = dispatches[:-1]
    return {"dispatches": with_taps_after(c, d, dispatches, lambda layer: f"layers.{layer}.down_proj+residual")}


def draft_program(c, d):
    """The DFlash pass over `block` rows + the Markov chain (docs/speculative.md)."""
    E, V, eps = c.hidden, c.vocab, {"f32": F32(c.rms_norm_eps)}
    out = [dispatch("draft.embed_tokens", "embedding",
                    [buf("draft_ids"), buf("model.embed_tokens.weight"), buf("residual"), TOK, i32(E), i32(V)])]
    for layer in range(d.layers):
        out += g.layer_dispatches(c, layer, "attention_noncausal", prefix="draft.", state="draft_kv",
                                  state_layers=d.layers)
    out += [dispatch("draft.norm", "add_rmsnorm",
                     [buf("proj_out"), buf("residual"), buf("draft.norm.weight"), buf("normed"), TOK, i32(E), eps]),
            # Base logits of all `block` rows (row 0, the anchor's, is not used).
            dispatch("draft.lm_head", "gemm",
                     [buf("normed"), buf("lm_head.weight"), buf("draft_logits"), i32(d.block), i32(V), i32(E)])]
    for i in range(d.block - 1):
        prev = buf("draft_ids") if i == 0 else buf("draft_tokens", 8 * (i - 1))
        row = buf("draft_logits", 2 * V * (i + 1))
        out += [dispatch(f"markov.{i}.gather", "embedding_row",
                         [prev, buf("draft.markov_w1.weight"), buf("markov_embed"), i32(1), i32(d.markov_dim), i32(V)]),
                dispatch(f"markov.{i}.bias", "gemm_acc",
                         [buf("markov_embed"), buf("draft.markov_w2.weight"), row, i32(1), i32(V), i32(d.markov_dim)]),
                dispatch(f"markov.{i}.argmax", "argmax_row", [row, buf("draft_tokens", 8 * i), i32(1), i32(V)])]
    return {"dispatches": out}


def precompute_program(c, d):
    """Context K/V of the rows in draft_fc_out (positions / slot_mapping of the
    target call that tapped them) into draft_kv, per draft layer: k and v
    projections (rows H D .. of the layer's qkv_proj), k_norm, RoPE on k."""
    E, H, KV, D = c.hidden, c.heads, c.kv_heads, c.head_dim
    eps = {"f32": F32(c.rms_norm_eps)}
    page_stride = d.layers * g.PAGE * KV * 2 * D
    out = [dispatch("draft.hidden_norm", "rmsnorm",
                    [buf("draft_fc_out"), buf("draft.hidden_norm.weight"), buf("normed"), TOK, i32(E), eps])]
    for layer in range(d.layers):
        p = f"draft.layers.{layer}."
        kv_base = {"state": "draft_kv", "offset": layer * g.PAGE * KV * 2 * D * 2}
        out += [
            dispatch(p + "ctx_kv_proj", "gemm",
                     [buf("normed"), buf(p + "self_attn.qkv_proj.weight", H * D * E * 2), buf("draft_ctx_kv"), TOK,
                      i32(2 * KV * D), i32(E)]),
            dispatch(p + "ctx_k_norm", "head_rmsnorm_k",
                     [buf("draft_ctx_kv"), buf(p + "self_attn.k_norm.weight"), buf("k_normed"),
                      {"expr": {"mul": [TOK, KV]}}, i32(KV), i32(D), i32(2 * KV * D), i32(KV * D), eps]),
            # K only: no query heads (q is the k buffer, untouched).
            dispatch(p + "ctx_k_rope", "rope",
                     [buf("positions"), buf("k_normed"), buf("k_normed"), buf("rope.cos_sin_cache"), TOK, i32(0),
                      i32(KV), i32(D), i32(KV * D), i32(KV * D), {"u8": 1}]),
            dispatch(p + "ctx_kv_cache_write", "kv_cache_write",
                     [buf("k_normed"), buf("draft_ctx_kv", KV * D * 2), kv_base, buf("slot_mapping"), buf("k_scale"),
                      buf("v_scale"), TOK, i32(KV), i32(D), i32(KV * D), i32(2 * KV * D), {"i64": page_stride}]),
        ]
    return {"dispatches": out}


def manifest(c, d, tokens_max, model_label):
    """The whole speculative manifest as an ordered dict tree."""
    base = g.manifest(c, tokens_max, model_label, fused=True)
    base["meta"]["spec"] = {"block": d.block, "mask_token": d.mask_token}
    base["states"]["draft_kv"] = {"bytes_per_token": d.layers * c.kv_heads * 2 * c.head_dim * 2, "align": 256}
    base["buffers"] = spec_buffers(c, d)
    kernels = g.kernels(c)
    del kernels["attention_decode"]  # the unfused decode's only; `argmax` stays unused too
    del kernels["argmax"]
    kernels.update(g.fused_kernels(c, row_buckets=(1, d.block)))
    kernels.update(spec_kernels(c, d))
    base["kernels"] = kernels
    base["programs"] = {
        "prefill": prefill_program(c, d),
        "decode": base["programs"]["decode"],
        "decode_spec": fused_with_taps(c, d, advance=False),
        "verify": fused_with_taps(c, d, advance=False, rows=d.block),
        "draft": draft_program(c, d),
        "draft_precompute": precompute_program(c, d),
    }
    return base


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="HF Qwen3 config.json of the target")
    ap.add_argument("draft", help="DSpark draft config (provider/dspark_config.py)")
    ap.add_argument("-o", "--output", required=True, help="manifest to write")
    ap.add_argument("--tokens-max", type=int, default=512, help="upper bound of the `tokens` symbol (default 512)")
    g.add_pin_options(ap)
    ap.add_argument("--model", help="meta.model label (default: derived from the geometry)")
    args = ap.parse_args(argv)
    if not 1 <= args.tokens_max <= g.I32_MAX:
        ap.error(f"--tokens-max must be from 1 to {g.I32_MAX}")
    check_output_path(args.output, inputs=[("config", args.config), ("draft config", args.draft)])
    c = load_config(args.config)
    d = load_draft_config(args.draft, c)
    if args.tokens_max < d.block:
        ap.error(f"--tokens-max {args.tokens_max} is below the draft's block_size {d.block}")
    g.check_i32_ranges(c, args.tokens_max, args.config)
    label = args.model or (g.default_label(c) + f" + dspark L={d.layers} block={d.block}")
    doc = manifest(c, d, args.tokens_max, label)
    g.check_i32_literals(doc, args.config)
    kernels_dir = g.resolve_kernels_dir(args, "gen_qwen3_dspark_manifest")
    if kernels_dir:
        g.pin_kernels(doc, kernels_dir)
    text = dumps(doc)
    write_atomic(args.output, lambda f: f.write(text), binary=False)
    return 0


if __name__ == "__main__":
    sys.exit(run("gen_qwen3_dspark_manifest", main, sys.argv[1:]))
