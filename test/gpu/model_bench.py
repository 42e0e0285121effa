#!/usr/bin/env python3
"""model_bench.py RES_DIR SUMMARY_TXT RESULTS_JSON — results.json of a GPU run

test/gpu/run.sh calls this after every step (docs/gpu.md "Reading the
results"). It reads what the steps left in RES_DIR, all optional (a run
killed early still gets a results.json):
  env.json              nvidia-smi: device name, driver, clocks (step gpu)
  VERSION               the bundle's commit and nvcc (step bundle)
  kernels.json          kern-gpu-compare: cases, kernel timings, copy_gbps
  tiny_*.json           kern-run --json of the tiny model per device/mode
  pdl_*.json            kern-run --json with PDL, --no-pdl, --no-pdl --eager (step pdl)
  bench_<m>_<mode>.json kern-run bench -p 512 -n 1,32 -r 20 --warmup 2
                        --decode both -o json, mode graph|eager
  hf_<m>.json           hf_peer.py: HF vs kern ids and timings
and SUMMARY_TXT's step lines; writes RESULTS_JSON and prints a short table.
Per model (sizes from examples/<m>.json):
  decode ms/step        median of the tg1 samples: 20 single decode steps
                        (each from writing the token to reading the next
                        one back) after 2 warm-up steps; tok/s = 1000 / it;
                        decode_ms_per_step_tg32 = 1000 / median tok/s of the
                        20 tg32 repetitions (32 steps each), a cross-check
  decode loop           per mode, the asynchronous (tg32) and synchronous
                        (tg32-sync) decode loop: wall ms/step and, per
                        steady-state step, GPU busy / wall ms, the host gap,
                        launches, host writes and waits (kern-run bench's
                        decode_* figures; docs/runtime.md)
  launches/step         kernel launches of one decode step run eagerly (the
                        decode program's dispatches, each kernel's steps);
                        with graphs, one graph launch replays them
  bandwidth fraction    weight bytes one decode step reads / step time /
                        the d2d copy bandwidth measured in the same run
  vs HF                 kern decode tok/s over HF's (default generate; static
                        KV cache + CUDA graph) on the same weights
Also: model_bench.py --pdl-verdict RES_DIR WORK_DIR prints the pdl step's
line (exit 1 unless the ids with and without PDL are equal);
model_bench.py --bench-line FILE | --copy-line FILE print the one-line
details run.sh puts in the summary. Run from the repository root. Exit 0
(1 on bad usage). Standard library only.
"""

import json
import math
import os
import re
import statistics
import sys
import time

DSIZE = {"bf16": 2, "f16": 2, "f32": 4, "fp8e4m3": 1, "i32": 4, "u32": 4, "i64": 8, "u8": 1}
ONE_ROW = ("model.embed_tokens.weight", "rope.cos_sin_cache")
MODELS = ("qwen3-0.6b", "qwen3-4b", "qwen3-4b-unfused")  # 4b: fused decode; -unfused: the original kernels
MODES = ("graph", "eager")
SUSTAINED = 32  # run.sh: kern-run bench -p 512 -n 1,32 -r 20 --warmup 2 --decode both
DECODE_KEYS = ("gpu_busy_ms_per_step", "gpu_wall_ms_per_step", "host_gap_us_per_step", "host_gap_us_max",
               "launches_per_step", "host_writes_per_step", "host_waits_per_step")


def step_weight_bytes(manifest):
    """Bytes of weights one decode step reads: every weight once, except one
    row of the embedding table and of the rope cache."""
    total = 0
    for name, b in manifest["buffers"].items():
        if b["class"] != "weight":
            continue
        n = math.prod(b["shape"]) * DSIZE[b["dtype"]]
        if name in ONE_ROW:
            n //= b["shape"][0]
        total += n
    return total


