#!/usr/bin/python3
"""convert_refusals_test.py SOURCE_ROOT

examples/convert_hf.py refuses what it would otherwise get silently wrong
(issue 49, items 1-6), on synthetic checkpoints of the tiny Qwen3
(weights_test.py's split of the checked-in weights): each refusal is exit 1
or 2 with one line naming the file and the field or tensor, writes no model
folder and leaves an earlier one byte for byte as it was; a successful
conversion replaces the whole folder (no stale tokenizer.json survives);
F16 and F32 weights round to BF16 with ties to even (exact ties, which
ties-down, ties-up or truncation would get wrong).

kern-verify is replaced by a stub that writes a placeholder plan: these
tests are about the converter and need no kern build (convert_test.py runs
the real kern-verify and kern-run on converted folders).
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
ROOT = None
EARLIER = {"manifest.json": b"{}\n", "model.kplan": b"earlier plan", "weights.safetensors": b"earlier weights",
           "tokenizer.json": b"{\"earlier\": true}\n"}  # an earlier conversion's folder (contents do not matter)
STUB_PLAN = b"stub plan\n"


def example(name):
    return os.path.join(ROOT, "examples", name)


def snapshot(folder):
    """{name: bytes} of a folder's files, or None when it does not exist."""
    if not os.path.exists(folder):
        return None
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


