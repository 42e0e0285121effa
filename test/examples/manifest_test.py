#!/usr/bin/python3
"""manifest_test.py SOURCE_ROOT SCHEMA_JSON [KERN_VERIFY [KERNELS_DIR]]

Tests of examples/gen_qwen3_manifest.py: the checked-in manifests are exactly
what the generator writes, they satisfy the upstream JSON Schema, they are
internally consistent (arg counts and types), Qwen3-4B has SPEC §7's
dispatch counts and offsets, --kernels-dir pins steps, and kern-verify (when
built) accepts every generated manifest, also when pinned to the CUDA
fatbins the build staged in KERNELS_DIR (when nvcc built them).
"""

import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from json_schema_subset import Validator  # noqa: E402

ROOT = SCHEMA = KERN_VERIFY = KERNELS_DIR = None
MODELS = ("tiny-qwen3", "tiny-qwen3-textvocab", "qwen3-0.6b", "qwen3-4b", "tiny-qwen3-unfused", "qwen3-4b-unfused",
          "tiny-qwen3-dspark", "qwen3-4b-dspark", "tiny-llama", "llama-3.2-1b", "llama-3.1-8b", "tiny-qwen2",
          "tiny-qwen3-moe", "qwen3-30b-a3b")


def gen_args(model):
    """(config.json, extra generator args) of a checked-in manifest: X-unfused
    is X.config.json with `--kernels unfused` (the original decode kernels);
    X-dspark is X.config.json + X-dspark.config.json through
    gen_qwen3_dspark_manifest.py (see gen)."""
    if model.endswith("-unfused"):
        return example(model[:-len("-unfused")] + ".config.json"), ["--kernels", "unfused"]
    if model.endswith("-dspark"):
        return example(model[:-len("-dspark")] + ".config.json"), [example(model + ".config.json")]
    return example(model + ".config.json"), []


def gen(*args, script="gen_qwen3_manifest.py"):
    """Runs a generator; pins only through an explicit --kernels-dir (never
    the default build/kernels a developer's checkout may hold)."""
    pins = [] if "--kernels-dir" in args or "--unpinned" in args else ["--unpinned"]
    return subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", script), *args, *pins],
                          capture_output=True, text=True)


def example(name):
    return os.path.join(ROOT, "examples", name)


PIN_LINES = re.compile(r'^ +"cubin": "[^"]*",\n +"sha256": "[0-9a-f]{64}",\n', re.M)


def strip_pins(text):
    """The manifest text without the generator's `cubin` + `sha256` step lines."""
    return PIN_LINES.sub("", text)


def load(model):
    with open(example(model + ".json"), "r", encoding="utf-8") as f:
        return json.load(f)


