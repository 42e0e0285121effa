#!/usr/bin/python3
"""model_bench_test.py SOURCE_ROOT

Tests of test/gpu/model_bench.py (the run.sh step-5 summary) on fabricated
bench results: decode ms/step from the tg128 median, prefill from pp512,
the bandwidth fraction against the measured copy ceiling, the weight bytes a
decode step reads (one row of the embedding and rope cache), and a nonzero
exit when a result is missing. Standard library only.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = None


def write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


class ModelBench(unittest.TestCase):
    def run_bench(self, out):
        return subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "gpu", "model_bench.py"), out, "qwen3-0.6b"],
                              capture_output=True, text=True, cwd=ROOT)

    def test_summary_computes_step_time_prefill_and_bandwidth_fraction(self):
        sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
        import model_bench  # noqa: E402
        with open(os.path.join(ROOT, "examples", "qwen3-0.6b.json"), "r", encoding="utf-8") as f:
            doc = json.load(f)
        step_bytes = model_bench.step_weight_bytes(doc)
        emb = doc["buffers"]["model.embed_tokens.weight"]["shape"]
        lm = doc["buffers"]["lm_head.weight"]["shape"]
        self.assertEqual(emb, lm)
        # The lm_head is read whole, the embedding table only one row.
        self.assertGreater(step_bytes, lm[0] * lm[1] * 2)
        self.assertLess(step_bytes, 2 * 0.6e9 * 2)
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "kernels.json"), {"copy_gbps": 2000.0})
            for mode, ts in (("graph", 500.0), ("eager", 250.0)):
                write(os.path.join(out, f"bench_qwen3-0.6b_{mode}.json"),
                      [{"test": "pp512", "median_ts": 9000.0}, {"test": "tg128", "median_ts": ts}])
            proc = self.run_bench(out)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(os.path.join(out, "models.json"), "r", encoding="utf-8") as f:
                r = json.load(f)["models"]["qwen3-0.6b"]
            self.assertAlmostEqual(r["graph"]["decode_ms_per_step"], 2.0)
            self.assertAlmostEqual(r["eager"]["decode_ms_per_step"], 4.0)
            self.assertEqual(r["graph"]["prefill512_tok_s"], 9000.0)
            self.assertAlmostEqual(r["graph"]["bandwidth_fraction"], step_bytes / 2e-3 / 1e9 / 2000.0)
            self.assertIn("ms/step", proc.stdout)

    def test_a_missing_result_makes_the_summary_fail(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "bench_qwen3-0.6b_graph.json"),
                  [{"test": "pp512", "median_ts": 9000.0}, {"test": "tg128", "median_ts": 500.0}])
            proc = self.run_bench(out)
            self.assertEqual(proc.returncode, 1)
            self.assertIn("n/a", proc.stdout)  # no copy ceiling measured


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
