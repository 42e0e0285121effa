#!/usr/bin/python3
"""nvcc_fatbin_test.py SOURCE_ROOT

kernels-src/cuda/nvcc_fatbin.py (the fatbin rule's wrapper that keeps the
PTX nvcc's front end wrote) against a stand-in nvcc, a script that writes
into its --keep-dir what nvcc 13 writes there: <stem>.ptx for one virtual
architecture, <stem>.compute_NN.ptx for several. Checked: each asked-for PTX
lands at its output with the kept text, nothing of the scratch directory is
left, nvcc's arguments pass through with --keep added, a failing nvcc's
status is returned with no PTX, and an architecture nvcc kept no PTX for is
an error (exit 1) naming it. Standard library only; needs no CUDA.
"""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = None
FAKE_NVCC = """#!/bin/sh
# Records its arguments, writes the fatbin (-o) and, in --keep-dir, the PTX
# files named in $FAKE_KEPT; exits $FAKE_STATUS.
printf '%s\\n' "$@" > "$FAKE_ARGS"
out= keep= prev=
for a in "$@"; do
  [ "$prev" = -o ] && out=$a
  [ "$prev" = --keep-dir ] && keep=$a
  prev=$a
done
[ "${FAKE_STATUS:-0}" -eq 0 ] || exit "$FAKE_STATUS"
echo fatbin > "$out"
for n in $FAKE_KEPT; do echo "// ptx of $n" > "$keep/$n"; echo x > "$keep/${n%.ptx}.cpp1.ii"; done
"""


class NvccFatbin(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="nvcc-fatbin-test-")
        self.nvcc = os.path.join(self.tmp, "nvcc")
        with open(self.nvcc, "w", encoding="utf-8") as f:
            f.write(FAKE_NVCC)
        os.chmod(self.nvcc, 0o755)
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.out)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp], check=False)

    def run_wrapper(self, ptx, kept, status=0):
        env = dict(os.environ, FAKE_KEPT=" ".join(kept), FAKE_STATUS=str(status),
                   FAKE_ARGS=os.path.join(self.tmp, "args"))
        args = []
        for arch in ptx:
            args += ["--ptx", f"{arch}={os.path.join(self.out, 'gemv.' + arch + '.ptx')}"]
        cmd = [sys.executable, os.path.join(ROOT, "kernels-src", "cuda", "nvcc_fatbin.py")] + args + [
            "--", self.nvcc, "-O3", "-fatbin", "-o", os.path.join(self.out, "gemv.fatbin"), "src/gemv.cu"]
        return subprocess.run(cmd, capture_output=True, text=True, env=env)

    def test_one_architecture_keeps_stem_ptx(self):
        p = self.run_wrapper(["compute_90"], ["gemv.ptx"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["gemv.compute_90.ptx", "gemv.fatbin"])
        with open(os.path.join(self.out, "gemv.compute_90.ptx"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "// ptx of gemv.ptx\n")
        with open(os.path.join(self.tmp, "args"), encoding="utf-8") as f:
            args = f.read().split("\n")
        self.assertEqual(args[:4], ["-O3", "-fatbin", "-o", os.path.join(self.out, "gemv.fatbin")])
        self.assertIn("--keep", args)

    def test_several_architectures_keep_one_ptx_each(self):
        p = self.run_wrapper(["compute_80", "compute_90"], ["gemv.compute_80.ptx", "gemv.compute_90.ptx"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(self.out)), ["gemv.compute_80.ptx", "gemv.compute_90.ptx", "gemv.fatbin"])
        with open(os.path.join(self.out, "gemv.compute_80.ptx"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "// ptx of gemv.compute_80.ptx\n")

    def test_a_failing_nvcc_returns_its_status_and_keeps_nothing(self):
        p = self.run_wrapper(["compute_90"], ["gemv.ptx"], status=3)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(os.listdir(self.out), [])

    def test_an_architecture_without_ptx_is_an_error_naming_it(self):
        p = self.run_wrapper(["compute_80", "compute_90"], ["gemv.compute_90.ptx"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("no PTX for compute_80 of src/gemv.cu", p.stderr)
        p = self.run_wrapper(["compute_80", "compute_90"], ["gemv.ptx"])  # one file for two architectures
        self.assertEqual(p.returncode, 1)
        self.assertIn("kept one PTX for src/gemv.cu, 2 architectures asked for", p.stderr)
        self.assertFalse([n for n in os.listdir(self.out) if ".keep-" in n])

    def test_bad_usage_exits_2(self):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "kernels-src", "cuda", "nvcc_fatbin.py"),
                            "--ptx", "nothing", "--", self.nvcc, "a.cu"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
