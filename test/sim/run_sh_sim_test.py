#!/usr/bin/python3
"""run_sh_sim_test.py SOURCE_ROOT BUILD_ROOT

A reduced rehearsal of the GPU run (test/gpu/run.sh) on the simulated GPU
(docs/gpu.md "The GPU run on the simulated GPU"): the bundle is built by
test/gpu/bundle.sh as for a GPU machine, then run.sh runs with the reduced
step table test/sim/rehearsal_steps.txt (KERN_GPU_TABLE) under
test/sim/with-sim-gpu, with a fake nvidia-smi on PATH. Every step it lists
must pass with real outputs (memcheck is a skip: no compute-sanitizer here):
- gpu, bundle, abi: the device line, the bundled binaries start, the fatbins
  match their pins, the cubins' parameter ABIs match the manifests;
- tiny: kern-run --device cuda (unpinned, pinned, --eager) gives the cpu
  device's 32 ids, no graph falls back to eager;
- tp: the tiny model at TP = 2 on two simulated GPUs (simulated NCCL)
  gives TP = 1's 32 ids on the cuda device;
- pdl (tiny model): the ids with PDL under graphs, --no-pdl, --no-pdl
  --eager are equal;
- bench-tiny: kern-run bench's JSON has every test (pp16, tg1, tg4 and
  their -sync twins, in graph and eager mode) with positive figures;
- spec: --spec on cuda equals plain greedy on cpu for the tiny DSpark model,
  and the timed DSpark run reports its rounds;
- mine (kern-run in place of PyTorch): kern-capture, kern-mine and kern-lift
  from the bundle; the summary names kernels, ABIs, fitted sites and the
  liftable share (all of kern-run's sites), and the lifted plan run on the
  cpu device gives the captured ids (the round trip);
- results.json, summary.txt and logs.tar.gz are the three files in $OUT, and
  the simulation reported no violation.
The table lists what it leaves out and why. Timings are meaningless here
(the simulated clock); only outputs are checked. Standard library only.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

ROOT = BUILD = None
STEPS = ["gpu", "bundle", "abi", "tiny", "tp", "pdl", "bench-tiny", "spec", "mine", "memcheck"]
LEFT_OUT = {"kernels", "compare", "hf-0.6b", "hf-4b", "bench-0.6b", "bench-4b", "bench-4b-unfused"}
FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=name,*) echo "kern simulated GPU, 0.00, 143771" ;;
  *--query-gpu=*) echo "9.0, 1980, 3201, 1980, 3201, 700.00, 30" ;;
  *) echo "GPU 0: kern simulated GPU (UUID: GPU-sim)"; echo "GPU 1: kern simulated GPU (UUID: GPU-sim1)" ;;
esac
"""


def read_table(path):
    rows = []
    with open(path, "r", encoding="utf-8") as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if fields:
                rows.append((fields[0], int(fields[1]), fields[2], fields[3:]))
    return rows


