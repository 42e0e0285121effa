#!/usr/bin/env python3
"""Writes test/corpus/bad/: one small manifest per mistake, each a single
mutation of the valid base manifest (test/verify/base_manifest.json), with a
NAME.expected file listing the findings kern-verify must report ("CODE
/json/pointer" per line, sorted). The expectations below are written by hand
from the SPEC and the catalogue, never copied from kern-verify's output.

Golden human output (NAME.stderr) is NOT written here: it comes from
regen_golden.sh, so that a change in rendering is a reviewed diff.

usage: gen_corpus.py [--check]   (--check: fail if a file would change)
"""
import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "..", "verify", "base_manifest.json")
HEX = "d" * 64


def dump(v, indent=0, lead=0, width=100):
    """Pretty JSON: a value is written on one line when it fits in `width`
    columns (starting at column `lead`), else its members go one per line,
    indented by two more spaces than `indent`."""
    flat = json.dumps(v, ensure_ascii=False)
    if lead + len(flat) <= width or not isinstance(v, (dict, list)) or not v:
        return flat
    pad = " " * (indent + 2)
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            key = pad + json.dumps(k, ensure_ascii=False) + ": "
            items.append(key + dump(x, indent + 2, len(key), width))
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + dump(x, indent + 2, len(pad), width) for x in v]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def resolve(doc, pointer):
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    last = parts[-1]
    return node, (int(last) if isinstance(node, list) else last)


def set_(pointer, value):
    def f(doc):
        node, key = resolve(doc, pointer)
        node[key] = copy.deepcopy(value)
    return f


def del_(pointer):
    def f(doc):
        node, key = resolve(doc, pointer)
        del node[key]
    return f


def ins(pointer, value):
    """Inserts before the array index that ends `pointer`."""
    def f(doc):
        node, key = resolve(doc, pointer)
        node.insert(key, copy.deepcopy(value))
    return f


def text(old, new):
    def f(t):
        assert old in t, old
        return t.replace(old, new, 1)
    return f


E = "/kernels/embed/impl/steps/0"
KV = "/kernels/kv_write/impl/steps/0"
G = "/kernels/gemm/impl/steps/0"
A0 = "/kernels/argmax/impl/steps/0"
A1 = "/kernels/argmax/impl/steps/1"
PF = "/programs/prefill/dispatches/"
D = "/programs/decode/dispatches/"

# (name, [json mutations], [text mutations], [expected "CODE pointer"])
# An in-place all-reduce of an f32 carry in decode: valid only with meta.world > 1.
COLLECTIVE = [
    set_("/buffers/acc", {"dtype": "f32", "shape": ["tokens", 16], "class": "carry"}),
    set_("/kernels/allreduce", {"params": ["inout buffer<f32>", "i32"], "impl": {"steps": [{
        "symbol": "extern:allreduce_sum_f32", "params": ["inout buffer<f32>", "i32"], "block": [1, 1, 1],
        "grid": [1, 1, 1], "args": [{"arg": 0}, {"arg": 1}]}]}}),
    lambda d: d["programs"]["decode"]["dispatches"].append(
        {"kernel": "allreduce", "label": "allreduce", "args": [{"buf": "acc"}, {"expr": {"mul": [{"sym": "tokens"}, 16]}}]}),
]

