#!/usr/bin/python3
"""export_qwen3.py CHECKPOINT_DIR -o W.safetensors [--draft DRAFT_DIR --draft-config DRAFT.json [--markov M.safetensors]]

Exports a Hugging Face checkpoint directory of any family decoder_config.py
reads (Qwen3, Qwen3-MoE, Llama 3.x, Mistral, Qwen2.5; config.json plus model.safetensors, or the
shards listed in model.safetensors.index.json) to kern's exported layout
(docs/causal-lm-manifest.md, SPEC §7):
- q_proj/k_proj/v_proj merged by rows into self_attn.qkv_proj (q, k, v);
- gate_proj/up_proj merged by rows into mlp.gate_up_proj (gate, up);
- a sparse layer's experts (Qwen3-MoE) stacked: mlp.experts.gate_up_proj
  [X, 2 I, E] (each expert's gate, then up) and mlp.experts.down_proj
  [X, E, I], from one tensor per expert or from stacked ones (expert_sources);
- q_norm / k_norm copied for a family that has them (Qwen3);
- rope.cos_sin_cache computed from the config (f32, float64 math; llama3
  rope_scaling folded in);
- k_scale = v_scale = 1.0 (the KV cache is bf16);
- lm_head.weight materialised (a copy of embed_tokens when tied and absent).
Every tensor of the checkpoint must be used: a layer beyond
num_hidden_layers, attention biases, or any other tensor the layout does not
read is refused naming it (hf_checkpoint.py; the rotary inv_freq buffers HF
itself ignores are skipped).
Tensors are BF16 in and BF16 out: a byte copy, streamed, so memory stays
small for any model size. Other dtypes are refused (convert to bf16 first).

With --draft, a DSpark draft (docs/speculative.md) is appended to the same
file under `draft.` (dspark_config.draft_tensors): DRAFT_DIR is a DFlash
draft checkpoint (model.safetensors or shards; names as z-lab/dflash writes
them: `layers.N.self_attn.{q,k,v,o}_proj.weight`, `layers.N.self_attn.{q,k}_norm.weight`,
`layers.N.{input,post_attention}_layernorm.weight`, `layers.N.mlp.{gate,up,down}_proj.weight`,
`fc.weight [E, taps * E]`, `hidden_norm.weight`, `norm.weight`; the draft
uses the target's embedding and lm_head), DRAFT.json its draft config
(provider/dspark_config.py), and the Markov head's `markov_w1.weight`,
`markov_w2.weight` [V, markov_dim] come from --markov (a safetensors file)
or else from DRAFT_DIR. q/k/v and gate/up are merged as for the target;
`fc.weight` is cut into its column blocks `draft.fc.J.weight [E, E]` (one
accumulating GEMM per tap).

Exit status: 0 on success, 1 on a bad checkpoint (message names the tensor),
2 on bad usage or a file that cannot be read or written (provider/tool_io.py).
The output is written atomically (no partial file after a failure or Ctrl-C).
"""

import argparse
import json
import os
import struct
import sys

import json_in
import safetensors_io as st
from hf_checkpoint import check_tensors
from progress import Progress
from dspark_config import draft_tensors, load_draft_config
from decoder_config import ConfigError, exported_tensors, load_config, rope_cache_bytes
from tool_io import ContentError, check_output_path, run

FORMAT_METADATA = {"format": "kern-qwen3-exported"}


