#!/usr/bin/python3
"""check_vector_loads.py --doc docs/kernels.md (--nvcc NVCC --src DIR | --ptx PTX... | --sass FATBIN...)

Checks that every kernel docs/kernels.md lists under "Vector loads" really
issues global loads of the documented width (docs/kernels.md, docs/gpu.md):

  16 B: PTX `ld.global[.nc].v4.{u32,b32,f32}` or `.v2.{u64,b64}`;
        SASS `LDG.E.128...`
   8 B: PTX `ld.global[.nc].v2.{u32,b32,f32}` or `.u64/.b64`;
        SASS `LDG.E.64...`

(a wider load satisfies a narrower requirement). A struct of
__nv_bfloat162 copied as a whole compiles to separate 4-byte loads, which
this check rejects.

--nvcc mode compiles each DIR/*.cu to PTX for sm_90 (`nvcc -ptx`) and splits
it into `.entry` functions; when NVCC is empty or not executable the test is
skipped (exit 77: CI has no CUDA toolkit). --ptx mode reads the given PTX
files instead: the build's compute_90 PTX, which nvcc's front end wrote for
the fatbins (kernels-src/cuda/nvcc_fatbin.py), the same text `nvcc -ptx
-arch=sm_90` gives, without compiling every .cu again. --sass mode reads `cuobjdump -sass`
of the built fatbins (test/gpu/run.sh, where cuobjdump exists) and checks every
architecture's code of each kernel. A documented kernel found in no file is a
finding too (the table and the code must agree).

--self-test first proves the check has teeth on synthetic PTX and SASS: a
kernel with only 4-byte loads, or 8-byte loads where 16 are documented, must
be reported.

Exit status 0 when every check passes, 1 on a finding, 2 on bad usage, 77 skip.
Standard library only.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

PTX_ENTRY = re.compile(r"^\s*\.(?:visible|weak)?\s*\.entry\s+(\w+)", re.M)
PTX_LOAD = re.compile(r"\bld\.global((?:\.\w+)*)\s")
SASS_FUNC = re.compile(r"^\s*Function\s*:\s*(\w+)", re.M)
SASS_LOAD = re.compile(r"\bLDG((?:\.\w+)*)\s")
TABLE_ROW = re.compile(r"^\|\s*`(\w+)`\s*\|\s*(8|16)\s*B?\s*\|")


def documented(doc_path):
    """{kernel symbol: required bytes} from the doc's "Vector loads" table."""
    out, in_section = {}, False
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_section = line.strip().lower().startswith("## vector loads")
                continue
            m = TABLE_ROW.match(line) if in_section else None
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


def ptx_load_bytes(suffixes):
    """Bytes of one PTX global load given its `.a.b.c` suffix string (0 if unknown)."""
    parts = suffixes.split(".")
    vec = 1
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1:])
    for p in reversed(parts):
        m = re.fullmatch(r"[usbf](8|16|32|64|128)", p)
        if m:
            return vec * int(m.group(1)) // 8
    return 0


def sass_load_bytes(suffixes):
    """Bytes of one SASS LDG given its `.E.128.CONSTANT` style suffix (default 4)."""
    for p in suffixes.split("."):
        if p in ("64", "128", "U8", "S8", "U16", "S16"):
            return {"64": 8, "128": 16, "U8": 1, "S8": 1, "U16": 2, "S16": 2}[p]
    return 4


def widest_loads(text, func_re, load_re, size_fn):
    """{function name: [widest global load in bytes per occurrence]} of a listing."""
    out = {}
    parts = func_re.split(text)
    for name, body in zip(parts[1::2], parts[2::2]):
        widest = max((size_fn(m.group(1)) for m in load_re.finditer(body)), default=0)
        out.setdefault(name, []).append(widest)
    return out


def check(required, found, what):
    """Findings: documented kernels absent from `found` or with too narrow loads."""
    findings = []
    for name, need in sorted(required.items()):
        if name not in found:
            findings.append(f"{name}: documented with {need}-byte loads but not found in the {what}")
            continue
        for i, widest in enumerate(found[name]):
            if widest < need:
                findings.append(f"{name}: documented with {need}-byte global loads, but the {what} "
                                f"(copy {i + 1}) has at most {widest}-byte ones")
    return findings


