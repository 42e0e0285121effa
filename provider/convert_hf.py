#!/usr/bin/python3
"""convert_hf.py CHECKPOINT_DIR -o MODEL_DIR [--tokens-max 512] [--kernels-dir DIR | --unpinned] [--kern-verify PATH] [--tp N]

Converts a Hugging Face checkpoint directory of a supported family
(decoder_config.py: Qwen3, Qwen3-MoE, Llama 3.x, Mistral, Qwen2.5; config.json, then
model.safetensors or the shards of model.safetensors.index.json, and
tokenizer.json) into a kern model folder that `kern-run MODEL_DIR` runs
as is (issue 25: a checkpoint in two commands):

  MODEL_DIR/manifest.json        the manifest (gen_manifest.py's default: fused, decode_batch up to 8)
  MODEL_DIR/model.kplan          the plan, compiled by kern-verify
  MODEL_DIR/weights.safetensors  the weights in kern's exported layout (export_qwen3.py)
  MODEL_DIR/tokenizer.json       the checkpoint's tokenizer, when it has one
  MODEL_DIR/*.fatbin             the CUDA kernels the manifest is pinned to, when built

With `--tp N` (1, 2, 4 or 8) the folder is tensor-parallel
(docs/parallel.md): manifest.json and model.kplan are `gen_manifest.py --tp
N`'s (meta.world N, the same for every rank) and the weights are one shard
per rank, MODEL_DIR/weights.rank<r>.safetensors (tensor_parallel.py);
`kern-run MODEL_DIR --tp N` runs it.

Weights may be BF16, F16 or F32 (F16 and F32 are converted to BF16 with
round-to-nearest-even, ties to even, numpy; a line on stderr says so).
What it would otherwise get silently wrong is refused, in one line naming
the file and the field or tensor (examples/README.md, "What convert_hf
refuses"): an architecture kern does not know, config fields kern does not
implement (rope scaling other than llama3, sliding window attention,
attention biases, logit soft-capping, another activation) and any field of
the wrong JSON type, booleans included (qwen3_config.py, llama_config.py,
decoder_config.py, hf_config.py); a
JSON file that is malformed or nested deeper than 128 levels (json_in.py);
a checkpoint tensor the export would not use: a layer beyond
num_hidden_layers, attention biases, anything else (hf_checkpoint.py).
kern-verify is the repository's build/kern-verify/kern-verify unless
--kern-verify names another; pinning works as in gen_manifest.py.

The model folder is built in a temporary folder beside MODEL_DIR and swapped
in whole at the end (tool_io.replace_directory): a failed or interrupted
run changes nothing, and no file of an earlier conversion (a stale
tokenizer.json) survives a successful one. An existing MODEL_DIR holding
anything convert_hf does not write is refused before any work (exit 2).
Exit status: 0 on success, 1 on a checkpoint or config kern cannot run (or a
manifest kern-verify rejects), 2 on bad usage or a file that cannot be read
or written (provider/tool_io.py).
"""

import argparse
import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile

import export_qwen3
import gen_manifest as gen
import safetensors_io as st
from json_out import dumps
from progress import Progress
import hf_config
import tensor_parallel
from decoder_config import ConfigError, eos_token_ids, load_config
from tool_io import UsageError, replace_directory, run, write_atomic

DEFAULT_KERN_VERIFY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build",
                                   "kern-verify", "kern-verify")
CONVERTIBLE = ("F16", "F32")  # converted to BF16; BF16 is copied
OWNED = ("manifest.json", "model.kplan", "weights.safetensors", "tokenizer.json", "generation_config.json")  # and the *.fatbin, *.cubin


def bf16_from(raw, dtype):
    """BF16 bytes of little-endian F16 or F32 `raw`, rounded to nearest even
    (NaN stays a quiet NaN of the same sign); numpy, vectorised."""
    import numpy as np
    values = np.frombuffer(raw, dtype="<f2" if dtype == "F16" else "<f4").astype("<f4")
    bits = values.view("<u4")
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    nan = np.isnan(values)
    rounded[nan] = (bits[nan] >> np.uint32(16)) | np.uint32(0x40)
    return rounded.astype("<u2").tobytes()