class RunShOnTheSimulatedGpu(unittest.TestCase):
    tmp = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kern-run-sh-sim-")
        cls.bundle = os.path.join(cls.tmp, "bundle")
        cls.bundle_proc = subprocess.run([os.path.join(ROOT, "test", "gpu", "bundle.sh"), BUILD, cls.bundle],
                                         capture_output=True, text=True, cwd=ROOT)
        cls.proc = None
        if cls.bundle_proc.returncode != 0:
            return
        bindir = os.path.join(cls.tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "nvidia-smi"), "w", encoding="utf-8") as f:
            f.write(FAKE_SMI)
        os.chmod(os.path.join(bindir, "nvidia-smi"), 0o755)
        path = ":".join([bindir] + [d for d in os.environ.get("PATH", "/usr/bin:/bin").split(":")
                                    if d and not os.path.exists(os.path.join(d, "nvidia-smi"))])
        cls.out = os.path.join(cls.tmp, "out")
        cls.report = os.path.join(cls.tmp, "sim-report.txt")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERN_")}
        env.update(OUT=cls.out, PATH=path, KERN_BUILD_DIR=BUILD, KERN_SIM_REPORT=cls.report,
                   KERN_GPU_TABLE=os.path.join(ROOT, "test", "sim", "rehearsal_steps.txt"),
                   KERN_GPU_STATE=os.path.join(cls.tmp, "state"), KERN_GPU_BUDGET_S="600",
                   KERN_SIM_DEVICES="2")  # two simulated GPUs: the tp step runs TP = 2
        cls.proc = subprocess.run([os.path.join(ROOT, "test", "sim", "with-sim-gpu"),
                                   os.path.join(ROOT, "test", "gpu", "run.sh"), cls.bundle],
                                  capture_output=True, text=True, env=env, cwd="/", timeout=700)
        with open(os.path.join(cls.out, "results.json"), "r", encoding="utf-8") as f:
            cls.results = json.load(f)
        cls.res = os.path.join(cls.tmp, "res")
        with tarfile.open(os.path.join(cls.out, "logs.tar.gz")) as t:
            t.extractall(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.bundle_proc.returncode, 0, self.bundle_proc.stderr)
        self.assertIsNotNone(self.proc)

    def load(self, name):
        with open(os.path.join(self.res, name), "r", encoding="utf-8") as f:
            return json.load(f)

    def step(self, name):
        return next(s for s in self.results["steps"] if s["name"] == name)

    def test_the_table_is_the_gpu_runs_less_what_it_says_it_leaves_out(self):
        rows = read_table(os.path.join(ROOT, "test", "sim", "rehearsal_steps.txt"))
        full = {name: (fn, args) for name, _, fn, args in read_table(os.path.join(ROOT, "test", "gpu", "steps.txt"))}
        self.assertEqual([r[0] for r in rows], STEPS)
        self.assertEqual(set(full) - {r[0] for r in rows}, LEFT_OUT)
        for name, _, fn, _ in rows:
            self.assertIn(fn, [f for f, _ in full.values()], name)  # only run.sh's own step functions
        with open(os.path.join(ROOT, "test", "sim", "rehearsal_steps.txt"), "r", encoding="utf-8") as f:
            header = f.read()
        for name in LEFT_OUT:
            self.assertIn(name, header)  # each omission is explained

    def test_every_step_passes(self):
        status = {s["name"]: s["status"] for s in self.results["steps"]}
        with open(os.path.join(self.out, "summary.txt"), encoding="utf-8") as f:
            summary = f.read()
        print(summary, flush=True)  # the run's own table, for the log
        self.assertEqual(list(status), STEPS, summary)
        want = {name: "ok" for name in STEPS}
        want["memcheck"] = "skip"  # no compute-sanitizer here
        self.assertEqual(status, want, summary + self.proc.stdout[-3000:])
        self.assertEqual(self.proc.returncode, 0, summary)
        self.assertEqual(sorted(os.listdir(self.out)), ["logs.tar.gz", "results.json", "summary.txt"])
        self.assertEqual(self.results["device"]["name"], "kern simulated GPU")

    def test_the_simulation_reported_no_violation(self):
        text = ""
        if os.path.exists(self.report):
            with open(self.report, encoding="utf-8") as f:
                text = f.read()
        self.assertEqual(text, "")

    def test_the_tp_step_runs_tp2_on_two_simulated_gpus_and_gets_tp1s_ids(self):
        self.assertTrue(self.step("tp")["detail"].startswith("32 ids, tp 2 equals tp 1"), self.step("tp")["detail"])
        one, two = self.load("tp_1.json"), self.load("tp_2.json")
        self.assertEqual(len(one["generated_ids"]), 32)
        self.assertEqual(two["generated_ids"], one["generated_ids"])

    def test_the_tiny_model_gives_the_cpu_ids_on_the_simulated_gpu(self):
        self.assertEqual(self.step("tiny")["detail"], "32 ids vs cpu: cuda ok, cuda_pinned ok, cuda_eager ok")
        ids = {label: self.load(f"tiny_{label}.json")["generated_ids"] for label in
               ("cpu", "cuda", "cuda_pinned", "cuda_eager")}
        self.assertEqual(len(ids["cpu"]), 32)
        for label in ("cuda", "cuda_pinned", "cuda_eager"):
            self.assertEqual(ids[label], ids["cpu"], label)
        self.assertIn("kern simulated GPU", self.load("tiny_cuda.json")["device"])

    def test_pdl_on_and_off_give_the_same_ids(self):
        runs = [self.load(f"pdl_{label}.json")["generated_ids"] for label in ("pdl", "nopdl", "nopdl_eager")]
        self.assertEqual(len(runs[0]), 16)
        self.assertEqual(runs[1], runs[0])
        self.assertEqual(runs[2], runs[0])

    def test_bench_reports_every_test_with_figures(self):
        for mode in ("graph", "eager"):
            doc = self.load(f"bench_tiny-qwen3_{mode}.json")  # a list of tests
            tests = {t["test"]: t for t in doc}
            self.assertEqual(sorted(tests), sorted(["pp16", "tg1", "tg4", "tg1-sync", "tg4-sync"]), mode)
            for name, t in tests.items():
                self.assertGreater(t["avg_ts"], 0, f"{mode} {name}")

    def test_speculative_decoding_on_the_simulated_gpu_gives_the_plain_ids(self):
        cpu, cuda = self.load("spec_tiny_cpu.json"), self.load("spec_tiny_cuda.json")
        self.assertEqual(cuda["generated_ids"], cpu["generated_ids"])
        self.assertEqual(len(cuda["generated_ids"]), 40)
        timed = self.load("spec_4b_cuda.json")  # the reduced table's timed model: tiny-qwen3-dspark, 8 ids
        self.assertEqual(len(timed["generated_ids"]), 8)
        self.assertGreater(timed["spec"]["rounds"], 0)
        self.assertIn("tiny --spec cuda vs plain cpu: equal", self.step("spec")["detail"])
        self.assertIn("tiny-qwen3-dspark: ", self.step("spec")["detail"])

    def test_mine_summarises_kern_runs_capture_and_the_round_trip_holds(self):
        detail = self.step("mine")["detail"]
        self.assertRegex(detail, r"kern-run: \d+ kernels \(\d+ call sites, [1-9]\d* of them library calls\); ABIs: \d+ flat, "
                                 r"0 struct/extra; .*liftable: (\d+) of \1 \(100%\)")
        self.assertIn("round trip on cpu: the captured ids", detail)
        mined = self.load("mine_kern-run.json")
        self.assertGreater(mined["passes"]["count"], 2)


if __name__ == "__main__":
    ROOT, BUILD = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
