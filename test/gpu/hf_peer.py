#!/usr/bin/env python3
"""hf_peer.py CONFIG --plan KPLAN --kern-run BIN --kernels DIR --work DIR --json OUT

kern beside a peer on the same random weights (test/gpu/run.sh, docs/gpu.md):
HF transformers' Qwen3ForCausalLM is built from CONFIG (an HF config.json,
e.g. examples/qwen3-0.6b.config.json) in bf16 on the GPU, its weights drawn
with the rule examples/gen_random_weights.py uses for the tiny model (HF's own
initialisation, normal(0, 0.02), gives nearly flat logits and ties
everywhere, so greedy ids would compare nothing):
  embed_tokens U(-1, 1); every matrix U(-a, a), a = 4 / sqrt(fan_in);
  every norm weight 1 + U(-0.25, 0.25)
(torch's generator on the GPU, seeded: the values differ from the tiny
model's SHAKE-256 stream, the distribution is the same). Then:
 1. the state dict is saved as an HF checkpoint (config.json +
    model.safetensors) and exported to kern's layout with
    examples/export_qwen3.py, so the comparison also tests the exporter;
 2. greedy ids for STEPS steps from HF `generate` and from `kern-run
    --device cuda` on the exported weights; the first difference is named
    with HF's top-2 logit gap there: a near tie, which excuses it, when the
    gap is under NEAR_TIE_ABS + NEAR_TIE_REL x |top logit| (bf16 logits of
    magnitude 32..64 are 0.25 apart, and 28 layers of bf16 rounding in a
    different order move them by about 1%);
 3. decode ms/token: HF's default `generate` (per-step times from a
    streamer, median after warm-up), HF with a static KV cache with one
    decode step captured as a CUDA graph (median of per-step CUDA-event
    times; the cache is emptied and the prompt refilled after warm-up and
    after the capture, reset_static_cache, so the replay starts from the
    prompt on transformers 4.5x and 5.x alike, and a replay whose ids differ
    from generate's is an error, its time discarded), and kern-run's own
    decode ms/token on the same weights;
 4. HF prefill tok/s of one 512-token chunk (median of 5 after a warm-up).
Each part that fails is recorded in the JSON's "errors" and the others
still run; parts that would pass --deadline-s are skipped and said so.

Exit 0 when the ids agree (or differ only after a near tie) and the timings
exist, 1 otherwise, 2 on bad usage. torch and transformers are imported
only inside the functions that need them, so the pure parts (the weight
rule, the id comparison, the statistics) are tested without them
(test/gpu/hf_peer_test.py).
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

GAIN = 4.0          # examples/gen_random_weights.py
NORM_NOISE = 0.25   # examples/gen_random_weights.py
NEAR_TIE_ABS = 0.25  # see the module doc: the top-2 gap under which kern may pick the other id
NEAR_TIE_REL = 0.02
PROMPT_IDS = [1, 17, 42, 99, 3, 250, 7]
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def init_rule(name, shape):
    """(center, amplitude) of the uniform draw for HF parameter `name` of `shape`."""
    if name.endswith("embed_tokens.weight") or name == "lm_head.weight":
        return 0.0, 1.0
    if len(shape) == 1:  # input/post-attention/final norms and the q/k head norms
        return 1.0, NORM_NOISE
    if len(shape) == 2:
        return 0.0, GAIN / math.sqrt(shape[1])
    raise ValueError(f"{name}: unexpected shape {list(shape)}")


def near_tie_limit(top):
    """The top-2 gap under which a different greedy id is excused, for a top logit `top`."""
    return NEAR_TIE_ABS + NEAR_TIE_REL * abs(top)


def compare_ids(hf_ids, kern_ids, gaps, tops):
    """Verdict on two greedy id lists; gaps[i] / tops[i] = HF's top-2 logit gap / top logit at step i.

    Returns a dict: equal (bool), first_diff (step or None), steps, and for a
    difference gap_at_diff, top_at_diff, near_tie (gap under
    near_tie_limit(top)); ok: equal, or differing only from a near tie on
    (after one different id the sequences legitimately diverge)."""
    n = min(len(hf_ids), len(kern_ids))
    first = next((i for i in range(n) if hf_ids[i] != kern_ids[i]), None)
    if first is None and len(hf_ids) != len(kern_ids):
        first = n
    r = {"equal": first is None, "first_diff": first, "steps": n}
    if first is not None:
        known = first < len(gaps) and first < len(tops) and first < n
        r["gap_at_diff"] = gaps[first] if known else None
        r["top_at_diff"] = tops[first] if known else None
        r["near_tie"] = known and gaps[first] < near_tie_limit(tops[first])
    r["ok"] = r["equal"] or r.get("near_tie", False)
    return r


def median_after_warmup(values, warmup):
    """Median of values[warmup:] (None when nothing is left)."""
    rest = list(values)[warmup:]
    return statistics.median(rest) if rest else None


class Deadline:
    """Seconds left before --deadline-s (from the start of the script)."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()


