#!/usr/bin/python3
"""gen_random_weights.py CONFIG.json -o W.safetensors [--seed N] [--draft DRAFT.json]

Writes deterministic random weights for a HF config.json of any family
decoder_config.py reads (Qwen3, Qwen3-MoE, Llama 3.x, Mistral, Qwen2.5) in kern's exported
layout (docs/causal-lm-manifest.md): merged qkv_proj and gate_up_proj, the
rope cos/sin cache, k_scale = v_scale = 1.0, lm_head materialised (a copy
of embed_tokens when the config ties them).

Determinism: the random bits come from SHAKE-256 (FIPS 202, hashlib) in
counter mode, keyed by the seed and the tensor's name, so the file is
byte-identical on any machine and one tensor's values do not depend on the
others. Each 16-bit random word r maps to u = (r + 0.5) / 65536 in (0, 1)
and to a value by a per-tensor rule (rounded once to bf16, nearest-even):
- embed_tokens (and a tied lm_head): uniform in (-1, 1);
- projections and MLP weights: uniform in (-a, a), a = GAIN / sqrt(fan_in)
  (fan_in = the row length; each expert's rows for the stacked experts),
  large enough that a tiny model's greedy
  sequence varies instead of echoing the input embedding (oracles.md);
- norm weights: 1 + uniform in (-NORM_NOISE, NORM_NOISE).
With --draft DRAFT.json (provider/dspark_config.py) the file also holds a
DSpark draft's tensors after the target's (dspark_config.draft_tensors), by
the same rules: the `draft.` names key their own streams, so the target's
values are the same with and without a draft.

Speed: pure Python (standard library only), about 3 M values/s on one core:
Qwen3-0.6B (0.75 G values with the materialised lm_head) takes ~4 minutes,
Qwen3-4B (4.4 G values, 8.8 GB) ~25 minutes. Writes are streamed in 2 MiB
pieces, so memory stays small for any size, into a temporary file renamed
over the output at the end: an interrupted run leaves no partial file.
On a terminal, stderr shows the bytes written (provider/progress.py).

Exit status: 0 on success, 1 on a bad config, 2 on bad usage or a file that
cannot be read or written (provider/tool_io.py).
"""

import argparse
import hashlib
import math
import struct
import sys
from array import array

try:  # optional (Debian's python3-numpy, scripts/setup.sh): only speeds up the table lookup
    import numpy as np
except ImportError:
    np = None

import safetensors_io as st
from dspark_config import draft_tensors, load_draft_config
from progress import Progress
from decoder_config import exported_tensors, load_config, rope_cache_bytes
from tool_io import check_output_path, run

GAIN = 4.0
NORM_NOISE = 0.25
CHUNK_WORDS = 1 << 20  # 16-bit random words per SHAKE call (2 MiB)


def bf16_bits(x):
    """bf16 bit pattern of x (rounded to f32, then to bf16 nearest-even)."""
    (b,) = struct.unpack("<I", struct.pack("<f", x))
    if (b & 0x7F800000) == 0x7F800000:  # inf/nan: truncate, keep nan quiet
        return (b >> 16) | (0x40 if b & 0x7FFFFF else 0)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def value_table(center, amplitude):
    """bf16 bits of center + (2u - 1) * amplitude for each 16-bit word r."""
    return [bf16_bits(center + (2.0 * (r + 0.5) / 65536.0 - 1.0) * amplitude) for r in range(65536)]


def random_bf16_chunks(seed, key, count, table):
    """Yields little-endian bf16 bytes of `count` values drawn from `table`."""
    for start in range(0, count, CHUNK_WORDS):
        n = min(CHUNK_WORDS, count - start)
        tag = b"kern-random-weights\0" + struct.pack("<Q", seed) + key.encode() + b"\0" + struct.pack("<Q", start)
        digest = hashlib.shake_256(tag).digest(2 * n)
        if np is not None:  # the same lookup, ~20x faster (Qwen3-0.6B in seconds, not minutes)
            yield np_table(table)[np.frombuffer(digest, dtype="<u2")].astype("<u2").tobytes()
            continue
        words = array("H")
        words.frombytes(digest)
        if sys.byteorder == "big":
            words.byteswap()
        out = array("H", map(table.__getitem__, words))
        if sys.byteorder == "big":
            out.byteswap()
        yield out.tobytes()


_NP_TABLES = {}


def np_table(table):
    """`table` as a numpy uint16 array, converted once per table."""
    if id(table) not in _NP_TABLES:
        _NP_TABLES[id(table)] = (table, np.array(table, dtype=np.uint16))
    return _NP_TABLES[id(table)][1]


def tensor_rule(cfg, name, shape):
    """(stream key, center, amplitude) for a bf16 tensor of the exported layout."""
    if name == "lm_head.weight" and cfg.tie_word_embeddings:
        return "model.embed_tokens.weight", 0.0, 1.0
    if name in ("model.embed_tokens.weight", "lm_head.weight"):
        return name, 0.0, 1.0
    if name.endswith(".bias"):  # Qwen2's q, k, v biases: uniform in (-1, 1)
        return name, 0.0, 1.0
    if len(shape) == 1:  # every other 1-D bf16 tensor is a norm weight
        return name, 1.0, NORM_NOISE
    return name, 0.0, GAIN / math.sqrt(shape[-1])  # the row length (stacked experts: [X, rows, fan_in])


def specs(cfg, seed, draft=None):
    """TensorSpecs of the whole file in exported_tensors order (then the
    draft's, when `draft` is a DraftConfig)."""
    tables = {}
    out = []
    for name, dtype, shape in exported_tensors(cfg) + (draft_tensors(cfg, draft) if draft else []):
        if name == "rope.cos_sin_cache":
            out.append(st.TensorSpec(name, dtype, shape, lambda: rope_cache_bytes(cfg)))
        elif dtype == "F32":  # k_scale, v_scale
            out.append(st.TensorSpec(name, dtype, shape, lambda: [struct.pack("<f", 1.0)]))
        else:
            key, center, amplitude = tensor_rule(cfg, name, shape)
            if (center, amplitude) not in tables:
                tables[(center, amplitude)] = value_table(center, amplitude)
            table = tables[(center, amplitude)]
            count = st.numel(shape)
            out.append(st.TensorSpec(name, dtype, shape,
                                     lambda k=key, n=count, t=table: random_bf16_chunks(seed, k, n, t)))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("config", help="HF Qwen3 config.json")
    ap.add_argument("-o", "--output", required=True, help="safetensors file to write")
    ap.add_argument("--seed", type=int, default=0, help="random seed, 0 <= N < 2^64 (default 0)")
    ap.add_argument("--draft", help="also write a DSpark draft's tensors (draft config, docs/speculative.md)")
    args = ap.parse_args(argv)
    if not 0 <= args.seed < 2**64:
        ap.error("--seed must be in [0, 2^64)")
    check_output_path(args.output, inputs=[("config", args.config), ("draft config", args.draft)])  # before minutes of work
    cfg = load_config(args.config)
    draft = load_draft_config(args.draft, cfg) if args.draft else None
    tensors = specs(cfg, args.seed, draft)
    bar = Progress("gen_random_weights", args.output, sum(s.size_bytes for s in tensors))
    try:
        st.write(args.output, tensors,
                 {"format": "kern-qwen3-exported", "generator": "gen_random_weights.py", "seed": str(args.seed)},
                 progress=bar.update)
    finally:
        bar.clear()
    return 0


if __name__ == "__main__":
    sys.exit(run("gen_random_weights", main, sys.argv[1:]))
