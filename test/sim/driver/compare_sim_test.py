#!/usr/bin/python3
"""compare_sim_test.py KERN_RUN SOURCE_ROOT BUILD_ROOT KERNELS_DIR PLAN...

kern-run compare, one plan on two devices: the cpu device (A) against the
cuda device on the simulated GPU (B, test/sim/with-sim-gpu), for each PLAN
(the tiny fused and unfused models). Every dispatch is a span; the verdict
must be PASS (exit 0) with B named as the simulated GPU, every span within
tolerance in both modes, its replay measure rounding (docs/compare.md "The
replay measure"), and the same ids. Then a B with an injected kernel fault
(KERN_SIM_FAIL=kernel_fault) must end with exit 2 (an error, not FAIL's 1).

Standard library only. Exit 0 when every check passes, 1 otherwise.
"""

import json
import os
import subprocess
import sys

PROMPT = "1,17,42,99,3,250,7"


def main(argv):
    run, src, build, kernels = argv[1:5]
    plans = argv[5:]
    wrapper = os.path.join(src, "test", "sim", "with-sim-gpu")
    weights = os.path.join(src, "examples", "tiny-qwen3.safetensors")
    env = dict(os.environ, KERN_BUILD_DIR=build)
    failures = []

    def check(ok, what):
        print(("ok: " if ok else "FAIL: ") + what, flush=True)
        if not ok:
            failures.append(what)

    def compare(plan, extra_env=None):
        cmd = [wrapper, run, "compare", plan, "--weights", weights, "--prompt-ids", PROMPT, "--steps", "4",
               "--chunk", "4", "--device-a", "cpu", "--device-b", "cuda", "--kernels-b", kernels, "--json"]
        e = dict(env, **(extra_env or {}))
        return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=240)

    for plan in plans:
        name = os.path.basename(plan)
        p = compare(plan)
        check(p.returncode == 0, f"{name}: cpu vs simulated GPU exits 0 (got {p.returncode}: {p.stderr.strip()[-300:]})")
        if p.returncode != 0:
            continue
        doc = json.loads(p.stdout)
        check(doc["verdict"] == "PASS", f"{name}: verdict PASS ({doc['reason']})")
        check("simulated" in doc["b"]["device"], f"{name}: B runs on the simulated GPU ({doc['b']['device']})")
        spans = doc["spans"]
        one_each = all(s["a_dispatches"][1] - s["a_dispatches"][0] == 1 and s["a_dispatches"] == s["b_dispatches"]
                       for s in spans)
        check(one_each, f"{name}: every dispatch is a span ({len(spans)} spans)")
        bad = [f"{s['program']} {s['span']}" for s in spans if not (s["replay_ok"] and s["free_ok"])]
        check(not bad, f"{name}: every span within tolerance (past: {bad})")
        rel = [r["measure"]["rel_l2"] for s in spans for r in s["regions"] if r["judged"]]
        worst = max((float("inf") if x is None else x for x in rel), default=0)  # JSON null: infinite
        check(all(s["replay_class"] == "rounding" for s in spans),
              f"{name}: every span's replay measure is rounding (largest rel L2 {worst:.3g})")
        check(len(doc["steps"]) == 4 and all(s["a_id"] == s["b_id"] for s in doc["steps"]),
              f"{name}: 4 decode steps with the same ids")
    p = compare(plans[0], {"KERN_SIM_FAIL": "kernel_fault@3"})
    check(p.returncode == 2, f"an injected kernel fault on B exits 2, an error (got {p.returncode}: "
                             f"{p.stderr.strip()[-200:]})")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
