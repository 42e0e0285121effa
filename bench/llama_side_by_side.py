#!/usr/bin/python3
"""bench/llama_side_by_side.py: kern's cpu device against llama.cpp's CPU backend (issue 46).

Same random checkpoint on both sides (examples/gen_random_weights.py, then
test/oracle/gguf_from_exported.py for llama.cpp's GGUF, BF16 both), same
prompt ids, same threads (all cores: kern's cpu kernels use every core,
at most 8), greedy decoding. Each round runs both sides once, cold (a fresh
process each, weights in the page cache), alternating which goes first; the
table gives medians and the spread (min-max) of prefill tok/s (the prompt in
one batch, until the first id) and decode ms/token (the mean over the decode
steps of a run), and the ratio kern / llama.cpp last.

llama.cpp is node-llama-cpp's prebuilt CPU build (scripts/setup.sh installs
it in .cache/oracle for the oracle tests): ggml loads the best CPU variant
for this machine (zen4, sapphirerapids, haswell, ...); bench/llama_cpu_bench.c
is the small driver that times it. kern is `kern-run PLAN --weights W
--device cpu --prompt-ids P --steps N+1 --json` of the build given.

  /usr/bin/python3 bench/llama_side_by_side.py [--build build] [--config examples/qwen3-0.6b.config.json]
      [--rounds 3] [--prompt 32] [--steps 32] [--threads N] [--page-cache fresh|as-is] [--work DIR]
      [--out bench/results/X.md] [--baseline OTHER_KERN_RUN]

The weights, the GGUF and the plan are cached in --work (default
build/side-by-side/<config name>), so only the first run pays for them
(about 1.5 GB each at the 0.6B geometry). Exit status 0 on success, 1 on
any failure (message on stderr).
"""

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NPM_BINS = os.path.join(".cache", "oracle", "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
PY = "/usr/bin/python3"  # Debian's, with numpy (scripts/setup.sh)


class BenchError(Exception):
    pass


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise BenchError(f"{' '.join(cmd[:3])} ... failed (exit {r.returncode}):\n{r.stderr.strip()[-2000:]}")
    return r.stdout


def cached(path, make):
    """Runs make(tmp) and renames tmp to path, unless path exists."""
    if os.path.exists(path):
        return path
    tmp = path + ".tmp"
    make(tmp)
    os.replace(tmp, path)
    return path


def prepare(args):
    bins = os.path.join(ROOT, NPM_BINS)
    llama = os.path.join(ROOT, ".cache", "oracle", "llama.cpp")
    for p in (bins, os.path.join(llama, "include", "llama.h")):
        if not os.path.exists(p):
            raise BenchError(f"{p} is missing: run scripts/setup.sh (installs node-llama-cpp into .cache/oracle)")
    kern_run = os.path.join(args.build, "kern-run", "kern-run")
    kern_verify = os.path.join(args.build, "kern-verify", "kern-verify")
    for p in (kern_run, kern_verify):
        if not os.path.exists(p):
            raise BenchError(f"{p} is missing: build kern first (ninja -C {args.build})")
    os.makedirs(args.work, exist_ok=True)
    driver = os.path.join(args.work, "llama_cpu_bench")
    libs = [os.path.join(bins, n) for n in sorted(os.listdir(bins))
            if n.startswith(("libllama.", "libggml.", "libggml-base.")) and n.endswith(".so")]
    run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", driver, os.path.join(ROOT, "bench", "llama_cpu_bench.c"),
         "-I", os.path.join(llama, "include"), "-I", os.path.join(llama, "ggml", "include"), *libs,
         "-Wl,-rpath," + os.path.abspath(bins)])
    weights = cached(os.path.join(args.work, "weights.safetensors"), lambda t: run(
        [PY, os.path.join(ROOT, "examples", "gen_random_weights.py"), args.config, "-o", t, "--seed", "1"]))
    gguf = cached(os.path.join(args.work, "model.gguf"), lambda t: run(
        [PY, os.path.join(ROOT, "test", "oracle", "gguf_from_exported.py"), args.config, weights, "-o", t,
         "--gguf-py", os.path.join(llama, "gguf-py")]))
    manifest = os.path.join(args.work, "manifest.json")
    run([PY, os.path.join(ROOT, "examples", "gen_qwen3_manifest.py"), args.config, "-o", manifest, "--unpinned"])
    plan = os.path.join(args.work, "model.kplan")
    run([kern_verify, manifest, "-o", plan])
    return bins, driver, weights, gguf, plan, kern_run


def run_llama(bins, driver, gguf, threads, steps, prompt):
    d = json.loads(run([driver, bins, gguf, str(threads), str(steps), ",".join(map(str, prompt))]))
    return {"load_ms": d["load_ms"], "prefill_ms": d["prefill_ms"], "decode_ms": statistics.fmean(d["decode_ms"]),
            "ids": d["ids"],
            "features": f"{d['backend']}: {d['cpu_features']}"}