def build_model(config_path, seed):
    """The HF model in bf16 on cuda with the scaled random weights."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    with open(config_path, "r", encoding="utf-8") as f:
        cfg = Qwen3Config.from_dict(json.load(f))  # the path from_pretrained takes: legacy keys accepted
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(cfg)
    model.eval()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            center, amplitude = init_rule(name, tuple(p.shape))
            p.uniform_(-amplitude, amplitude, generator=gen)
            if center:
                p.add_(center)
    model.generation_config.eos_token_id = None  # 32 ids, whatever they are (kern-run --ignore-eos)
    model.generation_config.pad_token_id = 0
    return model


def export_weights(model, config_path, work):
    """HF checkpoint in work/hf, exported to work/kern.safetensors; returns (path, seconds)."""
    from safetensors.torch import save_file

    ckpt = os.path.join(work, "hf")
    os.makedirs(ckpt, exist_ok=True)
    shutil.copyfile(config_path, os.path.join(ckpt, "config.json"))
    sd = model.state_dict()
    if model.config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)  # shared storage; export_qwen3.py materialises it
    t = time.monotonic()
    save_file({k: v.detach().to("cpu").contiguous() for k, v in sd.items()}, os.path.join(ckpt, "model.safetensors"),
              metadata={"format": "pt"})
    out = os.path.join(work, "kern.safetensors")
    p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "export_qwen3.py"), ckpt, "-o", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"export_qwen3.py exit {p.returncode}: {p.stderr.strip()[-400:]}")
    os.remove(os.path.join(ckpt, "model.safetensors"))
    return out, time.monotonic() - t


def hf_greedy(model, steps):
    """(ids, top-2 logit gaps, top logits) of HF greedy generate, one per step."""
    import torch

    x = torch.tensor([PROMPT_IDS], device="cuda")
    with torch.no_grad():
        g = model.generate(x, max_new_tokens=steps, do_sample=False, output_logits=True,
                           return_dict_in_generate=True)
    ids = g.sequences[0, len(PROMPT_IDS):].tolist()
    gaps, tops = [], []
    for logits in g.logits:
        top = torch.topk(logits[0].float(), 2).values
        gaps.append(float(top[0] - top[1]))
        tops.append(float(top[0]))
    return ids, gaps, tops


def hf_generate_ms(model, steps):
    """Per-step host times (ms) of HF's default generate, from a streamer."""
    import torch

    try:
        from transformers.generation.streamers import BaseStreamer
    except ImportError:  # duck typing is all generate() needs
        BaseStreamer = object

    class Stamps(BaseStreamer):
        def __init__(self):
            self.t = []

        def put(self, _value):
            self.t.append(time.perf_counter())

        def end(self):
            pass

    x = torch.tensor([PROMPT_IDS], device="cuda")
    with torch.no_grad():
        model.generate(x, max_new_tokens=8, do_sample=False)  # warm-up
        s = Stamps()
        model.generate(x, max_new_tokens=steps, do_sample=False, streamer=s)
    # put() is called with the prompt, then once per new id (greedy syncs each step).
    return [1000.0 * (b - a) for a, b in zip(s.t[1:], s.t[2:])]


def hf_prefill_tok_s(model, tokens=512, reps=5):
    """Median tok/s of one forward over `tokens` random ids (fresh cache each time)."""
    import torch

    x = torch.randint(0, model.config.vocab_size, (1, tokens), device="cuda",
                      generator=torch.Generator(device="cuda").manual_seed(7))
    times = []
    with torch.no_grad():
        for _ in range(reps + 1):
            torch.cuda.synchronize()
            t = time.perf_counter()
            model(x, use_cache=True, logits_to_keep=1)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    return tokens / statistics.median(times[1:])