class Checkpoint:
    """HF tensor name -> the open shard holding it."""

    @classmethod
    def single_file(cls, path):
        """A checkpoint of one safetensors file (the Markov head's)."""
        self = cls.__new__(cls)
        self.shards = {path: st.SafetensorsFile(path)}
        self.where = {t: self.shards[path] for t in self.shards[path].tensors}
        return self

    def __init__(self, directory):
        index = os.path.join(directory, "model.safetensors.index.json")
        if os.path.exists(index):
            doc = json_in.load(index)
            weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
            if not isinstance(weight_map, dict):
                raise ConfigError(f"{index}: no weight_map object")
            bad = next((t for t, shard in weight_map.items() if not isinstance(shard, str)
                        or not shard or os.path.basename(shard) != shard), None)
            if bad is not None:
                raise ConfigError(f"{index}: weight_map.{bad}: expected a file name in the checkpoint directory, "
                                  f"found {json.dumps(weight_map[bad])[:60]}")
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
    """TensorSpecs of the exported file (decoder_config.exported_tensors order)."""
    E, H, KV, D, I = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.intermediate
    sources = {}
    for layer in range(cfg.layers):
        p = f"model.layers.{layer}."
        sources[p + "self_attn.qkv_proj.weight"] = [
            (p + "self_attn.q_proj.weight", [H * D, E]),
            (p + "self_attn.k_proj.weight", [KV * D, E]),
            (p + "self_attn.v_proj.weight", [KV * D, E])]
        if cfg.is_moe(layer):
            sources.update(expert_sources(cfg, ckpt, p))
        else:
            sources[p + "mlp.gate_up_proj.weight"] = [
                (p + "mlp.gate_proj.weight", [I, E]),
                (p + "mlp.up_proj.weight", [I, E])]
        if cfg.qkv_bias:
            sources[p + "self_attn.qkv_proj.bias"] = [
                (p + "self_attn.q_proj.bias", [H * D]),
                (p + "self_attn.k_proj.bias", [KV * D]),
                (p + "self_attn.v_proj.bias", [KV * D])]
    if not ckpt.has("lm_head.weight"):
        if not cfg.tie_word_embeddings:
            raise ConfigError("checkpoint: missing tensor lm_head.weight (config does not tie embeddings)")
        sources["lm_head.weight"] = [("model.embed_tokens.weight", [cfg.vocab, E])]
    out, used = [], set()
    for name, dtype, shape in exported_tensors(cfg):
        if name == "rope.cos_sin_cache":
            out.append(st.TensorSpec(name, dtype, shape, lambda: rope_cache_bytes(cfg)))
        elif dtype == "F32":
            out.append(st.TensorSpec(name, dtype, shape, lambda: [struct.pack("<f", 1.0)]))
        else:
            parts = sources.get(name, [(name, shape)])
            for part, part_shape in parts:
                ckpt.bf16(part, part_shape)  # fail before writing anything
                used.add(part)
            out.append(st.TensorSpec(name, dtype, shape, merged(ckpt, parts)))
    # Every other tensor is refused, naming it (the family readers refuse attention_bias: true).
    check_tensors(ckpt.where, cfg.layers, attention_bias=cfg.qkv_bias, used=used, family=cfg.family)
    return out


def expert_sources(cfg, ckpt, p):
    """The stacked experts of a sparse layer (decoder_config.moe_mlp_tensors)
    from either layout a Qwen3-MoE checkpoint has: one tensor per expert
    (`mlp.experts.N.{gate,up,down}_proj.weight`, as the released checkpoints
    are), or the experts already stacked (`mlp.experts.gate_up_proj` [X, 2 I, E],
    `mlp.experts.down_proj` [X, E, I], transformers 5's Qwen3MoeExperts
    parameters). The router `mlp.gate.weight` is copied as is."""
    E, X, I = cfg.hidden, cfg.experts, cfg.moe_intermediate
    if ckpt.has(p + "mlp.experts.gate_up_proj") or ckpt.has(p + "mlp.experts.down_proj"):
        return {p + "mlp.experts.gate_up_proj.weight": [(p + "mlp.experts.gate_up_proj", [X, 2 * I, E])],
                p + "mlp.experts.down_proj.weight": [(p + "mlp.experts.down_proj", [X, E, I])]}
    q = p + "mlp.experts."
    return {p + "mlp.experts.gate_up_proj.weight": [part for x in range(X) for part in
                                                    ((f"{q}{x}.gate_proj.weight", [I, E]),
                                                     (f"{q}{x}.up_proj.weight", [I, E]))],
            p + "mlp.experts.down_proj.weight": [(f"{q}{x}.down_proj.weight", [E, I]) for x in range(X)]}


