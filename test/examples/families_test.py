"""The provider tools across model families (issue 40): the family is picked
from config.json's `architectures` (else `model_type`); a Llama config gives
the same programs with no q/k norm (rope_flags bit 1, docs/kernels.md §12)
and its llama3 rope scaling folded into the cos/sin cache as HF computes it;
what the tools do not implement is refused by name, exit 1.

With kern-verify and kern-run (built), a HF-format Llama checkpoint of the
tiny model's weights goes through convert_hf.py and `kern-run MODEL_DIR`
gives the ids of the checked-in manifest and weights, with chunked prefill;
`--requests --max-batch 8` gives each request its solo ids.

Usage: families_test.py SOURCE_ROOT [KERN_VERIFY KERN_RUN]
"""

import copy
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = KERN_VERIFY = KERN_RUN = None
PROMPT = [5, 17, 42, 99, 3, 250, 7, 11, 64, 128, 200, 31, 8, 77, 150, 2, 9]  # 17 ids (eos 2, 3, 4 excluded below)


def example(name):
    return os.path.join(ROOT, "examples", name)


def tool(script, *args):
    return subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True)


def tiny_llama():
    with open(example("tiny-llama.config.json"), encoding="utf-8") as f:
        return json.load(f)


def hf_llama3_inv_freq(theta, dim, factor, low, high, original):
    """HF transformers' _compute_llama3_parameters, transcribed (float64)."""
    inv = [1.0 / theta ** (i / dim) for i in range(0, dim, 2)]
    low_wavelen, high_wavelen = original / low, original / high
    out = []
    for f in inv:
        wavelen = 2 * math.pi / f
        llama = f / factor if wavelen > low_wavelen else f
        smooth = (original / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = not wavelen < high_wavelen and not wavelen > low_wavelen
        out.append(smoothed if medium else llama)
    return out


class Families(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(ROOT, "provider"))

    def test_the_family_comes_from_architectures_else_model_type(self):
        import decoder_config as dc
        cfg = tiny_llama()
        c = dc.parse_config(cfg)
        self.assertEqual((c.family, c.qk_norm, c.heads, c.kv_heads, c.head_dim), ("llama", False, 3, 3, 32))
        self.assertEqual(c.eos_token_ids, (2, 3, 4))
        del cfg["architectures"]
        self.assertEqual(dc.parse_config(cfg).family, "llama")
        cfg["model_type"] = "mistral"
        self.assertEqual(dc.parse_config(cfg).family, "mistral")
        q = dc.load_config(example("tiny-qwen3.config.json"))
        self.assertEqual((q.family, q.qk_norm, q.eos_token_ids), ("qwen3", True, (2,)))

    def test_head_dim_defaults_to_hidden_over_heads_and_any_even_value_and_head_count_is_taken(self):
        import decoder_config as dc
        for hidden, heads, kv in ((48, 3, 1), (64, 4, 4), (256, 4, 2), (512, 4, 2)):
            cfg = tiny_llama()
            del cfg["head_dim"]
            cfg.update(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv)
            c = dc.parse_config(cfg)
            self.assertEqual((c.head_dim, c.heads, c.kv_heads), (hidden // heads, heads, kv))

    def test_llama3_rope_scaling_is_folded_into_the_cache_as_hf_computes_it(self):
        import decoder_config as dc
        c = dc.parse_config(tiny_llama())
        s = c.rope_llama3
        self.assertEqual((s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position), (8.0, 1.0, 4.0, 64))
        want = hf_llama3_inv_freq(500000.0, 32, 8.0, 1.0, 4.0, 64)
        got = dc.inv_freq(c)
        for g, w in zip(got, want):
            self.assertAlmostEqual(g, w, delta=1e-15 * max(1.0, w))
        # All three regimes occur at D = 32 with original 64: kept, divided by factor, interpolated.
        plain = dc.inv_freq(dc.parse_config({**tiny_llama(), "rope_scaling": None}))
        ratios = [p / g for p, g in zip(plain, got)]
        self.assertEqual(ratios[0], 1.0)
        self.assertAlmostEqual(ratios[-1], 8.0)
        self.assertTrue(any(1.0 < r < 8.0 for r in ratios), ratios)
        # The cache row holds cos | sin of position * the scaled frequency, rounded once to f32.
        row = struct.unpack("<32f", dc.rope_cache_row_bytes(c, 40))
        for i in range(16):
            self.assertEqual(row[i], struct.unpack("<f", struct.pack("<f", math.cos(40 * want[i])))[0])
            self.assertEqual(row[16 + i], struct.unpack("<f", struct.pack("<f", math.sin(40 * want[i])))[0])
        # rope_type default (or none) is plain RoPE.
        c2 = dc.parse_config({**tiny_llama(), "rope_scaling": {"rope_type": "default"}})
        self.assertEqual(dc.inv_freq(c2), plain)

    def test_a_llama_manifest_has_no_q_k_norm_and_passes_rope_flags_3(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.json")
            for kernels in ("fused", "fused-qk-separate", "unfused"):
                proc = tool("gen_qwen3_manifest.py", example("tiny-llama.config.json"), "-o", out, "--unpinned",
                            "--kernels", kernels)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(out, encoding="utf-8") as f:
                    doc = json.load(f)
                self.assertFalse([b for b in doc["buffers"] if b.endswith(("q_norm.weight", "k_norm.weight"))])
                self.assertNotIn("k_normed", doc["buffers"])
                self.assertNotIn("head_rmsnorm_q", doc["kernels"])
                self.assertTrue(doc["meta"]["model"].startswith("llama E=96 L=2 H=3 KV=3 D=32"))
                flags = []
                for prog in doc["programs"].values():
                    for d in prog["dispatches"]:
                        for a in d["args"]:
                            if isinstance(a, dict) and "u8" in a:
                                flags.append(a["u8"])
                self.assertTrue(flags)
                self.assertEqual(set(flags), {3}, kernels)
                self.assertIn("prefill", doc["programs"])
                self.assertEqual("decode_batch" in doc["programs"], kernels != "unfused")

    def test_a_qwen2_manifest_adds_the_qkv_bias_after_the_projection_in_every_program(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.json")
            for kernels in ("fused", "unfused"):
                proc = tool("gen_qwen3_manifest.py", example("tiny-qwen2.config.json"), "-o", out, "--unpinned",
                            "--kernels", kernels)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(out, encoding="utf-8") as f:
                    doc = json.load(f)
                self.assertEqual(doc["buffers"]["model.layers.1.self_attn.qkv_proj.bias"]["shape"], [128])
                for name, prog in doc["programs"].items():
                    labels = [d["label"] for d in prog["dispatches"]]
                    for layer in range(2):
                        i = labels.index(f"layers.{layer}.qkv_bias")
                        self.assertIn("qkv_proj", labels[i - 1], (kernels, name))
                        self.assertIn("rope+kv_cache_write", labels[i + 1], (kernels, name))
                    flags = {a["u8"] for d in prog["dispatches"] for a in d["args"] if isinstance(a, dict) and "u8" in a}
                    self.assertEqual(flags, {3})
        import decoder_config as dc
        c = dc.load_config(example("tiny-qwen2.config.json"))
        self.assertEqual((c.family, c.qkv_bias, c.qk_norm), ("qwen2", True, False))
        names = [n for n, _, _ in dc.exported_tensors(c)]
        self.assertIn("model.layers.0.self_attn.qkv_proj.bias", names)

    def test_qwen2_refuses_an_active_window_and_rope_scaling(self):
        with open(example("tiny-qwen2.config.json"), encoding="utf-8") as f:
            base = json.load(f)
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            for change, needle in (({"use_sliding_window": True}, "config.use_sliding_window: sliding-window "
                                    "attention is not supported (found true; supported: false)"),
                                   ({"rope_scaling": {"type": "yarn", "factor": 4.0}}, "config.rope_scaling: "),
                                   ({"model_type": "qwen3"}, 'config.model_type: expected "qwen2", found "qwen3"')):
                with open(config, "w", encoding="utf-8") as f:
                    json.dump({**base, **change}, f)
                proc = tool("gen_qwen3_manifest.py", config, "-o", os.path.join(tmp, "m.json"), "--unpinned")
                self.assertEqual(proc.returncode, 1, (change, proc.stderr))
                self.assertIn(config + ": " + needle, proc.stderr)

    def test_llama_weights_export_and_random_weights_have_no_q_k_norm(self):
        import decoder_config as dc
        names = [n for n, _, _ in dc.exported_tensors(dc.load_config(example("tiny-llama.config.json")))]
        self.assertFalse([n for n in names if "q_norm" in n or "k_norm" in n])
        self.assertIn("lm_head.weight", names)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w.safetensors")
            proc = tool("gen_random_weights.py", example("tiny-llama.config.json"), "-o", out, "--seed", "7")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, "rb") as a, open(example("tiny-llama.safetensors"), "rb") as b:
                self.assertEqual(a.read(), b.read(), "examples/tiny-llama.safetensors does not regenerate")

    def test_what_is_not_implemented_is_refused_by_name_with_exit_1(self):
        cases = [
            ({"architectures": ["GemmaForCausalLM"]},
             "config.architectures: GemmaForCausalLM is not supported (supported: Qwen3ForCausalLM, "
             "Qwen3MoeForCausalLM, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)"),
            ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}},
             'config.rope_scaling.rope_type: "yarn" (a string) is not supported (supported: "default", "llama3", '
             'or no rope_scaling)'),
            ({"rope_scaling": {"type": "linear", "factor": 2.0}}, 'config.rope_scaling.rope_type: "linear"'),
            ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0}},
             "config.rope_scaling.original_max_position_embeddings: expected a positive integer, found null"),
            ({"hidden_act": "gelu"}, 'config.hidden_act: expected "silu", found "gelu" (a string)'),
            ({"final_logit_softcapping": 30.0},
             "config.final_logit_softcapping: logit soft-capping is not supported (found 30.0 (a number); "
             "supported: null or absent)"),
            ({"attn_logit_softcapping": 50.0}, "config.attn_logit_softcapping: logit soft-capping"),
            ({"attention_bias": True}, "config.attention_bias: true is not supported for model_type llama"),
            ({"mlp_bias": True}, "config.mlp_bias: true is not supported"),
            ({"model_type": "qwen2"}, 'config.model_type: expected "llama", found "qwen2" (a string)'),
            ({"eos_token_id": [2, "3"]}, "config.eos_token_id: expected a token id or an array of them"),
            ({"architectures": ["MistralForCausalLM"], "model_type": "mistral", "sliding_window": 4096},
             "config.sliding_window: sliding-window attention is not supported (found 4096 (a number); "
             "supported: null)"),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            for change, needle in cases:
                cfg = tiny_llama()
                cfg.update(change)
                with open(config, "w", encoding="utf-8") as f:
                    json.dump(cfg, f)
                for script, args in (("gen_qwen3_manifest.py", ["-o", os.path.join(tmp, "m.json"), "--unpinned"]),
                                     ("gen_random_weights.py", ["-o", os.path.join(tmp, "w.safetensors")])):
                    proc = tool(script, config, *args)
                    self.assertEqual(proc.returncode, 1, (script, change, proc.stderr))
                    self.assertIn(config + ": " + needle, proc.stderr, (script, change))
                    self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
                    self.assertFalse(os.path.exists(os.path.join(tmp, "m.json")))
        # A Mistral config that is a Llama one is taken.
        import decoder_config as dc
        cfg = {**tiny_llama(), "architectures": ["MistralForCausalLM"], "model_type": "mistral",
               "sliding_window": None}
        self.assertEqual(dc.parse_config(cfg).family, "mistral")

    def test_qwen3_moe_reads_its_sparse_layers_as_hf_does_and_refuses_what_it_does_not_implement(self):
        import decoder_config as dc
        from hf_config import ConfigError
        with open(example("tiny-qwen3-moe.config.json"), encoding="utf-8") as f:
            base = json.load(f)
        c = dc.parse_config(base)
        self.assertEqual((c.family, c.experts, c.experts_per_tok, c.moe_intermediate, c.norm_topk_prob, c.moe_layers),
                         ("qwen3_moe", 6, 2, 32, True, (0, 2)))
        # HF Qwen3MoeDecoderLayer: sparse where (layer + 1) % decoder_sparse_step == 0 and not in mlp_only_layers.
        for change, layers in (({"decoder_sparse_step": 2, "mlp_only_layers": []}, (1,)),
                               ({"mlp_only_layers": [0, 1, 2]}, ()), ({"num_hidden_layers": 1, "mlp_only_layers": []}, (0,))):
            self.assertEqual(dc.parse_config({**base, **change}).moe_layers, layers, change)
        for change, needle in (
                ({"num_experts": 1025}, "config.num_experts: 1025 exceeds 1024"),
                ({"num_experts_per_tok": 7}, "config.num_experts_per_tok: 7 exceeds num_experts 6"),
                ({"num_experts": 0}, "config.num_experts: expected a positive integer, found 0"),
                ({"norm_topk_prob": 1}, "config.norm_topk_prob: expected true or false"),
                ({"mlp_only_layers": [3]}, "config.mlp_only_layers: expected an array of layer indices from 0 to 2"),
                ({"decoder_sparse_step": 0}, "config.decoder_sparse_step: expected a positive integer"),
                ({"shared_expert_intermediate_size": 64}, "config.shared_expert_intermediate_size: a shared expert"),
                ({"use_sliding_window": True}, "config.use_sliding_window: sliding-window attention is not supported"),
                ({"model_type": "qwen3"}, 'config.model_type: expected "qwen3_moe", found "qwen3"')):
            with self.assertRaises(ConfigError) as e:
                dc.parse_config({**base, **change})
            self.assertIn(needle, str(e.exception), change)
        # Without architectures, model_type picks the family.
        self.assertEqual(dc.parse_config({k: v for k, v in base.items() if k != "architectures"}).family, "qwen3_moe")

    def test_a_qwen3_moe_manifest_routes_the_sparse_layers_and_keeps_the_dense_one(self):
        # tiny-qwen3-moe: layers 0 and 2 sparse (6 experts, top-2, renormalised), layer 1 dense.
        with open(example("tiny-qwen3-moe.json"), encoding="utf-8") as f:
            doc = json.load(f)
        decode = [d["label"] for d in doc["programs"]["decode"]["dispatches"]]
        self.assertEqual([x for x in decode if x.startswith("layers.0.")][-4:],
                         ["layers.0.post_attention_layernorm", "layers.0.mlp.router",
                          "layers.0.mlp.experts.gate_up_proj+silu_and_mul", "layers.0.mlp.experts.down_proj+residual"])
        self.assertEqual(len(decode), 1 + 7 + 5 + 7 + 3)  # embed, sparse, dense, sparse, lm_head+sample+advance
        self.assertIn("layers.1.post_attention_layernorm+gate_up_proj+silu_and_mul", decode)
        router = next(d for d in doc["programs"]["decode_batch"]["dispatches"] if d["label"] == "layers.2.mlp.router")
        self.assertEqual((router["kernel"], router["args"][5:]),
                         ("moe_router_batch", [{"i32": 6}, {"i32": 64}, {"i32": 2}, {"u8": 1}]))
        self.assertEqual(doc["buffers"]["model.layers.2.mlp.experts.gate_up_proj.weight"]["shape"], [6, 64, 64])
        self.assertNotIn("model.layers.1.mlp.gate.weight", doc["buffers"])
        # Prefill: the sparse MLP adds into residual in place, so the next layer starts with rmsnorm.
        prefill = {d["label"]: d["kernel"] for d in doc["programs"]["prefill"]["dispatches"]}
        self.assertEqual([prefill[f"layers.{i}.input_layernorm"] for i in range(3)],
                         ["rmsnorm", "rmsnorm", "add_rmsnorm"])
        # Every layer sparse: no dense MLP buffers or kernels; the unfused decode's final norm is rmsnorm.
        with open(example("tiny-qwen3-moe.config.json"), encoding="utf-8") as f:
            cfg = {**json.load(f), "mlp_only_layers": []}
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            proc = tool("gen_qwen3_manifest.py", os.path.join(tmp, "config.json"), "-o", os.path.join(tmp, "m.json"),
                        "--unpinned", "--kernels", "unfused")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(os.path.join(tmp, "m.json"), encoding="utf-8") as f:
                sparse = json.load(f)
        self.assertFalse({"gate_up", "act"} & set(sparse["buffers"]))
        self.assertNotIn("silu_and_mul", sparse["kernels"])
        norm = next(d for d in sparse["programs"]["decode"]["dispatches"] if d["label"] == "norm")
        self.assertEqual(norm["kernel"], "rmsnorm")

    def test_a_dspark_draft_needs_a_qwen3_target(self):
        import decoder_config as dc
        import dspark_config
        from hf_config import ConfigError
        with self.assertRaisesRegex(ConfigError, "a DSpark draft needs a Qwen3 target"):
            dspark_config.parse_draft_config({}, dc.load_config(example("tiny-llama.config.json")))


