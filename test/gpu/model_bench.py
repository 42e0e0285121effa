#!/usr/bin/env python3
"""model_bench.py OUT_DIR [MODEL...]

Summarises test/gpu/run.sh step 5 (docs/gpu.md): for each model (default
qwen3-0.6b qwen3-4b) it reads OUT_DIR/bench_<model>_{graph,eager}.json
(`kern-run bench -p 512 -n 128 -o json`, random weights) and the measured
device-to-device copy bandwidth in OUT_DIR/kernels.json (kern-gpu-compare),
and reports decode ms/step and tok/s (median of the tg128 repetitions),
prefill tok/s of one 512-token chunk, and the achieved fraction of memory
bandwidth:

    weight bytes read per decode step / step time / copy bandwidth

A decode step at batch 1 reads every weight once, except the embedding
table and the rope cache, of which it reads one row each (sizes from
examples/<model>.json). Writes OUT_DIR/models.json and prints a short table.
Run from the repository root. Standard library only.
"""

import json
import math
import os
import sys

DSIZE = {"bf16": 2, "f16": 2, "f32": 4, "fp8e4m3": 1, "i32": 4, "u32": 4, "i64": 8, "u8": 1}
ONE_ROW = ("model.embed_tokens.weight", "rope.cos_sin_cache")


def step_weight_bytes(manifest):
    """Bytes of weights one decode step reads (see the module doc)."""
    total = 0
    for name, b in manifest["buffers"].items():
        if b["class"] != "weight":
            continue
        n = math.prod(b["shape"]) * DSIZE[b["dtype"]]
        if name in ONE_ROW:
            n //= b["shape"][0]
        total += n
    return total


def summarise(out, models):
    try:
        with open(os.path.join(out, "kernels.json"), "r", encoding="utf-8") as f:
            copy_gbps = float(json.load(f).get("copy_gbps", 0.0))
    except (OSError, ValueError):
        copy_gbps = 0.0
    results = {"copy_gbps": copy_gbps, "models": {}}
    for m in models:
        with open(os.path.join("examples", m + ".json"), "r", encoding="utf-8") as f:
            r = {"weight_bytes_per_step": step_weight_bytes(json.load(f))}
        for mode in ("graph", "eager"):
            try:
                with open(os.path.join(out, f"bench_{m}_{mode}.json"), "r", encoding="utf-8") as f:
                    tests = {t["test"]: t for t in json.load(f)}
            except (OSError, ValueError, KeyError, TypeError):
                continue
            x = {}
            tg, pp = tests.get("tg128"), tests.get("pp512")
            if tg and tg["median_ts"] > 0:
                ms = 1000.0 / tg["median_ts"]
                x["decode_ms_per_step"] = ms
                x["decode_tok_s"] = tg["median_ts"]
                if copy_gbps > 0:
                    x["bandwidth_fraction"] = r["weight_bytes_per_step"] / (ms * 1e-3) / 1e9 / copy_gbps
            if pp:
                x["prefill512_tok_s"] = pp["median_ts"]
            r[mode] = x
        results["models"][m] = r
    return results


def table(results):
    nan = float("nan")
    weights = ", ".join(f"{m} {r['weight_bytes_per_step'] / 1e9:.2f} GB" for m, r in results["models"].items())
    lines = [f"decode at batch 1, weights read per step: {weights}; d2d copy ceiling {results['copy_gbps']:.0f} GB/s"]
    for m, r in results["models"].items():
        for mode in ("graph", "eager"):
            x = r.get(mode, {})
            frac = x.get("bandwidth_fraction")
            lines.append(f"{m:<11} {mode:<5} {x.get('decode_ms_per_step', nan):8.3f} ms/step "
                         f"{x.get('decode_tok_s', nan):8.1f} tok/s   prefill512 {x.get('prefill512_tok_s', nan):9.0f} tok/s"
                         f"   bandwidth " + (f"{100 * frac:5.1f}%" if frac else "  n/a"))
    return "\n".join(lines)


def complete(results):
    """Every model has decode and prefill numbers in both modes."""
    return all(all(k in r.get(mode, {}) for k in ("decode_ms_per_step", "prefill512_tok_s"))
               for r in results["models"].values() for mode in ("graph", "eager"))


def main(argv):
    out = argv[1]
    models = argv[2:] or ["qwen3-0.6b", "qwen3-4b"]
    results = summarise(out, models)
    with open(os.path.join(out, "models.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(table(results))
    return 0 if complete(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
