#!/usr/bin/python3
"""cli_test.py KERN_VERIFY KERN_RUN SOURCE_ROOT CUDA_BUILT

CUDA_BUILT ("yes"/"no"): whether meson built the cuda device (CUDA headers
found); then kern-run must link it rather than the "not built" fallback.

kern-run's GPU-path options on a machine without a GPU (docs/gpu.md):
--device cuda without a driver is a clear error, --device auto falls back to
cpu with a warning, --random-weights SEED runs the tiny model without a
weights file and is deterministic, --eager and --no-pdl give the same ids, and a plan
pinned to kernel files runs on the cpu device with no kernels dir present.
Standard library only.
"""

import ctypes
import os
import subprocess
import sys
import tempfile
import unittest

KERN_VERIFY = KERN_RUN = ROOT = CUDA_BUILT = None
TMP = None


def have_cuda_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def run(*args):
    return subprocess.run([KERN_RUN, *args], capture_output=True, text=True, timeout=120)


def ids(proc):
    for line in proc.stdout.splitlines():
        if line.startswith("generated ids: "):
            return [int(x) for x in line[len("generated ids: "):].split(", ")]
    raise AssertionError("no 'generated ids:' line in\n" + proc.stdout + proc.stderr)


class KernRunGpuOptions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plan = os.path.join(TMP, "tiny.kplan")
        proc = subprocess.run([KERN_VERIFY, os.path.join(ROOT, "examples", "tiny-qwen3.json"), "-o", cls.plan],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def test_kern_run_links_the_cuda_device_when_it_is_built(self):
        if CUDA_BUILT != "yes":
            self.skipTest("the cuda device is not built (no CUDA headers)")
        with open(KERN_RUN, "rb") as f:
            binary = f.read()
        self.assertNotIn(b"the cuda device is not built yet", binary)
        self.assertIn(b"cuStreamBeginCapture", binary)  # the driver table of kern-load/cuda
        self.assertIn(b"cuGraphLaunch", binary)

    def test_device_cuda_without_a_driver_says_no_cuda_driver(self):
        if have_cuda_driver():
            self.skipTest("a CUDA driver is installed here")
        proc = run(self.plan, "--device", "cuda", "--random-weights", "1", "--prompt-ids", "1,2", "--steps", "2")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("kern-run: error: no CUDA driver: dlopen libcuda.so.1", proc.stderr)

    def test_device_auto_without_a_driver_falls_back_to_cpu_with_a_warning(self):
        if have_cuda_driver():
            self.skipTest("a CUDA driver is installed here")
        proc = run(self.plan, "--random-weights", "1", "--prompt-ids", "1,2", "--steps", "2")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("no usable CUDA device (no CUDA driver", proc.stderr)
        self.assertIn("device: cpu", proc.stdout)

    def test_random_weights_are_deterministic_per_seed_and_eager_gives_the_same_ids(self):
        common = ["--device", "cpu", "--prompt-ids", "1,2,3", "--steps", "12"]
        a = run(self.plan, "--random-weights", "5", *common)
        b = run(self.plan, "--random-weights", "5", "--eager", *common)
        c = run(self.plan, "--random-weights", "6", *common)
        # --no-pdl (run.sh's pdl step) is accepted everywhere; the cpu device has no PDL.
        d = run(self.plan, "--random-weights", "5", "--no-pdl", *common)
        for p in (a, b, c, d):
            self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(ids(a)), 12)
        self.assertEqual(ids(a), ids(b))
        self.assertEqual(ids(a), ids(d))
        self.assertNotEqual(ids(a), ids(c))
        # Not the checked-in weights' sequence either: the file is not read.
        real = run(self.plan, "--weights", os.path.join(ROOT, "examples", "tiny-qwen3.safetensors"), *common)
        self.assertEqual(real.returncode, 0, real.stderr)
        self.assertNotEqual(ids(a), ids(real))

    def test_random_weights_and_a_weights_file_exclude_each_other_and_one_is_required(self):
        both = run(self.plan, "--random-weights", "5", "--weights", "w.safetensors", "--prompt-ids", "1")
        self.assertEqual(both.returncode, 2)
        self.assertIn("excludes", both.stderr)
        neither = run(self.plan, "--prompt-ids", "1")
        self.assertEqual(neither.returncode, 2)
        self.assertIn("--weights is required (or --random-weights SEED)", neither.stderr)
        bench = subprocess.run([KERN_RUN, "bench", self.plan, "-p", "4", "-n", "2", "-r", "1"],
                               capture_output=True, text=True)
        self.assertEqual(bench.returncode, 2)
        self.assertIn("--weights is required (or --random-weights SEED)", bench.stderr)

    def test_bench_runs_with_random_weights_and_eager_on_cpu(self):
        proc = subprocess.run([KERN_RUN, "bench", self.plan, "--random-weights", "3", "--eager", "--device", "cpu",
                               "-p", "8", "-n", "4", "-r", "1", "--warmup", "0"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("pp8", proc.stdout)
        self.assertIn("tg4", proc.stdout)

    def test_a_plan_pinned_to_kernel_files_runs_on_cpu_without_a_kernels_dir(self):
        # The checked-in manifests are pinned (cubin + sha256); the cpu device
        # resolves symbols to reference kernels and never opens those files.
        d = tempfile.mkdtemp(dir=TMP)
        plan = os.path.join(d, "pinned.kplan")
        proc = subprocess.run([KERN_VERIFY, os.path.join(ROOT, "examples", "tiny-qwen3.json"), "-o", plan],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertFalse(any(n.endswith(".fatbin") for n in os.listdir(d)))
        proc = run(plan, "--device", "cpu", "--weights", os.path.join(ROOT, "examples", "tiny-qwen3.safetensors"),
                   "--prompt-ids", "1,2,3", "--steps", "4")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(ids(proc)), 4)


if __name__ == "__main__":
    KERN_VERIFY, KERN_RUN, ROOT = sys.argv[1], sys.argv[2], sys.argv[3]
    CUDA_BUILT = sys.argv[4] if len(sys.argv) > 4 else "no"
    with tempfile.TemporaryDirectory() as tmp:
        TMP = tmp
        unittest.main(argv=sys.argv[:1], verbosity=2)