def run_kern(kern_run, plan, weights, steps, prompt):
    d = json.loads(run([kern_run, plan, "--weights", weights, "--device", "cpu", "--prompt-ids",
                        ",".join(map(str, prompt)), "--steps", str(steps + 1), "--json"]))
    return {"load_ms": d["load_ms"]["total"], "prefill_ms": d["prefill_ms"], "decode_ms": d["decode_ms_per_token"],
            "ids": d["generated_ids"]}


def evict_page_cache(paths):
    """Drops each file's pages from the page cache (posix_fadvise
    POSIX_FADV_DONTNEED; the data is on disk, nothing is lost).

    Why: how a file's pages entered the page cache decides the folio sizes
    the kernel keeps them in, and so whether a mapping of it gets 2 MiB
    (PMD) or 4 KiB entries. A file written by a Python script sits in small
    folios; one read back from disk by readahead (Linux 6.x, ext4 with large
    folios) sits in 2 MiB ones. On the development VM that alone made a
    first pass over the 1.5 GB of weights take 4.2 s instead of 0.26 s, and
    a warm one 0.35 us per 4 KiB page instead of 0.05 (docs/kernels.md,
    "Session 4"): the two sides' files, written by different scripts, were
    not in the same state. After this, each side's first run reads its file from disk with
    its own loader (kern: mmap + MAP_POPULATE; llama.cpp: mmap + MAP_POPULATE
    + POSIX_MADV_WILLNEED), as on a user's first run, untimed."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor()
    name = next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("model name")), "?")
    flags = next((l.split(":", 1)[1].split() for l in info.splitlines() if l.startswith("flags")), [])
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "amx_bf16") if f in flags]
    return f"{name}, {os.cpu_count()} logical CPUs; flags: {' '.join(isa)}"


def kern_isa():
    """The paths kern's cpu GEMM and GEMV take here (kernels-src/cpu: cpuid at run time)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        flags = []
    if {"avx512f", "avx512bw", "avx512_bf16"} <= set(flags):
        return "AVX-512 + AVX512_BF16 (vdpbf16ps) GEMM and GEMV"
    if "avx512f" in flags:
        return "AVX-512 GEMV, AVX2 FMA GEMM"
    if "avx2" in flags:
        return "AVX2 FMA GEMM and GEMV"
    return "portable scalar paths"


def decode_bytes(weights):
    """Bytes a decode step reads from the weights: every tensor but the
    embedding table (of which it reads one row) - the roofline's numerator."""
    with open(weights, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sum(t["data_offsets"][1] - t["data_offsets"][0] for name, t in header.items()
               if name != "__metadata__" and name != "model.embed_tokens.weight")


def copy_bandwidth():
    """This machine's memory copy bandwidth in bytes/s (read + written), the
    median of 5 copies of 256 MiB with numpy (one thread), or None without numpy."""
    try:
        import numpy as np
    except ImportError:
        return None
    a = np.ones(256 << 20, dtype=np.uint8)
    b = np.empty_like(a)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t0)
    return 2 * a.size / statistics.median(times)


