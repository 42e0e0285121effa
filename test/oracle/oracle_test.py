#!/usr/bin/python3
"""oracle_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN

End-to-end check of kern against llama.cpp (oracles.md), on the tiny Qwen3
(examples/tiny-qwen3.*) and kern-run's cpu reference device:
1. kern-verify compiles examples/tiny-qwen3.json to a plan;
2. for prompt lengths 1, 15, 16, 17, 40 (oracle_lib.prompt_ids) and chunk
   sizes 1, 4, 16, kern-run generates 24 ids greedily and dumps the `logits`
   buffer (bf16 [1, V]: the step that produced the last id);
3. each run is judged by oracle_lib.compare against llama.cpp teacher-forced
   on kern's ids (the rule and the tolerance, 3% of the logit spread, are
   derived in oracle_lib.py), and must be discriminating (at least half of
   the ids differ from their predecessor);
4. teeth: two mutated manifests must FAIL the comparison for every prompt:
   RoPE switched to interleaved (the one `u8` literal, rope's is_neox,
   1 -> 0), and layer 1's attention reading layer 0's KV cache region (its
   literal state offset set to 0: a per-layer offset bug).

Exit 77 (skipped) only when KERN_RUN is empty or not a built file; a missing
oracle install (scripts/setup.sh) is a failure.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "provider"))

import oracle_lib as ol  # noqa: E402
from qwen3_config import load_config  # noqa: E402

CHUNKS = (1, 4, 16)


def flip_rope_to_interleaved(manifest_text):
    """The manifest with the is_neox literal of every rope dispatch (and of
    the fused decode's qk_norm_rope_cache, docs/kernels.md §12, or the
    attentions that fold it in, §13a / §15a) set to 0."""
    doc = json.loads(manifest_text)
    flipped = 0
    for program in doc["programs"].values():
        for d in program["dispatches"]:
            if d["kernel"] in ("rope", "qk_norm_rope_cache", "attention_decode_qkv", "attention_decode_batch_qkv"):
                assert d["args"][-1] == {"u8": 1}, d["args"][-1]
                d["args"][-1] = {"u8": 0}
                flipped += 1
    assert flipped > 0, "no rope dispatch found"
    return json.dumps(doc, indent=1)


def share_layer0_kv_region(manifest_text):
    """The manifest with layers.1.attention (in the fused decodes, the
    attention that also writes the step's k / v, docs/kernels.md §13a) on
    layer 0's KV region."""
    doc = json.loads(manifest_text)
    moved = 0
    for program in doc["programs"].values():
        for d in program["dispatches"]:
            if d["label"] in ("layers.1.attention", "layers.1.qk_norm+rope+kv_cache_write+attention"):
                at = [i for i, a in enumerate(d["args"]) if isinstance(a, dict) and a.get("state") == "kv_cache"]
                assert len(at) == 1 and d["args"][at[0]]["offset"] > 0, d["args"]
                d["args"][at[0]] = {"state": "kv_cache", "offset": 0}
                moved += 1
    # prefill, decode, prefill_last and (fused manifests) decode_batch.
    assert moved == len([p for p in ("prefill", "decode", "prefill_last", "decode_batch") if p in doc["programs"]]), \
        "expected layers.1.attention in prefill, decode, prefill_last and decode_batch"
    return json.dumps(doc, indent=1)


MUTANTS = (("interleaved RoPE", flip_rope_to_interleaved), ("layer 1 reads layer 0's KV", share_layer0_kv_region))


LOGITS_ROWS = 8  # logits [8, V]: the most rows lm_head_argmax takes; decode writes row 0


def bf16_file_to_f32(path, vocab):
    """Row 0 of the dumped logits buffer (decode's one row) as float64."""
    raw = np.fromfile(path, dtype="<u2")
    if raw.size != LOGITS_ROWS * vocab:
        raise RuntimeError(f"{path}: {raw.size} bf16 values, expected {LOGITS_ROWS * vocab} (logits [8, V])")
    return (raw[:vocab].astype(np.uint32) << 16).view(np.float32).astype(np.float64)


class KernRun:
    def __init__(self, exe, weights, vocab, work):
        self.exe, self.weights, self.vocab, self.work = exe, weights, vocab, work

    def greedy(self, plan, prompt, chunk):
        dump = os.path.join(self.work, "logits.bin")
        if os.path.exists(dump):
            os.remove(dump)
        cmd = [self.exe, plan, "--weights", self.weights, "--prompt-ids", ",".join(map(str, prompt)),
               "--steps", str(ol.STEPS), "--chunk", str(chunk), "--device", "cpu", "--json",
               "--dump-buffer", f"logits={dump}",
               "--ignore-eos"]  # llama.cpp's decode loop runs all STEPS; a model folder's end ids would stop kern
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"kern-run exited {proc.returncode}: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
        if not lines:
            raise RuntimeError(f"kern-run printed no JSON object:\n{proc.stdout}")
        result = json.loads(lines[-1])
        if result.get("prompt_ids") != prompt:
            raise RuntimeError(f"kern-run echoed prompt_ids {result.get('prompt_ids')}, expected {prompt}")
        ids = result["generated_ids"]
        if len(ids) != ol.STEPS:
            raise RuntimeError(f"kern-run generated {len(ids)} ids, expected {ol.STEPS}")
        return ids, bf16_file_to_f32(dump, self.vocab)


def main(argv):
    if len(argv) != 4:
        print("usage: oracle_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN")
        return 1
    root, kern_verify, kern_run = argv[1:]
    if not kern_run or not os.path.isfile(kern_run):
        print(f"SKIP: kern-run is not built ({kern_run or 'no target'})")
        return 77
    examples = os.path.join(root, "examples")
    config_path = os.path.join(examples, "tiny-qwen3.config.json")
    weights_path = os.path.join(examples, "tiny-qwen3.safetensors")
    cfg = load_config(config_path)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        try:
            oracle = ol.Oracle(root, work)
        except ol.OracleSetupError as e:
            print(f"FAIL: {e}")
            return 1
        oracle.load(config_path, weights_path, cfg.vocab)
        plans = {}
        with open(os.path.join(examples, "tiny-qwen3.json"), "r", encoding="utf-8") as f:
            text = f.read()
        for name, manifest in [("correct", text)] + [(m, mutate(text)) for m, mutate in MUTANTS]:
            src = os.path.join(work, f"{name}.json")
            with open(src, "w", encoding="utf-8") as f:
                f.write(manifest)
            plans[name] = os.path.join(work, f"{name}.kplan")
            proc = subprocess.run([kern_verify, src, "-o", plans[name]], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"FAIL: kern-verify rejected the {name} manifest:\n{proc.stdout}{proc.stderr}")
                return 1
        runner = KernRun(kern_run, weights_path, cfg.vocab, work)
        oracle_rows = {}

        def judge(prompt, ids, last):
            key = tuple(ids)
            if key not in oracle_rows:
                oracle_rows[key] = oracle.run(prompt, ol.STEPS, forced=ids)[1]
            return ol.compare(prompt, ids, last, oracle_rows[key])

        for n in ol.PROMPT_LENGTHS:
            prompt = ol.prompt_ids(n, cfg.vocab)
            oracle_rows.clear()
            for chunk in CHUNKS:
                ids, last = runner.greedy(plans["correct"], prompt, chunk)
                ok, report = judge(prompt, ids, last)
                print(f"prompt length {n}, chunk {chunk}: {'agrees' if ok else 'DISAGREES'} with llama.cpp")
                print(f"  kern ids: {ids}")
                for line in report:
                    print("  " + line)
                if not ok:
                    failures.append(f"prompt length {n}, chunk {chunk}: kern disagrees with llama.cpp")
                if ol.changes(prompt, ids) * 2 < len(ids):
                    failures.append(f"prompt length {n}, chunk {chunk}: sequence not discriminating: {ids}")
            for mutant, _ in MUTANTS:
                ids, last = runner.greedy(plans[mutant], prompt, 16)
                ok, report = judge(prompt, ids, last)
                print(f"prompt length {n}, {mutant}: {'ACCEPTED' if ok else 'rejected, as it must be'}")
                for line in (report[:1] if len(report) > 2 else []) + report[-2:]:
                    print("  " + line)
                if ok:
                    failures.append(f"prompt length {n}: the mutant '{mutant}' passes the comparison: no teeth")
    for f in failures:
        print("FAIL: " + f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
