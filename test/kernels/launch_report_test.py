#!/usr/bin/python3
"""Unit tests of bench/launch_report.py without nvcc or a plan: the ptxas
parser, the sm_90 occupancy model, the expression evaluator, the bytes
model and the spill check (a fabricated spilling kernel must fail it)."""

import io
import os
import sys
import unittest
from contextlib import redirect_stderr
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import launch_report as lr  # noqa: E402

PTXAS = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'kern_good' for 'sm_90'
ptxas info    : Function properties for kern_good
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 56 registers, used 1 barriers, 144 bytes smem
ptxas info    : Compiling entry function 'kern_bad' for 'sm_90'
ptxas info    : Function properties for kern_bad
    312 bytes stack frame, 348 bytes spill stores, 348 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 312 bytes cumulative stack size, 9252 bytes smem
ptxas info    : Compiling entry function 'kern_tiny' for 'sm_90'
ptxas info    : Function properties for kern_tiny
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers
"""


def fake_plan(symbols):
    """A dump-shaped plan: one program `decode` launching each symbol once with a 128-thread block."""
    steps, launches = [], []
    for i, sym in enumerate(symbols):
        steps.append({"kernel": sym, "symbol": sym, "cubin": 0, "params": [], "block": [128, 1, 1],
                      "grid": ["tokens", "4", "1"], "shared_mem": "mul(tokens, 5120)", "pdl": False})
        launches.append({"dispatch": i, "label": f"layers.{i}.x", "kernel": sym, "step": i, "symbol": sym,
                         "args": []})
    return {"model": "fake", "symbols": [{"name": "tokens", "min": 1, "max": 8}],
            "cubins": [{"path": "fake.fatbin", "sha256": None}], "steps": steps,
            "programs": [{"name": "decode", "launches": launches}]}


class LaunchReport(unittest.TestCase):
    def test_ptxas_output_is_parsed_per_entry(self):
        p = lr.parse_ptxas(PTXAS)
        self.assertEqual(p["kern_good"], {"regs": 56, "spill_stores": 0, "spill_loads": 0, "stack": 0, "smem": 144})
        self.assertEqual(p["kern_bad"]["regs"], 255)
        self.assertEqual((p["kern_bad"]["spill_stores"], p["kern_bad"]["spill_loads"], p["kern_bad"]["stack"]),
                         (348, 348, 312))
        self.assertEqual(p["kern_bad"]["smem"], 9252)
        self.assertEqual(p["kern_tiny"]["smem"], 0)

    def test_occupancy_follows_the_sm90_limits(self):
        # 56 registers: 1792 per warp -> 36 warps -> 9 blocks of 4 warps; 41 KB of shared memory -> 5.
        self.assertEqual(lr.occupancy(56, 144 + 40960, 128), (5, "shared memory"))
        self.assertEqual(lr.occupancy(56, 144 + 5120, 128), (9, "registers"))
        # 157 registers round to 5120 per warp: 12 warps -> 3 blocks.
        self.assertEqual(lr.occupancy(157, 144, 128), (3, "registers"))
        # 1024 threads: 2 blocks by warps.
        self.assertEqual(lr.occupancy(32, 256, 1024)[0], 2)

    def test_expressions_evaluate_at_the_given_tokens(self):
        self.assertEqual(lr.eval_expr("ceil_div(mul(tokens, 32), 4)", {"tokens": 3}), 24)
        self.assertEqual(lr.eval_expr("7", {}), 7)
        with self.assertRaises(lr.ReportError):
            lr.eval_expr("nope", {"tokens": 1})

    def test_gemv_bytes_count_the_weight_once(self):
        # kern_gemv_rmsnorm_bf16 args: a, nw, w, c, partial, counters, m, n, k, lda, ldc, splits, eps.
        rd, wr = lr.bytes_moved("kern_gemv_rmsnorm_bf16", [None] * 6 + [1, 6144, 2560, 2560, 6144, 1, 1e-6], 0)
        self.assertEqual(rd, 2 * 6144 * 2560 + 2 * 2560 + 2 * 2560)
        self.assertEqual(wr, 2 * 6144)
        self.assertIsNone(lr.bytes_moved("kern_unknown", [], 0))

    def test_expert_bytes_count_only_the_selected_experts(self):
        # Qwen3-30B-A3B's sparse layer at one row: gate/up 8 x 4 x 768 x 2048 B of 128 experts' 128 x ...
        gate_up = [None] * 4 + [1, 128, 768, 2048, 8]
        down = [None] * 5 + [1, 128, 2048, 768, 8]
        self.assertEqual(lr.expert_bytes("kern_moe_gate_up_bf16", gate_up), 8 * 4 * 768 * 2048)
        self.assertEqual(lr.expert_bytes("kern_moe_gate_up_bf16", gate_up, every=True), 128 * 4 * 768 * 2048)
        self.assertEqual(lr.expert_bytes("kern_moe_down_bf16", down), 8 * 2 * 2048 * 768)
        self.assertIsNone(lr.expert_bytes("kern_gemv_acc_bf16", down))
        rd, wr = lr.bytes_moved("kern_moe_down_bf16", down, 0)
        self.assertEqual(rd, 8 * 2 * 2048 * 768 + 2 * 8 * 768 + 8 * 8 + 2 * 2048)
        self.assertEqual(wr, 2 * 2048)
        # Two rows read their experts twice (per token, docs/kernels.md §18).
        self.assertEqual(lr.expert_bytes("kern_moe_gate_up_bf16", [None] * 4 + [2, 128, 768, 2048, 8]),
                         2 * 8 * 4 * 768 * 2048)

    def test_rows_merge_layers_and_a_spilling_kernel_fails_the_check(self):
        plan = fake_plan(["kern_good", "kern_good", "kern_bad"])
        rows = lr.build_rows(plan, "decode", lr.parse_ptxas(PTXAS), {"tokens": 1}, 1024, 132)
        self.assertEqual(rows[0]["grid"], [1, 4, 1])
        self.assertEqual(rows[0]["dyn_smem"], 5120)
        text = lr.render(plan, "decode", rows, 1, 1024, 132, "test")
        self.assertIn("| layers.*.x | 2 | `kern_good` |", text)
        self.assertIn("348/348", text)
        with mock.patch.object(lr, "load_plan", return_value=plan), \
                mock.patch.object(lr, "compile_families", return_value=lr.parse_ptxas(PTXAS)), \
                mock.patch.object(lr, "find_nvcc", return_value="/fake/nvcc"):
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(lr.main(["plan.kplan", "--check-spills"]), 1)
            self.assertIn("kern_bad spills", err.getvalue())
            good = fake_plan(["kern_good", "kern_tiny"])
            with mock.patch.object(lr, "load_plan", return_value=good), redirect_stderr(io.StringIO()):
                self.assertEqual(lr.main(["plan.kplan", "--check-spills"]), 0)

    def test_missing_nvcc_skips_the_checks(self):
        with redirect_stderr(io.StringIO()) as err:
            self.assertEqual(lr.main(["plan.kplan", "--nvcc", "", "--check-spills"]), 77)
        self.assertIn("nvcc not found", err.getvalue())

    def test_an_unknown_program_is_an_error(self):
        with self.assertRaises(lr.ReportError):
            lr.build_rows(fake_plan(["kern_good"]), "prefill", {}, {"tokens": 1}, 0, 132)


if __name__ == "__main__":
    unittest.main()
