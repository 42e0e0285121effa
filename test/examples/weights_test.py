#!/usr/bin/python3
"""weights_test.py SOURCE_ROOT

Tests of examples/gen_random_weights.py and examples/export_qwen3.py: the
checked-in tiny weights are reproduced byte for byte, the file is a
well-formed hole-free safetensors whose tensors are exactly the manifest's
weight buffers, the rope cache and scales hold the documented values, and
exporting a HF checkpoint (single file or sharded with an index) made from
those weights reproduces them, and an export into its own checkpoint is refused.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = None
TINY_SEED = "3"  # the seed examples/tiny-qwen3.safetensors was written with (examples/README.md)


def example(name):
    return os.path.join(ROOT, "examples", name)


def tool(name, *args):
    return subprocess.run(["/usr/bin/python3", example(name), *args], capture_output=True, text=True)


def bf16_values(raw):
    return [struct.unpack("<f", struct.pack("<I", b << 16))[0] for (b,) in struct.iter_unpack("<H", raw)]


def hf_tensors(st, f, cfg, with_lm_head):
    """The exported tiny weights split back into HF names (q/k/v and gate/up
    projections, Qwen2's q/k/v biases): name -> (dtype, shape, bytes)."""
    H, KV, D, I, E = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.intermediate, cfg.hidden
    out = {}
    for name, (dtype, shape, _, _) in f.tensors.items():
        raw = f.read(name)
        if name in ("rope.cos_sin_cache", "k_scale", "v_scale"):
            continue
        if name == "lm_head.weight" and not with_lm_head:
            continue
        row = shape[-1] * 2
        if name.endswith("mlp.experts.gate_up_proj.weight"):  # Qwen3-MoE: one gate and up tensor per expert
            p = name[: -len("gate_up_proj.weight")]
            X, MI = shape[0], shape[1] // 2
            for x in range(X):
                base = x * 2 * MI * row
                out[f"{p}{x}.gate_proj.weight"] = ("BF16", [MI, E], raw[base:base + MI * row])
                out[f"{p}{x}.up_proj.weight"] = ("BF16", [MI, E], raw[base + MI * row:base + 2 * MI * row])
        elif name.endswith("mlp.experts.down_proj.weight"):
            p = name[: -len("down_proj.weight")]
            X, MI = shape[0], shape[2]
            for x in range(X):
                out[f"{p}{x}.down_proj.weight"] = ("BF16", [E, MI], raw[x * E * row:(x + 1) * E * row])
        elif name.endswith("qkv_proj.weight"):
            p = name[: -len("qkv_proj.weight")]
            out[p + "q_proj.weight"] = ("BF16", [H * D, E], raw[: H * D * row])
            out[p + "k_proj.weight"] = ("BF16", [KV * D, E], raw[H * D * row:(H + KV) * D * row])
            out[p + "v_proj.weight"] = ("BF16", [KV * D, E], raw[(H + KV) * D * row:])
        elif name.endswith("qkv_proj.bias"):  # Qwen2: q, k, v biases
            p = name[: -len("qkv_proj.bias")]
            out[p + "q_proj.bias"] = ("BF16", [H * D], raw[: H * D * 2])
            out[p + "k_proj.bias"] = ("BF16", [KV * D], raw[H * D * 2:(H + KV) * D * 2])
            out[p + "v_proj.bias"] = ("BF16", [KV * D], raw[(H + KV) * D * 2:])
        elif name.endswith("gate_up_proj.weight"):
            p = name[: -len("gate_up_proj.weight")]
            out[p + "gate_proj.weight"] = ("BF16", [I, E], raw[: I * row])
            out[p + "up_proj.weight"] = ("BF16", [I, E], raw[I * row:])
        else:
            out[name] = (dtype, shape, raw)
    return out


def write_file(st, path, tensors):
    st.write(path, [st.TensorSpec(n, d, s, (lambda r=r: [r])) for n, (d, s, r) in tensors.items()])


class RandomWeights(unittest.TestCase):
    def test_regenerating_the_tiny_weights_is_byte_identical(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w.safetensors")
            proc = tool("gen_random_weights.py", example("tiny-qwen3.config.json"), "-o", out, "--seed", TINY_SEED)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, "rb") as a, open(example("tiny-qwen3.safetensors"), "rb") as b:
                self.assertEqual(a.read(), b.read())

    def test_regenerating_the_tiny_moe_weights_is_byte_identical_with_each_expert_scaled_by_its_row(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w.safetensors")
            proc = tool("gen_random_weights.py", example("tiny-qwen3-moe.config.json"), "-o", out, "--seed", "1")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, "rb") as a, open(example("tiny-qwen3-moe.safetensors"), "rb") as b:
                self.assertEqual(a.read(), b.read())
            with st.SafetensorsFile(out) as f:
                # Stacked experts [X, rows, fan_in]: uniform in +-4/sqrt(fan_in), fan_in the last dimension.
                for name, fan_in in (("model.layers.0.mlp.experts.gate_up_proj.weight", 64),
                                     ("model.layers.0.mlp.experts.down_proj.weight", 32)):
                    raw = f.read(name)
                    values = [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
                    bound = 4.0 / math.sqrt(fan_in)
                    self.assertLessEqual(max(abs(v) for v in values), bound * 1.004, name)
                    self.assertGreater(max(abs(v) for v in values), bound * 0.95, name)

    def test_another_seed_gives_other_values(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w.safetensors")
            self.assertEqual(tool("gen_random_weights.py", example("tiny-qwen3.config.json"), "-o", out,
                                  "--seed", "4").returncode, 0)
            with st.SafetensorsFile(out) as a, st.SafetensorsFile(example("tiny-qwen3.safetensors")) as b:
                self.assertEqual(list(a.tensors), list(b.tensors))
                self.assertNotEqual(a.read("model.embed_tokens.weight"), b.read("model.embed_tokens.weight"))
                self.assertEqual(a.read("rope.cos_sin_cache"), b.read("rope.cos_sin_cache"))

    def test_the_file_is_hole_free_aligned_and_holds_exactly_the_manifest_weights(self):
        with open(example("tiny-qwen3.safetensors"), "rb") as fh:
            data = fh.read()
        (n,) = struct.unpack("<Q", data[:8])
        self.assertEqual((8 + n) % 8, 0, "data must start 8-byte aligned")
        header = json.loads(data[8:8 + n])
        header.pop("__metadata__")
        end = 0
        for name, t in header.items():  # JSON order == data order
            begin, stop = t["data_offsets"]
            self.assertEqual(begin, end, f"{name}: hole or overlap")
            self.assertEqual(begin % (4 if t["dtype"] == "F32" else 2), 0, name)
            end = stop
        self.assertEqual(8 + n + end, len(data), "trailing bytes after the last tensor")
        with open(example("tiny-qwen3.json"), "r", encoding="utf-8") as f:
            manifest = json.load(f)
        weights = {k: v for k, v in manifest["buffers"].items() if v["class"] == "weight"}
        self.assertEqual(set(header), set(weights))
        for name, b in weights.items():
            self.assertEqual(header[name]["dtype"], b["dtype"].upper(), name)
            self.assertEqual(header[name]["shape"], b["shape"], name)

    def test_the_exported_layout_of_every_example_config_is_exactly_its_manifest_weights(self):
        from qwen3_config import exported_tensors
        for model in ("tiny-qwen3", "qwen3-0.6b", "qwen3-4b"):
            with open(example(model + ".json"), "r", encoding="utf-8") as f:
                manifest = json.load(f)
            weights = {k: [v["dtype"].upper(), v["shape"]] for k, v in manifest["buffers"].items()
                       if v["class"] == "weight"}
            layout = {name: [dtype, shape] for name, dtype, shape in exported_tensors(load_config(example(model + ".config.json")))}
            self.assertEqual(layout, weights, model)

    def test_rope_cache_rows_are_cos_then_sin_of_position_times_inverse_frequency(self):
        D, theta = 16, 1e6
        with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
            for p in (0, 1, 17, 1023):
                row = struct.unpack(f"<{D}f", f.read("rope.cos_sin_cache", p * D * 4, (p + 1) * D * 4))
                for i in range(D // 2):
                    angle = p * theta ** (-2 * i / D)
                    self.assertEqual(row[i], struct.unpack("<f", struct.pack("<f", math.cos(angle)))[0])
                    self.assertEqual(row[D // 2 + i], struct.unpack("<f", struct.pack("<f", math.sin(angle)))[0])
            self.assertEqual(struct.unpack("<f", f.read("k_scale")), (1.0,))
            self.assertEqual(struct.unpack("<f", f.read("v_scale")), (1.0,))

    def test_tied_lm_head_is_a_copy_of_the_embedding_and_an_untied_one_is_not(self):
        with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
            self.assertEqual(f.read("lm_head.weight"), f.read("model.embed_tokens.weight"))
        with tempfile.TemporaryDirectory() as tmp:
            with open(example("tiny-qwen3.config.json"), "r", encoding="utf-8") as fh:
                cfg = json.load(fh)
            cfg["tie_word_embeddings"] = False
            path = os.path.join(tmp, "config.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(cfg, fh)
            out = os.path.join(tmp, "w.safetensors")
            self.assertEqual(tool("gen_random_weights.py", path, "-o", out).returncode, 0)
            with st.SafetensorsFile(out) as f:
                self.assertNotEqual(f.read("lm_head.weight"), f.read("model.embed_tokens.weight"))

    def test_values_follow_the_documented_scales(self):
        with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
            qkv = bf16_values(f.read("model.layers.0.self_attn.qkv_proj.weight"))
            down = bf16_values(f.read("model.layers.1.mlp.down_proj.weight"))
            norm = bf16_values(f.read("model.layers.0.input_layernorm.weight"))
            emb = bf16_values(f.read("model.embed_tokens.weight"))
        bound_qkv, bound_down = 4.0 / math.sqrt(64), 4.0 / math.sqrt(128)
        self.assertLessEqual(max(map(abs, qkv)), bound_qkv * 1.004)
        self.assertGreater(max(map(abs, qkv)), bound_qkv * 0.9)
        self.assertLessEqual(max(map(abs, down)), bound_down * 1.004)
        self.assertGreater(max(map(abs, down)), bound_down * 0.9)
        self.assertTrue(all(0.74 <= v <= 1.26 for v in norm))
        self.assertGreater(max(norm) - min(norm), 0.3)
        self.assertTrue(all(abs(v) <= 1.004 for v in emb))


class Exporter(unittest.TestCase):
    def export_and_compare(self, checkpoint_files, index, with_lm_head):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            os.mkdir(ckpt)
            with open(example("tiny-qwen3.config.json"), "rb") as a, open(os.path.join(ckpt, "config.json"), "wb") as b:
                b.write(a.read())
            with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
                tensors = hf_tensors(st, f, CFG, with_lm_head)
            names = sorted(tensors)  # a different order from the exported one, as in real checkpoints
            shards = [names[i::checkpoint_files] for i in range(checkpoint_files)]
            weight_map = {}
            for i, part in enumerate(shards):
                shard = "model.safetensors" if not index else f"model-{i + 1:05d}-of-{checkpoint_files:05d}.safetensors"
                write_file(st, os.path.join(ckpt, shard), {n: tensors[n] for n in part})
                weight_map.update({n: shard for n in part})
            if index:
                with open(os.path.join(ckpt, "model.safetensors.index.json"), "w", encoding="utf-8") as fh:
                    json.dump({"metadata": {}, "weight_map": weight_map}, fh)
            out = os.path.join(tmp, "exported.safetensors")
            proc = tool("export_qwen3.py", ckpt, "-o", out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with st.SafetensorsFile(out) as a, st.SafetensorsFile(example("tiny-qwen3.safetensors")) as b:
                self.assertEqual(list(a.tensors), list(b.tensors))  # same names in the same order
                for name in b.tensors:
                    self.assertEqual(a.tensors[name][:2], b.tensors[name][:2], name)
                    self.assertEqual(a.read(name), b.read(name), name)
                self.assertEqual(a.metadata, {"format": "kern-qwen3-exported"})
            return ckpt

    def test_a_sharded_checkpoint_with_an_index_exports_to_the_same_tensors(self):
        self.export_and_compare(2, index=True, with_lm_head=False)

    def test_a_single_file_checkpoint_with_an_explicit_lm_head_exports_to_the_same_tensors(self):
        self.export_and_compare(1, index=False, with_lm_head=True)

    def test_a_missing_or_non_bf16_tensor_is_refused_by_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            os.mkdir(ckpt)
            with open(example("tiny-qwen3.config.json"), "rb") as a, open(os.path.join(ckpt, "config.json"), "wb") as b:
                b.write(a.read())
            with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
                tensors = hf_tensors(st, f, CFG, False)
            missing = dict(tensors)
            del missing["model.layers.1.mlp.up_proj.weight"]
            write_file(st, os.path.join(ckpt, "model.safetensors"), missing)
            proc = tool("export_qwen3.py", ckpt, "-o", os.path.join(tmp, "out.safetensors"))
            self.assertEqual(proc.returncode, 1)
            self.assertIn("model.layers.1.mlp.up_proj.weight", proc.stderr)
            wrong = dict(tensors)
            d, s, r = wrong["model.norm.weight"]
            wrong["model.norm.weight"] = ("F16", s, r)
            write_file(st, os.path.join(ckpt, "model.safetensors"), wrong)
            proc = tool("export_qwen3.py", ckpt, "-o", os.path.join(tmp, "out.safetensors"))
            self.assertEqual(proc.returncode, 1)
            self.assertIn("model.norm.weight is F16", proc.stderr)

    def test_a_tensor_the_export_would_not_use_is_refused_by_name(self):
        # The check lives in hf_checkpoint.py, shared with convert_hf.py
        # (convert_refusals_test.py covers each case there).
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            os.mkdir(ckpt)
            with open(example("tiny-qwen3.config.json"), "rb") as a, open(os.path.join(ckpt, "config.json"), "wb") as b:
                b.write(a.read())
            with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
                tensors = hf_tensors(st, f, CFG, False)
            tensors["model.layers.0.self_attn.q_proj.bias"] = ("BF16", [64], bytes(128))
            write_file(st, os.path.join(ckpt, "model.safetensors"), tensors)
            out = os.path.join(tmp, "out.safetensors")
            proc = tool("export_qwen3.py", ckpt, "-o", out)
            self.assertEqual((proc.returncode, proc.stderr),
                             (1, f"export_qwen3: {ckpt}/model.safetensors: tensor "
                                 "model.layers.0.self_attn.q_proj.bias is an attention bias, but config.attention_bias "
                                 "is not true (a Qwen2-style checkpoint labelled qwen3?); kern would drop it\n"))
            self.assertFalse(os.path.exists(out))

    def test_an_output_inside_the_checkpoint_is_refused_and_the_checkpoint_kept(self):
        # `export_qwen3.py CKPT -o CKPT/model.safetensors` used to replace the
        # checkpoint's weights with the export.
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            os.makedirs(os.path.join(ckpt, "sub"))
            with open(example("tiny-qwen3.config.json"), "rb") as a, open(os.path.join(ckpt, "config.json"), "wb") as b:
                b.write(a.read())
            with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
                write_file(st, os.path.join(ckpt, "model.safetensors"), hf_tensors(st, f, CFG, False))
            with open(os.path.join(ckpt, "model.safetensors"), "rb") as f:
                before = f.read()
            for out in (os.path.join(ckpt, "model.safetensors"), os.path.join(ckpt, ".", "new.safetensors"),
                        os.path.join(ckpt, "sub", "..", "sub", "x.safetensors")):
                with self.subTest(out=out):
                    proc = tool("export_qwen3.py", ckpt, "-o", out)
                    self.assertEqual(proc.returncode, 2, proc.stderr)
                    self.assertEqual(proc.stderr, f"export_qwen3: {out}: is inside the input checkpoint {ckpt}; "
                                                  "refusing to write there (choose a path outside it)\n")
            with open(os.path.join(ckpt, "model.safetensors"), "rb") as f:
                self.assertEqual(f.read(), before)
            self.assertEqual(sorted(os.listdir(ckpt)), ["config.json", "model.safetensors", "sub"])
            self.assertEqual(os.listdir(os.path.join(ckpt, "sub")), [])


if __name__ == "__main__":
    ROOT = sys.argv[1]
    sys.path.insert(0, os.path.join(ROOT, "provider"))
    import safetensors_io as st  # noqa: E402
    from qwen3_config import load_config  # noqa: E402
    CFG = load_config(example("tiny-qwen3.config.json"))
    unittest.main(argv=sys.argv[:1], verbosity=2)