class ConvertRefusals(unittest.TestCase):
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

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.stub = os.path.join(self.tmp, "kern-verify")
        with open(self.stub, "w", encoding="utf-8") as f:
            f.write("#!/usr/bin/python3\nimport sys\n"
                    f"open(sys.argv[sys.argv.index('-o') + 1], 'wb').write({STUB_PLAN!r})\n")
        os.chmod(self.stub, 0o755)

    def checkpoint(self, tensors=None, config=None, drop=(), tokenizer=True, raw_config=None):
        """A checkpoint folder: the tiny HF tensors (or `tensors`), its config
        updated by `config` less the keys in `drop` (or `raw_config` bytes)."""
        ckpt = os.path.join(self.tmp, "ckpt")
        shutil.rmtree(ckpt, ignore_errors=True)
        os.mkdir(ckpt)
        with open(example("tiny-qwen3.config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg.update(config or {})
        for key in drop:
            del cfg[key]
        with open(os.path.join(ckpt, "config.json"), "wb") as f:
            f.write(raw_config if raw_config is not None else json.dumps(cfg).encode())
        self.wt.write_file(self.st, os.path.join(ckpt, "model.safetensors"), self.hf if tensors is None else tensors)
        if tokenizer:
            shutil.copyfile(os.path.join(ROOT, "test", "tokenizer", "fixtures", "flags_tokenizer.json"),
                            os.path.join(ckpt, "tokenizer.json"))
        return ckpt

    def convert(self, ckpt, out):
        return subprocess.run(["/usr/bin/python3", example("convert_hf.py"), ckpt, "-o", out, "--unpinned",
                               "--kern-verify", self.stub], capture_output=True, text=True, timeout=300)

    def earlier_folder(self):
        out = os.path.join(self.tmp, "earlier")
        shutil.rmtree(out, ignore_errors=True)
        os.mkdir(out)
        for name, data in EARLIER.items():
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        return out

    def assert_refused(self, ckpt, exit_code, line):
        """Converting `ckpt` into a new folder and into an earlier
        conversion's folder both fail with `exit_code` and exactly the one
        line `convert_hf: LINE`; neither folder changes, and no temporary
        folder is left beside them."""
        for out in (os.path.join(self.tmp, "model"), self.earlier_folder()):
            with self.subTest(out=os.path.basename(out)):
                before = snapshot(out)
                proc = self.convert(ckpt, out)
                self.assertEqual((proc.returncode, proc.stderr), (exit_code, f"convert_hf: {line}\n"))
                self.assertEqual(snapshot(out), before)
                self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp." in n or ".old." in n], [])
                shutil.rmtree(out, ignore_errors=True)

    # 1. layers beyond num_hidden_layers
    def test_a_layer_beyond_num_hidden_layers_is_refused_naming_the_tensor(self):
        tensors = dict(self.hf)
        for name, t in self.hf.items():
            if name.startswith("model.layers.1."):
                tensors[name.replace("model.layers.1.", "model.layers.2.")] = t
        ckpt = self.checkpoint(tensors)
        self.assert_refused(ckpt, 1, f"{ckpt}/model.safetensors: tensor model.layers.2.input_layernorm.weight is in "
                                     "layer 2, beyond config.num_hidden_layers 2 (layers 0 to 1); kern would drop it")

    # 2. q/k/v biases without attention_bias
    def test_attention_biases_without_attention_bias_are_refused_naming_the_tensor(self):
        H, KV, D = self.cfg.heads, self.cfg.kv_heads, self.cfg.head_dim
        tensors = dict(self.hf)
        for layer in range(self.cfg.layers):
            p = f"model.layers.{layer}.self_attn."
            for proj, rows in (("q", H * D), ("k", KV * D), ("v", KV * D)):
                tensors[f"{p}{proj}_proj.bias"] = ("BF16", [rows], bytes(2 * rows))
        for change, drop in (({}, ("attention_bias",)), ({"attention_bias": False}, ())):
            with self.subTest(change=change, drop=drop):
                ckpt = self.checkpoint(tensors, config=change, drop=drop)
                self.assert_refused(ckpt, 1, f"{ckpt}/model.safetensors: tensor model.layers.0.self_attn.k_proj.bias "
                                             "is an attention bias, but config.attention_bias is not true (a "
                                             "Qwen2-style checkpoint labelled qwen3?); kern would drop it")

    def test_any_other_unused_tensor_is_refused_naming_it_and_counting_the_rest(self):
        tensors = dict(self.hf)
        for name in ("score.weight", "model.layers.0.mlp.gate_proj.bias", "model.layers.1.mlp.up_proj.bias",
                     "model.norm.bias"):
            tensors[name] = ("BF16", [4], bytes(8))
        ckpt = self.checkpoint(tensors)
        self.assert_refused(ckpt, 1, f"{ckpt}/model.safetensors: tensor model.norm.bias is not used by kern's qwen3 "
                                     "layout; kern would drop it (4 unused tensors: model.norm.bias, score.weight, "
                                     "model.layers.0.mlp.gate_proj.bias, ...)")

    def test_the_rotary_inv_freq_buffers_hf_ignores_are_skipped(self):
        tensors = dict(self.hf)
        for name in ("model.rotary_emb.inv_freq", "model.layers.0.self_attn.rotary_emb.inv_freq"):
            tensors[name] = ("F32", [8], bytes(32))
        proc = self.convert(self.checkpoint(tensors), os.path.join(self.tmp, "model"))
        self.assertEqual(proc.returncode, 0, proc.stderr)

    # 3. every config field type-checked, booleans included
    def test_a_config_field_of_the_wrong_json_type_is_refused_naming_it(self):
        for change, message in (
                ({"tie_word_embeddings": "false"}, 'config.tie_word_embeddings: expected true or false, found "false" '
                                                   "(a string)"),
                ({"attention_bias": "false"},
                 'config.attention_bias: expected true or false, found "false" (a string)'),
                ({"use_sliding_window": 0}, "config.use_sliding_window: expected true or false, found 0 (a number)"),
                ({"tie_word_embeddings": None}, "config.tie_word_embeddings: expected true or false, found null"),
                ({"rope_theta": "1000000"},
                 'config.rope_theta: expected a positive number, found "1000000" (a string)'),
                ({"rms_norm_eps": True}, "config.rms_norm_eps: expected a positive number, found true (a boolean)"),
                ({"num_hidden_layers": 2.0}, "config.num_hidden_layers: expected a positive integer, found 2.0 "
                                             "(a number)"),
                ({"hidden_act": ["silu"]}, 'config.hidden_act: expected a string, found ["silu"] (an array)'),
                ({"rope_scaling": "none"}, 'config.rope_scaling: expected an object or null, found "none" (a string)'),
                ({"model_type": ["qwen3"]}, 'config.model_type: expected "qwen3", found ["qwen3"] (an array)')):
            with self.subTest(change=change):
                ckpt = self.checkpoint(config=change)
                self.assert_refused(ckpt, 1, f"{ckpt}/config.json: {message}")

    # 4. no file of an earlier conversion survives
    def test_a_conversion_replaces_the_whole_folder_so_no_stale_tokenizer_survives(self):
        out = self.earlier_folder()
        os.chmod(out, 0o750)
        ckpt = self.checkpoint(tokenizer=False)
        proc = self.convert(ckpt, out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, f"convert_hf: note: {ckpt} has no tokenizer.json: give kern-run --prompt-ids, "
                                      f"or --tokenizer FILE\nconvert_hf: wrote {out}: run it with kern-run {out} "
                                      "--prompt-ids 1,2,3\n")
        self.assertEqual(sorted(os.listdir(out)), ["generation_config.json", "manifest.json", "model.kplan",
                                                   "weights.safetensors"])
        self.assertEqual(snapshot(out)["model.kplan"], STUB_PLAN)
        self.assertEqual(os.stat(out).st_mode & 0o777, 0o750)  # the folder keeps its mode
        self.assertEqual(sorted(os.listdir(self.tmp)), ["ckpt", "earlier", "kern-verify"])  # nothing left aside

    def test_a_folder_holding_files_convert_hf_does_not_write_is_refused_before_any_work(self):
        ckpt = self.checkpoint()
        out = self.earlier_folder()
        with open(os.path.join(out, "notes.txt"), "w", encoding="utf-8") as f:
            f.write("mine\n")
        before = snapshot(out)
        proc = self.convert(ckpt, out)
        self.assertEqual((proc.returncode, proc.stderr),
                         (2, f"convert_hf: {out}: holds notes.txt, which convert_hf does not write; refusing to "
                             "replace the folder (give a new or empty folder, or remove notes.txt)\n"))
        self.assertEqual(snapshot(out), before)
        proc = self.convert(ckpt, ckpt)  # the checkpoint itself
        self.assertEqual(proc.returncode, 2)
        self.assertIn("holds config.json, which convert_hf does not write", proc.stderr)

    # 5. any JSON error, nesting depth included, is one line naming the file
    def test_a_json_file_nested_100000_deep_or_malformed_is_one_line_naming_it(self):
        deep = b"[" * 100000 + b"]" * 100000
        for raw, message in (
                (deep, "config.json:1:129: arrays/objects nest deeper than 128 levels"),
                (b'{"a": ' * 100000 + b"1" + b"}" * 100000, "config.json:1:769: arrays/objects nest deeper than 128 "
                                                           "levels"),
                (b'{"x": "[[[[", "model_type": }', "config.json:1:29: invalid JSON: Expecting value"),
                (b'{"rope_theta": NaN}', "config.json: invalid JSON: NaN is not a JSON number"),
                (b'{"rope_theta": 1e400}', "config.json: invalid JSON: the number 1e400 is beyond the f64 range"),
                (b'{"num_hidden_layers": 2, "num_hidden_layers": 3}', 'config.json: duplicate key "num_hidden_layers"'),
                (b'\xef\xbb\xbf{}', "config.json:1:1: invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)")):
            with self.subTest(raw=raw[:40]):
                ckpt = self.checkpoint(raw_config=raw)
                self.assert_refused(ckpt, 1, f"{ckpt}/{message}")
        ckpt = self.checkpoint()
        with open(os.path.join(ckpt, "model.safetensors.index.json"), "wb") as f:
            f.write(b'{"weight_map": ' + deep + b"}")
        self.assert_refused(ckpt, 1, f"{ckpt}/model.safetensors.index.json:1:143: arrays/objects nest deeper than 128 "
                                     "levels")
        ckpt = self.checkpoint()
        header = b'{"a": ' + deep + b"}"
        with open(os.path.join(ckpt, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
        self.assert_refused(ckpt, 1, f"{ckpt}/model.safetensors: header:1:134: arrays/objects nest deeper than 128 "
                                     "levels")

    def test_json_nesting_is_bounded_at_128_levels_strings_aside(self):
        import json_in
        self.assertEqual(json_in.loads(b"[" * 128 + b"]" * 128, "f"), json.loads("[" * 128 + "]" * 128))
        self.assertEqual(json_in.loads(b'["' + b"[{" * 200 + b'\\"]"]', "f"), ["[{" * 200 + '"]'])
        with self.assertRaises(json_in.JsonError) as e:
            json_in.loads(b"[" * 129 + b"]" * 129, "f")
        self.assertEqual(str(e.exception), "f:1:129: arrays/objects nest deeper than 128 levels")

    # 6. F16 and F32 -> BF16 round to nearest, ties to even
    TIES_F32 = (  # f32 bits -> bf16 bits; the first six are exact ties
        (0x3F808000, 0x3F80), (0x3F818000, 0x3F82), (0xBF808000, 0xBF80), (0xBF818000, 0xBF82),
        (0x00018000, 0x0002), (0x7F7F8000, 0x7F80),  # a subnormal tie; the largest tie rounds to even: inf
        (0x3F808001, 0x3F81), (0x3F807FFF, 0x3F80))
    TIES_F16 = (  # f16 bits -> bf16 bits: 1 + 2^-8 and 1 + 3 2^-8 are ties; 1 + 5 2^-10 is not
        (0x3C04, 0x3F80), (0x3C0C, 0x3F82), (0xBC04, 0xBF80), (0xBC0C, 0xBF82), (0x3C05, 0x3F81),
        (0x7BFF, 0x4780))

    def test_the_tie_table_tells_ties_to_even_from_ties_down_up_and_truncation(self):
        for bits, want in self.TIES_F32[:6]:
            with self.subTest(bits=hex(bits)):
                self.assertEqual(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16), want)
        wrong = {"ties down": lambda b: (b + 0x7FFF) >> 16, "ties up": lambda b: (b + 0x8000) >> 16,
                 "truncation": lambda b: b >> 16}
        for name, rounding in wrong.items():
            with self.subTest(name):
                self.assertNotEqual([rounding(b) for b, _ in self.TIES_F32], [w for _, w in self.TIES_F32])

    def test_f16_and_f32_weights_round_to_bf16_with_exact_ties_to_even(self):
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        import convert_hf
        E = self.cfg.hidden
        for dtype, table, fmt in (("F32", self.TIES_F32, "<I"), ("F16", self.TIES_F16, "<H")):
            with self.subTest(dtype=dtype):
                values = [table[i % len(table)] for i in range(E)]
                raw = b"".join(struct.pack(fmt, b) for b, _ in values)
                want = struct.pack(f"<{E}H", *(w for _, w in values))
                self.assertEqual(convert_hf.bf16_from(raw, dtype), want)
                tensors = dict(self.hf)
                tensors["model.norm.weight"] = (dtype, [E], raw)
                out = os.path.join(self.tmp, "model")
                proc = self.convert(self.checkpoint(tensors), out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stderr.splitlines()[0], f"convert_hf: converting 1 {dtype} tensors to BF16 "
                                                              "(round to nearest even)")
                with self.st.SafetensorsFile(os.path.join(out, "weights.safetensors")) as f:
                    self.assertEqual(f.read("model.norm.weight"), want)


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
