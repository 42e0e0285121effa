#!/usr/bin/python3
"""export_qwen3.py CHECKPOINT_DIR -o W.safetensors

Exports a Hugging Face Qwen3 checkpoint directory (config.json plus
model.safetensors, or the shards listed in model.safetensors.index.json) to
kern's exported layout (docs/qwen3-manifest.md, SPEC §7):
- q_proj/k_proj/v_proj merged by rows into self_attn.qkv_proj (q, k, v);
- gate_proj/up_proj merged by rows into mlp.gate_up_proj (gate, up);
- rope.cos_sin_cache computed from the config (f32, float64 math);
- k_scale = v_scale = 1.0 (the KV cache is bf16);
- lm_head.weight materialised (a copy of embed_tokens when tied and absent).
Tensors are BF16 in and BF16 out: a byte copy, streamed, so memory stays
small for any model size. Other dtypes are refused (convert to bf16 first).

Exit status: 0 on success, 1 on a bad checkpoint (message names the tensor),
2 on bad usage or a file that cannot be read or written (examples/tool_io.py).
The output is written atomically (no partial file after a failure or Ctrl-C).
"""

import argparse
import json
import os
import struct
import sys

import safetensors_io as st
from qwen3_config import ConfigError, exported_tensors, load_config, rope_cache_bytes
from tool_io import ContentError, check_output_path, run

FORMAT_METADATA = {"format": "kern-qwen3-exported"}


class Checkpoint:
    """HF tensor name -> the open shard holding it."""

    def __init__(self, directory):
        index = os.path.join(directory, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index, "rb") as f:
                raw = f.read()
            try:
                doc = json.loads(raw.decode("utf-8"))
            except ValueError as e:  # UnicodeDecodeError, JSONDecodeError
                raise ConfigError(f"{index}: not UTF-8 JSON: {e}") from None
            weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
            if not isinstance(weight_map, dict):
                raise ConfigError(f"{index}: no weight_map object")
            shard_names = sorted(set(weight_map.values()))
        else:
            weight_map, shard_names = None, ["model.safetensors"]
        self.shards = {n: st.SafetensorsFile(os.path.join(directory, n)) for n in shard_names}
        self.where = {}
        for shard_name, shard in self.shards.items():
            for tensor in shard.tensors:
                if weight_map is not None and weight_map.get(tensor) != shard_name:
                    continue  # the index is authoritative about where a tensor lives
                self.where[tensor] = shard
        if weight_map is not None:
            missing = sorted(set(weight_map) - set(self.where))
            if missing:
                raise ConfigError(f"{index}: {missing[0]} is listed in weight_map but not in its shard")

    def has(self, name):
        return name in self.where

    def bf16(self, name, shape):
        """The shard and name of a BF16 tensor of exactly `shape`."""
        if name not in self.where:
            raise ConfigError(f"checkpoint: missing tensor {name}")
        dtype, found, _, _ = self.where[name].tensors[name]
        if dtype != "BF16" or found != list(shape):
            raise ConfigError(f"checkpoint: tensor {name} is {dtype} {found}, expected BF16 {list(shape)}")
        return self.where[name]

    def chunks(self, name, shape):
        yield from self.bf16(name, shape).chunks(name)

    def close(self):
        for shard in self.shards.values():
            shard.close()


def merged(ckpt, parts):
    """Chunks of several [rows_i, cols] tensors stacked by rows."""
    def gen():
        for name, shape in parts:
            yield from ckpt.chunks(name, shape)
    return gen


def specs(cfg, ckpt):
    """TensorSpecs of the exported file (qwen3_config.exported_tensors order)."""
    E, H, KV, D, I = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.intermediate
    sources = {}
    for layer in range(cfg.layers):
        p = f"model.layers.{layer}."
        sources[p + "self_attn.qkv_proj.weight"] = [
            (p + "self_attn.q_proj.weight", [H * D, E]),
            (p + "self_attn.k_proj.weight", [KV * D, E]),
            (p + "self_attn.v_proj.weight", [KV * D, E])]
        sources[p + "mlp.gate_up_proj.weight"] = [
            (p + "mlp.gate_proj.weight", [I, E]),
            (p + "mlp.up_proj.weight", [I, E])]
    if not ckpt.has("lm_head.weight"):
        if not cfg.tie_word_embeddings:
            raise ConfigError("checkpoint: missing tensor lm_head.weight (config does not tie embeddings)")
        sources["lm_head.weight"] = [("model.embed_tokens.weight", [cfg.vocab, E])]
    out = []
    for name, dtype, shape in exported_tensors(cfg):
        if name == "rope.cos_sin_cache":
            out.append(st.TensorSpec(name, dtype, shape, lambda: rope_cache_bytes(cfg)))
        elif dtype == "F32":
            out.append(st.TensorSpec(name, dtype, shape, lambda: [struct.pack("<f", 1.0)]))
        else:
            parts = sources.get(name, [(name, shape)])
            for part, part_shape in parts:
                ckpt.bf16(part, part_shape)  # fail before writing anything
            out.append(st.TensorSpec(name, dtype, shape, merged(ckpt, parts)))
    return out


def export(directory, output):
    """Writes `output` from the checkpoint in `directory`."""
    cfg = load_config(os.path.join(directory, "config.json"))
    ckpt = Checkpoint(directory)
    try:
        st.write(output, specs(cfg, ckpt), FORMAT_METADATA)
    finally:
        ckpt.close()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("checkpoint", help="HF checkpoint directory (config.json + safetensors)")
    ap.add_argument("-o", "--output", required=True, help="exported safetensors file to write")
    args = ap.parse_args(argv)
    check_output_path(args.output)  # before reading a checkpoint of gigabytes
    try:
        export(args.checkpoint, args.output)
    except (ValueError, KeyError) as e:  # a malformed index or safetensors header
        raise ContentError(f"{args.checkpoint}: malformed checkpoint: {e!r}") from None
    return 0


if __name__ == "__main__":
    sys.exit(run("export_qwen3", main, sys.argv[1:]))
