#!/usr/bin/python3
"""spec_test.py SOURCE_ROOT KERN_RUN SPEC_PLAN

`kern-run --spec` on the cpu device with the tiny DSpark manifest
(examples/tiny-qwen3-dspark.json, compiled to SPEC_PLAN):
- lossless: --spec output equals plain greedy decoding token for token for
  several prompts, lengths and chunk sizes (random target and draft);
- constructed drafts with known acceptance: the draft's final norm weight is
  zero (its base logits are exactly 0) and its Markov head is a table h
  (markov_w1 = identity, markov_w2[v, t] = 1 where v = h(t)), so the drafted
  ids are h(anchor), h(h(anchor)), ...; with h = the target's own greedy
  successor (full acceptance), h + 1 (zero) and a mix, the accepted count of
  every round is simulated from the plain greedy sequence and must equal
  kern-run's `accepted_per_round` exactly;
- the capacity boundary (a block that would cross the capacity falls back
  to plain decode steps) and a stop id inside an accepted block.
Standard library only; weights come from examples/gen_random_weights.py --draft.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = KERN_RUN = PLAN = None
TMP = None
V, BLOCK, MARKOV = 256, 4, 256  # examples/tiny-qwen3-dspark.config.json, tiny-qwen3.config.json


def examples():
    sys.path.insert(0, os.path.join(ROOT, "provider"))
    import safetensors_io  # noqa: E402
    return safetensors_io


def kern_run(weights, prompt, steps, *extra):
    args = [KERN_RUN, PLAN, "--weights", weights, "--device", "cpu", "--json", "--prompt-ids",
            ",".join(map(str, prompt)), "--steps", str(steps), *extra]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def bf16_bytes(values):
    """Little-endian bf16 of exactly representable values (0.0 or 1.0 here)."""
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def write_constructed(base, path, successor, bigram_target=False):
    """`base` with draft.norm.weight = 0 and the Markov head = table `successor`
    (a list of V ids): the draft then drafts successor(prev) for each row.
    With `bigram_target`, the target's o_proj weights are 0 too: attention
    then adds nothing, so the target's next id is a function of the current
    id alone (a draft can be right by construction)."""
    st = examples()
    with st.SafetensorsFile(base) as f:
        specs = []
        for name, (dtype, shape, _, _) in f.tensors.items():
            if name == "draft.norm.weight" or (bigram_target and name.endswith("self_attn.o_proj.weight")
                                               and name.startswith("model.")):
                data = bf16_bytes([0.0] * (shape[0] * (shape[1] if len(shape) > 1 else 1)))
            elif name == "draft.markov_w1.weight":  # one-hot rows: membed = e_prev
                data = b"".join(bf16_bytes([1.0 if m == t else 0.0 for m in range(MARKOV)]) for t in range(V))
            elif name == "draft.markov_w2.weight":  # row v has 1 at column t where successor(t) = v
                data = b"".join(bf16_bytes([1.0 if successor[t] == v else 0.0 for t in range(MARKOV)])
                                for v in range(V))
            else:
                data = f.read(name)
            specs.append(st.TensorSpec(name, dtype, shape, lambda d=data: [d]))
        st.write(path, specs)


def simulate(sequence, n, block, successor, capacity, steps):
    """Accepted drafted ids per round of the caller's round (SPEC §8) when the
    draft drafts successor(prev), the target's greedy ids being `sequence`
    (prompt of n ids + its greedy continuation, long enough): the rounds
    until `steps` ids are generated or a block would cross `capacity`."""
    accepted, pos, generated = [], n, 1  # the first id comes from decode_spec
    while generated < steps and pos + block <= capacity:
        k, prev = 0, sequence[pos]
        while k + 1 < block:
            prev = successor[prev]
            if prev != sequence[pos + 1 + k]:
                break
            k += 1
        accepted.append(k)
        generated += k + 1
        pos += k + 1
    return accepted


class Spec(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = os.path.join(TMP, "tiny-dspark.safetensors")
        proc = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "gen_random_weights.py"),
                               os.path.join(ROOT, "examples", "tiny-qwen3.config.json"), "--draft",
                               os.path.join(ROOT, "examples", "tiny-qwen3-dspark.config.json"), "--seed", "5",
                               "-o", cls.base], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr

    def bigram_target(self):
        """The base weights with the target's o_proj = 0 (write_constructed):
        the target's next id is a function of the current id; its table
        (one 1-step run per id) is kept in bigram_successors."""
        cls = type(self)
        if not hasattr(cls, "bigram_successors"):
            cls.bigram_path = os.path.join(TMP, "bigram-target.safetensors")
            write_constructed(self.base, cls.bigram_path, list(range(V)), bigram_target=True)
            cls.bigram_successors = [kern_run(cls.bigram_path, [t], 1)["generated_ids"][0] for t in range(V)]
        return cls.bigram_path

    def test_spec_output_equals_plain_greedy_decoding_for_every_prompt_length_and_chunk(self):
        cases = [([1, 2, 3, 4, 5], 23, 4), ([7], 9, 512), ([200, 3, 9, 9, 40, 41, 42, 43, 44, 45, 46, 47, 48], 17, 5),
                 ([17, 18], 1, 1), ([90, 91, 92], 2, 2)]
        for prompt, steps, chunk in cases:
            with self.subTest(prompt=prompt, steps=steps, chunk=chunk):
                plain = kern_run(self.base, prompt, steps, "--chunk", str(chunk))
                spec = kern_run(self.base, prompt, steps, "--chunk", str(chunk), "--spec")
                self.assertEqual(spec["generated_ids"], plain["generated_ids"])
                self.assertEqual(len(spec["generated_ids"]), steps)
                s = spec["spec"]
                self.assertEqual(s["block"], BLOCK)
                self.assertEqual(sum(s["emitted_per_round"]) + 1 + s["fallback_steps"], steps)
                self.assertNotIn("spec", plain)

    def constructed(self, name, prompt, steps, successor_of, capacity=None, bigram=False):
        """Runs plain and --spec with the constructed draft built by
        successor_of(the target's successor table, from its greedy ids);
        checks equality and every round's accepted count against the
        simulation; returns (spec report, simulated accepted, sequence)."""
        target = self.base
        if bigram:
            target = self.bigram_target()
        long_run = kern_run(target, prompt, steps + BLOCK + 1)  # the target's ids past the last block
        sequence = prompt + long_run["generated_ids"]
        truth = {}
        for a, b in zip(sequence[len(prompt) - 1:], sequence[len(prompt):]):
            truth.setdefault(a, b)
        if bigram:
            truth = dict(enumerate(self.bigram_successors))
        table = successor_of([truth.get(t, (t * 7 + 3) % V) for t in range(V)])
        weights = os.path.join(TMP, name + ".safetensors")
        write_constructed(self.base, weights, table, bigram_target=bigram)
        extra = ["--capacity", str(capacity)] if capacity else []
        plain = kern_run(weights, prompt, steps, *extra)
        spec = kern_run(weights, prompt, steps, "--spec", *extra)
        self.assertEqual(spec["generated_ids"], plain["generated_ids"], name)
        self.assertEqual(plain["generated_ids"], long_run["generated_ids"][:steps])  # the draft changes nothing
        want = simulate(sequence, len(prompt), BLOCK, table, capacity or 1 << 30, steps)
        self.assertEqual(spec["spec"]["accepted_per_round"], want, name)
        return spec["spec"], want, sequence

    def test_a_draft_right_by_construction_is_fully_accepted(self):
        prompt = [1, 2, 3, 4, 5]
        spec, want, _ = self.constructed("full", prompt, 24, lambda truth: truth, bigram=True)
        # The bigram target's greedy successor is a function of the token, so
        # the draft h = that successor is right everywhere: every round accepts all.
        self.assertEqual(want, [BLOCK - 1] * len(want))
        self.assertEqual(spec["tokens_per_round"], BLOCK)
        self.assertEqual(spec["acceptance_rate"], 1.0)

    def test_a_draft_wrong_by_construction_accepts_nothing(self):
        spec, want, _ = self.constructed("zero", [1, 2, 3, 4, 5], 12, lambda truth: [(v + 1) % V for v in truth])
        self.assertEqual(want, [0] * 11)
        self.assertEqual(spec["tokens_per_round"], 1.0)
        self.assertEqual(spec["acceptance_rate"], 0.0)

    def test_a_draft_right_for_some_tokens_accepts_what_the_simulation_says(self):
        spec, want, _ = self.constructed("mixed", [1, 2, 3, 4, 5], 30,
                                         lambda truth: [v if t % 3 else (v + 1) % V for t, v in enumerate(truth)])
        self.assertTrue(0 < spec["acceptance_rate"] < 1, want)
        self.assertGreater(len(set(want)), 1, want)

    def test_a_block_that_would_cross_the_capacity_falls_back_to_plain_decode_steps(self):
        # Capacity 32 (whole KV pages), steps up to it; full acceptance makes
        # rounds of 4. Prompt 5 or 6: the next block would cross 32, so the
        # last ids come from plain decode steps; prompt 8: the last block
        # ends exactly at the capacity and no fallback is needed.
        capacity = 32
        for prompt, fallback in (([1, 2, 3, 4, 5], 2), ([1, 2, 3, 4, 5, 6], 1), ([1, 2, 3, 4, 5, 6, 7, 8], 0)):
            with self.subTest(prompt=len(prompt)):
                steps = capacity - len(prompt)
                spec, want, _ = self.constructed(f"cap{len(prompt)}", prompt, steps, lambda truth: truth, capacity,
                                                 bigram=True)
                self.assertEqual(spec["fallback_steps"], fallback)
                self.assertEqual(sum(spec["emitted_per_round"]) + 1 + spec["fallback_steps"], steps)
                # Every round's block fit: its last position pos + 3 < 32.
                pos = len(prompt)
                for k in want:
                    self.assertLessEqual(pos + BLOCK, capacity)
                    pos += k + 1
                if fallback:
                    self.assertGreater(pos + BLOCK, capacity)  # one more would have crossed it

    def test_a_stop_id_inside_an_accepted_block_ends_generation_there(self):
        prompt = [1, 2, 3, 4, 5]
        full, want, sequence = self.constructed("stop", prompt, 24, lambda truth: truth, bigram=True)
        weights = os.path.join(TMP, "stop.safetensors")
        generated = sequence[len(prompt):]
        # The 3rd id of the 2nd round's block (accepted, not the round's last):
        # ids 0 (decode_spec), then round 1 gives 1..BLOCK, round 2 BLOCK+1...
        index = 1 + BLOCK + 1
        stop = generated[index]
        self.assertNotIn(stop, generated[:index], "pick a stop id that does not occur earlier")
        for mode in ([], ["--spec"]):
            out = kern_run(weights, prompt, 24, "--stop-ids", str(stop), *mode)
            self.assertEqual(out["generated_ids"], generated[:index + 1], mode)
            self.assertEqual(out["stop_reason"], "end_token")
        spec = kern_run(weights, prompt, 24, "--stop-ids", str(stop), "--spec")["spec"]
        self.assertEqual(spec["emitted_per_round"], [BLOCK, 2])  # the second block cut after its 2nd id
        self.assertEqual(spec["accepted_per_round"], [BLOCK - 1, BLOCK - 1])

    def test_bench_spec_reports_tokens_per_round_acceptance_and_phases(self):
        self.constructed("bench", [1, 2, 3, 4, 5], 12, lambda truth: truth, bigram=True)
        weights = os.path.join(TMP, "bench.safetensors")
        proc = subprocess.run([KERN_RUN, "bench", PLAN, "--weights", weights, "--device", "cpu", "-p", "0", "-n", "13",
                               "-r", "2", "--warmup", "0", "--spec", "-o", "json"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        tests = {t["test"]: t for t in json.loads(proc.stdout)}
        self.assertEqual(sorted(tests), ["tg13", "tg13-spec"])
        spec = tests["tg13-spec"]["spec"]
        # A 1-token prompt: the bigram target's draft is right everywhere, so
        # each repetition is 3 full rounds of 4 after the first id.
        self.assertEqual(spec["accepted_per_round"], [BLOCK - 1] * 6)
        self.assertEqual(spec["tokens_per_round"], BLOCK)
        self.assertEqual(len(tests["tg13-spec"]["samples_ms"]), 2)
        self.assertNotIn("decode_mode", tests["tg13-spec"])
        self.assertIn("| tg13-spec | 4 | 4.00 | 100.0% |", proc.stderr)  # the md table on stderr

    def test_bench_plain_tests_after_spec_tests_get_their_own_inputs(self):
        """Issue 22 item 2: with -n 8,8 --spec the plain tg8 after tg8-spec
        reused the rounds' cu_seqlens_q = [0, 4] ("cu_seqlens_q is [0, 4];
        must be [0, num_tokens = 1]", exit 2)."""
        for mode in ("async", "sync", "both"):
            proc = subprocess.run([KERN_RUN, "bench", PLAN, "--weights", self.base, "--device", "cpu", "-p", "4",
                                   "-n", "8,8", "-r", "1", "--warmup", "0", "--spec", "--decode", mode, "-o", "json"],
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            names = [t["test"] for t in json.loads(proc.stdout)]
            plain = {"async": ["tg8"], "sync": ["tg8-sync"], "both": ["tg8", "tg8-sync"]}[mode]
            self.assertEqual(names, ["pp4"] + (plain + ["tg8-spec"]) * 2)

    def test_a_plain_manifest_is_refused_with_spec_and_bad_stop_ids_are_usage_errors(self):
        plain_plan = os.path.join(os.path.dirname(PLAN), "tiny-qwen3.kplan")
        proc = subprocess.run([KERN_RUN, plain_plan, "--weights", os.path.join(ROOT, "examples", "tiny-qwen3.safetensors"),
                               "--device", "cpu", "--prompt-ids", "1,2", "--spec"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("--spec: ", proc.stderr)
        self.assertIn("no meta.spec", proc.stderr)
        proc = subprocess.run([KERN_RUN, PLAN, "--weights", self.base, "--device", "cpu", "--prompt-ids", "1,2",
                               "--stop-ids", "1,x"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--stop-ids: 'x' is not an integer token id", proc.stderr)


def main(argv):
    global ROOT, KERN_RUN, PLAN, TMP
    ROOT, KERN_RUN, PLAN = argv[1], argv[2], argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        TMP = tmp
        prog = unittest.main(argv=[argv[0]], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
