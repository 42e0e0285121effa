#!/usr/bin/python3
"""compare_plant.py: plants one systematic error in one decode dispatch of a
kern manifest, for kern-run compare's tests and calibration (docs/compare.md
"Span replay measure").

    compare_plant.py KIND LABEL MANIFEST -o OUT.json [--weights W --weights-out W2]

KIND (each changes the dispatch labelled LABEL of the `decode` program only):
- eps: the dispatch's RMSNorm eps (its f32 argument 1e-06) becomes 0.1;
- theta: the dispatch reads a RoPE table of theta 10000 (the model's is
  1e6): a new weight `rope.cos_sin_cache.theta_1e4`, added to W as W2;
- residual: an unfused `add_rmsnorm` (residual += x; normed = norm(residual))
  becomes `rmsnorm` of the residual: the residual add is dropped;
- head: an unfused `head_rmsnorm_k` (or `_q`) reads its heads one head
  further into `qkv` (k head h gets head h + 1);
- scale: the attention's softmax scale (its f32 argument 1/sqrt(head_dim))
  is 1 % larger (its effect on the output is under a bf16 ulp: see
  docs/compare.md "Calibration");
- vscale: the attention reads a V scale 1 % larger: a new weight
  `v_scale.off_1pct` = 1.01 x v_scale, added to W as W2 (the output, and
  the V it writes to the KV cache, move by 1 %).
Standard library only.
"""

import argparse
import json
import math
import os
import struct
import sys

THETA_NAME = "rope.cos_sin_cache.theta_1e4"
WRONG_THETA = 10000.0
VSCALE_NAME = "v_scale.off_1pct"


def decode_dispatch(doc, label):
    for d in doc["programs"]["decode"]["dispatches"]:
        if d.get("label") == label:
            return d
    raise SystemExit(f"compare_plant: no decode dispatch labelled {label!r}")


def f32_arg(d, pred, what):
    hits = [a for a in d["args"] if "f32" in a and pred(a["f32"])]
    if len(hits) != 1:
        raise SystemExit(f"compare_plant: {d['label']}: {len(hits)} f32 arguments look like {what}, need 1")
    return hits[0]


def head_dim(doc, d):
    """The head dimension: the attention kernels' i32 after the head counts (H, KV, D)."""
    ints = [a["i32"] for a in d["args"] if "i32" in a]
    return ints[2] if d["kernel"].startswith("attention") else ints[1]


def plant(doc, kind, label):
    d = decode_dispatch(doc, label)
    if kind == "eps":
        f32_arg(d, lambda v: abs(v - 1e-6) < 1e-9, "an RMSNorm eps")["f32"] = 0.1
    elif kind == "theta":
        args = [a for a in d["args"] if a.get("buf") == "rope.cos_sin_cache"]
        if len(args) != 1:
            raise SystemExit(f"compare_plant: {label}: does not read rope.cos_sin_cache once")
        args[0]["buf"] = THETA_NAME
        doc["buffers"][THETA_NAME] = dict(doc["buffers"]["rope.cos_sin_cache"])
    elif kind == "residual":
        if d["kernel"] != "add_rmsnorm":
            raise SystemExit(f"compare_plant: {label}: residual needs an add_rmsnorm dispatch, not {d['kernel']}")
        d["kernel"] = "rmsnorm"
        d["args"] = d["args"][1:]  # (x, residual, w, out, ...) -> (residual, w, out, ...)
    elif kind == "head":
        if not d["kernel"].startswith("head_rmsnorm"):
            raise SystemExit(f"compare_plant: {label}: head needs a head_rmsnorm dispatch, not {d['kernel']}")
        src = d["args"][0]
        src["offset"] = src.get("offset", 0) + 2 * head_dim(doc, d)  # bf16: one head further
    elif kind == "vscale":
        args = [a for a in d["args"] if a.get("buf") == "v_scale"]
        if len(args) != 1:
            raise SystemExit(f"compare_plant: {label}: does not read v_scale once")
        args[0]["buf"] = VSCALE_NAME
        doc["buffers"][VSCALE_NAME] = dict(doc["buffers"]["v_scale"])
    elif kind == "scale":
        s = 1 / math.sqrt(head_dim(doc, d))
        f32_arg(d, lambda v: abs(v - s) < 1e-7, "a softmax scale")["f32"] = s * 1.01
    else:
        raise SystemExit(f"compare_plant: unknown kind {kind!r}")
    return doc


def safetensors_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def write_extra_weights(src, dst, name, dtype, shape, data):
    """`src` plus one tensor, written first (`data` a multiple of 4 bytes long: the f32 tensors after it stay
    aligned)."""
    header, data_start = safetensors_header(src)
    shift = len(data)
    out = {name: {"dtype": dtype, "shape": shape, "data_offsets": [0, shift]}}
    for key, spec in header.items():
        if key != "__metadata__":
            spec = dict(spec, data_offsets=[o + shift for o in spec["data_offsets"]])
        out[key] = spec
    text = json.dumps(out).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(src, "rb") as f:
        f.seek(data_start)
        rest = f.read()
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data + rest)


def tensor_bytes(src, name):
    header, data_start = safetensors_header(src)
    begin, end = header[name]["data_offsets"]
    with open(src, "rb") as f:
        f.seek(data_start + begin)
        return header[name], f.read(end - begin)


def write_theta_weights(src, dst):
    """`src` plus THETA_NAME: f32 [P, D] like rope.cos_sin_cache, of theta 1e4."""
    spec, _ = tensor_bytes(src, "rope.cos_sin_cache")
    rows, dim = spec["shape"]
    half = dim // 2
    table = bytearray()
    for p in range(rows):
        angles = [p * WRONG_THETA ** (-2.0 * i / dim) for i in range(half)]
        table += struct.pack(f"<{dim}f", *([math.cos(a) for a in angles] + [math.sin(a) for a in angles]))
    write_extra_weights(src, dst, THETA_NAME, "F32", [rows, dim], bytes(table))


def write_vscale_weights(src, dst):
    """`src` plus VSCALE_NAME = 1.01 x v_scale (f32 [1])."""
    spec, data = tensor_bytes(src, "v_scale")
    value = struct.unpack("<f", data[:4])[0] * 1.01
    write_extra_weights(src, dst, VSCALE_NAME, "F32", [1], struct.pack("<f", value))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=("eps", "theta", "residual", "head", "scale", "vscale"))
    ap.add_argument("label", help="the decode dispatch's label")
    ap.add_argument("manifest")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--weights", help="theta, vscale: the weights to extend")
    ap.add_argument("--weights-out", help="theta, vscale: where the extended weights go")
    args = ap.parse_args(argv)
    with open(args.manifest) as f:
        doc = json.load(f)
    plant(doc, args.kind, args.label)
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
    if args.kind in ("theta", "vscale"):
        if not (args.weights and args.weights_out):
            ap.error(f"{args.kind} needs --weights and --weights-out")
        (write_theta_weights if args.kind == "theta" else write_vscale_weights)(args.weights, args.weights_out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
