#!/usr/bin/python3
"""oracle_moe_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN

kern against llama.cpp (oracles.md) for Qwen3-MoE (issue 41): random-weight
HF checkpoints of odd shapes (experts 5 and 6, top-k 1 and 2, one and two
layers, tied and untied embeddings) go through convert_hf.py and `kern-run
MODEL_DIR` on the cpu device; the 24 greedy ids from a 17-token prompt, at
prefill chunks 1, 5 and 17, must agree with llama.cpp's `qwen3moe` on the
same weights (gguf_from_exported.py) up to near-ties of the final logits
(oracle_lib.compare, teacher forcing). A flip in the router's top-k is not
excused: it shows as a final-logit difference, and passes only where that
difference is itself within the near-tie rule. llama.cpp's qwen3moe makes
every layer sparse and always renormalises the top-k weights, so the shapes
have mlp_only_layers [] and norm_topk_prob true (the dense layers and the
unnormalised weights are checked by the tests in test/examples and
test/kernels). Teeth: the same plan with the renormalisation switched off
(the router's u8 param 0) must disagree. Exit 77 when kern-run is not built.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_families_test as of  # noqa: E402  (run_shape, the path setup)
import oracle_lib as ol  # noqa: E402
import oracle_test  # noqa: E402  (KernRun)


def moe_shapes(base):
    """(name, config) of the odd shapes, from the tiny Qwen3-MoE's config."""
    def cfg(**change):
        out = {**base, "mlp_only_layers": [], "norm_topk_prob": True}
        out.update(change)
        return out
    return [
        ("qwen3moe 6 experts top-2, 2 layers, tied", cfg(num_hidden_layers=2)),
        ("qwen3moe 5 experts top-1, 1 layer, untied",
         cfg(num_experts=5, num_experts_per_tok=1, num_hidden_layers=1, tie_word_embeddings=False)),
        ("qwen3moe 5 experts top-2, 2 layers, untied",
         cfg(num_experts=5, num_experts_per_tok=2, num_hidden_layers=2, tie_word_embeddings=False)),
        ("qwen3moe 6 experts top-1, 1 layer, tied", cfg(num_experts_per_tok=1, num_hidden_layers=1)),
    ]


def norm_teeth(kern_verify, kern_run, oracle, name, work, prompt):
    """The converted model's manifest with norm_topk_prob off (every router
    dispatch's u8 0) must disagree with llama.cpp: the comparison sees the
    expert weights."""
    model = os.path.join(work, "model")
    with open(os.path.join(model, "manifest.json"), encoding="utf-8") as f:
        doc = json.load(f)
    for program in doc["programs"].values():
        for d in program["dispatches"]:
            if d["kernel"].startswith("moe_router"):
                d["args"][-1] = {"u8": 0}
    manifest = os.path.join(work, "no-norm.json")
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    plan = os.path.join(work, "no-norm.kplan")
    subprocess.run([kern_verify, manifest, "-o", plan], check=True, capture_output=True)
    runner = oracle_test.KernRun(kern_run, os.path.join(model, "weights.safetensors"), oracle.vocab, work)
    ids, last = runner.greedy(plan, prompt, 17)
    ok, report = ol.compare(prompt, ids, last, oracle.run(prompt, ol.STEPS, forced=ids)[1])
    print(f"{name}, kern without norm_topk_prob: {'ACCEPTED' if ok else 'rejected, as it must be'}")
    for line in report[-2:]:
        print("  " + line)
    return [f"{name}: kern without norm_topk_prob passes the comparison: no teeth"] if ok else []


def main(argv):
    if len(argv) != 4:
        print("usage: oracle_moe_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN")
        return 1
    root, kern_verify, kern_run = argv[1:]
    if not kern_run or not os.path.isfile(kern_run):
        print(f"SKIP: kern-run is not built ({kern_run or 'no target'})")
        return 77
    with open(os.path.join(root, "examples", "tiny-qwen3-moe.config.json"), encoding="utf-8") as f:
        base = json.load(f)
    failures = []
    with tempfile.TemporaryDirectory() as top:
        try:
            oracle = ol.Oracle(root, top)
        except ol.OracleSetupError as e:
            print(f"FAIL: {e}")
            return 1
        for i, (name, config) in enumerate(moe_shapes(base)):
            work = os.path.join(top, f"shape{i}")
            os.makedirs(work)
            failures += of.run_shape(root, kern_verify, kern_run, oracle, name, config, work)
            if config["num_experts_per_tok"] > 1:
                failures += norm_teeth(kern_verify, kern_run, oracle, name, work,
                                       ol.prompt_ids(of.PROMPT_LENGTH, oracle.vocab))
    for f in failures:
        print("FAIL: " + f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
