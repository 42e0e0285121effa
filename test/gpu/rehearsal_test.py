#!/usr/bin/python3
"""rehearsal_test.py SOURCE_ROOT BUILD_DIR [--bundle]

The GPU run (test/gpu/run.sh) rehearsed on a machine without a GPU
(docs/gpu.md "Running the GPU checks"):
- fatbin_pins.py checks every pin of a manifest (nested steps), names each
  mismatch and missing file;
- run.sh's step caps add up to at most its default budget less the reserve
  (issue 8: 360 s), so a run that hangs in every step still ends in time;
- without a GPU, run.sh stops within 30 s with "no NVIDIA GPU: ..." in
  summary.txt, exits non-zero, leaves at most 8 plain files in $OUT, and
  never sets LD_LIBRARY_PATH for the tools it calls;
with --bundle (the CUDA build exists: fatbins and kern-gpu-compare):
- bundle.sh builds the bundle under the 20 MB limit and says its size;
  refuses a size over KERN_BUNDLE_LIMIT_MB and fatbins that differ from the
  manifests' pins, leaving nothing behind;
- the bundle moved to another directory: its binaries start from there
  with no LD_LIBRARY_PATH, every non-glibc library resolves inside it, and
  its kern-run gives the build's greedy ids for the tiny model (cpu device);
- run.sh with that bundle and a fake nvidia-smi runs every step (those that
  need the driver fail fast), one summary line each, bundle and abi ok, and
  a short budget skips the later steps instead of overrunning.
Standard library only.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

ROOT = BUILD = None
GLIBC = ("linux-vdso", "libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "ld-linux")
STEPS = ["gpu", "bundle", "abi", "sass", "kernels", "tiny", "bench-0.6b", "hf-0.6b", "bench-4b", "bench-4b-unfused", "spec",
         "hf-4b", "memcheck"]
FAKE_SMI = """#!/bin/sh
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-unset}" >> "$(dirname "$0")/seen-env"
case "$*" in
  *--query-gpu=name,*) echo "NVIDIA Rehearsal GPU, 580.00, 143771" ;;
  *--query-gpu=*) echo "9.0, 345, 3201, 1980, 3201, 700.00, 30" ;;
  *) echo "GPU 0: NVIDIA Rehearsal GPU (UUID: GPU-rehearsal)" ;;
