#!/usr/bin/python3
"""spec_reference_test.py SOURCE_ROOT KERN_RUN SPEC_PLAN

The draft math of `kern-run --spec` (cpu device) against an independent
numpy reference (dspark_reference.py) reading the same exported weights:
for several prompts (context lengths) and step counts (anchors), kern-run's
last draft round (`--dump-buffer draft_logits=`, `draft_tokens=`) must agree
with the reference's round at the same anchor:

  tolerance: |kern - reference| <= 0.03 * max|reference| per logit row, and
  the drafted ids equal unless the reference's top two logits of that row
  are within the same tolerance (a bf16 near-tie).

kern's taps come from the unfused prefill (prompt rows) and the fused
decode_spec / verify (later rows), whose roundings differ from the
reference's in the last bf16 bit; 3% of the row's largest logit covers them
(the errors seen are reported). Two deliberately broken references must
exceed the tolerance (the test has teeth): causal instead of non-causal
draft attention, and each tap one layer early (a layer's input instead of
its output). Needs python3-numpy (scripts/setup.sh); exit 77 (skip) without.
"""

import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 0.03


def main(argv):
    root, kern_run, plan = argv[1], argv[2], argv[3]
    try:
        import numpy as np
    except ImportError:
        print("spec_reference_test: numpy is not installed (apt install python3-numpy): skipped")
        return 77
    sys.path.insert(0, os.path.join(root, "provider"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import safetensors_io as st
    from dspark_config import load_draft_config
    from dspark_reference import Geometry, Weights, draft_round
    from qwen3_config import load_config

    cfg = load_config(os.path.join(root, "examples", "tiny-qwen3.config.json"))
    draft = load_draft_config(os.path.join(root, "examples", "tiny-qwen3-dspark.config.json"), cfg)
    g = Geometry(cfg)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "w.safetensors")
        proc = subprocess.run(["/usr/bin/python3", os.path.join(root, "examples", "gen_random_weights.py"),
                               os.path.join(root, "examples", "tiny-qwen3.config.json"), "--draft",
                               os.path.join(root, "examples", "tiny-qwen3-dspark.config.json"), "--seed", "11",
                               "-o", weights], capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr)
            return 1
        w = Weights(st, weights)
        cases = [([1, 2, 3, 4, 5], 3), ([9], 2), ([30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42], 6),
                 ([100, 7], 9), ([5, 5, 5, 5], 4)]
        worst = {"kern": 0.0, "causal": float("inf"), "tap_shift": float("inf")}
        for prompt, steps in cases:
            logits_path, tokens_path = os.path.join(tmp, "logits.bin"), os.path.join(tmp, "tokens.bin")
            proc = subprocess.run([kern_run, plan, "--weights", weights, "--device", "cpu", "--spec", "--json",
                                   "--chunk", "4", "--prompt-ids", ",".join(map(str, prompt)), "--steps", str(steps),
                                   "--dump-buffer", f"draft_logits={logits_path}",
                                   "--dump-buffer", f"draft_tokens={tokens_path}"], capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr)
                return 1
            out = json.loads(proc.stdout)
            rounds = out["spec"]["accepted_per_round"]
            sequence = prompt + out["generated_ids"]
            anchor_pos = len(prompt) + sum(k + 1 for k in rounds[:-1])  # the last round's anchor
            with open(logits_path, "rb") as f:
                raw = np.frombuffer(f.read(), dtype="<u2").astype(np.uint32) << 16
            kern_logits = raw.view(np.float32).reshape(draft.block, g.V)
            with open(tokens_path, "rb") as f:
                kern_tokens = list(np.frombuffer(f.read(), dtype="<i8"))

            def compare(what, causal=False, tap_shift=0):
                ref_logits, ref_tokens = draft_round(w, g, cfg.layers, draft, sequence[:anchor_pos],
                                                     sequence[anchor_pos], causal, tap_shift)
                err = 0.0
                ok = True
                for row in range(draft.block):
                    scale = float(np.abs(ref_logits[row]).max())
                    e = float(np.abs(kern_logits[row] - ref_logits[row]).max()) / scale
                    err = max(err, e)
                    ok = ok and e <= TOLERANCE
                for i, (a, b) in enumerate(zip(kern_tokens, ref_tokens)):
                    top = np.sort(ref_logits[i + 1])[-2:]
                    near_tie = top[1] - top[0] <= TOLERANCE * float(np.abs(ref_logits[i + 1]).max())
                    ok = ok and (a == b or near_tie)
                print(f"prompt {len(prompt)} ids, anchor at position {anchor_pos}: {what}: max relative logit "
                      f"error {err:.4f}, drafted kern {kern_tokens} reference {ref_tokens}")
                return ok, err

            ok, err = compare("reference")
            worst["kern"] = max(worst["kern"], err)
            if not ok:
                failures.append(f"prompt {prompt} steps {steps}: kern-run's draft differs from the reference")
            for name, kwargs in (("causal", {"causal": True}), ("tap_shift", {"tap_shift": -1})):
                bad_ok, bad_err = compare("broken: " + name, **kwargs)
                worst[name] = min(worst[name], bad_err)
                if bad_ok:
                    failures.append(f"prompt {prompt} steps {steps}: the broken reference ({name}) was not detected")
        w.close()
    print(f"largest error against the reference {worst['kern']:.4f} (tolerance {TOLERANCE}); smallest error of the "
          f"broken references: causal {worst['causal']:.4f}, tap one layer early {worst['tap_shift']:.4f}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
