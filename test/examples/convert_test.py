#!/usr/bin/python3
"""convert_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN

examples/convert_hf.py (issue 25: a checkpoint in two commands) on
synthetic Hugging Face checkpoints of the tiny Qwen3 (nothing is downloaded:
weights_test.py's split of the checked-in exported weights): a BF16 one
converts to exactly the checked-in weights, and `kern-run MODEL_DIR`
(and `kern-run bench MODEL_DIR`) finds the plan, weights and tokenizer and
gives the same ids as the checked-in plan; a sharded F16 one and an F32 one
convert to BF16 rounded to nearest even (checked against an independent
struct-based rounding) with a line saying so; config fields kern does not
implement are refused by name, leaving no model folder.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = KERN_VERIFY = KERN_RUN = None


def example(name):
    return os.path.join(ROOT, "examples", name)


def convert(ckpt, out, *extra):
    return subprocess.run(["/usr/bin/python3", example("convert_hf.py"), ckpt, "-o", out, "--unpinned",
                           "--kern-verify", KERN_VERIFY, *extra], capture_output=True, text=True, timeout=300)


def bf16_rne(x):
    """bf16 bits of the float `x` (an f32 value), nearest even; independent of convert_hf's numpy."""
    (b,) = struct.unpack("<I", struct.pack("<f", x))
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