def launches_per_step(manifest, program="decode"):
    """Kernel launches of one run of `program`: each dispatch launches every step of its kernel."""
    kernels = manifest["kernels"]
    total = 0
    for d in manifest["programs"][program]["dispatches"]:
        k = kernels.get(d["kernel"], {})
        total += len(k.get("impl", {}).get("steps", [])) or 1  # an extern op (gemm) is one launch
    return total


def load(path):
    """Parsed JSON at path, or None when missing or unreadable."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def bench_numbers(doc):
    """decode/prefill numbers of one kern-run bench JSON (a list of tests)."""
    if not isinstance(doc, list):
        return {}
    tests = {t.get("test"): t for t in doc if isinstance(t, dict)}
    x = {}
    one, tg, pp = tests.get("tg1"), tests.get(f"tg{SUSTAINED}"), tests.get("pp512")
    if one and one.get("samples_ms"):
        x["decode_ms_per_step"] = statistics.median(one["samples_ms"])
        x["decode_tok_s"] = 1000.0 / x["decode_ms_per_step"]
        x["decode_steps_timed"] = len(one["samples_ms"])
    if tg and tg.get("median_ts", 0) > 0:
        x[f"decode_ms_per_step_tg{SUSTAINED}"] = 1000.0 / tg["median_ts"]
    if pp and pp.get("median_ts", 0) > 0:
        x["prefill512_tok_s"] = pp["median_ts"]
    # The decode loop, asynchronous (tg32) and synchronous (tg32-sync): wall
    # ms/step, and per steady-state step the GPU busy / wall time, the host
    # gap, launches, host writes and waits (null figures are left out).
    for name, loop in ((f"tg{SUSTAINED}", "async"), (f"tg{SUSTAINED}-sync", "sync")):
        t = tests.get(name)
        if not t or t.get("median_ts", 0) <= 0:
            continue
        d = {"ms_per_step": 1000.0 / t["median_ts"]}
        for k in DECODE_KEYS:
            if isinstance(t.get("decode_" + k), (int, float)):
                d[k] = t["decode_" + k]
        x.setdefault("decode_loop", {})[loop] = d
    for t in doc[:1]:
        for k in ("plan_sha256", "device", "driver", "build_commit"):
            if t.get(k):
                x[k] = t[k]
    return x


def parse_summary(path):
    """[{name, status, seconds, detail}] of the step lines of summary.txt."""
    steps = []
    try:
        with open(path, "r", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return steps
    for line in lines:
        m = re.match(r"^(\S+)\s+(ok|FAIL|TIMEOUT|skip)\s+(\d+)s  (.*)$", line)
        if m:
            steps.append({"name": m[1], "status": m[2], "seconds": int(m[3]), "detail": m[4]})
    return steps


def summarise(res, summary_path, models=MODELS):
    """The results dict (see the module doc)."""
    r = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "device": load(os.path.join(res, "env.json"))}
    try:
        with open(os.path.join(res, "VERSION"), "r", encoding="utf-8") as f:
            r["bundle"] = f.read().strip().splitlines()
    except OSError:
        pass
    kernels = load(os.path.join(res, "kernels.json")) or {}
    copy_gbps = float(kernels.get("copy_gbps", 0.0) or 0.0)
    r["copy_gbps"] = copy_gbps
    r["steps"] = parse_summary(summary_path)
    tiny = {}
    for label in ("cpu", "cuda", "cuda_pinned", "cuda_eager"):
        t = load(os.path.join(res, f"tiny_{label}.json"))
        if isinstance(t, dict):
            tiny[label] = {"ids": t.get("generated_ids"), "decode_ms_per_token": t.get("decode_ms_per_token")}
    if tiny:
        r["tiny"] = tiny
    r["models"] = {}
    for m in models:
        manifest = load(os.path.join("examples", m + ".json"))
        x = {}
        if manifest:
            x["weight_bytes_per_step"] = step_weight_bytes(manifest)
            x["launches_per_step"] = {"eager": launches_per_step(manifest), "graph": 1}
        for mode in MODES:
            b = bench_numbers(load(os.path.join(res, f"bench_{m}_{mode}.json")))
            if not b:
                continue
            if "plan_sha256" in b:
                x["plan_sha256"] = b.pop("plan_sha256")
            for k in ("device", "driver", "build_commit"):
                if k in b:
                    r.setdefault("kern", {})[k] = b.pop(k)
            if copy_gbps > 0 and "decode_ms_per_step" in b and "weight_bytes_per_step" in x:
                b["bandwidth_fraction"] = x["weight_bytes_per_step"] / (b["decode_ms_per_step"] * 1e-3) / 1e9 / copy_gbps
            x[mode] = b
        if "decode_ms_per_step" in x.get("graph", {}) and "decode_ms_per_step" in x.get("eager", {}):
            x["graph_speedup"] = x["eager"]["decode_ms_per_step"] / x["graph"]["decode_ms_per_step"]
        hf = load(os.path.join(res, f"hf_{m}.json"))
        if isinstance(hf, dict):
            kern_ms = x.get("graph", {}).get("decode_ms_per_step")
            peer = {k: hf.get(k) for k in ("compare", "hf_generate_ms_per_token", "hf_static_graph_ms_per_token",
                                           "hf_static_graph_ids_match", "hf_prefill512_tok_s",
                                           "kern_decode_ms_per_token", "versions", "errors", "skipped")
                    if hf.get(k) is not None}
            for key in ("hf_generate_ms_per_token", "hf_static_graph_ms_per_token"):
                if kern_ms and hf.get(key):  # tok/s ratio = inverse ms ratio
                    peer["kern_vs_" + key.replace("_ms_per_token", "")] = hf[key] / kern_ms
            pp = x.get("graph", {}).get("prefill512_tok_s")
            if pp and hf.get("hf_prefill512_tok_s"):
                peer["kern_vs_hf_prefill512"] = pp / hf["hf_prefill512_tok_s"]
            x["hf"] = peer
        r["models"][m] = x
    return r


def bundle_commit(r):
    """The commit in the bundle's VERSION ("commit <sha>[ (dirty tree)]"), shortened, or "?"."""
    for line in r.get("bundle", []):
        if line.startswith("commit "):
            return line[7:19] + (" (dirty)" if "dirty" in line else "")
    return "?"


