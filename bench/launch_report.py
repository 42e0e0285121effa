#!/usr/bin/python3
"""launch_report.py PLAN [--program decode] [--tokens 1] [--context 1024] [--sms 132] [-o FILE] [--check FILE] [--check-spills] [--ptxas-cache DIR] [--ptx-dir DIR]

The static launch report of one program of a kern plan (docs/kernels.md
"Static launch report"): for each launch, from the compiler and the plan,
without a GPU:

- registers, spill stores / loads, stack and static shared memory of its
  kernel, from `nvcc -cubin -arch=sm_90 -Xptxas -v` of the kernel's .cu
  (spill counts are not stored in the cubin, so the source is compiled
  again with the build's flags; skipped, with the reason, where nvcc is
  missing). With `--ptx-dir DIR` (a build's kernels-src/cuda/), a kernel
  whose DIR/<family>.compute_90.ptx exists is not compiled from its .cu:
  ptxas alone compiles that PTX, which nvcc's front end wrote for the
  build's fatbin with the same flags, as `nvcc -cubin` runs it (`ptxas
  -arch=sm_90 -m64 -v`): the same report, without the front end's 4-5
  CPU-s per file;
- dynamic shared memory, block and grid from the plan
  (`kern-verify --dump PLAN --message-format json`), evaluated at
  `tokens = --tokens`;
- blocks per SM on an sm_90 SM (65536 registers, 64 warps, 32 blocks,
  233472 B of shared memory with 1024 B reserved per block) and the
  resource that limits it, and waves on `--sms` SMs (132: H100 / H200 SXM);
- bytes read and written (DRAM-level: every operand once, per the "Bytes
  moved" of docs/kernels.md), at `tokens` rows and a context of
  `--context` cached positions.

Prints a Markdown table (or writes it to -o FILE atomically). `--check FILE`
compares the report with FILE (the checked-in one) and fails on any
difference; `--check-spills` fails if a kernel of the program spills.
PLAN may also be a manifest `.json`: it is compiled with kern-verify first.

Exit status: 0 ok, 1 a check failed, 2 bad usage or a tool that failed,
77 nvcc missing with --check-spills / --check (skipped: meson's skip code).
"""

import argparse
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# sm_90 per-SM limits (CUDA occupancy calculator, compute capability 9.0).
SM_REGS = 65536
SM_WARPS = 64
SM_BLOCKS = 32
SM_SMEM = 233472
SMEM_RESERVED = 1024
REG_WARP_GRANULE = 256
SMEM_GRANULE = 128
NVCC_FLAGS = ["-O3", "-std=c++20", "-cubin", "-arch=sm_90", "-Xptxas", "-v"]
# What nvcc runs after its front end for NVCC_FLAGS (nvcc --dryrun): ptxas on
# the compute_90 PTX, at ptxas's default -O3.
PTXAS_FLAGS = ["-arch=sm_90", "-m64", "-v"]


class ReportError(Exception):
    pass


def find_tool(name, explicit):
    if explicit:
        return explicit
    for cand in (os.path.join(ROOT, "build", "kern-verify", name),):
        if os.path.isfile(cand):
            return cand
    return shutil.which(name)


def find_nvcc(explicit):
    """nvcc: `explicit` when given ("" = none, as meson passes a missing one), else PATH or /usr/local/cuda."""
    if explicit is not None:
        return explicit if explicit and os.path.isfile(explicit) else None
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if os.path.isfile("/usr/local/cuda/bin/nvcc") else None)