class Convert(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, HERE)
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        import safetensors_io
        import weights_test
        from qwen3_config import load_config
        cls.st, cls.wt = safetensors_io, weights_test
        cls.cfg = load_config(example("tiny-qwen3.config.json"))
        with safetensors_io.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
            cls.hf = weights_test.hf_tensors(safetensors_io, f, cls.cfg, False)

    def checkpoint(self, tmp, tensors, shards=1, config=None, tokenizer=True):
        ckpt = os.path.join(tmp, "ckpt")
        os.mkdir(ckpt)
        with open(example("tiny-qwen3.config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg.update(config or {})
        with open(os.path.join(ckpt, "config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        names = sorted(tensors)
        weight_map = {}
        for i in range(shards):
            shard = "model.safetensors" if shards == 1 else f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: tensors[n] for n in names[i::shards]}
            self.wt.write_file(self.st, os.path.join(ckpt, shard), part)
            weight_map.update({n: shard for n in part})
        if shards > 1:
            with open(os.path.join(ckpt, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
                json.dump({"metadata": {}, "weight_map": weight_map}, f)
        if tokenizer:  # a small byte-level BPE tokenizer.json (its ids fit the tiny vocabulary)
            shutil.copyfile(os.path.join(ROOT, "test", "tokenizer", "fixtures", "flags_tokenizer.json"),
                            os.path.join(ckpt, "tokenizer.json"))
        return ckpt

    def recast(self, dtype):
        """The HF tensors as `dtype` (F16 or F32), and the BF16 bits a correct conversion gives."""
        out, want = {}, {}
        for name, (_, shape, raw) in self.hf.items():
            values = self.wt.bf16_values(raw)
            if dtype == "F16":
                data = struct.pack(f"<{len(values)}e", *values)
                values = list(struct.unpack(f"<{len(values)}e", data))  # what F16 holds
            else:
                values = [v * (1 + 2 ** -12) for v in values]  # f32 values between bf16 neighbours
                data = struct.pack(f"<{len(values)}f", *values)
                values = list(struct.unpack(f"<{len(values)}f", data))
            out[name] = (dtype, shape, data)
            want[name] = struct.pack(f"<{len(values)}H", *(bf16_rne(v) for v in values))
        return out, want

    def test_a_bf16_checkpoint_becomes_a_model_folder_kern_run_runs_as_is(self):
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = self.checkpoint(tmp, self.hf)
            out = os.path.join(tmp, "model")
            proc = convert(ckpt, out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stderr, f"convert_hf: wrote {out}: run it with kern-run {out} --prompt TEXT\n")
            self.assertEqual(sorted(os.listdir(out)), ["generation_config.json", "manifest.json", "model.kplan",
                                                       "tokenizer.json", "weights.safetensors"])
            with open(os.path.join(out, "generation_config.json"), encoding="utf-8") as f:
                self.assertEqual(set(json.load(f)), {"eos_token_id"})
            with self.st.SafetensorsFile(os.path.join(out, "weights.safetensors")) as a, \
                    self.st.SafetensorsFile(example("tiny-qwen3.safetensors")) as b:
                self.assertEqual(list(a.tensors), list(b.tensors))
                for name in b.tensors:
                    self.assertEqual(a.read(name), b.read(name), name)
            with tempfile.TemporaryDirectory() as t2:
                plan = os.path.join(t2, "tiny.kplan")
                self.assertEqual(subprocess.run([KERN_VERIFY, example("tiny-qwen3.json"), "-o", plan]).returncode, 0)
                args = ["--device", "cpu", "--prompt-ids", "3,17,99", "--steps", "6", "--json"]
                want = subprocess.run([KERN_RUN, plan, "--weights", example("tiny-qwen3.safetensors"), *args],
                                      capture_output=True, text=True)
            got = subprocess.run([KERN_RUN, out, *args], capture_output=True, text=True)
            self.assertEqual(got.returncode, 0, got.stderr)
            self.assertEqual(json.loads(got.stdout)["generated_ids"], json.loads(want.stdout)["generated_ids"])
            bench = subprocess.run([KERN_RUN, "bench", out, "--device", "cpu", "-p", "4", "-n", "2", "-r", "1"],
                                   capture_output=True, text=True)
            self.assertEqual(bench.returncode, 0, bench.stderr)
            self.assertIn(f"plan: {os.path.join(out, 'model.kplan')} (sha256 ", bench.stdout)
            empty = os.path.join(tmp, "empty")
            os.mkdir(empty)
            proc = subprocess.run([KERN_RUN, empty, "--prompt-ids", "1"], capture_output=True, text=True)
            self.assertEqual((proc.returncode, proc.stderr), (2, f"kern-run: error: {empty}: a directory without "
                                                                "model.kplan: give a .kplan, or a model folder written "
                                                                "by examples/convert_hf.py\n"))

    def test_sharded_f16_and_f32_checkpoints_convert_to_bf16_rounded_to_nearest_even(self):
        for dtype, shards in (("F16", 3), ("F32", 1)):
            with self.subTest(dtype=dtype), tempfile.TemporaryDirectory() as tmp:
                tensors, want = self.recast(dtype)
                ckpt = self.checkpoint(tmp, tensors, shards=shards, tokenizer=False)
                out = os.path.join(tmp, "model")
                proc = convert(ckpt, out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stderr.splitlines()[0], f"convert_hf: converting {len(tensors)} {dtype} tensors "
                                                              "to BF16 (round to nearest even)")
                self.assertIn(f"convert_hf: note: {ckpt} has no tokenizer.json: give kern-run --prompt-ids, or "
                              "--tokenizer FILE", proc.stderr)
                with self.st.SafetensorsFile(os.path.join(out, "weights.safetensors")) as f:
                    for name, bits in want.items():
                        if name.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight",
                                          "up_proj.weight")):
                            continue  # merged; the merged tensors are compared below
                        self.assertEqual(f.read(name), bits, name)
                    p = "model.layers.1.self_attn."
                    self.assertEqual(f.read(p + "qkv_proj.weight"),
                                     want[p + "q_proj.weight"] + want[p + "k_proj.weight"] + want[p + "v_proj.weight"])
                got = subprocess.run([KERN_RUN, out, "--device", "cpu", "--prompt-ids", "1,2", "--steps", "2"],
                                     capture_output=True, text=True)
                self.assertEqual(got.returncode, 0, got.stderr)

    def test_config_fields_kern_does_not_implement_are_refused_by_name(self):
        for change, message in (
                ({"rope_scaling": {"type": "yarn", "factor": 4.0}},
                 "config.rope_scaling: rope scaling is not supported (plain neox rope only)"),
                ({"use_sliding_window": True, "sliding_window": 4096},
                 "config.use_sliding_window: sliding-window attention is not supported (every layer attends to the "
                 "whole context)")):
            with self.subTest(change=change), tempfile.TemporaryDirectory() as tmp:
                ckpt = self.checkpoint(tmp, self.hf, config=change)
                out = os.path.join(tmp, "model")
                proc = convert(ckpt, out)
                self.assertEqual(proc.returncode, 1)
                self.assertEqual(proc.stderr, f"convert_hf: {os.path.join(ckpt, 'config.json')}: {message}\n")
                self.assertFalse(os.path.exists(out))
                self.assertEqual(sorted(os.listdir(tmp)), ["ckpt"])  # no temporary folder left either


if __name__ == "__main__":
    ROOT, KERN_VERIFY, KERN_RUN = sys.argv[1:4]
    unittest.main(argv=sys.argv[:1], verbosity=2)