def spread(xs):
    return f"{min(xs):.1f}-{max(xs):.1f}"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="kern's build directory")
    ap.add_argument("--config", default=os.path.join(ROOT, "examples", "qwen3-0.6b.config.json"))
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (each runs both sides once)")
    ap.add_argument("--prompt", type=int, default=32, help="prompt tokens (ids 100, 101, ...)")
    ap.add_argument("--steps", type=int, default=32, help="decode steps after the prefill")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="llama.cpp threads (kern uses every core)")
    ap.add_argument("--work", help="cache for weights, GGUF and plan (default build/side-by-side/<config>)")
    ap.add_argument("--out", help="markdown table to write (default: stdout only)")
    ap.add_argument("--page-cache", choices=("fresh", "as-is"), default="fresh",
                    help="fresh (default): evict both weight files from the page cache and let each side's first, "
                         "untimed run read its file back (evict_page_cache); as-is: use the cache as found")
    ap.add_argument("--baseline", help="another kern-run binary (e.g. main's) run in the same rounds, as 'kern (baseline)'")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.prompt < 1 or args.steps < 1 or args.threads < 1:
        ap.error("--rounds, --prompt, --steps and --threads must be at least 1")
    name = os.path.basename(args.config).removesuffix(".config.json").removesuffix(".json")
    args.work = args.work or os.path.join(args.build, "side-by-side", name)
    bins, driver, weights, gguf, plan, kern_run = prepare(args)
    prompt = list(range(100, 100 + args.prompt))

    sides = ["kern", "llama.cpp"] + (["kern (baseline)"] if args.baseline else [])
    if args.page_cache == "fresh":
        evict_page_cache([weights, gguf])
        # Each file read back by its own side's loader, untimed (the same
        # for the baseline, which maps kern's file again).
        run_kern(kern_run, plan, weights, 1, prompt)
        run_llama(bins, driver, gguf, args.threads, 1, prompt)
        print("page cache: both files evicted and read back by their own loader (untimed runs)", file=sys.stderr)
    load_start = os.getloadavg()
    rows = {s: [] for s in sides}
    features = ""
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            if side == "kern":
                res = run_kern(kern_run, plan, weights, args.steps, prompt)
            elif side == "kern (baseline)":
                res = run_kern(args.baseline, plan, weights, args.steps, prompt)
            else:
                res = run_llama(bins, driver, gguf, args.threads, args.steps, prompt)
                features = res["features"]
            res["load"] = os.getloadavg()[0]
            rows[side].append(res)
            print(f"round {r + 1} {side}: prefill {res['prefill_ms']:.1f} ms "
                  f"({args.prompt * 1000 / res['prefill_ms']:.1f} tok/s), decode {res['decode_ms']:.1f} ms/token, "
                  f"load {res['load']:.1f}", file=sys.stderr)
    load_end = os.getloadavg()
    bandwidth = copy_bandwidth()
    per_token = decode_bytes(weights)

    def stats(side):
        pre = [args.prompt * 1000 / x["prefill_ms"] for x in rows[side]]
        dec = [x["decode_ms"] for x in rows[side]]
        return statistics.median(pre), spread(pre), statistics.median(dec), spread(dec)

    k, l = stats("kern"), stats("llama.cpp")
    b = stats("kern (baseline)") if args.baseline else None
    same = sum(1 for a, b in zip(rows["kern"][0]["ids"], rows["llama.cpp"][0]["ids"]) if a == b)
    lines = [
        f"# kern cpu vs llama.cpp CPU, side by side: {name}",
        "",
        f"`bench/llama_side_by_side.py --config {os.path.relpath(args.config, ROOT)} --rounds {args.rounds} "
        f"--prompt {args.prompt} --steps {args.steps} --threads {args.threads} --page-cache {args.page_cache}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        f"- CPU: {cpu_model()}",
        f"- load average (1 min) {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end "
        f"(other work on the machine shares its cores)",
        f"- page cache: {'both weight files evicted, then read back by one untimed run of each side (`--page-cache fresh`)' if args.page_cache == 'fresh' else 'as found (`--page-cache as-is`)'}",
        f"- kern: `{os.path.relpath(kern_run, ROOT)}`, cpu device, {kern_isa()}",
        f"- llama.cpp: node-llama-cpp 3.21.1's prebuilt CPU libraries, {features}",
        f"- the first {same} of {len(rows['kern'][0]['ids'])} greedy ids agree (kern's KV cache is bf16, "
        f"llama.cpp's f16; random weights amplify differences)",
        "",
        "| side | prefill tok/s (median) | spread | decode ms/token (median) | spread |",
        "|---|---:|---:|---:|---:|",
        f"| kern | {k[0]:.1f} | {k[1]} | {k[2]:.1f} | {k[3]} |",
        f"| llama.cpp | {l[0]:.1f} | {l[1]} | {l[2]:.1f} | {l[3]} |",
    ] + ([f"| kern (baseline: `{args.baseline}`) | {b[0]:.1f} | {b[1]} | {b[2]:.1f} | {b[3]} |"] if args.baseline else []) + [
        "",
        "Each round's runs (alternating order; load average = 1 minute, after the run):",
        "",
        "| round | side | load ms (not timed above) | prefill ms | decode ms/token | load average |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in range(args.rounds):
        for side in sides:
            x = rows[side][r]
            lines.append(f"| {r + 1} | {side} | {x['load_ms']:.1f} | {x['prefill_ms']:.1f} | {x['decode_ms']:.1f} "
                         f"| {x['load']:.1f} |")
    if bandwidth:
        roof = [f"{side} {per_token / (stats(side)[2] / 1000) / 1e9:.1f} GB/s "
                f"({per_token / (stats(side)[2] / 1000) / bandwidth * 100:.0f}%)" for side in sides]
        lines += ["", f"Decode roofline: a step reads {per_token / 1e9:.2f} GB of weights; this machine's "
                      f"copy bandwidth (numpy, one thread, read + written, after the rounds) is "
                      f"{bandwidth / 1e9:.1f} GB/s; weight bytes per second at the median decode time "
                      f"(% of the copy bandwidth): " + ", ".join(roof) + "."]
    lines += ["", f"**kern / llama.cpp: prefill speed {k[0] / l[0]:.2f}x, decode time {k[2] / l[2]:.2f}x** "
                  f"(prefill above 1 and decode below 1 favour kern)"]
    if b:
        lines += ["", f"kern / kern (baseline): prefill speed {k[0] / b[0]:.2f}x, decode time {k[2] / b[2]:.2f}x"]
    lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.out)), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print(f"llama_side_by_side: {e}", file=sys.stderr)
        sys.exit(1)