def load_plan(path, kern_verify, tmp):
    if not kern_verify:
        raise ReportError("kern-verify not found (build it, or pass --kern-verify)")
    if path.endswith(".json"):
        plan = os.path.join(tmp, "plan.kplan")
        r = subprocess.run([kern_verify, path, "-o", plan], capture_output=True, text=True)
        if r.returncode != 0:
            raise ReportError(f"{path}: kern-verify failed:\n{r.stderr}")
        path = plan
    r = subprocess.run([kern_verify, "--dump", path, "--message-format", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise ReportError(f"{path}: kern-verify --dump failed:\n{r.stderr}")
    return json.loads(r.stdout)


def eval_expr(text, syms):
    """Evaluates a dump expression ("tokens", "ceil_div(mul(tokens, 32), 4)", "7")."""
    text = text.strip()
    m = re.fullmatch(r"(ceil_div|mul)\((.*),\s*(\d+)\)", text)
    if m:
        lhs = eval_expr(m.group(2), syms)
        c = int(m.group(3))
        return -(-lhs // c) if m.group(1) == "ceil_div" else lhs * c
    if re.fullmatch(r"\d+", text):
        return int(text)
    if text in syms:
        return syms[text]
    raise ReportError(f"expression {text!r}: unknown symbol")


def parse_ptxas(text):
    """{entry: {regs, spill_stores, spill_loads, stack, smem}} from `-Xptxas -v` output."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for 'sm_\d+'", line)
        if m:
            cur = out.setdefault(m.group(1), {"regs": 0, "spill_stores": 0, "spill_loads": 0, "stack": 0,
                                              "smem": 0})
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill_stores"], cur["spill_loads"] = (int(g) for g in m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
    return out


def ptxas_cache_key(nvcc, cuda_dir, src):
    """The cache key of `src`'s ptxas output: a SHA-256 over the flags, the
    nvcc binary (path, size, mtime), the source and every header of
    `cuda_dir` (any of them may be included), so any change compiles again."""
    h = hashlib.sha256()
    real = os.path.realpath(nvcc)
    st = os.stat(real)
    h.update(repr((NVCC_FLAGS, real, st.st_size, st.st_mtime_ns)).encode())
    names = [os.path.basename(src)] + sorted(n for n in os.listdir(cuda_dir) if n.endswith((".cuh", ".h")))
    for name in names:
        h.update(name.encode() + b"\0")
        with open(os.path.join(cuda_dir, name), "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def ptx_cache_key(ptxas, ptx):
    """The cache key of ptxas's report on the PTX file `ptx`: a SHA-256 over
    the flags, the ptxas binary (path, size, mtime) and the PTX text."""
    h = hashlib.sha256()
    real = os.path.realpath(ptxas)
    st = os.stat(real)
    h.update(repr((PTXAS_FLAGS, real, st.st_size, st.st_mtime_ns)).encode())
    with open(ptx, "rb") as f:
        h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def ptxas_output(nvcc, src, out, cache_dir, ptx=None):
    """ptxas's `-v` report (nvcc's stderr) of compiling `src` to `out`; with
    `ptx` (the build's PTX of `src`), of ptxas alone compiling that PTX.
    With `cache_dir`, a report is kept there under its key (ptxas_cache_key,
    ptx_cache_key) and reused: the launch-report tests of several models
    compile mostly the same .cu files. A lock per key makes a concurrent run
    wait for the one compiling instead of compiling too; entries are written
    atomically."""
    ptxas = os.path.join(os.path.dirname(nvcc), "ptxas") if ptx else None
    if ptxas and not os.path.isfile(ptxas):
        ptxas = shutil.which("ptxas")
        if not ptxas:
            raise ReportError(f"{ptx}: no ptxas beside {nvcc} or on PATH")

    def run():
        cmd = [ptxas] + PTXAS_FLAGS + [ptx, "-o", out] if ptx else [nvcc] + NVCC_FLAGS + ["-o", out, src]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise ReportError(f"{ptx or src}: {os.path.basename(cmd[0])} failed:\n{r.stderr}")
        return r.stderr
    if not cache_dir:
        return run()
    os.makedirs(cache_dir, exist_ok=True)
    key = ptx_cache_key(ptxas, ptx) if ptx else ptxas_cache_key(nvcc, os.path.dirname(src), src)
    entry = os.path.join(cache_dir, key + ".ptxas")
    with open(entry + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed
        if os.path.isfile(entry):
            with open(entry, "r", encoding="utf-8") as f:
                return f.read()
        text = run()
        write_atomic(entry, text)
        return text


def compile_families(nvcc, cuda_dir, families, tmp, cache_dir=None, ptx_dir=None):
    """{entry: resources} of every kernel of `families` (ptxas -v); a family
    whose `ptx_dir`/<family>.compute_90.ptx exists is compiled from it."""
    res = {}
    for fam in sorted(families):
        src = os.path.join(cuda_dir, fam + ".cu")
        if not os.path.isfile(src):
            raise ReportError(f"{src}: no source for {fam}.fatbin")
        ptx = os.path.join(ptx_dir, fam + ".compute_90.ptx") if ptx_dir else None
        if ptx and not os.path.isfile(ptx):
            ptx = None
        res.update(parse_ptxas(ptxas_output(nvcc, src, os.path.join(tmp, fam + ".cubin"), cache_dir, ptx)))
    return res


def arg_values(plan, launch, syms):
    """Each launch argument as an int/float (scalars, exprs) or a name (pointers)."""
    vals = []
    for a in launch["args"]:
        if a["kind"] == "literal":
            vals.append(a["value"])
        elif a["kind"] == "expr":
            vals.append(eval_expr(a["expr"], syms))
        else:
            vals.append(a.get("name"))
    return vals


def bytes_moved(symbol, v, context):
    """(read, written) bytes of one launch, DRAM-level (docs/kernels.md "Bytes moved"); None if unknown."""
    if symbol == "kern_embedding_bf16":
        t, e = v[3], v[4]
        return 8 * t + 2 * t * e, 2 * t * e
    if symbol.startswith("kern_gemv_"):
        norm = "rmsnorm" in symbol
        m, n, k, _lda, _ldc, splits = v[-7:-1] if norm else v[-6:]
        rows = 2 * n if "silu_mul" in symbol else n
        rd = 2 * rows * k + 2 * m * k + (2 * k if norm else 0)
        wr = 2 * m * n
        if symbol in ("kern_gemv_acc_bf16", "kern_gemv_residual_bf16"):
            rd += 2 * m * n
        if splits > 1:
            rd += 4 * splits * m * rows
            wr += 4 * splits * m * rows
        if "argmax" in symbol:  # tile partials out and back (the last block's reduce), next_token
            wr += 8 * m * math.ceil(n / 8) + 8 * m
            rd += 8 * m * math.ceil(n / 8)
        return rd, wr
    if symbol == "kern_qk_norm_rope_cache_bf16":
        t, h, kv, d = v[10], v[11], v[12], v[13]
        return 2 * (h + 2 * kv) * d * t + 4 * d * t + 4 * d + 16 * t, 2 * h * d * t + 4 * kv * d * t
    if symbol == "kern_attention_decode_bf16":
        t, h, kv, d, s = v[11], v[12], v[13], v[14], v[17]
        part = 4 * (d + 2) * h * s * t
        return 4 * d * context * kv * t + 2 * h * d * t + part + 4 * context // 16, part + 2 * h * d * t
    if symbol in ("kern_attention_decode_qkv_bf16", "kern_attention_decode_batch_qkv_bf16"):
        b, h, kv, d, s = v[13], v[14], v[15], v[16], v[20]
        part = 4 * (d + 2) * h * s * b
        rd = 4 * d * context * kv * b + 2 * (h + 2 * kv) * d * b + 8 * d + part + 4 * b * context // 16 + 4 * b
        return rd, part + 2 * h * d * b + 4 * kv * d * b
    if symbol == "kern_rmsnorm_bf16":
        rows, n = v[3], v[4]
        return 2 * rows * n + 2 * n, 2 * rows * n
    if symbol == "kern_moe_router_bf16":
        rows, experts, k, top_k = v[4:8]
        return 2 * experts * k + 2 * rows * k, 8 * rows * top_k
    if symbol == "kern_moe_gate_up_bf16":
        rows, _experts, n, k, top_k = v[4:9]
        return expert_bytes(symbol, v) + 2 * rows * k + 4 * rows * top_k, 2 * rows * top_k * n
    if symbol == "kern_moe_down_bf16":
        rows, _experts, n, k, top_k = v[5:10]
        return expert_bytes(symbol, v) + 2 * rows * top_k * k + 8 * rows * top_k + 2 * rows * n, 2 * rows * n
    if symbol == "kern_argmax_reduce":
        rows, c = v[3], v[4]
        return 8 * rows * c, 8 * rows
    if symbol == "kern_decode_advance":
        t = v[6]
        return 8 * t + 8 + 8 + 4 + 4, 8 + 8 + 8 + 4
    return None


def expert_bytes(symbol, v, every=False):
    """The expert weights an expert-MLP launch reads (docs/kernels.md §18):
    the top_k selected experts' rows for each of its rows (each row reads
    its own: no row shares another's loads), or with `every` all the
    layer's experts (what a dense layer of the same parameters would read);
    None for any other kernel."""
    if symbol == "kern_moe_gate_up_bf16":
        rows, experts, n, k, top_k = v[4:9]
        per_expert = 4 * n * k
    elif symbol == "kern_moe_down_bf16":
        rows, experts, n, k, top_k = v[5:10]
        per_expert = 2 * n * k
    else:
        return None
    return experts * per_expert if every else rows * top_k * per_expert


def occupancy(regs, smem_total, threads):
    """(blocks per SM, limiting resource) on an sm_90 SM."""
    warps = -(-threads // 32)
    per_warp = -(-regs * 32 // REG_WARP_GRANULE) * REG_WARP_GRANULE if regs else 0
    limits = {"warps": SM_WARPS // warps, "blocks": SM_BLOCKS}
    limits["registers"] = (SM_REGS // per_warp) // warps if per_warp else SM_BLOCKS
    per_block = -(-(smem_total + SMEM_RESERVED) // SMEM_GRANULE) * SMEM_GRANULE
    limits["shared memory"] = SM_SMEM // per_block
    best = min(limits.values())
    why = [k for k in ("registers", "shared memory", "warps", "blocks") if limits[k] == best]
    return best, "/".join(why)


def human(b):
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b} B"


def build_rows(plan, program, ptx, syms, context, sms):
    prog = next((p for p in plan["programs"] if p["name"] == program), None)
    if prog is None:
        raise ReportError(f"the plan has no program {program!r} (has: "
                          + ", ".join(p["name"] for p in plan["programs"]) + ")")
    rows = []
    for ln in prog["launches"]:
        st = plan["steps"][ln["step"]]
        sym = st["symbol"]
        grid = [eval_expr(str(g), syms) for g in st["grid"]]
        dyn = eval_expr(st["shared_mem"], syms) if st.get("shared_mem") else 0
        threads = st["block"][0] * st["block"][1] * st["block"][2]
        blocks = grid[0] * grid[1] * grid[2]
        r = {"label": ln["label"], "symbol": sym, "grid": grid, "block": st["block"], "blocks": blocks,
             "dyn_smem": dyn}
        if sym.startswith("extern:"):
            r["extern"] = True
        elif ptx is not None:
            p = ptx.get(sym)
            if p is None:
                raise ReportError(f"{sym}: not in the ptxas output of its .cu")
            bps, why = occupancy(p["regs"], p["smem"] + dyn, threads)
            r.update(p, blocks_per_sm=bps, limit=why, waves=blocks / (bps * sms) if bps else None)
        vals = arg_values(plan, ln, syms)
        bm = bytes_moved(sym, vals, context)
        if bm:
            r["read"], r["written"] = bm
        if expert_bytes(sym, vals) is not None:
            r["experts_active"], r["experts_all"] = expert_bytes(sym, vals), expert_bytes(sym, vals, every=True)
        rows.append(r)
    return rows


def merge_layers(rows):
    """Collapses repeated per-layer launches ("layers.N.x") into one row with a count."""
    out = []
    for r in rows:
        key = re.sub(r"^layers\.\d+\.", "layers.*.", r["label"])
        same = [o for o in out if o["key"] == key and o["row"]["symbol"] == r["symbol"]
                and o["row"]["grid"] == r["grid"]]
        if same:
            same[0]["count"] += 1
        else:
            out.append({"key": key, "row": r, "count": 1})
    return out


def render(plan, program, rows, tokens, context, sms, nvcc_note):
    lines = [f"# Static launch report: `{program}` of `{plan['model']}`", "",
             f"tokens = {tokens}, context = {context} positions, waves on {sms} SMs (sm_90 limits: "
             f"{SM_REGS} registers, {SM_WARPS} warps, {SM_BLOCKS} blocks, {SM_SMEM} B shared memory per SM).",
             "Registers, spills (stores/loads, bytes), stack and static shared memory: "
             + nvcc_note + ". Bytes: DRAM-level, every operand once (docs/kernels.md).",
             "Regenerate: `scripts/regen_kernels.sh` (bench/launch_report.py).", "",
             "| launch | n | kernel | grid | block | regs | spill st/ld | stack | smem static+dyn | "
             "blocks/SM (limit) | waves | read | written |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    total_r = total_w = launches = 0
    for g in merge_layers(rows):
        r, n = g["row"], g["count"]
        launches += n
        grid = "x".join(str(x) for x in r["grid"])
        block = "x".join(str(x) for x in r["block"])
        if r.get("extern"):
            cols = ["extern", "-", "-", "-", "-", "-"]
        elif "regs" in r:
            waves = f"{r['waves']:.2f}" if r["waves"] is not None else "-"
            cols = [str(r["regs"]), f"{r['spill_stores']}/{r['spill_loads']}", str(r["stack"]),
                    f"{r['smem']}+{r['dyn_smem']}", f"{r['blocks_per_sm']} ({r['limit']})", waves]
        else:
            cols = ["n/a"] * 3 + [f"?+{r['dyn_smem']}", "n/a", "n/a"]
        rd, wr = r.get("read"), r.get("written")
        if rd is not None:
            total_r += rd * n
            total_w += wr * n
        lines.append("| " + " | ".join([g["key"], str(n), f"`{r['symbol']}`", grid, block] + cols
                                       + [human(rd) if rd is not None else "?", human(wr) if wr is not None else "?"])
                     + " |")
    lines += ["", f"{launches} launches; {human(total_r)} read, {human(total_w)} written per step "
              f"({human(total_r + total_w)} moved)."]
    active = sum(r.get("experts_active", 0) for r in rows)
    if active:
        every = sum(r.get("experts_all", 0) for r in rows)
        lines += ["", f"Mixture of experts: {human(active)} of expert weights read per step (the selected "
                  f"experts of each row, {100 * active / every:.1f}% of all {human(every)}); the rest of the "
                  f"step reads {human(total_r - active)}."]
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".launch_report.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("plan", help="a .kplan (or a manifest .json, compiled first)")
    ap.add_argument("--program", default="decode")
    ap.add_argument("--tokens", type=int, default=1, help="value of the `tokens` symbol (default 1)")
    ap.add_argument("--context", type=int, default=1024, help="cached positions for attention bytes")
    ap.add_argument("--sms", type=int, default=132, help="SM count for waves (default 132)")
    ap.add_argument("--cuda-dir", default=os.path.join(ROOT, "kernels-src", "cuda"))
    ap.add_argument("--nvcc")
    ap.add_argument("--kern-verify")
    ap.add_argument("-o", "--output")
    ap.add_argument("--check", metavar="FILE", help="fail if the report differs from FILE")
    ap.add_argument("--check-spills", action="store_true", help="fail if a kernel of the program spills")
    ap.add_argument("--ptxas-cache", metavar="DIR",
                    help="keep each .cu's ptxas report in DIR and reuse it while nvcc, flags and sources are unchanged")
    ap.add_argument("--ptx-dir", metavar="DIR",
                    help="a build's kernels-src/cuda/: compile its <family>.compute_90.ptx with ptxas alone")
    args = ap.parse_args(argv)
    if args.tokens < 1 or args.context < 0 or args.sms < 1:
        ap.error("--tokens and --sms must be >= 1, --context >= 0")
    nvcc = find_nvcc(args.nvcc)
    if not nvcc and (args.check or args.check_spills):
        print("skipped: nvcc not found (spill counts come from ptxas)", file=sys.stderr)
        return 77
    try:
        with tempfile.TemporaryDirectory() as tmp:
            plan = load_plan(args.plan, find_tool("kern-verify", args.kern_verify), tmp)
            syms = {s["name"]: args.tokens for s in plan["symbols"]}
            prog = next((p for p in plan["programs"] if p["name"] == args.program), None)
            fams = set()
            for ln in (prog or {}).get("launches", []):
                st = plan["steps"][ln["step"]]
                if st.get("cubin") is not None:
                    fams.add(os.path.splitext(plan["cubins"][st["cubin"]]["path"])[0])
            ptx = compile_families(nvcc, args.cuda_dir, fams, tmp, args.ptxas_cache, args.ptx_dir) if nvcc else None
            note = ("`nvcc -cubin -arch=sm_90 -O3 -Xptxas -v`" if nvcc
                    else "not available (nvcc not found: spill counts come from ptxas)")
            rows = build_rows(plan, args.program, ptx, syms, args.context, args.sms)
    except ReportError as e:
        print(f"launch_report: {e}", file=sys.stderr)
        return 2
    text = render(plan, args.program, rows, args.tokens, args.context, args.sms, note)
    status = 0
    if args.check_spills:
        spills = sorted({r["symbol"] for r in rows if r.get("spill_stores") or r.get("spill_loads") or r.get("stack")})
        for s in spills:
            print(f"launch_report: {s} spills or uses a stack frame (program {args.program})", file=sys.stderr)
        status = 1 if spills else status
    if args.check:
        with open(args.check, "r", encoding="utf-8") as f:
            want = f.read()
        if want != text:
            print(f"launch_report: {args.check} differs from the build's report (regenerate it: "
                  "scripts/regen_kernels.sh)", file=sys.stderr)
            import difflib
            sys.stderr.writelines(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                       args.check, "built"))
            status = 1
    if args.output:
        write_atomic(args.output, text)
    elif not args.check and not args.check_spills:
        sys.stdout.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