def make_static_cache(model, max_len):
    """A StaticCache for batch 1, across the constructor signatures of transformers 4.4x..5.x."""
    import inspect

    import torch
    from transformers import StaticCache

    params = inspect.signature(StaticCache.__init__).parameters
    kw = {"config": model.config, "max_cache_len": max_len}
    for k, v in (("max_batch_size", 1), ("batch_size", 1), ("device", "cuda"), ("dtype", torch.bfloat16)):
        if k in params:
            kw[k] = v
    return StaticCache(**kw)


def reset_static_cache(cache):
    """Empties a static cache in place, keeping its tensors (a captured graph
    holds their addresses), on the cache APIs of transformers 4.5x and 5.x.

    4.5x writes K/V at the `cache_position` the caller passes; 5.x writes at
    each layer's own counter (`cumulative_length`, an int or a device
    tensor) and has no `cache_position`: after warm-up steps the counter is
    ahead of the caller's position, so it must be reset with the cache.
    Cache.reset() zeroes K/V (and, where it knows them, the counters); every
    counter left is set to 0 here too, a tensor in place. Returns how many
    counters it set (for the log)."""
    if hasattr(cache, "reset"):
        cache.reset()
    counters = 0
    for holder in [cache] + list(getattr(cache, "layers", None) or []):
        for name in ("cumulative_length", "_seen_tokens"):
            v = getattr(holder, name, None)
            if v is None:
                continue
            if hasattr(v, "zero_"):
                v.zero_()
            else:
                setattr(holder, name, 0)
            counters += 1
    return counters


def forward_takes(model, name):
    """Whether model.forward accepts keyword `name` (cache_position is gone in transformers 5)."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return name in params


def static_graph_protocol(ops, warmup, n_check):
    """The order of the static-cache graph measurement, free of torch so that
    hf_peer_test.py runs it on stand-in caches. `ops` provides:
      prefill()     the prompt through the model on the (empty) cache; the
                    current id becomes the first greedy id
      step()        one greedy decode step (writes K/V, advances the position)
      restart()     the cache emptied (reset_static_cache), prefill() again
                    and the position, mask and current id rewound: exactly
                    the state after the first prefill
      capture()     records one step() as a CUDA graph (torch runs the
                    Python side once during capture: cache counters move)
      replay()      runs the captured step
      current_id()  the current id (a host read)
    Warm-up steps run first (lazy init, autotuning), then restart, capture,
    restart again (the capture's host-side effects undone) and n_check
    replays; returns the ids seen, to be compared with generate's."""
    ops.prefill()
    for _ in range(warmup):
        ops.step()
    ops.restart()
    ops.capture()
    ops.restart()
    got = [ops.current_id()]
    for _ in range(n_check - 1):
        ops.replay()
        got.append(ops.current_id())
    return got


def hf_static_graph(model, steps, check_ids):
    """HF with a static KV cache, one greedy decode step captured as a CUDA graph.

    Returns (per-step ms from CUDA events, ids of the first len(check_ids)
    replayed steps, the number of cache counters reset_static_cache set)."""
    import torch

    n_prompt = len(PROMPT_IDS)
    max_len = n_prompt + steps + len(check_ids) + 8
    cache = make_static_cache(model, max_len)
    with_position = forward_takes(model, "cache_position")
    counters = [0]

    class Ops:
        def __init__(self):
            self.x = torch.tensor([PROMPT_IDS], device="cuda")
            self.ids = torch.empty((1, 1), dtype=torch.long, device="cuda")
            self.pos = torch.tensor([n_prompt], device="cuda")
            # An explicit 4-D boolean mask over the whole static cache (True =
            # attend), updated on the device: HF's own 2-D mask handling tests
            # `padding_mask.all()` on the host, which a graph capture forbids,
            # and skipping the mask at one query would attend to unwritten slots.
            self.mask = torch.zeros((1, 1, 1, max_len), dtype=torch.bool, device="cuda")
            self.graph = None

        def prefill(self):
            # Eager (it also allocates the lazily built cache layers); without
            # a mask the causal rule alone hides the unwritten positions.
            kw = {"cache_position": torch.arange(n_prompt, device="cuda")} if with_position else {}
            out = model(self.x, past_key_values=cache, use_cache=True, **kw)
            self.ids.copy_(out.logits[:, -1:].argmax(-1))
            self.pos.fill_(n_prompt)
            self.mask.zero_()
            self.mask[..., :n_prompt] = True

        def step(self):
            self.mask.index_fill_(3, self.pos, True)
            kw = {"cache_position": self.pos} if with_position else {}
            o = model(self.ids, attention_mask=self.mask, past_key_values=cache, position_ids=self.pos.view(1, 1),
                      use_cache=True, **kw)
            self.ids.copy_(o.logits[:, -1:].argmax(-1))
            self.pos.add_(1)

        def restart(self):
            torch.cuda.synchronize()
            counters[0] = reset_static_cache(cache)
            self.prefill()

        def capture(self):
            # Warm-up ran on the default stream; capture on a side stream as torch requires.
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.step()

        def replay(self):
            self.graph.replay()

        def current_id(self):
            return int(self.ids.item())

    ops = Ops()
    with torch.no_grad():
        # Warm-up on a side stream (lazy init, autotuning) before the capture.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            ops.prefill()
            for _ in range(3):
                ops.step()
        torch.cuda.current_stream().wait_stream(s)
        got = static_graph_protocol(_AfterWarmup(ops), 0, len(check_ids))
        events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
        events[0].record()
        for i in range(steps):
            ops.replay()
            events[i + 1].record()
        torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in zip(events, events[1:])], got, counters[0]