class ConvertingCheckpoint(export_qwen3.Checkpoint):
    """A checkpoint whose F16/F32 tensors read as BF16 (bf16_from)."""

    def __init__(self, directory):
        super().__init__(directory)
        self.converted = {}  # dtype -> tensors converted

    def bf16(self, name, shape):
        if name not in self.where:
            raise ConfigError(f"checkpoint: missing tensor {name}")
        dtype, found, _, _ = self.where[name].tensors[name]
        if dtype not in ("BF16",) + CONVERTIBLE or found != list(shape):
            raise ConfigError(f"checkpoint: tensor {name} is {dtype} {found}, expected BF16, F16 or F32 "
                              f"{list(shape)}")
        return self.where[name]

    def chunks(self, name, shape):
        shard = self.bf16(name, shape)
        dtype = shard.tensors[name][0]
        if dtype == "BF16":
            yield from shard.chunks(name)
            return
        for chunk in shard.chunks(name, chunk_bytes=1 << 24):  # a multiple of 4: whole elements
            yield bf16_from(chunk, dtype)

    def dtypes(self):
        """{dtype: count} of the checkpoint's tensors."""
        out = {}
        for name, shard in self.where.items():
            dtype = shard.tensors[name][0]
            out[dtype] = out.get(dtype, 0) + 1
        return out


def find_kern_verify(given):
    path = given or DEFAULT_KERN_VERIFY
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which("kern-verify") if not given else None
        if found is None:
            raise UsageError(f"no kern-verify at {path}: build kern (meson setup build && ninja -C build) or pass "
                             "--kern-verify PATH")
        path = found
    return path


def owned(name):
    """Whether convert_hf writes files of this name into a model folder."""
    return (name in OWNED or name.endswith((".fatbin", ".cubin"))
            or re.fullmatch(r"weights\.rank\d+\.safetensors", name) is not None)


def output_folder(out_dir):
    """Where the model folder goes: `out_dir` with its symlinks resolved (a
    link stays a link). Refused before any work: a missing parent (or one
    that is not writable), an output that is not a folder, and an existing
    folder holding anything convert_hf does not write (a checkpoint, the
    user's own files: replacing the folder would delete them)."""
    target = os.path.realpath(out_dir)
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise OSError(errno.ENOENT, "the output's parent directory does not exist", parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(errno.EACCES, "cannot write there (the model folder is built beside it)", parent)
    if not os.path.lexists(target):
        return target
    here = os.path.realpath(os.getcwd())
    if here == target or here.startswith(target.rstrip("/") + "/"):
        raise UsageError(f"{out_dir}: is (or holds) the current directory, which the swap would leave deleted "
                         "under the shell; run convert_hf from outside it")
    if not os.path.isdir(target):
        raise OSError(errno.ENOTDIR, "not a directory", out_dir)
    for entry in sorted(os.scandir(target), key=lambda e: e.name):
        if not (owned(entry.name) and entry.is_file(follow_symlinks=False)):
            raise UsageError(f"{out_dir}: holds {entry.name}, which convert_hf does not write; refusing to replace "
                             f"the folder (give a new or empty folder, or remove {entry.name})")
    return target


def convert(args):
    """Writes the model folder; returns the lines to print."""
    checkpoint, out_dir = args.checkpoint, args.output
    kern_verify = find_kern_verify(args.kern_verify)
    target = output_folder(out_dir)
    cfg = load_config(os.path.join(checkpoint, "config.json"))
    gen.check_i32_ranges(cfg, args.tokens_max, os.path.join(checkpoint, "config.json"))
    if args.tp is not None:  # every rank's manifest (docs/parallel.md)
        tensor_parallel.check(cfg, args.tp, os.path.join(checkpoint, "config.json"))
        doc = tensor_parallel.manifest(gen, cfg, args.tp, args.tokens_max, f"{gen.default_label(cfg)}-tp{args.tp}",
                                       max_batch=gen.MAX_BATCH_DEFAULT)
    else:
        # The generator's default manifest: fused, with decode_batch (kern-run --requests, serve).
        doc = gen.manifest(cfg, args.tokens_max, gen.default_label(cfg), fused=True, max_batch=gen.MAX_BATCH_DEFAULT)
    gen.check_i32_literals(doc, os.path.join(checkpoint, "config.json"))
    kernels_dir = gen.resolve_kernels_dir(args, "convert_hf")
    if kernels_dir:
        gen.pin_kernels(doc, kernels_dir)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(target) + ".tmp.", dir=os.path.dirname(target))
    try:
        text = dumps(doc)
        write_atomic(os.path.join(tmp, "manifest.json"), lambda f: f.write(text), binary=False)
        ckpt = ConvertingCheckpoint(checkpoint)
        try:
            specs = export_qwen3.specs(cfg, ckpt)  # refuses unused tensors before any weight is written
            converted = {d: n for d, n in ckpt.dtypes().items() if d in CONVERTIBLE}
            for dtype, n in sorted(converted.items()):
                print(f"convert_hf: converting {n} {dtype} tensors to BF16 (round to nearest even)", file=sys.stderr)
            files = [("weights.safetensors", specs)] if args.tp is None else [
                (tensor_parallel.rank_weights_file(r), tensor_parallel.shard_specs(specs, cfg, args.tp, r))
                for r in range(args.tp)]
            for name, file_specs in files:
                bar = Progress("convert_hf", os.path.join(out_dir, name), sum(s.size_bytes for s in file_specs))
                try:
                    st.write(os.path.join(tmp, name), file_specs, export_qwen3.FORMAT_METADATA, progress=bar.update)
                finally:
                    bar.clear()
        finally:
            ckpt.close()
        proc = subprocess.run([kern_verify, os.path.join(tmp, "manifest.json"), "-o", os.path.join(tmp, "model.kplan")],
                              capture_output=True, text=True)
        codes = set(re.findall(r"^(?:warning|error)\[(\w+)\]", proc.stderr, re.M))
        if proc.returncode != 0 or codes - {"W0001"} or (codes and kernels_dir):
            sys.stderr.write(proc.stderr)  # W0001 alone is the unpinned manifest resolve_kernels_dir noted
        if proc.returncode != 0:
            raise ConfigError(f"{kern_verify} rejected the generated manifest (exit {proc.returncode})")
        end_ids = generation_end_ids(checkpoint, cfg)
        if end_ids:
            text = dumps({"eos_token_id": list(end_ids)})
            write_atomic(os.path.join(tmp, "generation_config.json"), lambda f: f.write(text), binary=False)
        tokenizer = os.path.join(checkpoint, "tokenizer.json")
        notes = []
        if os.path.isfile(tokenizer):
            shutil.copyfile(tokenizer, os.path.join(tmp, "tokenizer.json"))
        else:
            notes.append(f"convert_hf: note: {checkpoint} has no tokenizer.json: give kern-run --prompt-ids, or "
                         "--tokenizer FILE")
        if kernels_dir:
            for name in sorted({s["cubin"] for k in doc["kernels"].values() for s in k["impl"]["steps"] if "cubin" in s}):
                shutil.copyfile(os.path.join(kernels_dir, name), os.path.join(tmp, name))
        replace_directory(tmp, target)  # whole: no file of an earlier conversion survives
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prompt = "--prompt TEXT" if os.path.isfile(tokenizer) else "--prompt-ids 1,2,3"
    tp = f" --tp {args.tp}" if args.tp is not None else ""
    return notes + [f"convert_hf: wrote {out_dir}: run it with kern-run {out_dir}{tp} {prompt}"]