def column_block(ckpt, name, rows, cols, begin, width):
    """Chunks of columns [begin, begin + width) of a BF16 [rows, cols] tensor,
    row by row (a column block of DFlash's fc)."""
    def gen():
        shard = ckpt.bf16(name, [rows, cols])
        for r in range(rows):
            yield shard.read(name, 2 * (r * cols + begin), 2 * (r * cols + begin + width))
    return gen


def draft_specs(cfg, draft, dckpt, markov):
    """TensorSpecs of the draft's tensors (dspark_config.draft_tensors order)
    from a DFlash checkpoint `dckpt` and the Markov tensors' checkpoint `markov`."""
    E, H, KV, D, I = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.intermediate
    taps = len(draft.taps)
    sources = {}
    for layer in range(draft.layers):
        p, q = f"draft.layers.{layer}.", f"layers.{layer}."
        sources[p + "self_attn.qkv_proj.weight"] = [(q + "self_attn.q_proj.weight", [H * D, E]),
                                                   (q + "self_attn.k_proj.weight", [KV * D, E]),
                                                   (q + "self_attn.v_proj.weight", [KV * D, E])]
        sources[p + "mlp.gate_up_proj.weight"] = [(q + "mlp.gate_proj.weight", [I, E]), (q + "mlp.up_proj.weight", [I, E])]
    out = []
    for name, dtype, shape in draft_tensors(cfg, draft):
        if name.startswith("draft.fc."):
            j = int(name.split(".")[2])
            dckpt.bf16("fc.weight", [E, taps * E])
            out.append(st.TensorSpec(name, dtype, shape, column_block(dckpt, "fc.weight", E, taps * E, j * E, E)))
            continue
        src = markov if name.startswith("draft.markov_") else dckpt
        parts = sources.get(name, [(name[len("draft."):], shape)])
        for part, part_shape in parts:
            src.bf16(part, part_shape)  # fail before writing anything
        out.append(st.TensorSpec(name, dtype, shape, merged(src, parts)))
    return out


def export(directory, output, draft_dir=None, draft_config=None, markov_file=None):
    """Writes `output` from the checkpoint in `directory` (and the draft's)."""
    cfg = load_config(os.path.join(directory, "config.json"))
    draft = load_draft_config(draft_config, cfg) if draft_dir else None
    opened = [Checkpoint(directory)]
    try:
        out = specs(cfg, opened[0])
        if draft:
            opened.append(Checkpoint(draft_dir))
            markov = opened[-1]
            if markov_file:
                opened.append(Checkpoint.single_file(markov_file))
                markov = opened[-1]
            out += draft_specs(cfg, draft, opened[1], markov)
        bar = Progress("export_qwen3", output, sum(s.size_bytes for s in out))
        try:
            st.write(output, out, FORMAT_METADATA, progress=bar.update)
        finally:
            bar.clear()
    finally:
        for ckpt in opened:
            ckpt.close()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("checkpoint", help="HF checkpoint directory (config.json + safetensors)")
    ap.add_argument("-o", "--output", required=True, help="exported safetensors file to write")
    ap.add_argument("--draft", help="DFlash draft checkpoint directory (its tensors go under draft.)")
    ap.add_argument("--draft-config", help="the draft's DSpark config (provider/dspark_config.py); needs --draft")
    ap.add_argument("--markov", help="safetensors file with markov_w1.weight and markov_w2.weight "
                                     "(default: the draft checkpoint)")
    args = ap.parse_args(argv)
    if bool(args.draft) != bool(args.draft_config):
        ap.error("--draft and --draft-config go together")
    if args.markov and not args.draft:
        ap.error("--markov needs --draft")
    check_output_path(args.output,  # before reading a checkpoint of gigabytes, or writing into it
                      inputs=[("draft config", args.draft_config), ("markov file", args.markov)],
                      input_dirs=[("checkpoint", args.checkpoint), ("draft checkpoint", args.draft)])
    try:
        export(args.checkpoint, args.output, args.draft, args.draft_config, args.markov)
    except (ValueError, KeyError) as e:  # a malformed index or safetensors header
        raise ContentError(f"{args.checkpoint}: malformed checkpoint: {e!r}") from None
    return 0


if __name__ == "__main__":
    sys.exit(run("export_qwen3", main, sys.argv[1:]))
