#!/usr/bin/python3
"""kern_run_sim_test.py KERN_VERIFY KERN_RUN SOURCE_ROOT BUILD_ROOT KERNELS_DIR

kern-run --device cuda on the simulated GPU (test/sim/with-sim-gpu) against
the cpu device, on the tiny example models (the tiny Qwen3-MoE too): fused (pinned) and unfused
kernels, the same fused plan unpinned, DSpark --spec, each with graphs and
--eager, async and --sync; and kern-run --requests, whose ids must not
depend on --max-batch (batch invariance, greedy and seeded sampling), nor on the
prefix cache (shared pages in the block tables, graphs on). The generated ids must equal the cpu device's; a
divergence is accepted only at a near-tie shown from both sides' logits
(the two candidate ids within 2 bf16 ulps of the largest logit on each
side). Every run is also clean for the simulation (no violation reported,
no resource alive when the context is released).

Then the failure paths kern-load must survive or report: an invalidated
capture, a failed end of capture, instantiation and graph launch each fall
back to eager once (one warning, the cpu ids); a launch error, a kernel
fault and an allocation failure each end the run with exit 1 and an error
naming the driver call and CUDA error.

The cases are independent processes: they run in a thread per CPU (each
waits on its kern-run), each case's messages printed together, in the
cases' order. Standard library only. Exit 0 when every check passes, 1
otherwise.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

PROMPT = "1,2,3,4,5"
STEPS = 12
CHUNK = 4


class Ctx:
    def __init__(self, argv):
        self.verify, self.run, self.src, self.build, self.kernels = argv
        self.wrapper = os.path.join(self.src, "test", "sim", "with-sim-gpu")
        self.tmp = tempfile.mkdtemp(prefix="kern-sim-")
        self.failures = []
        self.checks = 0
        self.lock = threading.Lock()
        self.local = threading.local()  # .lines: the running case's messages, when it runs in a pool thread

    def say(self, text):
        """Prints now, or with the rest of the running case's messages (run_cases)."""
        lines = getattr(self.local, "lines", None)
        if lines is None:
            print(text, flush=True)
        else:
            lines.append(text)

    def check(self, ok, what):
        with self.lock:
            self.checks += 1
            if not ok:
                self.failures.append(what)
        if not ok:
            self.say(f"FAIL: {what}")

    def scratch(self, name):
        """A new file name under tmp (cases run at once must not share one)."""
        fd, path = tempfile.mkstemp(prefix=name, dir=self.tmp)
        os.close(fd)
        os.remove(path)
        return path

    def plan(self, manifest, name):
        out = os.path.join(self.tmp, name + ".kplan")
        subprocess.run([self.verify, manifest, "-o", out], check=True, capture_output=True)
        return out

    def kern_run(self, plan, weights, device, extra=(), env_extra=None, steps=STEPS):
        """(exit code, parsed --json or None, stderr, simulation report text)."""
        report = self.scratch("report-")
        env = dict(os.environ, KERN_BUILD_DIR=self.build, KERN_SIM_REPORT=report, KERN_SIM_LEAKS="report")
        env.update(env_extra or {})
        cmd = [self.run, plan] + weights + ["--prompt-ids", PROMPT, "--steps", str(steps), "--chunk", str(CHUNK),
                                            "--device", device, "--kernels", self.kernels, "--json"] + list(extra)
        if device == "cuda":
            cmd = [self.wrapper] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
        doc = None
        if p.returncode == 0:
            try:
                doc = json.loads(p.stdout)
            except ValueError:
                doc = None
        rep = open(report).read() if os.path.exists(report) else ""
        return p.returncode, doc, p.stderr, rep


def run_cases(ctx, cases):
    """Runs the callables `cases` (each a case: its own kern-run processes
    and files) in a thread per CPU; prints each case's messages together,
    in the cases' order, as soon as it and those before it have finished."""
    def one(case):
        ctx.local.lines = []
        try:
            case()
        except Exception as e:  # a crash in one case is its failure, not the others'
            ctx.check(False, f"{getattr(case, '__name__', 'case')}: {type(e).__name__}: {e}")
        return ctx.local.lines

    with ThreadPoolExecutor(max_workers=max(1, len(os.sched_getaffinity(0)))) as pool:
        for lines in pool.map(one, cases):
            for line in lines:
                print(line, flush=True)