def fmt(v, spec, width):
    return format(v, spec) if isinstance(v, (int, float)) else "-".rjust(width)


def table(r):
    """A short fixed-width table: one line per model and mode, then the HF comparison."""
    dev = r.get("device") or {}
    lines = [f"device {dev.get('name', '?')}, driver {dev.get('driver_version', '?')}, "
             f"SM clock {dev.get('clocks.sm', '?')}/{dev.get('clocks.max.sm', '?')} MHz; "
             f"d2d copy {r.get('copy_gbps', 0):.0f} GB/s; kern {r.get('kern', {}).get('build_commit') or bundle_commit(r)}",
             "model       mode   ms/step    tok/s  launches  prefill512 tok/s  bandwidth"]
    for m, x in r["models"].items():
        for mode in MODES:
            b = x.get(mode, {})
            frac = b.get("bandwidth_fraction")
            lines.append(f"{m:<11} {mode:<5} {fmt(b.get('decode_ms_per_step'), '8.3f', 8)} "
                         f"{fmt(b.get('decode_tok_s'), '8.1f', 8)} {fmt(x.get('launches_per_step', {}).get(mode), '9d', 9)} "
                         f"{fmt(b.get('prefill512_tok_s'), '17.0f', 17)}  "
                         + (f"{100 * frac:8.1f}%" if frac else "       -"))
    for m, x in r["models"].items():
        for mode in MODES:
            loops = x.get(mode, {}).get("decode_loop", {})
            if loops:
                lines.append(f"{m} {mode} decode loop: " + "; ".join(
                    f"{k} {fmt(v.get('ms_per_step'), '.3f', 1)} ms/step, GPU busy "
                    f"{fmt(v.get('gpu_busy_ms_per_step'), '.3f', 1)} ms, host gap "
                    f"{fmt(v.get('host_gap_us_per_step'), '.1f', 1)} us" for k, v in loops.items()))
    for m, x in r["models"].items():
        hf = x.get("hf")
        if not hf:
            continue
        c = hf.get("compare", {})
        ids = ("equal" if c.get("equal") else
               f"differ from step {c['first_diff']} (HF top-2 gap {c.get('gap_at_diff')} at top logit "
               f"{c.get('top_at_diff')}: {'a near tie' if c.get('near_tie') else 'NOT a near tie'})"
               if c else "not compared")
        lines.append(f"{m} vs HF: greedy ids {ids}; kern/HF tok/s: generate "
                     f"{fmt(hf.get('kern_vs_hf_generate'), '.2f', 1)}x, static+graph "
                     f"{fmt(hf.get('kern_vs_hf_static_graph'), '.2f', 1)}x, prefill512 "
                     f"{fmt(hf.get('kern_vs_hf_prefill512'), '.2f', 1)}x"
                     + (f"; errors: {', '.join(hf['errors'])}" if hf.get("errors") else ""))
    return "\n".join(lines)


