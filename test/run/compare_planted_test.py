#!/usr/bin/python3
"""compare_planted_test.py KERN_RUN KERN_VERIFY SOURCE_ROOT TINY_PLAN TINY_UNFUSED_PLAN H80_PLAN H80_UNFUSED_PLAN
DSPARK_PLAN

kern-run compare's verdict by the span replay measure (docs/compare.md "The
replay measure"), end to end on the cpu device:
- planted errors in one decode dispatch (test/run/compare_plant.py: a wrong
  RMSNorm eps, a wrong RoPE theta, a dropped residual add, a k head shifted
  by one, a V scale off by 1 %) FAIL (exit 1) at --steps 8 and 24, naming
  the planted span by its dispatch labels in the text report and verbatim in
  --json, also where every step's argmax agrees and KL stays under 0.01;
- a softmax scale off by 1 % (under a bf16 ulp in the output) PASSes at
  --steps 8 and is INCONCLUSIVE (exit 3) at 32: a consistent bias the
  measure sees but cannot call systematic;
- pairs that must pass: fused against unfused at 32 steps, the odd shape
  hidden 80 / q 64 (random weights) whose two sides part at a one-ulp
  near-tie (PASS, the near-tie counted in near_ties), and the DSpark plan
  against the plain one.
Standard library only. Exit 0 when every check passes, 1 otherwise.
"""

import json
import os
import subprocess
import sys
import tempfile

PROMPT = "1,17,42,99,3,250,7"


def main(argv):
    with tempfile.TemporaryDirectory(prefix="kern-compare-planted-") as tmp:
        return checks(argv, tmp)


