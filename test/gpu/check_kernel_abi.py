#!/usr/bin/python3
"""check_kernel_abi.py --manifest M.json [--manifest ...] --doc docs/kernels.md FATBIN...

Checks the built CUDA kernel fatbins without a GPU (docs/gpu.md):
  * each fatbin holds SASS (an ELF cubin) for every arch in --sass and PTX for
    every arch in --ptx, each ELF's e_flags naming the arch of its entry;
  * each fatbin's cubins define exactly the entry symbols FAMILIES lists for
    it, the PTX declares the same `.entry`s, and docs/kernels.md names them;
  * every non-extern step symbol of each manifest is in exactly one fatbin;
  * each entry's parameter layout in every cubin (EIATTR_KPARAM_INFO records
    of its `.nv.info.<symbol>` section: ordinal, offset, size) equals the
    step's declared params in the manifest (sizes 4/8/1, each param aligned
    to its size: the cuLaunchKernel / cuFuncGetParamInfo layout), and the
    total (EIATTR_CBANK_PARAM_SIZE) matches.

--self-test also proves the check has teeth: it mutates the expectations
(a param i64 -> i32, a missing param, a symbol the fatbin lacks) and a
fatbin's bytes (truncated) and requires each mutation to be reported.

Exit status 0 when every check passes, 1 on a finding, 2 on bad usage.
Standard library only.
"""

import argparse
import json
import os
import re
import struct
import sys

# Which entry symbols each family's fatbin must define (docs/kernels.md).
FAMILIES = {
    "embedding": ["kern_embedding_bf16"],
    "rmsnorm": ["kern_rmsnorm_bf16", "kern_add_rmsnorm_bf16", "kern_head_rmsnorm_bf16"],
    "rope": ["kern_rope_bf16"],
    "silu_and_mul": ["kern_silu_and_mul_bf16"],
    "reshape_and_cache": ["kern_reshape_and_cache_bf16"],
    "paged_attention": ["kern_paged_attention_partial_bf16", "kern_paged_attention_reduce_bf16",
                        "kern_paged_attention_prefill_bf16", "kern_attention_decode_bf16",
                        "kern_paged_attention_noncausal_bf16", "kern_attention_decode_qkv_bf16"],
    "argmax": ["kern_argmax_partial_bf16", "kern_argmax_reduce"],
    "attention_decode_batch": ["kern_attention_decode_batch_bf16", "kern_attention_decode_batch_qkv_bf16"],
    "decode_advance_batch": ["kern_decode_advance_batch"],
    "gemv": ["kern_gemv_bf16", "kern_gemv_acc_bf16", "kern_gemv_residual_bf16", "kern_gemv_silu_mul_bf16",
             "kern_gemv_rmsnorm_bf16", "kern_gemv_rmsnorm_silu_mul_bf16", "kern_gemv_rmsnorm_argmax_bf16"],
    "qk_norm_rope_cache": ["kern_qk_norm_rope_cache_bf16"],
    "decode_advance": ["kern_decode_advance"],
    "last_row": ["kern_last_row"],
    "sample": ["kern_sample_bf16"],
    "bias_add": ["kern_bias_add_bf16"],
    "moe": ["kern_moe_router_bf16", "kern_moe_gate_up_bf16", "kern_moe_down_bf16"],
}

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
FLAG_COMPRESSED = 0x2000
STO_CUDA_ENTRY = 0x10
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
EIFMT_SVAL = 0x04


class CheckError(Exception):
    """A malformed file (not a finding about a kernel)."""


def param_size(ptype):
    """Bytes of a manifest param type's value (docs/kernels.md: pointers 8, i64 8, u8 1, else 4)."""
    if ptype.startswith(("in ", "out ", "inout ")) or ptype == "i64":
        return 8
    if ptype == "u8":
        return 1
    if ptype in ("i32", "u32", "f32"):
        return 4
    raise CheckError(f"unknown param type {ptype!r}")


def expected_layout(params):
    """[(offset, size)] of a declared param list, each param aligned to its size."""
    out, off = [], 0
    for p in params:
        size = param_size(p)
        off = (off + size - 1) // size * size
        out.append((off, size))
        off += size
    return out


def parse_fatbin(data, name):
    """[(kind, arch, flags, payload bytes)] of a fatbin container."""
    if len(data) < 16:
        raise CheckError(f"{name}: {len(data)} B is too short for a fatbin header")
    magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", data, 0)
    if magic != FATBIN_MAGIC:
        raise CheckError(f"{name}: bad fatbin magic 0x{magic:08x}")
    if header_size + body_size > len(data):
        raise CheckError(f"{name}: fatbin body {body_size} B exceeds the file ({len(data)} B)")
    entries, pos, end = [], header_size, header_size + body_size
    while pos < end:
        if pos + 0x40 > end:
            raise CheckError(f"{name}: truncated fatbin entry header at {pos}")
        kind, _ver, ehdr, payload = struct.unpack_from("<HHIQ", data, pos)
        arch = struct.unpack_from("<I", data, pos + 0x1C)[0]
        flags = struct.unpack_from("<Q", data, pos + 0x28)[0]
        start = pos + ehdr
        if ehdr < 0x40 or start + payload > end:
            raise CheckError(f"{name}: fatbin entry at {pos} runs past the container")
        entries.append((kind, arch, flags, data[start:start + payload]))
        pos = start + payload
    return entries