PDL_RUNS = ("pdl", "nopdl", "nopdl_eager")  # run.sh s_pdl: with PDL (graphs), --no-pdl (graphs), --no-pdl --eager


def pdl_verdict(res, work):
    """(line, ok) for run.sh's pdl step: the greedy ids of pdl_<run>.json in
    `res` compared with the --no-pdl graph run's; a run without a result is
    named with the last line of its pdl_<run>.err in `work`."""
    def ids(label):
        doc = load(os.path.join(res, f"pdl_{label}.json"))
        if isinstance(doc, dict) and isinstance(doc.get("generated_ids"), list):
            return doc["generated_ids"]
        try:
            with open(os.path.join(work, f"pdl_{label}.err"), "r", encoding="utf-8") as f:
                lines = [line for line in f.read().splitlines() if line.strip()]
        except OSError:
            lines = []
        return "no result: " + (lines[-1][:100] if lines else "no output")

    ref = ids("nopdl")
    if not isinstance(ref, list):
        return f"--no-pdl (graphs): {ref}", False
    parts, ok = [], True
    for label in ("pdl", "nopdl_eager"):
        got = ids(label)
        if got == ref:
            parts.append(f"{label} equal")
            continue
        ok = False
        if isinstance(got, list):
            first = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
            parts.append(f"{label} DIFFERS at step {first}")
        else:
            parts.append(f"{label}: {got}")
    return f"{len(ref)} ids vs --no-pdl (graphs): " + ", ".join(parts), ok


def main(argv):
    if len(argv) == 4 and argv[1] == "--pdl-verdict":
        line, ok = pdl_verdict(argv[2], argv[3])
        print(line)
        return 0 if ok else 1
    if len(argv) == 3 and argv[1] in ("--bench-line", "--copy-line"):
        doc = load(argv[2])
        if argv[1] == "--copy-line":
            print(f"d2d copy {doc['copy_gbps']:.0f} GB/s" if isinstance(doc, dict) and "copy_gbps" in doc else "")
            return 0
        b = bench_numbers(doc)
        loops = b.get("decode_loop", {})
        gaps = "".join(f", {k} gap {v['host_gap_us_per_step']:.1f} us" for k, v in loops.items()
                       if "host_gap_us_per_step" in v)
        sync = loops.get("sync", {}).get("ms_per_step")
        print(f"{b.get('decode_ms_per_step', float('nan')):.3f} ms/step"
              + (f" (tg{SUSTAINED} sync {sync:.3f})" if sync else "") + gaps
              + f", pp512 {b.get('prefill512_tok_s', float('nan')):.0f} tok/s")
        return 0
    if len(argv) != 4:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 1
    r = summarise(argv[1], argv[2])
    with open(argv[3], "w", encoding="utf-8") as f:
        json.dump(r, f, indent=1)
    print(table(r))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