def checks(argv, tmp):
    run, verify, src, tiny, unfused, h80, h80_unfused, dspark = argv[1:9]
    plant_py = os.path.join(src, "test", "run", "compare_plant.py")
    weights = os.path.join(src, "examples", "tiny-qwen3.safetensors")
    fused_json = os.path.join(src, "examples", "tiny-qwen3.json")
    unfused_json = os.path.join(src, "examples", "tiny-qwen3-unfused.json")
    failures = []

    def check(ok, what):
        print(("ok: " if ok else "FAIL: ") + what, flush=True)
        if not ok:
            failures.append(what)

    def plant(kind, label, manifest):
        out = os.path.join(tmp, kind + ".json")
        cmd = [sys.executable, plant_py, kind, label, manifest, "-o", out]
        w = weights
        if kind in ("theta", "vscale"):
            w = os.path.join(tmp, kind + ".safetensors")
            cmd += ["--weights", weights, "--weights-out", w]
        subprocess.run(cmd, check=True)
        plan = os.path.join(tmp, kind + ".kplan")
        subprocess.run([verify, out, "-o", plan], check=True, capture_output=True)
        return plan, w

    def compare(a, b, w, steps, *extra, json_out=True):
        cmd = [run, "compare", a, b, "--prompt-ids", PROMPT, "--steps", str(steps), "--chunk", "4", *extra]
        cmd += ["--weights", w] if w else []
        cmd += ["--json"] if json_out else []
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        doc = json.loads(p.stdout) if json_out and p.stdout.strip() else None
        return p, doc

    # (kind, planted dispatch, manifest planted, A's plan, the region the measure names, KL small and no flip)
    cases = [
        ("eps", "layers.0.post_attention_layernorm+gate_up_proj+silu_and_mul", fused_json, tiny, "buffer 'act'", True),
        ("theta", "layers.0.qk_norm+rope+kv_cache_write+attention", fused_json, unfused, None, False),
        ("residual", "layers.0.post_attention_layernorm", unfused_json, tiny, "buffer 'act'", False),
        ("head", "layers.1.k_norm", unfused_json, tiny, None, False),
        ("vscale", "layers.1.qk_norm+rope+kv_cache_write+attention", fused_json, tiny, "buffer 'attn_out'", True),
    ]
    for kind, label, manifest, a, region, quiet in cases:
        b, w = plant(kind, label, manifest)
        for steps in (8, 24):
            name = f"{kind} at {label}, --steps {steps}"
            p, doc = compare(a, b, w, steps)
            check(p.returncode == 1, f"{name}: exit 1 (got {p.returncode}: {p.stderr.strip()[-300:]})")
            if doc is None:
                continue
            bad = doc["first_bad_span"] or {}
            check(bad.get("by") == "replay measure" and bad.get("program") == "decode" and label in bad.get("b_labels", []),
                  f"{name}: the replay measure names the decode span of {label} (got {bad})")
            check(region is None or bad.get("region") == region, f"{name}: region {region} (got {bad.get('region')})")
            check(all(x in doc["reason"] for x in bad.get("a_labels", []) + bad.get("b_labels", [])),
                  f"{name}: the reason names every label of the span ({doc['reason'][:200]})")
            if quiet and steps == 8:
                check(doc["max_kl"] < 0.01 and doc["flips"] == 0,
                      f"{name}: a case KL misses (max KL {doc['max_kl']:.3g} < 0.01, {doc['flips']} flips)")
            if steps == 8:
                t, _ = compare(a, b, w, steps, json_out=False)
                verdict = [ln for ln in t.stdout.splitlines() if ln.startswith("verdict: ")]
                check(t.returncode == 1 and verdict and verdict[0].startswith("verdict: FAIL: span replay: decode span")
                      and label in verdict[0] and "first span the replay measure calls systematic" in t.stdout,
                      f"{name}: the text report names the span ({verdict})")

    # Under a bf16 ulp: the softmax scale 1 % off moves the attention output by ~0.4 %.
    b, w = plant("scale", "layers.1.qk_norm+rope+kv_cache_write+attention", fused_json)
    p, doc = compare(tiny, b, w, 8)
    check(p.returncode == 0 and doc["verdict"] == "PASS",
          f"softmax scale +1 %, --steps 8: PASS, below what 8 steps resolve (got {p.returncode})")
    p, doc = compare(tiny, b, w, 32)
    bad = (doc or {}).get("first_bad_span") or {}
    check(p.returncode == 3 and "layers.1.qk_norm+rope+kv_cache_write+attention" in bad.get("b_labels", [])
          and bad.get("measure", {}).get("class") == "unclear",
          f"softmax scale +1 %, --steps 32: INCONCLUSIVE at the span, a bias too small to call (got {p.returncode}, {bad})")

    # Pairs that must pass.
    p, doc = compare(tiny, unfused, weights, 32)
    check(p.returncode == 0 and all(s["replay_class"] == "rounding" for s in doc["spans"]),
          f"tiny fused vs unfused, --steps 32: PASS, every span rounding (got {p.returncode}: {(doc or {}).get('reason')})")
    p, doc = compare(h80, h80_unfused, None, 8, "--random-weights", "27")
    check(p.returncode == 0 and doc["near_ties"] >= 1 and any(
        s["logits"]["flip"] and s["logits"]["near_tie"] for s in doc["steps"]),
          f"hidden 80 / q 64 fused vs unfused (seed 27): PASS with the one-ulp near-tie in near_ties "
          f"(got {p.returncode}, near_ties {(doc or {}).get('near_ties')}; if the kernels changed, pick a seed "
          f"whose sides part at a near-tie)")
    draft_w = os.path.join(tmp, "dspark.safetensors")
    subprocess.run([sys.executable, os.path.join(src, "examples", "gen_random_weights.py"),
                    os.path.join(src, "examples", "tiny-qwen3.config.json"), "--draft",
                    os.path.join(src, "examples", "tiny-qwen3-dspark.config.json"), "-o", draft_w, "--seed", "5"],
                   check=True, capture_output=True)
    p, doc = compare(dspark, unfused, draft_w, 8)
    check(p.returncode == 0, f"the DSpark plan vs the plain unfused plan: PASS (got {p.returncode}: "
                             f"{(doc or {}).get('reason')})")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