class _AfterWarmup:
    """`ops` whose first prefill has already run (with the warm-up, on a side stream)."""

    def __init__(self, ops):
        self.ops = ops

    def prefill(self):
        pass

    def __getattr__(self, name):
        return getattr(self.ops, name)


def first_difference(got, want):
    """Index of the first differing id of two lists (the shorter's length if one is a prefix), or None."""
    n = min(len(got), len(want))
    return next((i for i in range(n) if got[i] != want[i]), None if len(got) == len(want) else n)


def kern_greedy(args, weights, steps):
    """kern-run --device cuda on the exported weights: its --json result."""
    cmd = [args.kern_run, args.plan, "--weights", weights, "--prompt-ids", ",".join(map(str, PROMPT_IDS)),
           "--steps", str(steps), "--ignore-eos", "--device", "cuda", "--kernels", args.kernels, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(10.0, args.deadline.left()))
    if p.returncode != 0:
        raise RuntimeError(f"kern-run exit {p.returncode}: {p.stderr.strip()[-400:]}")
    if "CUDA graphs disabled" in p.stderr:
        raise RuntimeError("kern-run: " + next(l for l in p.stderr.splitlines() if "CUDA graphs disabled" in l))
    return json.loads(p.stdout)


def versions_text(v):
    """'transformers X, torch Y (CUDA Z), python W' for the log and the summary line."""
    if not v:
        return "transformers/torch not imported"
    cuda = f" (CUDA {v['cuda']})" if v.get("cuda") else ""
    return f"transformers {v.get('transformers')}, torch {v.get('torch')}{cuda}, python {v.get('python')}"


