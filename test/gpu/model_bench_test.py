#!/usr/bin/python3
"""model_bench_test.py SOURCE_ROOT

Tests of test/gpu/model_bench.py (results.json of a test/gpu/run.sh run) on
fabricated step results: decode ms/step from the tg1 median, prefill from
pp512, the bandwidth fraction against the copy bandwidth measured in the same
run, launches per step from the manifest, graph vs eager, the kern/HF ratios,
the summary's step lines, and a results.json with whatever exists when a run
stopped early. Standard library only.
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
        f.write(obj if isinstance(obj, str) else json.dumps(obj))


def bench(step_ms, pp=9000.0):
    """kern-run bench -p 512 -n 1,32 -r 50 output: 50 single steps around step_ms (median exactly step_ms)."""
    head = {"plan_sha256": "ab" * 32, "device": "cuda:0 NVIDIA H200", "driver": "13.0", "build_commit": "c0ffee"}
    one = [step_ms] * 26 + [step_ms * 5] * 12 + [step_ms * 0.5] * 12
    return [dict(head, test="pp512", n_prompt=512, n_gen=0, samples_ms=[1.0] * 50, median_ts=pp),
            dict(head, test="tg1", n_prompt=0, n_gen=1, samples_ms=one, median_ts=1000.0 / step_ms),
            dict(head, test="tg32", n_prompt=0, n_gen=32, samples_ms=[32 * step_ms] * 50,
                 median_ts=1000.0 / (1.1 * step_ms), decode_mode="async", decode_gpu_busy_ms_per_step=1.9,
                 decode_host_gap_us_per_step=4.5, decode_host_writes_per_step=0.0, decode_gpu_wall_ms_per_step=None)]


def with_sync(tests, sync_step_ms):
    """`tests` plus the tg32-sync test of --decode both."""
    head = {k: tests[0][k] for k in ("plan_sha256", "device", "driver", "build_commit")}
    return tests + [dict(head, test="tg32-sync", n_prompt=0, n_gen=32, samples_ms=[32 * sync_step_ms] * 50,
                         median_ts=1000.0 / sync_step_ms, decode_mode="sync", decode_gpu_busy_ms_per_step=1.9,
                         decode_host_gap_us_per_step=120.0, decode_host_writes_per_step=4.0)]


class ModelBench(unittest.TestCase):
    def run_tool(self, *args):
        return subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "gpu", "model_bench.py"), *args],
                              capture_output=True, text=True, cwd=ROOT)

    def test_results_hold_decode_prefill_bandwidth_launches_and_hf_ratios(self):
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
        launches = model_bench.launches_per_step(doc)
        self.assertGreaterEqual(launches, len(doc["programs"]["decode"]["dispatches"]))
        with tempfile.TemporaryDirectory() as res:
            write(os.path.join(res, "env.json"), {"name": "NVIDIA H200", "driver_version": "580.1",
                                                  "clocks.sm": "1980", "clocks.max.sm": "1980"})
            write(os.path.join(res, "VERSION"), "commit c0ffee\nnvcc release 13.0\n")
            write(os.path.join(res, "kernels.json"), {"copy_gbps": 2000.0})
            write(os.path.join(res, "bench_qwen3-0.6b_graph.json"), with_sync(bench(2.0), 2.5))
            write(os.path.join(res, "bench_qwen3-0.6b_eager.json"), bench(4.0, pp=8000.0))
            write(os.path.join(res, "hf_qwen3-0.6b.json"), {
                "compare": {"equal": True, "first_diff": None, "ok": True}, "hf_generate_ms_per_token": 20.0,
                "hf_static_graph_ms_per_token": 4.0, "hf_prefill512_tok_s": 18000.0, "errors": {}})
            summary = os.path.join(res, "summary.txt")
            write(summary, "kern GPU run ...\ngpu          ok          1s  NVIDIA H200, 580.1\n"
                           "hf-0.6b      TIMEOUT    60s  killed after 60s; last: x\nstopped: no\n")
            out = os.path.join(res, "results.json")
            proc = self.run_tool(res, summary, out)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(out, "r", encoding="utf-8") as f:
                r = json.load(f)
        m = r["models"]["qwen3-0.6b"]
        self.assertAlmostEqual(m["graph"]["decode_ms_per_step"], 2.0)
        self.assertAlmostEqual(m["eager"]["decode_ms_per_step"], 4.0)
        self.assertEqual(m["graph"]["decode_steps_timed"], 50)
        self.assertAlmostEqual(m["graph"]["decode_tok_s"], 500.0)
        self.assertAlmostEqual(m["graph"]["decode_ms_per_step_tg32"], 2.2)
        # The decode loop, async vs sync (--decode both); a null figure is left out.
        loop = m["graph"]["decode_loop"]
        self.assertEqual(sorted(loop), ["async", "sync"])
        self.assertAlmostEqual(loop["async"].pop("ms_per_step"), 2.2)
        self.assertEqual(loop["async"], {"gpu_busy_ms_per_step": 1.9, "host_gap_us_per_step": 4.5,
                                         "host_writes_per_step": 0.0})
        self.assertAlmostEqual(loop["sync"]["ms_per_step"], 2.5)
        self.assertEqual(loop["sync"]["host_gap_us_per_step"], 120.0)
        self.assertNotIn("sync", m["eager"]["decode_loop"])
        self.assertIn("qwen3-0.6b graph decode loop: async 2.200 ms/step, GPU busy 1.900 ms, host gap 4.5 us; "
                      "sync 2.500 ms/step, GPU busy 1.900 ms, host gap 120.0 us", proc.stdout)
        self.assertEqual(m["graph"]["prefill512_tok_s"], 9000.0)
        self.assertAlmostEqual(m["graph"]["bandwidth_fraction"], step_bytes / 2e-3 / 1e9 / 2000.0)
        self.assertAlmostEqual(m["graph_speedup"], 2.0)
        self.assertEqual(m["launches_per_step"], {"eager": launches, "graph": 1})
        self.assertEqual(m["plan_sha256"], "ab" * 32)
        self.assertAlmostEqual(m["hf"]["kern_vs_hf_generate"], 10.0)      # 20 ms vs 2 ms per token
        self.assertAlmostEqual(m["hf"]["kern_vs_hf_static_graph"], 2.0)
        self.assertAlmostEqual(m["hf"]["kern_vs_hf_prefill512"], 0.5)
        self.assertEqual(r["kern"]["build_commit"], "c0ffee")
        self.assertEqual(r["device"]["name"], "NVIDIA H200")
        self.assertEqual(r["bundle"][0], "commit c0ffee")
        self.assertEqual([(s["name"], s["status"], s["seconds"]) for s in r["steps"]],
                         [("gpu", "ok", 1), ("hf-0.6b", "TIMEOUT", 60)])
        self.assertNotIn("graph", r["models"]["qwen3-4b"])  # no result: no numbers, no crash
        self.assertIn("NVIDIA H200", proc.stdout)
        self.assertIn("qwen3-0.6b vs HF: greedy ids equal", proc.stdout)
        self.assertIn("generate 10.00x", proc.stdout)
        self.assertTrue(proc.stdout.splitlines()[2].startswith("qwen3-0.6b  graph    2.000 "), proc.stdout)

    def test_the_table_names_a_difference_and_whether_it_was_a_near_tie(self):
        sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
        import model_bench  # noqa: E402
        r = {"models": {"qwen3-4b": {"hf": {"compare": {"equal": False, "first_diff": 17, "gap_at_diff": 0.25,
                                                        "top_at_diff": 31.5, "near_tie": True, "ok": True}}}},
             "bundle": ["commit 0123456789abcdef0123 (dirty tree)"]}
        t = model_bench.table(r)
        self.assertIn("qwen3-4b vs HF: greedy ids differ from step 17 (HF top-2 gap 0.25 at top logit 31.5: a near tie)", t)
        self.assertIn("kern 0123456789ab (dirty)", t)
        r["models"]["qwen3-4b"]["hf"]["compare"]["near_tie"] = False
        self.assertIn("NOT a near tie", model_bench.table(r))

    def test_an_empty_run_still_gets_results_and_a_table(self):
        with tempfile.TemporaryDirectory() as res:
            out = os.path.join(res, "results.json")
            proc = self.run_tool(res, os.path.join(res, "missing-summary.txt"), out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, "r", encoding="utf-8") as f:
                r = json.load(f)
            self.assertEqual(r["steps"], [])
            self.assertIsNone(r["device"])
            self.assertIn("ms/step", proc.stdout)

    def test_one_line_details_for_the_summary(self):
        with tempfile.TemporaryDirectory() as res:
            write(os.path.join(res, "b.json"), bench(2.5, pp=12000.0))
            write(os.path.join(res, "k.json"), {"copy_gbps": 4321.4})
            self.assertEqual(self.run_tool("--bench-line", os.path.join(res, "b.json")).stdout,
                             "2.500 ms/step, async gap 4.5 us, pp512 12000 tok/s\n")
            write(os.path.join(res, "s.json"), with_sync(bench(2.5, pp=12000.0), 3.0))
            self.assertEqual(self.run_tool("--bench-line", os.path.join(res, "s.json")).stdout,
                             "2.500 ms/step (tg32 sync 3.000), async gap 4.5 us, sync gap 120.0 us, pp512 12000 tok/s\n")
            self.assertEqual(self.run_tool("--copy-line", os.path.join(res, "k.json")).stdout, "d2d copy 4321 GB/s\n")
            self.assertEqual(self.run_tool("--copy-line", os.path.join(res, "none.json")).stdout, "\n")

    def test_the_pdl_verdict_names_the_run_that_differs(self):
        with tempfile.TemporaryDirectory() as d:
            ids = list(range(100, 164))
            for label in ("pdl", "nopdl", "nopdl_eager"):
                write(os.path.join(d, f"pdl_{label}.json"), {"generated_ids": ids})
            p = self.run_tool("--pdl-verdict", d, d)
            self.assertEqual((p.returncode, p.stdout),
                             (0, "64 ids vs --no-pdl (graphs): pdl equal, nopdl_eager equal\n"))
            write(os.path.join(d, "pdl_pdl.json"), {"generated_ids": ids[:10] + [7] + ids[11:]})
            os.remove(os.path.join(d, "pdl_nopdl_eager.json"))
            write(os.path.join(d, "pdl_nopdl_eager.err"), "[error] cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED\n\n")
            p = self.run_tool("--pdl-verdict", d, d)
            self.assertEqual((p.returncode, p.stdout),
                             (1, "64 ids vs --no-pdl (graphs): pdl DIFFERS at step 10, nopdl_eager: no result: "
                                 "[error] cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED\n"))
            os.remove(os.path.join(d, "pdl_nopdl.json"))
            p = self.run_tool("--pdl-verdict", d, d)
            self.assertEqual((p.returncode, p.stdout), (1, "--no-pdl (graphs): no result: no output\n"))

    def test_bad_usage_exits_1(self):
        self.assertEqual(self.run_tool("only-one").returncode, 1)


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
