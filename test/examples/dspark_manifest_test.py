#!/usr/bin/python3
"""dspark_manifest_test.py SOURCE_ROOT [KERN_VERIFY]

Tests of examples/gen_qwen3_dspark_manifest.py and the draft part of the
weight tools (docs/speculative.md): the Qwen3-4B DSpark manifest's counts
per program, where the taps sit, the Markov chain's device-side `prev`,
the draft's non-causal attention and its own KV state, `meta.spec`,
`kern-verify --dump`'s counts, bad draft configs, and the random-weight
writer's draft tensors. (The checked-in manifests' byte-identical
regeneration and kern-verify acceptance are in manifest_test.py.)
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = KERN_VERIFY = None


def example(name):
    return os.path.join(ROOT, "examples", name)


def load(model):
    with open(example(model + ".json"), "r", encoding="utf-8") as f:
        return json.load(f)


def tool(script, *args):
    """Runs a tool; a manifest generator pins only through an explicit --kernels-dir."""
    pins = ["--unpinned"] if script.endswith("_manifest.py") and "--kernels-dir" not in args else []
    return subprocess.run(["/usr/bin/python3", example(script), *args, *pins], capture_output=True, text=True)


def by_label(doc, program):
    return {d["label"]: d for d in doc["programs"][program]["dispatches"]}


class Qwen3_4B_DSpark(unittest.TestCase):
    def setUp(self):
        self.doc = load("qwen3-4b-dspark")

    def test_six_programs_with_their_dispatch_counts(self):
        counts = {name: len(p["dispatches"]) for name, p in self.doc["programs"].items()}
        # prefill 433 + 5 taps; decode as qwen3-4b.json; verify: 219 + 5 taps without the sampling dispatch
        # (speculative decoding is greedy) and the step advance; decode_spec the same with one attention
        # dispatch per layer instead of two (one query row: q/k norm + RoPE + the KV write folded in,
        # docs/kernels.md §13a; verify's causal rows keep qk_norm_rope_cache); draft 1 + 5 x 12 + norm +
        # lm_head + 7 x 3 (the seed's 84); precompute 1 + 5 x 4.
        self.assertEqual(counts, {"prefill": 438, "decode": 184, "decode_spec": 187, "verify": 223, "draft": 84,
                                  "draft_precompute": 21})
        self.assertEqual(self.doc["programs"]["decode"], load("qwen3-4b")["programs"]["decode"])
        # decode_spec leaves the step inputs for draft_precompute: no advance, the same dispatches as verify,
        # except that verify's norm gemvs are the ones sized for the block's 8 rows (their shared memory)
        # and each layer's attention is verify's qk_norm_rope_cache + attention_decode_fused pair.
        spec, verify = self.doc["programs"]["decode_spec"], self.doc["programs"]["verify"]
        sized = {"gemv_qkv", "gemv_gate_up", "lm_head_argmax"}
        pair = [d for d in verify["dispatches"] if d["kernel"] in ("qk_norm_rope_cache", "attention_decode_fused")]
        self.assertEqual(len(pair), 2 * 36)
        folded = [d for d in spec["dispatches"] if d["kernel"] == "attention_decode_qkv"]
        self.assertEqual([d["label"] for d in folded],
                         [f"layers.{i}.qk_norm+rope+kv_cache_write+attention" for i in range(36)])
        rest_spec = [d for d in spec["dispatches"] if d["kernel"] != "attention_decode_qkv"]
        rest_verify = [d for d in verify["dispatches"] if d not in pair]
        self.assertEqual(len(rest_spec), len(rest_verify))
        for a, b in zip(rest_spec, rest_verify):
            self.assertEqual(b["kernel"], a["kernel"] + "_m8" if a["kernel"] in sized else a["kernel"])
            self.assertEqual((a["label"], a["args"]), (b["label"], b["args"]))
        for name in sized:
            one, eight = self.doc["kernels"][name]["impl"]["steps"][0], self.doc["kernels"][name + "_m8"]["impl"]["steps"][0]
            self.assertEqual(one["shared_mem"] * 8, eight["shared_mem"])  # k * 2 bytes per row
            self.assertEqual(one["shared_mem"], 2 * 2560)
        self.assertNotIn("advance", [d["label"] for d in self.doc["programs"]["verify"]["dispatches"]])
        self.assertEqual(self.doc["meta"]["spec"], {"block": 8, "mask_token": 151669})
        # Draft KV: 5 layers x 8 kv heads x (k, v) x 128 x 2 bytes.
        self.assertEqual(self.doc["states"]["draft_kv"], {"bytes_per_token": 20480, "align": 256})
        self.assertEqual(self.doc["buffers"]["draft_fc_out"]["class"], "carry")
        self.assertEqual(self.doc["buffers"]["draft_tokens"], {"dtype": "i64", "shape": [7], "class": "output"})

    def test_each_tap_is_one_gemm_right_after_its_layers_output_the_first_plain_the_rest_accumulating(self):
        taps = [1, 9, 17, 25, 33]
        for program, after in (("verify", "layers.{}.down_proj+residual"), ("decode_spec", "layers.{}.down_proj+residual"),
                               ("prefill", "layers.{}.input_layernorm")):
            dispatches = self.doc["programs"][program]["dispatches"]
            labels = [d["label"] for d in dispatches]
            for j, layer in enumerate(taps):
                i = labels.index(f"tap.{j}.layers.{layer}")
                # Prefill completes layer L's output at layer L + 1's input_layernorm (the residual add).
                self.assertEqual(labels[i - 1], after.format(layer + 1 if program == "prefill" else layer))
                d = dispatches[i]
                self.assertEqual(d["kernel"], "gemm" if j == 0 else "gemm_acc")
                self.assertEqual(d["args"][:3], [{"buf": "residual"}, {"buf": f"draft.fc.{j}.weight"},
                                                 {"buf": "draft_fc_out"}])
        self.assertEqual(self.doc["kernels"]["gemm_acc"]["impl"]["steps"][0]["symbol"], "extern:cublaslt_bf16_tn_acc")
        self.assertEqual(self.doc["kernels"]["gemm_acc"]["params"][2], "inout buffer<bf16>")
        self.assertEqual(self.doc["programs"]["verify"]["dispatches"][-1]["label"], "norm+lm_head+argmax")

    def test_the_markov_chain_reads_prev_on_the_device_and_adds_into_each_drafted_row(self):
        V = 151936
        d = by_label(self.doc, "draft")
        for i in range(7):
            prev = {"buf": "draft_ids"} if i < 2 else {"buf": "draft_tokens", "offset": 8 * (i - 1)}
            if i == 1:
                prev = {"buf": "draft_tokens"}  # offset 0 is written as no offset
            self.assertEqual(d[f"markov.{i}.gather"]["args"][:3], [prev, {"buf": "draft.markov_w1.weight"},
                                                                     {"buf": "markov_embed"}])
            row = {"buf": "draft_logits", "offset": 2 * V * (i + 1)}
            self.assertEqual(d[f"markov.{i}.bias"]["kernel"], "gemm_acc")
            self.assertEqual(d[f"markov.{i}.bias"]["args"], [{"buf": "markov_embed"}, {"buf": "draft.markov_w2.weight"},
                                                             row, {"i32": 1}, {"i32": V}, {"i32": 256}])
            out = {"buf": "draft_tokens", "offset": 8 * i} if i else {"buf": "draft_tokens"}
            self.assertEqual(d[f"markov.{i}.argmax"]["args"][:2], [row, out])
        self.assertEqual(d["draft.lm_head"]["args"][:3], [{"buf": "normed"}, {"buf": "lm_head.weight"},
                                                           {"buf": "draft_logits"}])

    def test_draft_layers_attend_non_causally_over_their_own_kv_state(self):
        d = by_label(self.doc, "draft")
        for layer in range(5):
            att = d[f"draft.layers.{layer}.attention"]
            self.assertEqual(att["kernel"], "attention_noncausal")
            self.assertEqual(att["args"][1], {"state": "draft_kv", "offset": layer * 16 * 8 * 2 * 128 * 2})
            self.assertEqual(att["args"][12], {"i64": 5 * 16 * 8 * 2 * 128})
            self.assertEqual(d[f"draft.layers.{layer}.qkv_proj"]["args"][1],
                             {"buf": f"draft.layers.{layer}.self_attn.qkv_proj.weight"})
        self.assertEqual(self.doc["kernels"]["attention_noncausal"]["impl"]["steps"][0]["symbol"],
                         "kern_paged_attention_noncausal_bf16")
        p = by_label(self.doc, "draft_precompute")
        # k and v rows of the layer's qkv_proj: a view after the H * D q rows (32 x 128 x 2560 x 2 bytes).
        self.assertEqual(p["draft.layers.2.ctx_kv_proj"]["args"][1],
                         {"buf": "draft.layers.2.self_attn.qkv_proj.weight", "offset": 32 * 128 * 2560 * 2})
        self.assertEqual(p["draft.layers.2.ctx_k_rope"]["args"][5], {"i32": 0})  # no query heads
        self.assertEqual(p["draft.hidden_norm"]["args"][:2], [{"buf": "draft_fc_out"},
                                                                {"buf": "draft.hidden_norm.weight"}])

    def test_kern_verify_dump_counts_dispatches_and_launches_per_program(self):
        if not KERN_VERIFY or not os.path.isfile(KERN_VERIFY):
            self.skipTest("kern-verify is not built")
        with tempfile.TemporaryDirectory() as tmp:
            plan = os.path.join(tmp, "p.kplan")
            proc = subprocess.run([KERN_VERIFY, example("qwen3-4b-dspark.json"), "-o", plan], capture_output=True,
                                  text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            dump = subprocess.run([KERN_VERIFY, "--dump", plan], capture_output=True, text=True).stdout
        self.assertIn("speculative: block 8, mask token 151669\n", dump)
        found = dict((m.group(1), (int(m.group(2)), int(m.group(3))))
                     for m in re.finditer(r"^program (\w+): (\d+) dispatches, (\d+) launches$", dump, re.M))
        # Launches: argmax kernels are 2 steps, the fused lm_head_argmax 1 (its last block reduces).
        self.assertEqual(found, {"prefill": (438, 438), "decode": (184, 184), "decode_spec": (187, 187),
                                 "verify": (223, 223), "draft": (84, 91), "draft_precompute": (21, 21)})


class DraftConfigs(unittest.TestCase):
    def gen(self, draft):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "draft.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(draft, f)
            return tool("gen_qwen3_dspark_manifest.py", example("tiny-qwen3.config.json"), path,
                        "-o", os.path.join(tmp, "m.json"))

    def test_a_bad_draft_config_is_refused_naming_the_field(self):
        good = {"draft_layers": 1, "target_layer_ids": [0], "block_size": 4, "mask_token_id": 3, "markov_dim": 8}
        self.assertEqual(self.gen(good).returncode, 0)
        for change, message in ((dict(block_size=9), "draft.block_size: expected an integer in [2, 8]"),
                                (dict(target_layer_ids=[0, 2]), "draft.target_layer_ids[1]: expected a target layer in [0, 2)"),
                                (dict(target_layer_ids=[1, 1]), "draft.target_layer_ids[1]: 1 is not greater"),
                                (dict(mask_token_id=256), "draft.mask_token_id: expected an integer in [0, 255]"),
                                (dict(extra=1), "draft.extra: unknown field")):
            proc = self.gen({**good, **change})
            self.assertEqual(proc.returncode, 1, change)
            self.assertIn(message, proc.stderr)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)


class DraftWeights(unittest.TestCase):
    def test_random_weights_with_a_draft_hold_every_manifest_weight_and_the_same_target_values(self):
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        import safetensors_io as st
        doc = load("tiny-qwen3-dspark")
        with tempfile.TemporaryDirectory() as tmp:
            both, target = os.path.join(tmp, "both.safetensors"), os.path.join(tmp, "target.safetensors")
            cfg = example("tiny-qwen3.config.json")
            self.assertEqual(tool("gen_random_weights.py", cfg, "--draft", example("tiny-qwen3-dspark.config.json"),
                                  "-o", both).returncode, 0)
            self.assertEqual(tool("gen_random_weights.py", cfg, "-o", target).returncode, 0)
            with st.SafetensorsFile(both) as b, st.SafetensorsFile(target) as t:
                weights = {n: v for n, v in doc["buffers"].items() if v["class"] == "weight"}
                self.assertEqual(set(b.tensors), set(weights))
                for name, buf in weights.items():
                    self.assertEqual(list(b.tensors[name][:2]), [buf["dtype"].upper(), buf["shape"]], name)
                for name in t.tensors:
                    self.assertEqual(b.read(name), t.read(name), name)


class DraftExport(unittest.TestCase):
    """export_qwen3.py --draft: a synthetic target checkpoint + DFlash draft
    checkpoint + Markov file, made by splitting random target + draft
    weights back into HF / DFlash names, exports to exactly those weights."""

    def test_a_dflash_checkpoint_and_markov_tensors_export_to_the_draft_layout(self):
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import safetensors_io as st
        from qwen3_config import load_config
        from weights_test import hf_tensors, write_file
        cfg = load_config(example("tiny-qwen3.config.json"))
        E, taps = cfg.hidden, 2
        with tempfile.TemporaryDirectory() as tmp:
            ref = os.path.join(tmp, "ref.safetensors")
            self.assertEqual(tool("gen_random_weights.py", example("tiny-qwen3.config.json"), "--draft",
                                  example("tiny-qwen3-dspark.config.json"), "--seed", "9", "-o", ref).returncode, 0)
            target_dir, draft_dir = os.path.join(tmp, "target"), os.path.join(tmp, "draft")
            os.mkdir(target_dir)
            os.mkdir(draft_dir)
            with open(example("tiny-qwen3.config.json"), "rb") as a, \
                    open(os.path.join(target_dir, "config.json"), "wb") as b:
                b.write(a.read())
            with st.SafetensorsFile(ref) as f:
                hf = hf_tensors(st, f, cfg, with_lm_head=False)
                target = {n: t for n, t in hf.items() if not n.startswith("draft.")}
                draft = {n[len("draft."):]: t for n, t in hf.items() if n.startswith("draft.")
                         and not n.startswith(("draft.fc.", "draft.markov_"))}
                blocks = [f.read(f"draft.fc.{j}.weight") for j in range(taps)]
                fc = b"".join(blocks[j][2 * E * r:2 * E * (r + 1)] for r in range(E) for j in range(taps))
                draft["fc.weight"] = ("BF16", [E, taps * E], fc)
                markov = {n[len("draft."):]: t for n, t in hf.items() if n.startswith("draft.markov_")}
            write_file(st, os.path.join(target_dir, "model.safetensors"), target)
            write_file(st, os.path.join(draft_dir, "model.safetensors"), draft)
            markov_file = os.path.join(tmp, "markov.safetensors")
            write_file(st, markov_file, markov)
            out = os.path.join(tmp, "out.safetensors")
            proc = tool("export_qwen3.py", target_dir, "-o", out, "--draft", draft_dir, "--draft-config",
                        example("tiny-qwen3-dspark.config.json"), "--markov", markov_file)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with st.SafetensorsFile(out) as a, st.SafetensorsFile(ref) as b:
                self.assertEqual(list(a.tensors), list(b.tensors))
                for name in b.tensors:
                    self.assertEqual(a.read(name), b.read(name), name)
            # Without the Markov file the tensors are looked up in the draft checkpoint: missing there.
            proc = tool("export_qwen3.py", target_dir, "-o", out, "--draft", draft_dir, "--draft-config",
                        example("tiny-qwen3-dspark.config.json"))
            self.assertEqual(proc.returncode, 1)
            self.assertIn("missing tensor markov_w1.weight", proc.stderr)
            proc = tool("export_qwen3.py", target_dir, "-o", out, "--draft", draft_dir)
            self.assertEqual(proc.returncode, 2)
            self.assertIn("--draft and --draft-config go together", proc.stderr)


if __name__ == "__main__":
    ROOT = sys.argv[1]
    KERN_VERIFY = sys.argv[2] if len(sys.argv) > 2 else None
    unittest.main(argv=sys.argv[:1], verbosity=2)