def parse_cubin(elf, where):
    """(arch from e_flags, {entry symbol: (kparams [(ordinal, offset, size)], total or None)})."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise CheckError(f"{where}: not a 64-bit ELF cubin")
    e_flags = struct.unpack_from("<I", elf, 0x30)[0]
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    sections = []
    for i in range(shnum):
        name, stype, _f, _a, off, size, link, _info, _al, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", elf, shoff + i * shentsize)
        sections.append((name, stype, off, size, link, entsize))
    shstr = sections[shstrndx]

    def cstr(table_off, idx):
        endpos = elf.index(b"\0", table_off + idx)
        return elf[table_off + idx:endpos].decode()

    named = {cstr(shstr[2], s[0]): s for s in sections}
    entries = {}
    symtab = named.get(".symtab")
    if symtab is None:
        raise CheckError(f"{where}: cubin has no .symtab")
    strtab = sections[symtab[4]]
    for k in range(symtab[3] // symtab[5]):
        st_name, st_info, st_other = struct.unpack_from("<IBB", elf, symtab[2] + k * symtab[5])
        if (st_info & 0xF) == 2 and (st_other & STO_CUDA_ENTRY):  # STT_FUNC, CUDA entry
            entries[cstr(strtab[2], st_name)] = None
    for sym in entries:
        info = named.get(".nv.info." + sym)
        if info is None:
            raise CheckError(f"{where}: entry {sym} has no .nv.info.{sym} section")
        kparams, total, pos, end = [], None, info[2], info[2] + info[3]
        while pos + 4 <= end:
            fmt, attr, value = struct.unpack_from("<BBH", elf, pos)
            pos += 4
            if fmt == EIFMT_SVAL:
                if attr == EIATTR_KPARAM_INFO:
                    _index, ordinal, offset, bits = struct.unpack_from("<IHHI", elf, pos)
                    kparams.append((ordinal, offset, (bits >> 18) & 0x3FFF))
                pos += value
            elif attr == EIATTR_CBANK_PARAM_SIZE:
                total = value
        entries[sym] = (sorted(kparams), total)
    # The sm number sits in e_flags bits 0-7 up to ELF ABI version 7 and in
    # bits 8-15 from version 8 (CUDA 12.8+: 0x6005a04 = sm_90).
    arch = (e_flags >> 8) & 0xFF if elf[8] >= 8 else e_flags & 0xFF
    return arch, entries


def check(fatbins, manifests, doc_text, sass, ptx, families=FAMILIES):
    """Returns the list of findings (empty = pass). Raises CheckError on malformed input."""
    findings = []
    declared = {}  # symbol -> (params, manifest file)
    for mpath, doc in manifests:
        for kname, kernel in doc["kernels"].items():
            for i, step in enumerate(kernel["impl"]["steps"]):
                sym = step["symbol"]
                if sym.startswith("extern:"):
                    continue
                prev = declared.get(sym)
                if prev and prev[0] != step["params"]:
                    findings.append(f"{mpath}: kernels.{kname}.impl.steps[{i}] declares {sym} with "
                                    f"params {step['params']}, {prev[1]} with {prev[0]}")
                declared.setdefault(sym, (step["params"], f"{mpath}: kernels.{kname}.impl.steps[{i}]"))
    where_defined = {}
    for path, data in fatbins:
        name = os.path.basename(path)
        family = name.rsplit(".", 1)[0]
        want = set(families.get(family, []))
        if not want:
            findings.append(f"{name}: not a known kernel family ({', '.join(sorted(families))})")
        entries = parse_fatbin(data, name)
        have_sass = {a for k, a, _f, _p in entries if k == KIND_ELF}
        have_ptx = {a for k, a, _f, _p in entries if k == KIND_PTX}
        for a in sorted(set(sass) - have_sass):
            findings.append(f"{name}: no sm_{a} SASS (has {sorted(have_sass)})")
        for a in sorted(set(ptx) - have_ptx):
            findings.append(f"{name}: no compute_{a} PTX (has {sorted(have_ptx)})")
        for kind, arch, flags, payload in entries:
            if kind == KIND_PTX:
                if flags & FLAG_COMPRESSED:
                    findings.append(f"{name}: compute_{arch} PTX is compressed (build with --no-compress)")
                    continue
                text = payload.decode("latin-1")
                got = set(re.findall(r"\.entry\s+(\w+)\s*\(", text))
                if got != want:
                    findings.append(f"{name}: compute_{arch} PTX entries {sorted(got)}, expected {sorted(want)}")
                continue
            if kind != KIND_ELF:
                continue
            where = f"{name} sm_{arch}"
            if flags & FLAG_COMPRESSED:
                findings.append(f"{where}: cubin is compressed (build with --no-compress)")
                continue
            elf_arch, syms = parse_cubin(payload, where)
            if elf_arch != arch:
                findings.append(f"{where}: ELF e_flags say sm_{elf_arch}")
            if set(syms) != want:
                findings.append(f"{where}: entries {sorted(syms)}, expected {sorted(want)}")
            for sym, (kparams, total) in sorted(syms.items()):
                where_defined.setdefault(sym, set()).add(name)
                if sym not in declared:
                    continue
                params, site = declared[sym]
                exp = expected_layout(params)
                got = [(off, size) for _ord, off, size in kparams]
                ords = [o for o, _off, _size in kparams]
                if ords != list(range(len(kparams))) or got != exp:
                    findings.append(f"{where}: {sym} params (offset, size) {got}, {site} declares "
                                    f"{params} = {exp}")
                exp_total = exp[-1][0] + exp[-1][1] if exp else 0
                if total is not None and total != exp_total:
                    findings.append(f"{where}: {sym} param block {total} B, declared {exp_total} B")
    for family, syms in families.items():
        for sym in syms:
            if not re.search(r"\b" + re.escape(sym) + r"\b", doc_text):
                findings.append(f"docs/kernels.md does not name {sym} (family {family})")
    for sym, (_params, site) in sorted(declared.items()):
        files = where_defined.get(sym, set())
        if len(files) != 1:
            findings.append(f"{site}: symbol {sym} is defined in {len(files)} fatbins "
                            f"({', '.join(sorted(files)) or 'none'}), expected exactly one")
    return findings


def self_test(fatbins, manifests, doc_text, sass, ptx):
    """Each mutation must produce a finding (or a CheckError); returns failures."""
    import copy
    failures = []

    def expect_finding(label, fb, mf, fam=FAMILIES, needle=""):
        try:
            found = check(fb, mf, doc_text, sass, ptx, fam)
        except CheckError as e:
            found = [str(e)]
        if not any(needle in f for f in found):
            failures.append(f"self-test: {label}: not reported (findings: {found})")

    def mutate_step(sym, fn):
        out = []
        for mpath, doc in manifests:
            d = copy.deepcopy(doc)
            for kernel in d["kernels"].values():
                for step in kernel["impl"]["steps"]:
                    if step["symbol"] == sym:
                        fn(step["params"])
            out.append((mpath, d))
        return out

    def narrow(params):
        params[params.index("i64")] = "i32"

    expect_finding("page_stride declared i32 instead of i64", fatbins,
                   mutate_step("kern_reshape_and_cache_bf16", narrow), needle="kern_reshape_and_cache_bf16 params")
    expect_finding("a missing trailing param", fatbins,
                   mutate_step("kern_argmax_reduce", lambda p: p.pop()), needle="kern_argmax_reduce params")
    fam = copy.deepcopy(FAMILIES)
    fam["argmax"] = fam["argmax"] + ["kern_argmax_missing"]
    expect_finding("an expected symbol the fatbin lacks", fatbins, manifests, fam, needle="kern_argmax_missing")
    cut = [(p, d[: len(d) // 2]) for p, d in fatbins]
    expect_finding("a truncated fatbin", cut, manifests, needle="")
    try:
        found = check(fatbins, manifests, doc_text, sass + [999], ptx)
    except CheckError as e:
        found = [str(e)]
    if not any("sm_999" in f for f in found):
        failures.append("self-test: a required arch the fatbins lack: not reported")
    if not failures:
        print("self-test: 5 of 5 mutations reported")
    return failures


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--manifest", action="append", default=[], help="manifest whose steps give the ABI")
    ap.add_argument("--doc", required=True, help="docs/kernels.md")
    ap.add_argument("--sass", default="90", help="archs that need SASS (comma list; meson's kernels_cuda_archs)")
    ap.add_argument("--ptx", default="", help="archs that need PTX (comma list; none by default)")
    ap.add_argument("--self-test", action="store_true", help="also check that mutations are caught")
    ap.add_argument("fatbins", nargs="+")
    args = ap.parse_args(argv)
    try:
        sass = [int(a) for a in args.sass.split(",") if a]
        ptx = [int(a) for a in args.ptx.split(",") if a]
        fatbins = []
        for p in args.fatbins:
            with open(p, "rb") as f:
                fatbins.append((p, f.read()))
        manifests = []
        for m in args.manifest:
            with open(m, encoding="utf-8") as f:
                manifests.append((m, json.load(f)))
        with open(args.doc, encoding="utf-8") as f:
            doc_text = f.read()
        findings = check(fatbins, manifests, doc_text, sass, ptx)
        if args.self_test and not findings:
            findings = self_test(fatbins, manifests, doc_text, sass, ptx)
    except (OSError, ValueError, CheckError) as e:
        print(f"check_kernel_abi: {e}", file=sys.stderr)
        return 1
    for f in findings:
        print(f)
    n_syms = sum(len(FAMILIES.get(os.path.basename(p).rsplit(".", 1)[0], [])) for p in args.fatbins)
    print(f"{len(args.fatbins)} fatbins, {n_syms} entry symbols, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