def bf16_row(path, row, vocab):
    data = open(path, "rb").read()
    vals = struct.unpack_from(f"<{vocab}H", data, row * vocab * 2)
    return [struct.unpack("<f", struct.pack("<I", v << 16))[0] for v in vals]


def is_near_tie(logits, a, b):
    """Whether ids a and b are both within 2 bf16 ulps of the largest logit."""
    top = max(logits)
    ulp = 2.0 ** (math.frexp(top)[1] - 8) if top != 0 else 2.0 ** -133  # bf16: 8 significant bits
    return top - min(logits[a], logits[b]) <= 2 * ulp


def near_tie(ctx, plan, weights, extra, index, cpu_id, sim_id):
    """Whether both sides' logits at generated position `index` put cpu_id and
    sim_id within 2 bf16 ulps of the largest logit (a tie either argmax may break)."""
    sides = {}
    for device in ("cpu", "cuda"):
        dump = ctx.scratch(f"logits-{device}-")
        rc, doc, err, _ = ctx.kern_run(plan, weights, device, list(extra) + ["--sync", "--eager", "--dump-buffer",
                                                                             f"logits={dump}"], steps=index + 1)
        if rc != 0:
            return False, f"{device} logits run failed: {err.strip()[-300:]}"
        # Decode logits are row 0; the first id comes from the prompt's last row.
        row = (len(PROMPT.split(",")) - 1) % CHUNK if index == 0 else 0
        sides[device] = bf16_row(dump, row, 256)
    notes = [f"{d}: logit[{cpu_id}]={l[cpu_id]} logit[{sim_id}]={l[sim_id]} max={max(l)}" for d, l in sides.items()]
    return all(is_near_tie(l, cpu_id, sim_id) for l in sides.values()), "; ".join(notes)


def compare(ctx, label, plan, weights, extra=()):
    rc_cpu, cpu, err_cpu, _ = ctx.kern_run(plan, weights, "cpu", extra)
    ctx.check(rc_cpu == 0 and cpu is not None, f"{label}: cpu run failed: {err_cpu.strip()[-400:]}")
    rc, sim, err, rep = ctx.kern_run(plan, weights, "cuda", extra)
    ctx.check(rc == 0 and sim is not None, f"{label}: sim run failed (exit {rc}): {err.strip()[-600:]}")
    ctx.check(rep == "", f"{label}: the simulation reported: {rep.strip()[:600]}")
    if cpu is None or sim is None:
        return
    ctx.check(sim.get("device", "").startswith("cuda:0 kern simulated GPU"), f"{label}: device is {sim.get('device')}")
    a, b = cpu["generated_ids"], sim["generated_ids"]
    ctx.check(len(a) == STEPS and len(b) == STEPS, f"{label}: {len(a)} cpu ids, {len(b)} sim ids, expected {STEPS}")
    if a != b:
        i = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        ok, why = near_tie(ctx, plan, weights, extra, i, a[i], b[i])
        ctx.check(ok, f"{label}: ids diverge at {i} (cpu {a[:i + 1]}, sim {b[:i + 1]}) and it is not a near-tie: {why}")
        if ok:
            ctx.say(f"{label}: divergence at {i} accepted as a near-tie: {why}")
    ctx.say(f"{label}: {'same ids' if a == b else 'near-tie'} ({b})")


