#!/usr/bin/env python3
"""Every checked-in example manifest (examples/*.json, not *.config.json)
verifies with no errors and lowers to a plan; the Qwen3-4B plan dump shows the
buffer count of its manifest and the dispatch counts of docs/causal-lm-manifest.md
(prefill 433, fused decode 220 with the sampling dispatch and the step advance).

usage: examples_test.py KERN_VERIFY EXAMPLES_DIR
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

EXE, EXAMPLES = sys.argv[1], sys.argv[2]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name)
    if not cond:
        failures.append(name)
        if detail:
            print("     " + detail.replace("\n", "\n     ")[:4000])


manifests = sorted(m for m in glob.glob(os.path.join(EXAMPLES, "*.json")) if not m.endswith(".config.json"))
check("the examples directory has manifests", len(manifests) >= 3, str(manifests))

with tempfile.TemporaryDirectory() as tmp:
    for m in manifests:
        name = os.path.basename(m)
        plan = os.path.join(tmp, name.replace(".json", ".kplan"))
        p = subprocess.run([EXE, m, "-o", plan, "--color=never"], capture_output=True, text=True, timeout=120)
        errors = [l for l in p.stderr.splitlines() if l.startswith("error")]
        check(f"{name} verifies without errors", p.returncode == 0 and not errors and os.path.exists(plan),
              f"rc={p.returncode}\n{p.stderr[-3000:]}")

    m4b = os.path.join(EXAMPLES, "qwen3-4b.json")
    plan4b = os.path.join(tmp, "qwen3-4b.kplan")
    if os.path.exists(plan4b):
        with open(m4b) as f:
            manifest = json.load(f)
        n_buffers = len(manifest["buffers"])
        p = subprocess.run([EXE, "--dump", plan4b], capture_output=True, text=True, timeout=120)
        summary = [l for l in p.stdout.splitlines() if l.startswith("summary:")]
        check("the 4B dump exits 0 and ends with a summary", p.returncode == 0 and len(summary) == 1, p.stderr)
        s = summary[0] if summary else ""
        check(f"the 4B dump shows its {n_buffers} buffers", s.startswith(f"summary: {n_buffers} buffers;"), s)
        check("the 4B dump shows prefill's 433 dispatches", "prefill: 433 dispatches" in s, s)
        # The fused decode (docs/causal-lm-manifest.md): 5 launches per layer + 2, + sample + the step advance.
        check("the 4B dump shows decode's 184 dispatches and 184 launches", "decode: 184 dispatches, 184 launches" in s, s)
        check("the 4B dump lists the programs", "program prefill: 433 dispatches" in p.stdout
              and "program decode: 184 dispatches, 184 launches" in p.stdout)
    else:
        check("qwen3-4b.json lowered to a plan", False)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