def save(r, path):
    """Writes the results so far (after every part: a step killed at its
    timeout still leaves what was measured)."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(r, f, indent=1)
    os.replace(path + ".tmp", path)


def run(args):
    """Every part in turn; returns the result dict (also saved to args.json after each part)."""
    r = {"config": args.config, "steps": args.steps, "prompt_ids": PROMPT_IDS, "errors": {}, "skipped": []}

    def part(name, min_left, fn):
        if args.deadline.left() < min_left:
            r["skipped"].append(f"{name} ({args.deadline.left():.0f} s left, needs {min_left})")
            return None
        t = time.monotonic()
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - every failure is reported, the other parts still run
            r["errors"][name] = f"{type(e).__name__}: {e}"[:600]
            print(f"hf_peer: {name}: {r['errors'][name]}", file=sys.stderr)
            return None
        finally:
            r.setdefault("seconds", {})[name] = round(time.monotonic() - t, 2)
            save(r, args.json)

    t = time.monotonic()
    try:
        import torch
        import transformers
    except ImportError as e:
        r["errors"]["import"] = f"torch/transformers not importable: {e}"
        print(f"hf_peer: {r['errors']['import']}", file=sys.stderr)
        return r
    r["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                     "python": sys.version.split()[0], "cuda": getattr(torch.version, "cuda", None)}
    print(f"hf_peer: {versions_text(r['versions'])}", file=sys.stderr)
    r.setdefault("seconds", {})["import"] = round(time.monotonic() - t, 2)
    model = part("build", 0, lambda: build_model(args.config, args.seed))
    if model is None:
        return r
    r["hf_params"] = sum(p.numel() for p in model.parameters())
    exported = part("export", 20, lambda: export_weights(model, args.config, args.work))
    hf = part("hf_greedy", 5, lambda: hf_greedy(model, args.steps))
    if hf:
        r["hf_ids"], r["hf_top2_gaps"], r["hf_top_logits"] = hf[0], [round(m, 4) for m in hf[1]], [round(m, 3) for m in hf[2]]
    if exported:
        r["export_s"] = round(exported[1], 2)
        kern = part("kern_greedy", 15, lambda: kern_greedy(args, exported[0], args.steps))
        if kern:
            r["kern_ids"] = kern["generated_ids"]
            r["kern_decode_ms_per_token"] = kern.get("decode_ms_per_token")
            r["kern_load_ms"] = kern.get("load_ms", {}).get("total")
        os.remove(exported[0])
    if hf and "kern_ids" in r:
        r["compare"] = compare_ids(r["hf_ids"], r["kern_ids"], hf[1], hf[2])
    save(r, args.json)  # the ids and the verdict, before the timings
    ms = part("hf_generate", 10, lambda: hf_generate_ms(model, args.decode_steps))
    if ms:
        r["hf_generate_ms_per_token"] = median_after_warmup(ms, 4)
        r["hf_generate_steps_timed"] = len(ms) - 4
    pf = part("hf_prefill512", 10, lambda: hf_prefill_tok_s(model))
    if pf:
        r["hf_prefill512_tok_s"] = pf
    if not args.no_graph and not r.get("hf_ids"):
        r["skipped"].append("hf_static_graph (no greedy ids of generate to check its replay against)")
    elif not args.no_graph:
        want = r["hf_ids"][:8]
        g = part("hf_static_graph", 20, lambda: hf_static_graph(model, args.decode_steps, want))
        if g:
            r["hf_static_graph_counters_reset"] = g[2]
            r["hf_static_graph_ids"] = g[1]
            diff = first_difference(g[1], want)
            r["hf_static_graph_ids_match"] = diff is None
            if diff is None:
                r["hf_static_graph_ms_per_token"] = median_after_warmup(g[0], 4)
                r["hf_static_graph_steps_timed"] = len(g[0]) - 4
            else:  # a wrong forward pass: its time compares nothing
                r["errors"]["hf_static_graph"] = (f"the replayed graph's ids differ from generate's at step {diff} "
                                                  f"({g[1]} vs {want}): timing discarded")
                print(f"hf_peer: hf_static_graph: {r['errors']['hf_static_graph']}", file=sys.stderr)
                save(r, args.json)
    return r


def main(argv):
    ap = argparse.ArgumentParser(description="kern beside HF transformers on the same random weights")
    ap.add_argument("config", help="HF Qwen3 config.json (e.g. examples/qwen3-0.6b.config.json)")
    ap.add_argument("--plan", required=True, help="the kern plan (.kplan) of the same geometry")
    ap.add_argument("--kern-run", required=True, help="the kern-run binary")
    ap.add_argument("--kernels", required=True, help="directory of the fatbins")
    ap.add_argument("--work", required=True, help="scratch directory (weights are written and removed there)")
    ap.add_argument("--json", required=True, help="where to write the results")
    ap.add_argument("--steps", type=int, default=32, help="greedy ids compared (default 32)")
    ap.add_argument("--decode-steps", type=int, default=128, help="decode steps timed (default 128)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline-s", type=float, default=300.0, help="skip parts that would start after this")
    ap.add_argument("--no-graph", action="store_true", help="skip the static-cache CUDA graph timing")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.decode_steps < 8:
        ap.error("--steps must be >= 1 and --decode-steps >= 8")
    args.deadline = Deadline(args.deadline_s)
    os.makedirs(args.work, exist_ok=True)
    r = run(args)
    save(r, args.json)
    c = r.get("compare", {})

    def ms(key):
        v = r.get(key)
        return f"{v:.3f}" if isinstance(v, (int, float)) else "-"

    ids = ("equal" if c.get("equal") else
           f"differ from step {c['first_diff']} (HF top-2 gap {c.get('gap_at_diff')}, "
           f"{'a near tie' if c.get('near_tie') else 'NOT a near tie'})" if c else "not compared")
    print(f"ids {ids}; ms/token: kern {ms('kern_decode_ms_per_token')}, HF generate {ms('hf_generate_ms_per_token')}, "
          f"HF static+graph {ms('hf_static_graph_ms_per_token')}; errors: {', '.join(r['errors']) or 'none'}; "
          f"{versions_text(r.get('versions'))}")
    ok = c.get("ok", False) and r.get("hf_generate_ms_per_token") is not None
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