CASES = [
    # --- reader: JSON itself ---
    ("E0001-trailing-comma", [], [text('"model": "verify-test"}', '"model": "verify-test",}')], ["E0001 "]),
    ("E0001-unterminated-string", [], [text('"verify-test"', '"verify-test')], ["E0001 "]),
    ("E0001-empty-file", [], [lambda t: ""], ["E0001 "]),  # found by test/fuzz manifest_fuzz (UB in RapidJSON)
    ("E0001-utf8-byte-order-mark", [], [lambda t: "\ufeff" + t], ["E0001 "]),
    ("E0002-escaped-nul-in-name", [], [text('"verify-test"', '"verify\\u0000test"')], ["E0002 /meta/model"]),
    ("E0003-second-document", [], [lambda t: t + "{}\n"], ["E0003 "]),
    ("E0004-duplicate-symbol", [], [text('"tokens": {"min": 1, "max": 64}',
                                         '"tokens": {"min": 1, "max": 64}, "tokens": {"min": 1, "max": 8}')],
     ["E0004 /symbols/tokens"]),
    # --- reader: schema shape ---
    ("E0005-unknown-buffer-field", [set_("/buffers/ids/layout", "row")], [], ["E0005 /buffers/ids/layout"]),
    ("E0005-unknown-top-level-section", [set_("/extras", {})], [], ["E0005 /extras"]),
    ("E0006-string-for-integer", [set_("/symbols/tokens/max", "64")], [], ["E0006 /symbols/tokens/max"]),
    ("E0006-bare-symbol-in-grid", [set_(E + "/grid/0", "tokens")], [], ["E0006 " + E + "/grid/0"]),
    ("E0007-missing-symbol-max", [del_("/symbols/tokens/max")], [], ["E0007 /symbols/tokens"]),
    ("E0007-missing-dispatch-kernel", [del_(D + "0/kernel")], [], ["E0007 " + D + "0"]),
    ("E0008-u8-literal-256", [set_(KV + "/args/5", {"u8": 256})], [], ["E0008 " + KV + "/args/5/u8"]),
    ("E0008-negative-block", [set_(E + "/block/0", -1)], [], ["E0008 " + E + "/block/0"]),
    ("E0009-double-space-param", [set_("/kernels/embed/params/0", "in  buffer<i64>")], [],
     ["E0009 /kernels/embed/params/0"]),
    ("E0009-pointer-without-direction", [set_(KV + "/params/1", "ptr")], [], ["E0009 " + KV + "/params/1"]),
    ("E0010-unknown-dtype", [set_("/buffers/hidden/dtype", "float32")], [], ["E0010 /buffers/hidden/dtype"]),
    ("E0011-unknown-class", [set_("/buffers/hidden/class", "scratch")], [], ["E0011 /buffers/hidden/class"]),
    ("E0012-unknown-expression", [set_(KV + "/grid/0", {"div": [{"sym": "tokens"}, 4]})], [],
     ["E0012 " + KV + "/grid/0"]),
    ("E0013-short-block", [set_(E + "/block", [128, 1])], [], ["E0013 " + E + "/block"]),
    ("E0013-ceil-div-three-operands", [set_(KV + "/grid/0", {"ceil_div": [{"sym": "tokens"}, 4, 1]})], [],
     ["E0013 " + KV + "/grid/0/ceil_div"]),
    ("E0014-two-tags", [set_(D + "0/args/0", {"buf": "ids", "sym": "tokens"})], [], ["E0014 " + D + "0/args/0"]),
    ("E0014-no-tag", [set_(A1 + "/args/4", {})], [], ["E0014 " + A1 + "/args/4"]),
    ("E0015-domain-bounds-and-index", [set_("/buffers/ids/domain", {"min": 0, "index_into": "table"})], [],
     ["E0015 /buffers/ids/domain"]),
    # --- rule 1-3 ---
    ("E0100-version-1", [set_("/meta/version", 1)], [], ["E0100 /meta/version"]),
    ("E0101-inverted-bounds", [set_("/symbols/tokens/min", 65)], [], ["E0101 /symbols/tokens"]),
    ("E0102-state-without-size", [set_("/states/kv", {"align": 256})], [], ["E0102 /states/kv"]),
    ("E0103-state-both-sizes", [set_("/states/kv/bytes_fixed", 64)], [], ["E0103 /states/kv"]),
    ("E0104-align-not-power-of-two", [set_("/states/kv/align", 100)], [], ["E0104 /states/kv/align"]),
    # A power of two far above a page was accepted and failed at run time as "out of host memory".
    ("E0104-align-too-large", [set_("/states/kv/align", 2**63)], [], ["E0104 /states/kv/align"]),
    # --- rule 4 and references ---
    ("E0105-unknown-symbol-in-shape", [set_("/buffers/hidden/shape/0", "token")], [],
     ["E0105 /buffers/hidden/shape/0"]),
    ("E0105-unknown-symbol-in-grid", [set_(A0 + "/grid/1", {"sym": "tokns"})], [], ["E0105 " + A0 + "/grid/1"]),
    ("E0106-empty-shape", [set_("/buffers/next/shape", [])], [], ["E0106 /buffers/next"]),
    ("E0107-zero-dimension", [set_("/buffers/hidden/shape/1", 0)], [], ["E0107 /buffers/hidden/shape/1"]),
    ("E0108-size-overflow", [set_("/buffers/hidden/shape/1", 2**64 - 1)], [], ["E0108 /buffers/hidden"]),
    ("E0109-expression-overflow", [set_(E + "/grid/0", {"mul": [{"sym": "tokens"}, 2**64 - 1]})], [],
     ["E0109 " + E + "/grid/0"]),
    ("E0110-ceil-div-by-zero", [set_(KV + "/grid/0", {"ceil_div": [{"sym": "tokens"}, 0]})], [],
     ["E0110 " + KV + "/grid/0"]),
    ("E0111-unknown-kernel", [set_(D + "2/kernel", "gem")], [], ["E0111 " + D + "2/kernel"]),
    ("E0112-unknown-buffer", [set_(PF + "0/args/0", {"buf": "idz"})], [], ["E0112 " + PF + "0/args/0/buf"]),
    ("E0113-unknown-state", [set_(PF + "1/args/1", {"state": "kvv"})], [], ["E0113 " + PF + "1/args/1/state"]),
    ("E0114-unknown-scratch", [set_(A1 + "/args/0", {"scratch": "partial_vals"})], [],
     ["E0114 " + A1 + "/args/0"]),
    ("E0115-interface-arg-out-of-range", [set_(E + "/args/4", {"arg": 5})], [], ["E0115 " + E + "/args/4"]),
    # --- rule 5 ---
    ("E0116-no-steps", [set_("/kernels/gemm/impl/steps", [])], [], ["E0116 /kernels/gemm/impl/steps"]),
    ("E0117-block-dimension-zero", [set_(E + "/block", [128, 0, 1])], [], ["E0117 " + E + "/block"]),
    ("E0118-block-over-1024-threads", [set_(E + "/block", [1024, 2, 1])], [], ["E0118 " + E + "/block"]),
    ("E0119-block-z-over-64", [set_(E + "/block", [1, 1, 128])], [], ["E0119 " + E + "/block"]),
    ("E0120-grid-zero", [set_(A0 + "/grid/2", 0)], [], ["E0120 " + A0 + "/grid/2"]),
    ("E0121-grid-y-over-65535", [set_(A0 + "/grid/1", {"mul": [{"sym": "tokens"}, 2048]})], [],
     ["E0121 " + A0 + "/grid/1"]),
    ("E0121-grid-x-at-2-pow-31", [set_(A0 + "/grid/0", 2**31)], [], ["E0121 " + A0 + "/grid/0"]),
    ("E0122-shared-memory-over-limit", [set_(A0 + "/shared_mem", 240000)], [], ["E0122 " + A0 + "/shared_mem"]),
    ("E0123-short-sha256", [set_(E + "/sha256", "abc123")], [], ["E0123 " + E + "/sha256"]),
    ("E0123-sha256-not-hex", [set_(E + "/sha256", "g" * 64)], [], ["E0123 " + E + "/sha256"]),
    ("E0124-sha256-without-cubin", [del_(E + "/cubin")], [], ["E0124 " + E + "/sha256"]),
    ("E0125-cubin-pinned-twice", [set_(A1 + "/sha256", HEX)], [], ["E0125 " + A1 + "/sha256"]),
    ("E0126-step-arg-count", [del_(E + "/args/4")], [], ["E0126 " + E + "/args"]),
    ("E0127-forwarded-dtype", [set_(E + "/params/1", "in buffer<f32>")], [], ["E0127 " + E + "/args/1"]),
    ("E0128-scratch-dtype", [set_(A0 + "/params/1", "out buffer<bf16>")], [], ["E0128 " + A0 + "/args/1"]),
    ("E0129-step-literal-kind", [set_(KV + "/args/5", {"i32": 1})], [], ["E0129 " + KV + "/args/5"]),
    ("E0130-unknown-extern", [set_(G + "/symbol", "extern:cublas_gemm")], [], ["E0130 " + G + "/symbol"]),
    ("E0131-extern-params", [del_(G + "/params/5"), del_(G + "/args/5")], [], ["E0131 " + G + "/params"]),
    ("E0132-extern-with-cubin", [set_(G + "/cubin", "gemm.cubin")], [], ["E0132 " + G + "/cubin"]),
    # --- rule 6 ---
    ("E0133-write-through-in", [set_(KV + "/params/0", "inout buffer<bf16>")], [], ["E0133 " + KV + "/args/0"]),
    ("E0134-out-never-written", [ins("/kernels/embed/params/5", "out buffer<bf16>"),
                                 ins(PF + "0/args/5", {"buf": "logits"}), ins(D + "0/args/5", {"buf": "logits"})],
     [], ["E0134 /kernels/embed/params/5"]),
    ("E0135-out-read-before-written", [set_(A1 + "/params/2", "inout buffer<i64>")], [],
     ["E0135 " + A1 + "/args/2"]),
    ("E0136-scratch-read-first", [set_(A0 + "/params/1", "inout buffer<f32>")], [], ["E0136 " + A0 + "/args/1"]),
    ("E0137-scratch-offset-misaligned", [set_(A1 + "/args/1/offset", 2)], [], ["E0137 " + A1 + "/args/1/offset"]),
    ("E0138-scratch-offset-past-end", [set_(A1 + "/args/1/offset", 4096)], [],
     ["E0138 " + A1 + "/args/1/offset"]),
    ("E0139-unused-scratch", [set_("/kernels/argmax/impl/scratch/tmp", {"dtype": "f32", "shape": [4]})], [],
     ["E0139 /kernels/argmax/impl/scratch/tmp"]),
    # --- rule 7 ---
    ("E0140-dispatch-arg-count", [del_(D + "3/args/3")], [], ["E0140 " + D + "3/args"]),
    ("E0141-buffer-for-scalar", [set_(D + "3/args/2", {"buf": "ids"})], [], ["E0141 " + D + "3/args/2"]),
    ("E0142-dtype-mismatch", [set_(D + "2/args/0", {"buf": "ids"})], [], ["E0142 " + D + "2/args/0"]),
    ("E0143-state-into-typed-buffer", [set_(D + "1/args/0", {"state": "kv"})], [], ["E0143 " + D + "1/args/0"]),
    ("E0144-expression-over-i32", [set_(D + "1/args/2", {"expr": {"mul": [{"sym": "tokens"}, 100000000]}})], [],
     ["E0144 " + D + "1/args/2"]),
    ("E0145-f32-from-symbol", [set_(D + "1/args/3", {"sym": "tokens"})], [], ["E0145 " + D + "1/args/3"]),
    ("E0146-literal-kind", [set_(D + "1/args/3", {"i32": 1})], [], ["E0146 " + D + "1/args/3"]),
    ("E0147-offset-misaligned", [set_(D + "2/args/0/offset", 3)], [], ["E0147 " + D + "2/args/0/offset"]),
    ("E0148-offset-past-end", [set_(D + "2/args/0/offset", 4096)], [], ["E0148 " + D + "2/args/0/offset"]),
    # --- rule 8 ---
    ("E0149-read-before-write", [del_(PF + "0")], [], ["E0149 " + PF + "0/args/0"]),
    ("E0150-write-to-input", [set_("/buffers/hidden/class", "input")], [],
     ["E0150 " + PF + "0/args/2", "E0150 " + D + "0/args/2"]),
    ("E0151-write-to-weight", [set_("/buffers/logits/class", "weight")], [], ["E0151 " + D + "2/args/2"]),
    ("E0152-output-never-written", [set_("/buffers/w/class", "output")], [],
     ["E0149 " + D + "2/args/1", "E0152 /buffers/w"]),
    ("E0153-carry-never-written", [set_("/buffers/w/class", "carry")], [], ["E0153 /buffers/w"]),
    # --- rule 9 ---
    ("E0154-unused-symbol", [set_("/symbols/batch", {"min": 1, "max": 4})], [], ["E0154 /symbols/batch"]),
    ("E0155-unused-state", [set_("/states/kv2", {"bytes_per_token": 64})], [], ["E0155 /states/kv2"]),
    ("E0156-unused-buffer", [set_("/buffers/spare", {"dtype": "f32", "shape": [4], "class": "workspace"})], [],
     ["E0156 /buffers/spare"]),
    ("E0157-unused-kernel", [lambda d: d["kernels"].__setitem__("gemm2", copy.deepcopy(d["kernels"]["gemm"]))], [],
     ["E0157 /kernels/gemm2"]),
    ("E0158-unknown-domain-target", [set_("/buffers/ids/domain", {"index_into": "tabel", "unit": 1})], [],
     ["E0158 /buffers/ids/domain"]),
    ("E0160-domain-bounds-inverted", [set_("/buffers/ids/domain", {"min": 31, "max": 0})], [],
     ["E0160 /buffers/ids/domain/min"]),
    ("E0160-domain-float-bounds-inverted", [set_("/buffers/hidden/domain", {"min": 1.5, "max": -1.5})], [],
     ["E0160 /buffers/hidden/domain/min"]),
    ("E0161-domain-unit-without-index", [set_("/buffers/ids/domain", {"min": 0, "max": 31, "unit": 16})], [],
     ["E0161 /buffers/ids/domain"]),
    ("E0162-domain-unit-zero", [set_("/buffers/ids/domain", {"index_into": "table", "unit": 0})], [],
     ["E0162 /buffers/ids/domain"]),
    ("E0163-cubin-path-escapes", [set_(E + "/cubin", "../../../etc/passwd")], [], ["E0163 " + E + "/cubin"]),
    ("E0163-cubin-path-absolute", [set_(E + "/cubin", "/opt/kernels/embed.cubin")], [], ["E0163 " + E + "/cubin"]),
    ("E0164-empty-symbol", [set_(E + "/symbol", "")], [], ["E0164 " + E + "/symbol"]),
    ("E0164-symbol-with-blank", [set_(E + "/symbol", "kern_embed ")], [], ["E0164 " + E + "/symbol"]),
    ("E0165-spec-block-one-row", [set_("/meta/spec", {"block": 1, "mask_token": 5})], [], ["E0165 /meta/spec/block"]),
    ("E0165-spec-block-over-tokens", [set_("/meta/spec", {"block": 65, "mask_token": 5})], [],
     ["E0165 /meta/spec/block"]),
    ("E0165-spec-negative-mask-token", [set_("/meta/spec", {"block": 8, "mask_token": -1})], [],
     ["E0165 /meta/spec/mask_token"]),
    # tensor parallelism (docs/parallel.md): the world size and where collectives may be
    ("E0167-world-zero", [set_("/meta/world", 0)], [], ["E0167 /meta/world"]),
    ("E0167-world-over-limit", [set_("/meta/world", 65)], [], ["E0167 /meta/world"]),
    ("E0168-collective-in-one-rank", COLLECTIVE, [], ["E0168 /kernels/allreduce/impl/steps/0/symbol"]),
    ("E0168-collective-in-world-one", COLLECTIVE + [set_("/meta/world", 1)], [],
     ["E0168 /kernels/allreduce/impl/steps/0/symbol"]),
    ("E0159-mul-by-zero", [set_(KV + "/grid/0", {"mul": [{"sym": "tokens"}, 0]})], [], ["E0159 " + KV + "/grid/0"]),
    # --- warnings (exit 0 unless --deny-warnings) ---
    ("W0001-step-without-cubin", [del_(E + "/cubin"), del_(E + "/sha256")], [], ["W0001 " + E + "/symbol"]),
    ("W0002-program-without-effect", [set_("/programs/probe", {"dispatches": [
        {"kernel": "embed", "args": [{"buf": "ids"}, {"buf": "table"}, {"buf": "hidden"}, {"sym": "tokens"},
                                     {"i32": 16}]}]})], [], ["W0002 /programs/probe"]),
    ("W0003-huge-workspace", [set_("/buffers/logits/shape", ["tokens", 32, 1048576])], [], ["W0003 /buffers/logits"]),
    ("W0004-todo-site", [set_("/todos", [{"site": "scale_kernel#0", "program": "prefill",
                                          "why": "param[1] is a 16-byte struct passed by value"},
                                         {"site": "cublasLtMatmul#2", "program": None, "why": "not kern's GEMM"}])],
     [], ["W0004 /todos/0", "W0004 /todos/1"]),
    ("E0166-todo-unknown-program", [set_("/todos", [{"site": "k#0", "program": "prefil", "why": "struct"}])], [],
     ["E0166 /todos/0/program"]),
    ("E0005-todo-unknown-field", [set_("/todos", [{"site": "k#0", "why": "struct", "reason": "x"}])], [],
     ["E0005 /todos/0/reason"]),
    ("E0007-todo-without-why", [set_("/todos", [{"site": "k#0"}])], [], ["E0007 /todos/0"]),
    # --- several mistakes at once: all reported, in source order ---
    ("multi-reader-errors", [set_("/buffers/ids/dtyp", "i64"), set_("/symbols/tokens/max", -1),
                             set_(E + "/block", [128, 1]), set_("/kernels/embed/params/3", "int")], [],
     ["E0005 /buffers/ids/dtyp", "E0008 /symbols/tokens/max", "E0009 /kernels/embed/params/3",
      "E0013 " + E + "/block"]),
    ("multi-verifier-errors", [set_("/states/kv/align", 3), set_(E + "/block", [512, 4, 1]),
                               set_(D + "2/args/0/offset", 1), set_("/symbols/spare", {"max": 2})], [],
     ["E0104 /states/kv/align", "E0118 " + E + "/block", "E0147 " + D + "2/args/0/offset",
      "E0154 /symbols/spare"]),
    ("multi-error-and-warning", [del_(A0 + "/cubin"), del_(A0 + "/sha256"), set_(A1 + "/block", [1, 1, 65])], [],
     ["W0001 " + A0 + "/symbol", "E0119 " + A1 + "/block"]),
]


def build_case(base_text, muts, text_muts):
    doc = json.loads(base_text)
    for m in muts:
        m(doc)
    t = dump(doc) + "\n"
    for m in text_muts:
        t = m(t)
    return t


def main():
    check = "--check" in sys.argv[1:]
    with open(BASE) as f:
        base_text = f.read()
    out_dir = os.path.join(HERE, "bad")
    os.makedirs(out_dir, exist_ok=True)
    names = set()
    stale = []
    for name, muts, text_muts, expected in CASES:
        assert name not in names, name
        names.add(name)
        files = {name + ".json": build_case(base_text, muts, text_muts),
                 name + ".expected": "".join(e + "\n" for e in expected)}
        for fname, content in files.items():
            path = os.path.join(out_dir, fname)
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if old != content:
                stale.append(fname)
                if not check:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(content)
    if check and stale:
        print("stale corpus files (run test/corpus/gen_corpus.py):", " ".join(stale))
        return 1
    print(f"{len(CASES)} cases" + (", up to date" if not stale else f", {len(stale)} files written"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