def generation_end_ids(checkpoint, cfg):
    """The ids that end generation, for the model folder's
    generation_config.json (kern-run stops at them, tokenizer or not):
    the checkpoint's generation_config.json `eos_token_id` when that file
    gives one (transformers' generate reads it first), else config.json's.
    ConfigError naming the file and field: a malformed file or value, or an
    id outside [0, vocab_size)."""
    path = os.path.join(checkpoint, "generation_config.json")
    ids, source = cfg.eos_token_ids, os.path.join(checkpoint, "config.json")
    if os.path.isfile(path):
        given = hf_config.load(path, lambda g: eos_token_ids(g) if g.get("eos_token_id") is not None else None)
        if given is not None:
            ids, source = given, path
    for i in ids:
        if i >= cfg.vocab:
            raise ConfigError(f"{source}: eos_token_id: {i} is outside the vocabulary [0, {cfg.vocab})")
    return ids


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", help="HF checkpoint directory (config.json, safetensors, tokenizer.json) of a Qwen3, "
                                           "Llama 3.x or Mistral model")
    ap.add_argument("-o", "--output", required=True, help="model folder to write (created if missing)")
    ap.add_argument("--tokens-max", type=int, default=512, help="upper bound of the `tokens` symbol (default 512)")
    gen.add_pin_options(ap)
    ap.add_argument("--tp", type=int, help="tensor-parallel ranks (1, 2, 4 or 8): a folder of one manifest and one "
                                           "weight shard per rank (docs/parallel.md)")
    ap.add_argument("--kern-verify", help=f"the kern-verify to compile the plan with (default {DEFAULT_KERN_VERIFY})")
    args = ap.parse_args(argv)
    if not 1 <= args.tokens_max <= gen.I32_MAX:
        ap.error(f"--tokens-max must be from 1 to {gen.I32_MAX}")
    if args.tp is not None and args.tp not in tensor_parallel.TP_CHOICES:
        ap.error(f"--tp must be one of {', '.join(map(str, tensor_parallel.TP_CHOICES))}")
    try:
        lines = convert(args)
    except (ValueError, KeyError) as e:  # a malformed index or safetensors header
        raise ConfigError(f"{args.checkpoint}: malformed checkpoint: {e!r}") from None
    for line in lines:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run("convert_hf", main, sys.argv[1:]))