def batch_invariance(ctx, plan, weights):
    """kern-run --requests on the simulated GPU (docs/batching.md): each
    request's ids with up to 4 sequences per decode_batch step (joining and
    leaving at different lengths) equal its ids one sequence at a time
    (--max-batch 1: the batch-1 decode), bit for bit, greedy and seeded
    sampling rows alike (decode_batch's sample dispatch draws row r's ids as
    decode's does alone); the simulation stays clean."""
    reqs = ctx.scratch("requests-")
    seeded = {1: {"temperature": 2.0, "top_k": 60, "seed": 3}, 3: {"temperature": 1.5, "top_p": 0.9, "seed": 4},
              6: {"temperature": 2.0, "min_p": 0.02, "seed": 5}}
    lines = (([1, 2, 3, 4, 5], 12), ([7], 5), ([9, 8, 7, 6, 5, 4, 3, 2, 1] * 2, 9), ([42, 43], 16), ([100, 5], 3),
             ([3] * 20, 7), ([11, 12, 13], 10))
    with open(reqs, "w") as f:
        for i, (ids, n) in enumerate(lines):
            f.write(json.dumps({"prompt_ids": ids, "max_tokens": n, **seeded.get(i, {})}) + "\n")
        for i in seeded:  # the seeded requests again, greedy: the seeded ones must differ (they do sample)
            f.write(json.dumps({"prompt_ids": lines[i][0], "max_tokens": lines[i][1]}) + "\n")
    got = {}
    for batch in ("4", "1"):
        report = ctx.scratch("report-")
        env = dict(os.environ, KERN_BUILD_DIR=ctx.build, KERN_SIM_REPORT=report, KERN_SIM_LEAKS="report")
        cmd = [ctx.wrapper, ctx.run, plan] + weights + ["--requests", reqs, "--max-batch", batch, "--chunk",
                                                        str(CHUNK), "--device", "cuda", "--kernels", ctx.kernels]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
        label = f"--requests --max-batch {batch}"
        ctx.check(p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
        rep = open(report).read() if os.path.exists(report) else ""
        ctx.check(rep == "", f"{label}: the simulation reported: {rep.strip()[:600]}")
        try:
            got[batch] = [json.loads(line)["ids"] for line in p.stdout.splitlines()]
        except ValueError:
            got[batch] = None
    ctx.check(got["4"] is not None and len(got["4"]) == len(lines) + len(seeded) and got["4"] == got["1"],
              f"--requests: ids at --max-batch 4 {got['4']} differ from --max-batch 1 {got['1']}")
    for k, i in enumerate(seeded):
        ctx.check(got["1"] is not None and got["1"][i] != got["1"][len(lines) + k],
                  f"--requests: seeded request {i} gave its greedy ids {got['1'] and got['1'][i]}")
    ctx.say(f"--requests: the same ids at --max-batch 4 and 1 ({got['4']})")


def prefix_cache(ctx, plan, weights):
    """kern-run --requests with the prefix cache (docs/serving.md "Prefix
    caching") on the simulated GPU, graphs on: requests sharing a 40-token
    prefix map its cached pages through their block table rows (shared
    pages in the rows of decode_batch, the tables graph inputs) and get the
    ids they get with --no-prefix-cache and on the cpu device; the later
    requests report the shared pages as cached_tokens; the simulation stays
    clean. The last request is the next turn of the second: its prompt and
    reply (whose decode-written page the engine prefills again before it
    keys it) and three more ids."""
    reqs = ctx.scratch("prefix-")
    shared = [(i * 37 + 11) % 200 for i in range(40)]
    lines = [(shared + [1, 2], 6), (shared + [5], 9), (shared[:33] + [7, 7], 5), (shared + [1, 2], 6),
             (shared + [9, 9, 9, 9, 9, 9, 9, 9], 4)]

    def run_requests(label, device, extra, rows):
        with open(reqs, "w") as f:
            for ids, n in rows:
                f.write(json.dumps({"prompt_ids": ids, "max_tokens": n}) + "\n")
        report = ctx.scratch("report-")
        env = dict(os.environ, KERN_BUILD_DIR=ctx.build, KERN_SIM_REPORT=report, KERN_SIM_LEAKS="report")
        cmd = [ctx.wrapper, ctx.run, plan] + weights + ["--requests", reqs, "--chunk", str(CHUNK), "--device", device,
                                                        "--kernels", ctx.kernels] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
        ctx.check(p.returncode == 0, f"prefix cache, {label}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
        rep = open(report).read() if os.path.exists(report) else ""
        ctx.check(rep == "", f"prefix cache, {label}: the simulation reported: {rep.strip()[:600]}")
        try:
            results = [json.loads(line) for line in p.stdout.splitlines()]
            return [r["ids"] for r in results], [r["cached_tokens"] for r in results]
        except (ValueError, KeyError):
            return None, None

    # The second request's reply on the cpu device: the next turn resends it.
    reply, _ = run_requests("cpu, the second request", "cpu", ["--no-prefix-cache"], lines[1:2])
    ctx.check(reply is not None and len(reply) == 1 and len(reply[0]) == 9, f"prefix cache: cpu reply {reply}")
    lines.append((lines[1][0] + (reply[0] if reply else []) + [3, 4, 5], 5))
    got, cached = {}, {}
    for label, device, extra in (("cpu, cache off", "cpu", ["--no-prefix-cache", "--max-batch", "1"]),
                                 ("sim, cache off", "cuda", ["--no-prefix-cache", "--max-batch", "1"]),
                                 ("sim, cache on, --max-batch 1", "cuda", ["--max-batch", "1"]),
                                 ("sim, cache on, --max-batch 4", "cuda", ["--max-batch", "4"])):
        got[label], cached[label] = run_requests(label, device, extra, lines)
    want = got["cpu, cache off"]
    ctx.check(want is not None and len(want) == len(lines), f"prefix cache: cpu results {want}")
    for label in got:
        ctx.check(got[label] == want, f"prefix cache, {label}: ids {got[label]}, cpu {want}")
    ctx.check(cached["sim, cache off"] == [0] * len(lines), f"prefix cache off: cached_tokens {cached['sim, cache off']}")
    # One sequence at a time: the first request's prompt pages (and its reply's) are cached for the others;
    # the next turn maps its history's 3 full pages (41 + 9 - 1 positions written), the third re-prefilled.
    ctx.check(cached["sim, cache on, --max-batch 1"] == [0, 32, 32, 32, 32, 48],
              f"prefix cache on, --max-batch 1: cached_tokens {cached['sim, cache on, --max-batch 1']}")
    ctx.check(cached["sim, cache on, --max-batch 4"] is not None and sum(cached["sim, cache on, --max-batch 4"]) > 0,
              f"prefix cache on, --max-batch 4: cached_tokens {cached['sim, cache on, --max-batch 4']}")
    ctx.say(f"prefix cache: the cpu ids with and without the cache, batched or not ({want}); cached_tokens "
            f"{cached['sim, cache on, --max-batch 1']} at --max-batch 1, {cached['sim, cache on, --max-batch 4']} at 4")


def failure(ctx, label, plan, weights, spec, want_rc, needles):
    rc, doc, err, _ = ctx.kern_run(plan, weights, "cuda", env_extra={"KERN_SIM_FAIL": spec})
    ctx.check(rc == want_rc, f"{label}: exit {rc}, expected {want_rc}: {err.strip()[-500:]}")
    for n in needles:
        ctx.check(n in err, f"{label}: stderr lacks {n!r}: {err.strip()[-500:]}")
    return rc, doc, err


def main(argv):
    if len(argv) != 5:
        print(__doc__.split("\n")[0], file=sys.stderr)
        return 2
    ctx = Ctx(argv)
    # The near-tie rule itself: a tie within 2 ulps is one, a clear gap or a third, larger id is not.
    ctx.check(is_near_tie([0.5, 3.0, 3.015625, 1.0], 1, 2), "near-tie rule: a 1-ulp tie at 3.0 rejected")
    ctx.check(not is_near_tie([0.5, 3.0, 3.125, 1.0], 1, 2), "near-tie rule: an 8-ulp gap accepted")
    ctx.check(not is_near_tie([0.5, 3.0, 3.0, 4.0], 1, 2), "near-tie rule: a tie below the argmax accepted")
    ex = os.path.join(ctx.src, "examples")
    tiny_w = ["--weights", os.path.join(ex, "tiny-qwen3.safetensors")]
    random_w = ["--random-weights", "5"]  # varied ids (the checked-in weights repeat one id)
    fused = ctx.plan(os.path.join(ex, "tiny-qwen3.json"), "fused")
    unfused = ctx.plan(os.path.join(ex, "tiny-qwen3-unfused.json"), "unfused")
    dspark = ctx.plan(os.path.join(ex, "tiny-qwen3-dspark.json"), "dspark")
    # The fused manifest without its pins: steps resolve in any loaded fatbin.
    doc = json.load(open(os.path.join(ex, "tiny-qwen3.json")))
    for kernel in doc["kernels"].values():
        for step in kernel["impl"]["steps"]:
            step.pop("cubin", None)
            step.pop("sha256", None)
    unpinned_json = os.path.join(ctx.tmp, "tiny-qwen3-unpinned.json")
    json.dump(doc, open(unpinned_json, "w"))
    unpinned = ctx.plan(unpinned_json, "unpinned")

    cases = []
    for mode in ([], ["--eager"], ["--sync"], ["--eager", "--sync"]):
        name = " ".join(mode) or "graphs, async"
        cases.append(lambda name=name, mode=mode: compare(ctx, f"fused pinned ({name})", fused, random_w, mode))
        cases.append(lambda name=name, mode=mode: compare(ctx, f"unfused ({name})", unfused, random_w, mode))
    cases.append(lambda: compare(ctx, "fused pinned, tiny-qwen3.safetensors (graphs, async)", fused, tiny_w))
    cases.append(lambda: compare(ctx, "fused unpinned (graphs, async)", unpinned, random_w))
    cases.append(lambda: compare(ctx, "dspark --spec (graphs)", dspark, ["--random-weights", "3"], ["--spec"]))
    cases.append(lambda: compare(ctx, "dspark --spec --eager", dspark, ["--random-weights", "3"], ["--spec", "--eager"]))
    cases.append(lambda: batch_invariance(ctx, fused, random_w))
    # Qwen3-MoE (issue 41): the router and expert kernels in prefill, decode and decode_batch.
    moe = ctx.plan(os.path.join(ex, "tiny-qwen3-moe.json"), "moe")
    moe_w = ["--weights", os.path.join(ex, "tiny-qwen3-moe.safetensors")]
    cases.append(lambda: compare(ctx, "tiny Qwen3-MoE fused pinned (graphs, async)", moe, moe_w))
    cases.append(lambda: batch_invariance(ctx, moe, moe_w))
    cases.append(lambda: prefix_cache(ctx, fused, random_w))

    def sampled():
        # Seeded sampling (docs/kernels.md §15): sample.cu on the emulator inside the graphed decode draws the cpu
        # twin's ids. (Deterministic here; a draw can move only where the emulated logits differ from the cpu's
        # in the last bit, which these 12 steps of the tiny model do not hit.)
        sampling = ["--temperature", "2", "--top-k", "60", "--top-p", "0.9", "--min-p", "0.02", "--seed", "99"]
        _, cpu_s, err_cpu, _ = ctx.kern_run(fused, tiny_w, "cpu", sampling)
        rc, sim_s, err, rep = ctx.kern_run(fused, tiny_w, "cuda", sampling)
        ctx.check(rc == 0 and sim_s is not None and rep == "", f"sampled: sim run failed (exit {rc}): {err.strip()[-400:]} {rep[:400]}")
        ctx.check(cpu_s is not None and sim_s is not None and sim_s["generated_ids"] == cpu_s["generated_ids"],
                  f"sampled: sim ids {sim_s and sim_s['generated_ids']}, cpu {cpu_s and cpu_s['generated_ids']}")
    cases.append(sampled)

    _, cpu, _, _ = ctx.kern_run(fused, random_w, "cpu")
    cpu_ids = cpu["generated_ids"] if cpu else None

    def graph_fallback(spec, call):
        rc, doc, err = failure(ctx, f"injected {spec}", fused, random_w, spec, 0,
                               ["CUDA graphs disabled", call, "running eagerly from now on"])
        ctx.check(err.count("CUDA graphs disabled") == 1, f"injected {spec}: warned {err.count('CUDA graphs disabled')} times")
        ctx.check(doc is not None and doc["generated_ids"] == cpu_ids,
                  f"injected {spec}: ids {doc and doc['generated_ids']} after the eager fallback, cpu {cpu_ids}")
    for spec, call in (("capture", "cuLaunchKernel"), ("end_capture", "cuStreamEndCapture"),
                       ("instantiate", "cuGraphInstantiateWithFlags"), ("graph_launch", "cuGraphLaunch")):
        cases.append(lambda spec=spec, call=call: graph_fallback(spec, call))
    cases.append(lambda: failure(ctx, "injected launch error", fused, random_w, "launch@20", 1,
                                 ["cuLaunchKernel", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "steps["]))
    cases.append(lambda: failure(ctx, "injected kernel fault", fused, random_w, "kernel_fault@30", 1,
                                 ["CUDA_ERROR_ILLEGAL_ADDRESS"]))
    cases.append(lambda: failure(ctx, "injected allocation failure", fused, random_w, "alloc@3", 1,
                                 ["cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY"]))
    run_cases(ctx, cases)

    # The wrapper without a built driver: a clear error, exit 2, the command not run.
    p = subprocess.run([ctx.wrapper, "/bin/echo", "ran"], capture_output=True, text=True,
                       env=dict(os.environ, KERN_BUILD_DIR=os.path.join(ctx.tmp, "no-build")))
    ctx.check(p.returncode == 2 and "no simulated driver under" in p.stderr and "ran" not in p.stdout,
              f"with-sim-gpu without a build: exit {p.returncode}, stderr {p.stderr!r}")
    p = subprocess.run([ctx.wrapper], capture_output=True, text=True)
    ctx.check(p.returncode == 2 and "usage" in p.stderr, f"with-sim-gpu without a command: exit {p.returncode}")

    print(f"{ctx.checks} checks, {len(ctx.failures)} failures")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