class TinyModelRuns(unittest.TestCase):
    """The tiny Llama and Qwen2 end to end on the cpu device (needs the build)."""

    def setUp(self):
        if not KERN_RUN or not os.path.isfile(KERN_RUN) or not os.path.isfile(KERN_VERIFY):
            self.skipTest("kern-verify / kern-run are not built")
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    def run_ids(self, *args):
        proc = subprocess.run([KERN_RUN, *args, "--device", "cpu", "--json", "--ignore-eos"], capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)["generated_ids"]

    def generation_config_wins_and_is_checked(self, ckpt, tmp):
        """A checkpoint's generation_config.json eos_token_id wins over
        config.json's (transformers' generate reads it first); one outside
        the vocabulary, or malformed, is refused by name with exit 1."""
        model = os.path.join(tmp, "model-gc")
        convert = ["/usr/bin/python3", os.path.join(ROOT, "examples", "convert_hf.py"), ckpt, "-o", model,
                   "--kern-verify", KERN_VERIFY, "--unpinned"]
        gc = os.path.join(ckpt, "generation_config.json")
        try:
            for given, written in (({"eos_token_id": [7, 9], "temperature": 0.6}, [7, 9]),
                                   ({"eos_token_id": 8}, [8]), ({"eos_token_id": None}, [2, 3, 4])):
                with open(gc, "w", encoding="utf-8") as f:
                    json.dump(given, f)
                proc = subprocess.run(convert, capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(os.path.join(model, "generation_config.json"), encoding="utf-8") as f:
                    self.assertEqual(json.load(f), {"eos_token_id": written}, given)
            for given, message in (({"eos_token_id": [7, 256]}, "eos_token_id: 256 is outside the vocabulary [0, 256)"),
                                   ({"eos_token_id": "7"}, "eos_token_id: expected a token id or an array of them")):
                with open(gc, "w", encoding="utf-8") as f:
                    json.dump(given, f)
                proc = subprocess.run(convert, capture_output=True, text=True)
                self.assertEqual(proc.returncode, 1, proc.stderr)
                self.assertIn(gc, proc.stderr)
                self.assertIn(message, proc.stderr)
                self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        finally:
            os.remove(gc)

    def test_a_hf_llama_checkpoint_converts_and_runs_as_the_checked_in_model_chunked_and_batched(self):
        self.convert_and_run("tiny-llama")

    def test_a_hf_qwen2_checkpoint_with_qkv_biases_converts_and_runs_as_the_checked_in_model_chunked_and_batched(self):
        self.convert_and_run("tiny-qwen2")

    def test_a_hf_qwen3_moe_checkpoint_converts_and_runs_as_the_checked_in_model_chunked_and_batched(self):
        # Experts 6, top-2, renormalised; layer 1 dense (mlp_only_layers): docs/causal-lm-manifest.md "Qwen3-MoE".
        self.convert_and_run("tiny-qwen3-moe")

    def test_stacked_experts_in_f32_shards_convert_to_the_same_weights(self):
        """The experts as transformers 5 holds them (mlp.experts.gate_up_proj [X, 2 I, E], down_proj
        [X, E, I]), in F32, in two shards with an index: the same exported bytes as the per-expert BF16
        checkpoint (bf16 -> f32 -> bf16 is exact)."""
        import decoder_config as dc
        import safetensors_io as st
        cfg = dc.load_config(example("tiny-qwen3-moe.config.json"))
        with st.SafetensorsFile(example("tiny-qwen3-moe.safetensors")) as f:
            src = {n: (shape, f.read(n)) for n, (_, shape, _, _) in f.tensors.items()
                   if n not in ("rope.cos_sin_cache", "k_scale", "v_scale", "lm_head.weight")}
        def f32(raw):
            return b"".join(b"\0\0" + raw[i:i + 2] for i in range(0, len(raw), 2))
        shards = ({}, {})
        for name, (shape, raw) in src.items():
            if ".mlp.experts." in name:
                stacked = name[: -len(".weight")]
                shards[1][stacked] = ("F32", shape, f32(raw))
            elif name.endswith("qkv_proj.weight"):
                p = name[: -len("qkv_proj.weight")]
                H, KV, D, E = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.hidden
                row = 2 * E
                shards[0][p + "q_proj.weight"] = ("BF16", [H * D, E], raw[: H * D * row])
                shards[0][p + "k_proj.weight"] = ("BF16", [KV * D, E], raw[H * D * row:(H + KV) * D * row])
                shards[0][p + "v_proj.weight"] = ("BF16", [KV * D, E], raw[(H + KV) * D * row:])
            elif name.endswith("mlp.gate_up_proj.weight"):
                p, half = name[: -len("gate_up_proj.weight")], len(raw) // 2
                shards[0][p + "gate_proj.weight"] = ("BF16", [shape[0] // 2, shape[1]], raw[:half])
                shards[0][p + "up_proj.weight"] = ("BF16", [shape[0] // 2, shape[1]], raw[half:])
            else:
                shards[0][name] = ("BF16", shape, raw)
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            os.mkdir(ckpt)
            with open(example("tiny-qwen3-moe.config.json"), encoding="utf-8") as f:
                config = f.read()
            with open(os.path.join(ckpt, "config.json"), "w", encoding="utf-8") as f:
                f.write(config)
            weight_map = {}
            for i, tensors in enumerate(shards):
                shard = f"model-{i + 1:05d}-of-00002.safetensors"
                st.write(os.path.join(ckpt, shard),
                         [st.TensorSpec(n, d, s, (lambda r=r: [r])) for n, (d, s, r) in tensors.items()])
                weight_map.update({n: shard for n in tensors})
            with open(os.path.join(ckpt, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
                json.dump({"weight_map": weight_map}, f)
            model = os.path.join(tmp, "model")
            proc = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "convert_hf.py"), ckpt, "-o",
                                   model, "--kern-verify", KERN_VERIFY, "--unpinned"], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("converting 4 F32 tensors to BF16", proc.stderr)
            with st.SafetensorsFile(os.path.join(model, "weights.safetensors")) as a, \
                    st.SafetensorsFile(example("tiny-qwen3-moe.safetensors")) as b:
                self.assertEqual(list(a.tensors), list(b.tensors))
                for name in b.tensors:
                    self.assertEqual(a.read(name), b.read(name), name)
            # A stacked tensor of the wrong shape is refused by name.
            bad = dict(shards[1])
            name = next(iter(bad))
            dtype, shape, raw = bad[name]
            bad[name] = (dtype, [shape[0] - 1] + shape[1:], raw[: len(raw) // shape[0] * (shape[0] - 1)])
            st.write(os.path.join(ckpt, "model-00002-of-00002.safetensors"),
                     [st.TensorSpec(n, d, s, (lambda r=r: [r])) for n, (d, s, r) in bad.items()])
            proc = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "convert_hf.py"), ckpt, "-o",
                                   os.path.join(tmp, "model2"), "--kern-verify", KERN_VERIFY, "--unpinned"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn(f"tensor {name} is F32 [{shape[0] - 1}", proc.stderr)

    def convert_and_run(self, model_name):
        import decoder_config as dc
        import safetensors_io as st
        import weights_test as wt
        cfg = dc.load_config(example(model_name + ".config.json"))
        with st.SafetensorsFile(example(model_name + ".safetensors")) as f:
            tensors = wt.hf_tensors(st, f, cfg, with_lm_head=not cfg.tie_word_embeddings)
        self.assertEqual(bool([n for n in tensors if "norm" in n and "self_attn" in n]), cfg.qk_norm)
        self.assertEqual(len([n for n in tensors if n.endswith("_proj.bias")]), 3 * cfg.layers if cfg.qkv_bias else 0)
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = os.path.join(tmp, "ckpt")
            os.mkdir(ckpt)
            with open(example(model_name + ".config.json"), encoding="utf-8") as f:
                config = f.read()
            with open(os.path.join(ckpt, "config.json"), "w", encoding="utf-8") as f:
                f.write(config)
            wt.write_file(st, os.path.join(ckpt, "model.safetensors"), tensors)
            model = os.path.join(tmp, "model")
            proc = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "convert_hf.py"), ckpt, "-o",
                                   model, "--kern-verify", KERN_VERIFY, "--unpinned"], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            # The config's eos ids go to the folder's generation_config.json, which kern-run stops at.
            with open(os.path.join(model, "generation_config.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f), {"eos_token_id": list(cfg.eos_token_ids)})
            if model_name == "tiny-llama":
                self.generation_config_wins_and_is_checked(ckpt, tmp)
            with st.SafetensorsFile(os.path.join(model, "weights.safetensors")) as a, \
                    st.SafetensorsFile(example(model_name + ".safetensors")) as b:
                self.assertEqual(list(a.tensors), list(b.tensors))
                for name in b.tensors:
                    self.assertEqual(a.read(name), b.read(name), name)
            plan = os.path.join(tmp, model_name + ".kplan")
            proc = subprocess.run([KERN_VERIFY, example(model_name + ".json"), "-o", plan, "--deny-warnings"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            prompt = ",".join(map(str, PROMPT))
            want = self.run_ids(plan, "--weights", example(model_name + ".safetensors"), "--prompt-ids", prompt,
                                "--steps", "24")
            self.assertEqual(len(want), 24)
            self.assertGreater(len(set(want)), 3, want)  # not a constant echo
            self.assertEqual(self.run_ids(model, "--prompt-ids", prompt, "--steps", "24"), want)
            self.assertEqual(self.run_ids(model, "--prompt-ids", prompt, "--steps", "24", "--chunk", "5"), want)
            # --chat with a tokenizer that has no ChatML tokens is refused by name; a completion runs.
            flags = os.path.join(ROOT, "test", "tokenizer", "fixtures", "flags_tokenizer.json")
            proc = subprocess.run([KERN_RUN, model, "--device", "cpu", "--tokenizer", flags, "--chat", "--prompt",
                                   "ab ab", "--steps", "2"], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertIn("--chat: kern renders Qwen3's chat template (ChatML with <think> blocks), and this "
                          "tokenizer has no <|im_start|> token", proc.stderr)
            proc = subprocess.run([KERN_RUN, model, "--device", "cpu", "--tokenizer", flags, "--prompt", "ab ab",
                                   "--steps", "2"], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            # --requests --max-batch 8: each request its solo ids.
            prompts = [PROMPT, PROMPT[:5], [9, 8, 7], PROMPT[3:], [1], PROMPT[::2], [100, 101, 102, 103], [64] * 9,
                       [250, 5]]
            reqs = os.path.join(tmp, "requests.jsonl")
            with open(reqs, "w", encoding="utf-8") as f:
                for i, ids in enumerate(prompts):
                    f.write(json.dumps({"prompt_ids": ids, "max_tokens": 6 + i, "ignore_eos": True}) + "\n")
            proc = subprocess.run([KERN_RUN, model, "--device", "cpu", "--requests", reqs, "--max-batch", "8"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            results = [json.loads(line) for line in proc.stdout.splitlines()]
            self.assertEqual(len(results), len(prompts))
            for i, (ids, result) in enumerate(zip(prompts, results)):
                solo = self.run_ids(model, "--prompt-ids", ",".join(map(str, ids)), "--steps", str(6 + i))
                self.assertEqual(result["ids"], solo, f"request {i}")


if __name__ == "__main__":
    ROOT = sys.argv[1]
    if len(sys.argv) > 3:
        KERN_VERIFY, KERN_RUN = sys.argv[2:4]
    unittest.main(argv=sys.argv[:1], verbosity=2)