def compile_ptx(nvcc, src, out_dir):
    ptx = os.path.join(out_dir, os.path.basename(src)[:-3] + ".ptx")
    r = subprocess.run([nvcc, "-O3", "-std=c++20", "-arch=sm_90", "-ptx", "-o", ptx, src],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{src}: nvcc -ptx failed:\n{r.stderr}")
    with open(ptx, encoding="utf-8") as f:
        return f.read()


def ptx_mode(nvcc, src_dir):
    sources = sorted(os.path.join(src_dir, f) for f in os.listdir(src_dir) if f.endswith(".cu"))
    found = {}
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(2) as pool:
        for text in pool.map(lambda s: compile_ptx(nvcc, s, tmp), sources):
            for k, v in widest_loads(text, PTX_ENTRY, PTX_LOAD, ptx_load_bytes).items():
                found.setdefault(k, []).extend(v)
    return found


def ptx_files_mode(paths):
    """The --ptx mode: each file's kernels, as ptx_mode finds them."""
    found = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for k, v in widest_loads(text, PTX_ENTRY, PTX_LOAD, ptx_load_bytes).items():
            found.setdefault(k, []).extend(v)
    return found


def sass_mode(cuobjdump, fatbins):
    found = {}
    for fb in fatbins:
        r = subprocess.run([cuobjdump, "-sass", fb], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{fb}: cuobjdump -sass failed:\n{r.stderr}")
        for k, v in widest_loads(r.stdout, SASS_FUNC, SASS_LOAD, sass_load_bytes).items():
            found.setdefault(k, []).extend(v)
    return found


SELF_PTX = """
.visible .entry good16(.param .u64 p) { ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1]; }
.visible .entry good16b(.param .u64 p) { ld.global.v2.u64 {%rd2, %rd3}, [%rd1]; }
.visible .entry good8(.param .u64 p) { ld.global.nc.v2.u32 {%r1, %r2}, [%rd1]; }
.visible .entry struct_copy(.param .u64 p) { ld.global.nc.u32 %r1, [%rd1]; ld.global.nc.u32 %r2, [%rd1+4]; }
.visible .entry only8(.param .u64 p) { ld.global.v2.b32 {%r1, %r2}, [%rd1]; }
"""
SELF_SASS = """
        Function : good16
        /*0080*/   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;
        Function : struct_copy
        /*0080*/   LDG.E.CONSTANT R4, desc[UR4][R2.64] ;
        /*0090*/   LDG.E.64 R6, desc[UR4][R2.64+0x8] ;
"""


def self_test():
    """Raises AssertionError unless the check accepts good and rejects bad code."""
    ptx = widest_loads(SELF_PTX, PTX_ENTRY, PTX_LOAD, ptx_load_bytes)
    assert ptx == {"good16": [16], "good16b": [16], "good8": [8], "struct_copy": [4], "only8": [8]}, ptx
    assert not check({"good16": 16, "good16b": 16, "good8": 8}, ptx, "ptx")
    assert len(check({"struct_copy": 16}, ptx, "ptx")) == 1
    assert len(check({"struct_copy": 8}, ptx, "ptx")) == 1
    assert len(check({"only8": 16}, ptx, "ptx")) == 1
    assert len(check({"missing": 16}, ptx, "ptx")) == 1
    sass = widest_loads(SELF_SASS, SASS_FUNC, SASS_LOAD, sass_load_bytes)
    assert sass == {"good16": [16], "struct_copy": [8]}, sass
    assert not check({"good16": 16}, sass, "sass")
    assert len(check({"struct_copy": 16}, sass, "sass")) == 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", required=True)
    ap.add_argument("--nvcc", default=None)
    ap.add_argument("--src", default=None)
    ap.add_argument("--ptx", nargs="*", default=None, metavar="PTX")
    ap.add_argument("--sass", nargs="*", default=None, metavar="FATBIN")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if [args.sass is None, args.nvcc is None, args.ptx is None].count(False) != 1:
        print("check_vector_loads: give one of --nvcc NVCC --src DIR, --ptx PTX... or --sass FATBIN...",
              file=sys.stderr)
        return 2
    if args.self_test:
        self_test()
    required = documented(args.doc)
    if not required:
        print(f"{args.doc}: no 'Vector loads' table found", file=sys.stderr)
        return 1
    try:
        if args.sass is not None:
            found, what = sass_mode(args.cuobjdump, args.sass), "SASS"
        elif args.ptx is not None:
            found, what = ptx_files_mode(args.ptx), "PTX"
        else:
            if not args.nvcc or not os.access(args.nvcc, os.X_OK) or not args.src:
                print("check_vector_loads: no nvcc; skipped")
                return 77
            found, what = ptx_mode(args.nvcc, args.src), "PTX"
    except (RuntimeError, OSError) as e:
        print(f"check_vector_loads: {e}", file=sys.stderr)
        return 1
    findings = check(required, found, what)
    for f in findings:
        print(f, file=sys.stderr)
    if findings:
        return 1
    print(f"{len(required)} kernels issue their documented vector loads ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