class GeneratedManifests(unittest.TestCase):
    def test_regenerating_each_checked_in_manifest_from_its_config_is_byte_identical(self):
        # The checked-in manifests are pinned to the build's CUDA fatbins
        # (--kernels-dir). With the fatbins built, the pinned output must match
        # byte for byte; without nvcc, the plain output must match the
        # checked-in text minus its pin lines (the pins themselves are checked
        # by kernel_pins_test.py, which skips without nvcc).
        with tempfile.TemporaryDirectory() as tmp:
            for model in MODELS:
                out = os.path.join(tmp, model + ".json")
                pinned = bool(KERNELS_DIR) and os.path.isdir(KERNELS_DIR)
                extra = ["--kernels-dir", KERNELS_DIR] if pinned else []
                config, variant = gen_args(model)
                script = "gen_qwen3_dspark_manifest.py" if model.endswith("-dspark") else "gen_qwen3_manifest.py"
                proc = gen(config, *variant, "-o", out, *extra, script=script)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(out, "r", encoding="utf-8") as a, open(example(model + ".json"), "r", encoding="utf-8") as b:
                    want = b.read()
                    self.assertEqual(a.read(), want if pinned else strip_pins(want),
                                     f"{model}.json differs from the generator's output")

    def test_every_checked_in_manifest_pins_every_kernel_step_and_kern_verify_denies_no_warning(self):
        for model in MODELS:
            for kernel in load(model)["kernels"].values():
                for step in kernel["impl"]["steps"]:
                    if step["symbol"].startswith("extern:"):
                        self.assertNotIn("cubin", step)
                    else:
                        self.assertRegex(step.get("cubin", ""), r"^[a-z_]+\.fatbin$", f"{model}: {step['symbol']}")
                        self.assertRegex(step.get("sha256", ""), r"^[0-9a-f]{64}$")
        if not KERN_VERIFY or not os.path.isfile(KERN_VERIFY):
            self.skipTest("kern-verify is not built")
        with tempfile.TemporaryDirectory() as tmp:
            for model in MODELS:
                proc = subprocess.run([KERN_VERIFY, example(model + ".json"), "-o", os.path.join(tmp, model + ".kplan"),
                                       "--deny-warnings"], capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, f"{model}:\n{proc.stdout}{proc.stderr}")

    def test_manifest_text_uses_two_space_indent_and_ends_with_one_newline(self):
        with open(example("tiny-qwen3.json"), "r", encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.endswith("}\n") and not text.endswith("\n\n"))
        self.assertTrue(text.startswith('{\n  "meta": '))

    def test_every_manifest_satisfies_the_upstream_json_schema(self):
        if not os.path.exists(SCHEMA):
            self.skipTest(f"{SCHEMA} not found (shared/ is not beside the checkout)")
        with open(SCHEMA, "r", encoding="utf-8") as f:
            validator = Validator(json.load(f))
        for model in MODELS:
            self.assertEqual(validator.errors(load(model)), [], model)

    def test_the_schema_check_rejects_an_unknown_step_field_and_a_bad_dtype(self):
        if not os.path.exists(SCHEMA):
            self.skipTest(f"{SCHEMA} not found (shared/ is not beside the checkout)")
        with open(SCHEMA, "r", encoding="utf-8") as f:
            validator = Validator(json.load(f))
        doc = load("tiny-qwen3")
        doc["kernels"]["rope"]["impl"]["steps"][0]["grid_x"] = 1
        doc["buffers"]["act"]["dtype"] = "bf17"
        paths = sorted(p for p, _ in validator.errors(doc))
        self.assertEqual(paths, ["/buffers/act/dtype", "/kernels/rope/impl/steps/0/grid_x"])

    def test_dispatch_and_step_args_match_their_params_in_count_and_kind(self):
        for model in MODELS:
            doc = load(model)
            for kname, kernel in doc["kernels"].items():
                params = kernel["params"]
                scratch = kernel["impl"].get("scratch", {})
                for step in kernel["impl"]["steps"]:
                    self.assertEqual(len(step["args"]), len(step["params"]), f"{kname}.{step['symbol']}")
                    for arg, ptype in zip(step["args"], step["params"]):
                        if "arg" in arg:
                            self.assertEqual(params[arg["arg"]], ptype, f"{kname}: forwarded arg type")
                        elif "scratch" in arg:
                            self.assertIn(arg["scratch"], scratch)
                            self.assertTrue(ptype.endswith(f"buffer<{scratch[arg['scratch']]['dtype']}>"))
                        else:
                            self.assertEqual(list(arg), [ptype], f"{kname}: literal type")
            for pname, program in doc["programs"].items():
                for d in program["dispatches"]:
                    params = doc["kernels"][d["kernel"]]["params"]
                    self.assertEqual(len(d["args"]), len(params), d["label"])
                    for arg, ptype in zip(d["args"], params):
                        if "buf" in arg:
                            dtype = doc["buffers"][arg["buf"]]["dtype"]
                            # A buffer goes into its dtype's buffer param, or an untyped ptr (kern_last_row).
                            self.assertTrue(ptype.endswith((f"buffer<{dtype}>", " ptr")), f"{d['label']}: {arg} -> {ptype}")
                        elif "state" in arg:
                            self.assertTrue(ptype.endswith(" ptr"), d["label"])
                        elif "sym" in arg or "expr" in arg:
                            self.assertEqual(ptype, "i32", d["label"])
                        else:
                            self.assertEqual(list(arg), [ptype], d["label"])

    def test_qwen3_4b_has_433_prefill_and_438_decode_dispatches_and_316_buffers(self):
        doc = load("qwen3-4b-unfused")
        self.assertEqual(len(doc["programs"]["prefill"]["dispatches"]), 433)
        self.assertEqual(len(doc["programs"]["decode"]["dispatches"]), 438)  # SPEC §7: 436 + sample + advance
        self.assertEqual(len(doc["buffers"]), 316)  # docs/qwen3-4b-counts.md: SPEC §7 says 310; + 5 sampling inputs
        self.assertEqual(doc["states"]["kv_cache"]["bytes_per_token"], 147456)

    def test_prefill_last_is_prefill_then_the_last_rows_head(self):
        # docs/causal-lm-manifest.md "prefill_last": prefill's dispatches, the last row moved to row 0, the
        # one-row final norm, lm_head + argmax, sampling and advance (num_tokens 1).
        tails = {
            "qwen3-4b": [("last_row.residual", "last_row"), ("last_row.proj_out", "last_row"),
                         ("last_row.positions", "last_row"), ("norm", "add_rmsnorm_last"),
                         ("norm+lm_head+argmax", "lm_head_argmax"), ("sample", "sample_last"),
                         ("advance", "decode_advance")],
            "qwen3-4b-unfused": [("last_row.residual", "last_row"), ("last_row.proj_out", "last_row"),
                                 ("last_row.positions", "last_row"), ("norm", "add_rmsnorm_last"),
                                 ("lm_head", "gemm"), ("argmax", "argmax_last"), ("sample", "sample_last"),
                                 ("advance", "decode_advance")],
            # A sparse last layer added its MLP into `residual`: nothing pending in proj_out.
            "tiny-qwen3-moe": [("last_row.residual", "last_row"), ("last_row.positions", "last_row"),
                               ("norm+lm_head+argmax", "lm_head_argmax"), ("sample", "sample_last"),
                               ("advance", "decode_advance")],
        }
        for model, tail in tails.items():
            with self.subTest(model=model):
                doc = load(model)
                prefill = doc["programs"]["prefill"]["dispatches"]
                last = doc["programs"]["prefill_last"]["dispatches"]
                self.assertEqual(last[:len(prefill)], prefill)
                head = last[len(prefill):]
                self.assertEqual([(d["label"], d["kernel"]) for d in head], tail)
                # Every dispatch of the head counts one row: literal 1, or `tokens` only as the last-row move's rows.
                for d in head:
                    if d["kernel"] == "last_row":
                        self.assertEqual(d["args"][1], {"sym": "tokens"})
                    else:
                        self.assertNotIn({"sym": "tokens"}, d["args"], d["label"])
                for name in {d["kernel"] for d in head} - {"gemm", "lm_head_argmax", "decode_advance"}:
                    for step in doc["kernels"][name]["impl"]["steps"]:
                        self.assertNotIn({"sym": "tokens"}, step["grid"], name)
                self.assertEqual(head[-1]["args"][6], {"i32": 1})
        self.assertEqual(len(load("qwen3-4b")["programs"]["prefill_last"]["dispatches"]), 440)
        # The speculative manifest has none (its first id comes from decode_spec, docs/speculative.md).
        self.assertNotIn("prefill_last", load("qwen3-4b-dspark")["programs"])

    def test_qwen3_4b_fused_decode_is_at_most_5_launches_per_layer_plus_4(self):
        # docs/causal-lm-manifest.md: 36 layers x 5 + embedding + lm_head/argmax + sample + advance = 184 (q/k norm +
        # RoPE + the KV write folded into the attention, docs/kernels.md §13a; the argmax reduced by lm_head's
        # last block, §11).
        doc = load("qwen3-4b")
        unfused = load("qwen3-4b-unfused")
        decode = doc["programs"]["decode"]["dispatches"]
        launches = sum(len(doc["kernels"][d["kernel"]]["impl"]["steps"]) for d in decode)
        self.assertEqual(launches, 184)
        self.assertLessEqual(launches, 5 * 36 + 4)
        # Both decode programs end with the sampling dispatch and the step advance (docs/causal-lm-manifest.md
        # "Who writes what", "Sampling").
        self.assertEqual([d["label"] for d in decode[-2:]], ["sample", "advance"])
        self.assertEqual(unfused["programs"]["decode"]["dispatches"][-2:], decode[-2:])
        for layer in range(36):
            per_layer = [d for d in decode if d["label"].startswith(f"layers.{layer}.")]
            self.assertEqual(sum(len(doc["kernels"][d["kernel"]]["impl"]["steps"]) for d in per_layer), 5)
        old = sum(len(unfused["kernels"][d["kernel"]]["impl"]["steps"]) for d in unfused["programs"]["decode"]["dispatches"])
        self.assertEqual(old, 475)
        # Same weights, same prefill, same buffers: only decode's kernels differ,
        # and the logits rows: at most 8 for the fused lm_head_argmax (decode 1,
        # speculative verify the block), `tokens` for the unfused lm_head GEMM.
        fused_bufs, unfused_bufs = dict(doc["buffers"]), dict(unfused["buffers"])
        self.assertEqual(fused_bufs.pop("logits")["shape"], [8, 151936])
        self.assertEqual(unfused_bufs.pop("logits")["shape"], ["tokens", 151936])
        # The fused manifest also has the batched decode's inputs (docs/batching.md).
        batch_bufs = sorted(n for n in fused_bufs if n.startswith("batch_"))
        self.assertEqual(batch_bufs, ["batch_block_tables", "batch_positions", "batch_seq_lens", "batch_slot_mapping",
                                      "batch_token_ids"])
        for n in batch_bufs:
            fused_bufs.pop(n)
        self.assertEqual(fused_bufs, unfused_bufs)
        self.assertEqual(doc["programs"]["prefill"], unfused["programs"]["prefill"])
        # The fused kernels are marked for programmatic dependent launch; the others are not.
        for name, kernel in doc["kernels"].items():
            for step in kernel["impl"]["steps"]:
                self.assertEqual(step.get("pdl", False), step["symbol"].startswith(("kern_gemv", "kern_qk_norm",
                                                                                      "kern_attention_decode")), name)

    def test_qwen3_4b_views_and_kv_layer_offsets_are_literal_byte_offsets(self):
        doc = load("qwen3-4b-unfused")
        disp = doc["programs"]["decode"]["dispatches"]
        by_label = {d["label"]: d for d in disp}
        self.assertEqual(by_label["layers.0.q_norm"]["args"][0], {"buf": "qkv"})
        self.assertEqual(by_label["layers.0.k_norm"]["args"][0], {"buf": "qkv", "offset": 8192})
        self.assertEqual(by_label["layers.0.kv_cache_write"]["args"][1], {"buf": "qkv", "offset": 10240})
        for layer in (0, 1, 35):
            for what in ("kv_cache_write", "attention"):
                arg = [a for a in by_label[f"layers.{layer}.{what}"]["args"] if "state" in a][0]
                self.assertEqual(arg, {"state": "kv_cache", "offset": layer * 16 * 8 * 2 * 128 * 2})
        self.assertEqual(by_label["layers.3.attention"]["args"][12], {"i64": 36 * 16 * 8 * 2 * 128})
        self.assertEqual([d["label"] for d in disp[-5:]], ["norm", "lm_head", "argmax", "sample", "advance"])
        # The step advance (docs/causal-lm-manifest.md "Who writes what"): next_token feeds the carries.
        self.assertEqual(disp[-1]["args"], [{"buf": "next_token"}, {"buf": "block_table"}, {"buf": "token_ids"},
                                            {"buf": "positions"}, {"buf": "slot_mapping"}, {"buf": "seq_lens"},
                                            {"sym": "tokens"}, {"i32": 2560}, {"i32": 16}])
        for name in ("token_ids", "positions", "slot_mapping", "seq_lens"):
            self.assertEqual(doc["buffers"][name]["class"], "carry", name)
        for name in ("cu_seqlens_q", "block_table"):
            self.assertEqual(doc["buffers"][name]["class"], "input", name)
        self.assertNotIn("advance", [d["label"] for d in doc["programs"]["prefill"]["dispatches"]])
        self.assertEqual(by_label["layers.0.rope"]["args"][-1], {"u8": 1})

    def test_fused_qk_separate_keeps_the_6_launch_layer_and_the_same_weights(self):
        # --kernels fused-qk-separate (A/B, docs/causal-lm-manifest.md): qk_norm_rope_cache then the attention
        # reading q_normed, in decode and decode_batch; the default folds them (docs/kernels.md §13a, §15a).
        with tempfile.TemporaryDirectory() as tmp:
            out = {}
            for kset in ("fused", "fused-qk-separate"):
                path = os.path.join(tmp, kset + ".json")
                proc = gen(example("tiny-qwen3.config.json"), "-o", path, "--kernels", kset)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(path, "r", encoding="utf-8") as f:
                    out[kset] = json.load(f)
        folded, separate = out["fused"], out["fused-qk-separate"]
        self.assertEqual(folded["buffers"], separate["buffers"])
        self.assertEqual(folded["programs"]["prefill"], separate["programs"]["prefill"])
        for prog, attn, qk in (("decode", "attention_decode_fused", "qk_norm_rope_cache"),
                               ("decode_batch", "attention_decode_batch", "qk_norm_rope_cache_batch")):
            f = [d["kernel"] for d in folded["programs"][prog]["dispatches"]]
            s = [d["kernel"] for d in separate["programs"][prog]["dispatches"]]
            self.assertEqual(len(s), len(f) + 2, prog)  # 2 layers, one launch more each
            self.assertEqual((s.count(qk), s.count(attn)), (2, 2), prog)
            self.assertNotIn(qk, f)
            self.assertNotIn(attn, f)
            self.assertNotIn(attn, folded["kernels"])  # kern-verify refuses unused kernels
        self.assertNotIn("attention_decode_qkv", separate["kernels"])
        self.assertNotIn("attention_decode_batch_qkv", separate["kernels"])
        # The folded layer's attention reads the raw qkv rows and writes the layer's cache region.
        qkv = [d for d in folded["programs"]["decode"]["dispatches"] if d["kernel"] == "attention_decode_qkv"]
        self.assertEqual([d["label"] for d in qkv], ["layers.0.qk_norm+rope+kv_cache_write+attention",
                                                     "layers.1.qk_norm+rope+kv_cache_write+attention"])
        self.assertEqual(qkv[1]["args"][0], {"buf": "qkv"})
        self.assertEqual(qkv[1]["args"][4], {"state": "kv_cache", "offset": 16 * 2 * 2 * 16 * 2})
        self.assertEqual(qkv[1]["args"][-1], {"u8": 1})

    def test_tokens_max_sets_the_symbol_bound(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.json")
            self.assertEqual(gen(example("tiny-qwen3.config.json"), "-o", out, "--tokens-max", "64").returncode, 0)
            with open(out, "r", encoding="utf-8") as f:
                self.assertEqual(json.load(f)["symbols"]["tokens"], {"min": 1, "max": 64})

    def test_a_config_that_is_not_qwen3_is_refused_with_a_message(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(example("tiny-qwen3.config.json"), "r", encoding="utf-8") as f:
                cfg = json.load(f)
            cfg["model_type"] = "llama"
            bad = os.path.join(tmp, "config.json")
            with open(bad, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            proc = gen(bad, "-o", os.path.join(tmp, "m.json"))
            self.assertEqual(proc.returncode, 1)
            self.assertIn("model_type", proc.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "m.json")))

    def test_kernels_dir_pins_every_non_extern_step_to_its_file_and_sha256(self):
        doc = load("tiny-qwen3")
        symbols = sorted({s["symbol"] for k in doc["kernels"].values() for s in k["impl"]["steps"]
                          if not s["symbol"].startswith("extern:")})
        with tempfile.TemporaryDirectory() as tmp:
            kdir = os.path.join(tmp, "kernels")
            os.mkdir(kdir)
            files = {}
            for i, sym in enumerate(symbols):  # two symbols per fake fatbin, like a kernel family
                name = f"family{i // 2}.fatbin"
                files.setdefault(name, b"\x7fELF fake")
                files[name] += b"\0" + sym.encode() + b"\0"
            for name, data in files.items():
                with open(os.path.join(kdir, name), "wb") as f:
                    f.write(data)
            out = os.path.join(tmp, "m.json")
            proc = gen(example("tiny-qwen3.config.json"), "-o", out, "--kernels-dir", kdir)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, "r", encoding="utf-8") as f:
                pinned = json.load(f)
            for kernel in pinned["kernels"].values():
                for step in kernel["impl"]["steps"]:
                    if step["symbol"].startswith("extern:"):
                        self.assertNotIn("cubin", step)
                        continue
                    self.assertEqual(list(step)[:3], ["symbol", "cubin", "sha256"])
                    self.assertIn(b"\0" + step["symbol"].encode() + b"\0", files[step["cubin"]])
                    self.assertEqual(step["sha256"], hashlib.sha256(files[step["cubin"]]).hexdigest())
            # Without the pins the document is the plain manifest.
            for d in (pinned, doc):
                for kernel in d["kernels"].values():
                    for step in kernel["impl"]["steps"]:
                        step.pop("cubin", None)
                        step.pop("sha256", None)
            self.assertEqual(pinned, doc)
            os.remove(os.path.join(kdir, "family0.fatbin"))
            proc = gen(example("tiny-qwen3.config.json"), "-o", out, "--kernels-dir", kdir)
            self.assertEqual(proc.returncode, 1)
            self.assertIn(symbols[0], proc.stderr)

    def test_without_kernels_dir_the_generators_pin_to_the_repositorys_build_kernels_or_say_where_they_looked(self):
        # A copy of examples/ and provider/ in a fresh "repository" (issue 25: a
        # quiet happy path): with <repo>/build/kernels the default pins; without
        # it, one note names the directory and no step is pinned.
        symbols = sorted({s["symbol"] for model in ("tiny-qwen3", "tiny-qwen3-dspark")
                          for k in load(model)["kernels"].values() for s in k["impl"]["steps"]
                          if not s["symbol"].startswith("extern:")})
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "repo")
            for folder in ("examples", "provider"):
                shutil.copytree(os.path.join(ROOT, folder), os.path.join(repo, folder),
                                ignore=shutil.ignore_patterns("*.safetensors", "__pycache__"))
            kdir = os.path.join(repo, "build", "kernels")
            os.makedirs(kdir)
            for sym in symbols:  # `<symbol>.fatbin` wins the symbol's lookup
                with open(os.path.join(kdir, sym + ".fatbin"), "wb") as f:
                    f.write(b"fake " + sym.encode())
            config = os.path.join(repo, "examples", "tiny-qwen3.config.json")
            for script, extra in (("gen_qwen3_manifest.py", []),
                                  ("gen_qwen3_dspark_manifest.py", [os.path.join(repo, "examples",
                                                                                 "tiny-qwen3-dspark.config.json")])):
                tool = os.path.join(repo, "examples", script)
                out = os.path.join(tmp, "m.json")
                proc = subprocess.run(["/usr/bin/python3", tool, config, *extra, "-o", out],
                                      capture_output=True, text=True)
                self.assertEqual((proc.returncode, proc.stderr), (0, ""))
                with open(out, encoding="utf-8") as f:
                    steps = [s for k in json.load(f)["kernels"].values() for s in k["impl"]["steps"]
                             if not s["symbol"].startswith("extern:")]
                self.assertTrue(steps)
                for step in steps:
                    self.assertEqual(step["cubin"], step["symbol"] + ".fatbin")
                proc = subprocess.run(["/usr/bin/python3", tool, config, *extra, "-o", out, "--unpinned"],
                                      capture_output=True, text=True)
                self.assertEqual((proc.returncode, proc.stderr), (0, ""))
                with open(out, encoding="utf-8") as f:
                    self.assertNotIn('"cubin"', f.read())
            shutil.rmtree(os.path.join(repo, "build"))
            tool = os.path.join(repo, "examples", "gen_qwen3_manifest.py")
            proc = subprocess.run(["/usr/bin/python3", tool, config, "-o", out], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stderr, f"gen_qwen3_manifest: note: steps not pinned: no --kernels-dir, and {kdir} "
                                          "does not exist (build kern with nvcc to stage the fatbins there, or pass "
                                          "--kernels-dir DIR; --unpinned says this is intended)\n")
            with open(out, encoding="utf-8") as f:
                self.assertNotIn('"cubin"', f.read())
            proc = subprocess.run(["/usr/bin/python3", tool, config, "-o", out, "--unpinned", "--kernels-dir", tmp],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 2)
            self.assertIn("not allowed with argument", proc.stderr)

    def test_kern_verify_accepts_every_generated_manifest(self):
        if not KERN_VERIFY or not os.path.isfile(KERN_VERIFY):
            self.skipTest("kern-verify is not built")
        with tempfile.TemporaryDirectory() as tmp:
            for model in MODELS:
                proc = subprocess.run([KERN_VERIFY, example(model + ".json"), "-o", os.path.join(tmp, model + ".kplan")],
                                      capture_output=True, text=True)
                self.assertEqual(proc.returncode, 0, f"{model}:\n{proc.stdout}{proc.stderr}")

    def test_pinning_to_the_built_cuda_fatbins_covers_every_step_and_kern_verify_accepts_it(self):
        if not KERNELS_DIR or not os.path.isdir(KERNELS_DIR):
            self.skipTest("no CUDA kernels were built (nvcc not found)")
        if not KERN_VERIFY or not os.path.isfile(KERN_VERIFY):
            self.skipTest("kern-verify is not built")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "pinned.json")
            proc = gen(example("qwen3-4b.config.json"), "-o", out, "--kernels-dir", KERNELS_DIR)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, "r", encoding="utf-8") as f:
                doc = json.load(f)
            for kernel in doc["kernels"].values():
                for step in kernel["impl"]["steps"]:
                    if step["symbol"].startswith("extern:"):
                        continue
                    with open(os.path.join(KERNELS_DIR, step["cubin"]), "rb") as f:
                        self.assertEqual(step["sha256"], hashlib.sha256(f.read()).hexdigest())
            proc = subprocess.run([KERN_VERIFY, out, "-o", os.path.join(tmp, "pinned.kplan"), "--deny-warnings"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_kern_verify_rejects_a_manifest_whose_dispatch_lost_an_arg(self):
        if not KERN_VERIFY or not os.path.isfile(KERN_VERIFY):
            self.skipTest("kern-verify is not built")
        doc = copy.deepcopy(load("tiny-qwen3"))
        doc["programs"]["decode"]["dispatches"][1]["args"].pop()
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "bad.json")
            with open(src, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            proc = subprocess.run([KERN_VERIFY, src, "-o", os.path.join(tmp, "bad.kplan")], capture_output=True, text=True)
            self.assertNotEqual(proc.returncode, 0)


    def test_max_batch_adds_decode_batch_and_leaves_the_batch_1_programs_byte_identical(self):
        # docs/batching.md: decode_batch over `batch` sequences (symbol max =
        # --max-batch), its batch_* buffers; prefill and decode unchanged.
        with tempfile.TemporaryDirectory() as tmp:
            docs = {}
            for n in ("0", "3", "8"):
                out = os.path.join(tmp, n + ".json")
                proc = gen(example("tiny-qwen3.config.json"), "-o", out, "--max-batch", n)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(out, "r", encoding="utf-8") as f:
                    docs[n] = json.load(f)
            self.assertNotIn("decode_batch", docs["0"]["programs"])
            self.assertNotIn("batch", docs["0"]["symbols"])
            self.assertEqual(docs["3"]["symbols"]["batch"], {"min": 1, "max": 3})
            self.assertEqual(docs["8"]["symbols"]["batch"], {"min": 1, "max": 8})
            for n in ("3", "8"):
                for prog in ("prefill", "decode"):
                    self.assertEqual(docs[n]["programs"][prog], docs["0"]["programs"][prog])
                d = docs[n]["programs"]["decode_batch"]["dispatches"]
                self.assertEqual([x["kernel"] for x in d[:1] + d[-3:]],
                                 ["embedding_batch", "lm_head_argmax_batch", "sample_batch", "decode_advance_batch"])
                # decode's dispatches, one for one: the sampling over the `batch` rows, counted by their own
                # positions, with decode's inputs and histogram (8 rows: every batch row has its own)
                self.assertEqual(len(d), len(docs[n]["programs"]["decode"]["dispatches"]))
                sample = d[-2]["args"]
                self.assertEqual(sample[:7], docs[n]["programs"]["decode"]["dispatches"][-2]["args"][:7])
                self.assertEqual(sample[7:10], [{"buf": "batch_positions"}, {"state": "sample_histogram", "offset": 0},
                                                {"sym": "batch"}])
                self.assertEqual(sample[-1], {"i32": 8})
                step = docs[n]["kernels"]["sample_batch"]["impl"]["steps"][0]
                self.assertEqual((step["symbol"], step["grid"]), ("kern_sample_bf16", [{"sym": "batch"}, 1, 1]))
                # q/k norm + RoPE + the KV write folded into the per-sequence attention (docs/kernels.md §15a).
                attn = [x for x in d if x["kernel"] == "attention_decode_batch_qkv"]
                self.assertEqual(len(attn), 2)  # one per layer
                self.assertEqual(attn[0]["args"][5:7], [{"buf": "batch_block_tables"}, {"buf": "batch_seq_lens"}])
                self.assertEqual(attn[0]["args"][11], {"sym": "batch"})
                self.assertEqual(len(d), 1 + 2 * 5 + 3)  # embedding, 5 a layer, lm_head, sample, advance
                self.assertEqual(docs[n]["buffers"]["batch_block_tables"]["shape"], ["batch", 64])
            for bad in ("9", "-1"):
                proc = gen(example("tiny-qwen3.config.json"), "-o", os.path.join(tmp, "x.json"), "--max-batch", bad)
                self.assertEqual(proc.returncode, 2)
                self.assertIn("--max-batch must be from 0 to 8", proc.stderr)


if __name__ == "__main__":
    ROOT, SCHEMA = sys.argv[1], sys.argv[2]
    KERN_VERIFY = sys.argv[3] if len(sys.argv) > 3 else None
    KERNELS_DIR = sys.argv[4] if len(sys.argv) > 4 else None
    unittest.main(argv=sys.argv[:1], verbosity=2)