esac
"""
BROKEN_SMI = """#!/bin/sh
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-unset}" >> "$(dirname "$0")/seen-env"
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
exit 9
"""


def cuda_families():
    """How many fatbins the build makes: one per kernels-src/cuda/*.cu."""
    return len([n for n in os.listdir(os.path.join(ROOT, "kernels-src", "cuda")) if n.endswith(".cu")])


def path_without_nvidia_smi(extra=None):
    dirs = [d for d in os.environ.get("PATH", "/usr/bin:/bin").split(":")
            if d and not os.path.exists(os.path.join(d, "nvidia-smi"))]
    return ":".join(([extra] if extra else []) + dirs)


def fake_bin(directory, script):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "nvidia-smi")
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)
    os.chmod(path, 0o755)
    return directory


def run_sh(out, bundle, path, budget=None, timeout=400):
    env = dict(os.environ, OUT=out, PATH=path, LD_LIBRARY_PATH="/caller/own/path")
    if budget:
        env["KERN_GPU_BUDGET_S"] = str(budget)
    t = time.monotonic()
    p = subprocess.run([os.path.join(ROOT, "test", "gpu", "run.sh"), bundle], capture_output=True, text=True,
                       env=env, cwd="/", timeout=timeout)
    return p, time.monotonic() - t


class RunShWithoutGpu(unittest.TestCase):
    def check_out_dir(self, out):
        """At most 8 plain files, nothing deeper; summary, results and logs among them."""
        entries = os.listdir(out)
        self.assertLessEqual(len(entries), 8, entries)
        for e in entries:
            self.assertTrue(os.path.isfile(os.path.join(out, e)), e)
        self.assertEqual(sorted(entries), ["logs.tar.gz", "results.json", "summary.txt"])
        with open(os.path.join(out, "results.json"), "r", encoding="utf-8") as f:
            results = json.load(f)
        with open(os.path.join(out, "summary.txt"), "r", encoding="utf-8") as f:
            summary = f.read()
        with tarfile.open(os.path.join(out, "logs.tar.gz")) as t:
            names = t.getnames()
        return summary, results, names

    def test_the_step_caps_fit_inside_the_default_budget(self):
        import re
        with open(os.path.join(ROOT, "test", "gpu", "run.sh"), "r", encoding="utf-8") as f:
            text = f.read()
        budget = int(re.search(r"^budget=\$\{KERN_GPU_BUDGET_S:-(\d+)\}$", text, re.M).group(1))
        reserve = int(re.search(r"^reserve=(\d+)", text, re.M).group(1))
        caps = {m.group(1): int(m.group(2)) for m in re.finditer(r"^step (\S+) +(\d+) ", text, re.M)}
        self.assertEqual(budget, 360)  # issue 8's default: 6 minutes
        self.assertEqual(list(caps), STEPS)
        self.assertEqual(list(caps)[-1], "memcheck")  # compute-sanitizer last, with a short cap
        self.assertLessEqual(caps["memcheck"], 15)
        self.assertLessEqual(sum(caps.values()), budget - reserve, caps)

    def test_no_nvidia_smi_stops_at_once_with_a_clear_summary(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            p, seconds = run_sh(out, os.path.join(tmp, "no-bundle"), path_without_nvidia_smi())
            self.assertNotEqual(p.returncode, 0)
            self.assertLess(seconds, 30)
            summary, results, logs = self.check_out_dir(out)
            self.assertIn("gpu          FAIL", summary)
            self.assertIn("stopped: no NVIDIA GPU: nvidia-smi not found", summary)
            self.assertIn("no NVIDIA GPU: nvidia-smi not found", p.stdout)
            self.assertEqual([s["name"] for s in results["steps"]], ["gpu"])
            self.assertIn("logs/01-gpu.log", logs)

    def test_a_failing_nvidia_smi_stops_with_its_message_and_the_callers_environment(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            bindir = fake_bin(os.path.join(tmp, "bin"), BROKEN_SMI)
            p, seconds = run_sh(out, os.path.join(tmp, "no-bundle"), path_without_nvidia_smi(bindir))
            self.assertEqual(p.returncode, 1)
            self.assertLess(seconds, 30)
            summary, _, _ = self.check_out_dir(out)
            self.assertIn("no NVIDIA GPU: nvidia-smi: NVIDIA-SMI has failed", summary)
            with open(os.path.join(bindir, "seen-env"), "r", encoding="utf-8") as f:
                self.assertEqual(set(f.read().split()), {"LD_LIBRARY_PATH=/caller/own/path"})


class FatbinPins(unittest.TestCase):
    """fatbin_pins.py (bundle.sh's and run.sh's pin check) on fabricated manifests."""

    def run_pins(self, kdir, *manifests):
        return subprocess.run([sys.executable, os.path.join(ROOT, "test", "gpu", "fatbin_pins.py"), kdir, *manifests],
                              capture_output=True, text=True)

    def test_every_nested_pin_is_checked(self):
        import hashlib
        with tempfile.TemporaryDirectory() as tmp:
            kdir = os.path.join(tmp, "k")
            os.makedirs(kdir)
            with open(os.path.join(kdir, "a.fatbin"), "wb") as f:
                f.write(b"abc")
            good = hashlib.sha256(b"abc").hexdigest()
            manifest = os.path.join(tmp, "m.json")

            def write(pins):
                with open(manifest, "w", encoding="utf-8") as f:
                    json.dump({"kernels": {"x": {"impl": {"steps": [{"cubin": c, "sha256": h} for c, h in pins]}},
                                           "y": {"params": []}}}, f)

            write([("a.fatbin", good), ("a.fatbin", good)])
            p = self.run_pins(kdir, manifest)
            self.assertEqual((p.returncode, p.stdout), (0, "1 pinned fatbins, 0 mismatches\n"))
            write([("a.fatbin", good), ("a.fatbin", "0" * 64), ("b.fatbin", good)])
            p = self.run_pins(kdir, manifest)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"kernels.x.impl.steps[1]: {kdir}/a.fatbin: sha256 {good}, pinned {'0' * 64}", p.stdout)
            self.assertIn(f"kernels.x.impl.steps[2]: {kdir}/b.fatbin: sha256 unreadable", p.stdout)
            self.assertIn("2 pinned fatbins, 2 mismatches", p.stdout)
            with open(manifest, "w", encoding="utf-8") as f:
                f.write("{not json")
            self.assertEqual(self.run_pins(kdir, manifest).returncode, 2)
            self.assertEqual(self.run_pins(kdir).returncode, 2)


@unittest.skipUnless("--bundle" in sys.argv, "no CUDA build (nvcc): no bundle to rehearse")
class Bundle(unittest.TestCase):
    tmp = bundle = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kern-rehearsal-")
        made = os.path.join(cls.tmp, "made")
        cls.bundle_proc = subprocess.run([os.path.join(ROOT, "test", "gpu", "bundle.sh"), BUILD, made],
                                         capture_output=True, text=True, cwd=ROOT)
        # Moved elsewhere: the rpath must be relative ($ORIGIN), not the build's paths.
        cls.bundle = os.path.join(cls.tmp, "elsewhere", "gpu-bundle")
        if cls.bundle_proc.returncode == 0:
            shutil.move(made, cls.bundle)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.bundle_proc.returncode, 0, self.bundle_proc.stderr)

    def test_bundle_is_under_the_limit_and_says_its_size(self):
        total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(self.bundle) for f in fs)
        self.assertLessEqual(total, 24_000_000)
        self.assertRegex(self.bundle_proc.stdout, r"bundle\.sh: .*: \d+ bytes \(\d+\.\d MB; limit 20 MB\): "
                         + str(cuda_families()) + r" fatbins, 3 binaries, \d+ libraries")
        self.assertEqual(sorted(os.listdir(os.path.join(self.bundle, "bin"))),
                         ["kern-gpu-compare", "kern-run", "kern-verify"])
        with open(os.path.join(self.bundle, "VERSION"), "r", encoding="utf-8") as f:
            self.assertTrue(f.readline().startswith("commit "))

    def test_binaries_start_from_another_directory_with_only_the_bundles_libraries(self):
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        lib = os.path.join(self.bundle, "lib")
        for exe in ("kern-gpu-compare", "kern-verify", "kern-run"):
            path = os.path.join(self.bundle, "bin", exe)
            p = subprocess.run([path, "--help"], capture_output=True, text=True, env=env, cwd="/")
            # main ran: kern-gpu-compare answers --help with its usage line and exit 2
            self.assertEqual(p.returncode, 2 if exe == "kern-gpu-compare" else 0, exe + ": " + p.stderr)
            self.assertIn("usage", (p.stdout + p.stderr).lower())
            ldd = subprocess.run(["ldd", path], capture_output=True, text=True, env=env, cwd="/").stdout
            for line in ldd.splitlines():
                name = os.path.basename(line.split()[0])
                if name.startswith(GLIBC):
                    continue
                self.assertIn("=>", line, f"{exe}: {line.strip()}")
                resolved = os.path.realpath(line.split("=>")[1].split()[0])
                self.assertEqual(os.path.dirname(resolved), lib, f"{exe}: {line.strip()}")

    def test_bundled_kern_run_gives_the_builds_ids(self):
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        with tempfile.TemporaryDirectory() as tmp:
            plan = os.path.join(tmp, "tiny.kplan")
            run = [os.path.join(self.bundle, "bin", "kern-verify"), os.path.join(ROOT, "examples", "tiny-qwen3.json"),
                   "-o", plan]
            self.assertEqual(subprocess.run(run, capture_output=True, env=env, cwd="/").returncode, 0)
            args = [plan, "--weights", os.path.join(ROOT, "examples", "tiny-qwen3.safetensors"),
                    "--prompt-ids", "1,17,42,99,3,250,7", "--steps", "8", "--device", "cpu", "--json"]
            ids = []
            for exe in (os.path.join(self.bundle, "bin", "kern-run"), os.path.join(BUILD, "kern-run", "kern-run")):
                p = subprocess.run([exe] + args, capture_output=True, text=True, env=env, cwd="/")
                self.assertEqual(p.returncode, 0, p.stderr)
                ids.append(json.loads(p.stdout)["generated_ids"])
            self.assertEqual(len(ids[0]), 8)
            self.assertEqual(ids[0], ids[1])

    def test_text_still_works_with_the_empty_icu_data_library(self):
        # NFC and the character properties kern reads are compiled into
        # libicuuc; the 31 MB data library it replaces holds none of them.
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        text = "cafe\u0301 \u212b"  # NFC: "caf\u00e9 \u00c5"
        args = ["tokenize", "--tokenizer", os.path.join(ROOT, "test", "tokenizer", "fixtures", "flags_tokenizer.json"),
                "--prompt", text]
        got = [subprocess.run([exe] + args, capture_output=True, text=True, env=env, cwd="/")
               for exe in (os.path.join(self.bundle, "bin", "kern-run"), os.path.join(BUILD, "kern-run", "kern-run"))]
        self.assertEqual([g.returncode for g in got], [0, 0], got[0].stderr)
        self.assertEqual(json.loads(got[0].stdout), json.loads(got[1].stdout))
        self.assertEqual(json.loads(got[0].stdout)[-2:], [0xC3, 0x85])  # U+212B became U+00C5 (bytes C3 85)
        self.assertLess(os.path.getsize(os.path.join(self.bundle, "lib", "libicudata.so.72")), 100_000)

    def test_bundle_sh_refuses_over_the_limit_and_stale_fatbins(self):
        with tempfile.TemporaryDirectory() as tmp:
            dest = os.path.join(tmp, "b")
            p = subprocess.run([os.path.join(ROOT, "test", "gpu", "bundle.sh"), BUILD, dest], capture_output=True,
                               text=True, cwd=ROOT, env=dict(os.environ, KERN_BUNDLE_LIMIT_MB="1"))
            self.assertEqual(p.returncode, 1)
            self.assertIn("over the 1 MB limit", p.stderr)
            self.assertFalse(os.path.exists(dest))
            # A build whose rope.fatbin is not the pinned one.
            fake = os.path.join(tmp, "build")
            shutil.copytree(os.path.join(BUILD, "kernels"), os.path.join(fake, "kernels"))
            with open(os.path.join(fake, "kernels", "rope.fatbin"), "ab") as f:
                f.write(b"\0")
            p = subprocess.run([os.path.join(ROOT, "test", "gpu", "bundle.sh"), fake, dest], capture_output=True,
                               text=True, cwd=ROOT)
            self.assertEqual(p.returncode, 1)
            self.assertIn("rope.fatbin: sha256", p.stderr)
            self.assertIn("not the ones the manifests pin", p.stderr)
            self.assertFalse(os.path.exists(dest))
            p = subprocess.run([os.path.join(ROOT, "test", "gpu", "bundle.sh"), BUILD], capture_output=True,
                               text=True, cwd=ROOT)
            self.assertEqual(p.returncode, 2)

    def test_run_sh_stops_when_the_bundle_is_broken(self):
        with tempfile.TemporaryDirectory() as tmp:
            broken = os.path.join(tmp, "bundle")
            shutil.copytree(self.bundle, broken, symlinks=True)
            with open(os.path.join(broken, "lib", "libfmt.so.9"), "w", encoding="utf-8") as f:
                f.write("not a library")  # found first through the rpath: the loader stops there
            out = os.path.join(tmp, "out")
            bindir = fake_bin(os.path.join(tmp, "bin"), FAKE_SMI)
            p, seconds = run_sh(out, broken, path_without_nvidia_smi(bindir))
            self.assertEqual(p.returncode, 1)
            summary, results, logs = RunShWithoutGpu.check_out_dir(self, out)
            self.assertEqual([(s["name"], s["status"]) for s in results["steps"]], [("gpu", "ok"), ("bundle", "FAIL")])
            self.assertIn("stopped: the bundle is unusable", summary)
            self.assertIn("does not start (exit 127)", p.stdout)

    def test_run_sh_runs_every_step_on_a_fake_gpu_and_keeps_its_budget(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            bindir = fake_bin(os.path.join(tmp, "bin"), FAKE_SMI)
            p, _ = run_sh(out, self.bundle, path_without_nvidia_smi(bindir))
            self.assertEqual(p.returncode, 1, p.stdout)  # no driver: the GPU steps fail
            summary, results, logs = RunShWithoutGpu.check_out_dir(self, out)
            status = {s["name"]: s["status"] for s in results["steps"]}
            self.assertEqual(list(status), STEPS, summary)
            self.assertEqual((status["gpu"], status["bundle"], status["abi"]), ("ok", "ok", "ok"), summary)
            self.assertEqual(status["kernels"], "FAIL", summary)
            detail = {s["name"]: s["detail"] for s in results["steps"]}
            self.assertIn("NVIDIA Rehearsal GPU", detail["gpu"])
            self.assertIn(f"{cuda_families()} fatbins match the pins", detail["bundle"])
            self.assertEqual(results["device"]["name"], "NVIDIA Rehearsal GPU")
            self.assertEqual(results["device"]["clocks.max.sm"], "1980")
            self.assertEqual(len([n for n in logs if n.startswith("logs/") and n.endswith(".log")]), len(STEPS) + 1)
            with tarfile.open(os.path.join(out, "logs.tar.gz")) as t:
                kernels_log = t.extractfile(next(n for n in logs if n.endswith("-kernels.log"))).read().decode()
            self.assertIn("no CUDA driver", kernels_log)  # the discovery error, listing where it looked
            self.assertIn("/usr/local/cuda/lib64", kernels_log)
            self.assertIn("== summary", p.stdout)
            lines = p.stdout.splitlines()
            table = next(i for i, line in enumerate(lines) if line.startswith("model       mode   ms/step"))
            self.assertGreater(table, lines.index("== summary (%s: summary.txt, results.json, logs.tar.gz)" % out))
            self.assertLessEqual(len(lines) - table, 1 + 6 + 2)  # the table is last: 6 model/mode lines (0.6b, 4b, 4b-unfused), 2 HF lines
            with open(os.path.join(bindir, "seen-env"), "r", encoding="utf-8") as f:
                self.assertEqual(set(f.read().split()), {"LD_LIBRARY_PATH=/caller/own/path"})
            # A budget that fits only the first steps: the rest are skipped, not run over.
            shutil.rmtree(out)
            p, seconds = run_sh(out, self.bundle, path_without_nvidia_smi(bindir), budget=25)
            self.assertLess(seconds, 25 + 10)  # the last pack and the table, on a loaded 2-core machine
            self.assertEqual(p.returncode, 1)  # incomplete
            summary, results, _ = RunShWithoutGpu.check_out_dir(self, out)
            self.assertEqual([s["name"] for s in results["steps"]], STEPS)
            self.assertIn("wall budget of 25s spent", results["steps"][-1]["detail"])
            self.assertEqual(results["steps"][-1]["status"], "skip")


if __name__ == "__main__":
    ROOT, BUILD = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
