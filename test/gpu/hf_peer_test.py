#!/usr/bin/python3
"""hf_peer_test.py SOURCE_ROOT

Tests of test/gpu/hf_peer.py that need no torch (the GPU machine runs the
rest): the file compiles (py_compile) and imports without torch or
transformers; the weight rule matches examples/gen_random_weights.py for
every HF Qwen3 parameter name; the greedy-id verdict (equal, a difference
after a near tie, a real difference, different lengths); the statistics;
bad usage exits 2 before importing torch; the static-cache graph protocol
on stand-ins for the cache APIs of transformers 4.5x and 5.x (the replay
starts from the prompt; the old rewind diverges on 5.x). Standard library
only.
"""

import math
import os
import py_compile
import subprocess
import sys
import tempfile
import unittest

ROOT = None


class HfPeer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
        sys.path.insert(0, os.path.join(ROOT, "provider"))
        global hf_peer, gen_random_weights
        import gen_random_weights  # noqa: E402
        import hf_peer  # noqa: E402

    def test_compiles_and_imports_without_torch(self):
        with tempfile.TemporaryDirectory() as d:
            py_compile.compile(os.path.join(ROOT, "test", "gpu", "hf_peer.py"), cfile=os.path.join(d, "c.pyc"),
                               doraise=True)
        self.assertNotIn("torch", sys.modules)
        self.assertNotIn("transformers", sys.modules)

    def test_weight_rule_is_the_tiny_models_rule_on_hf_names(self):
        self.assertEqual(hf_peer.GAIN, gen_random_weights.GAIN)
        self.assertEqual(hf_peer.NORM_NOISE, gen_random_weights.NORM_NOISE)
        rule = hf_peer.init_rule
        self.assertEqual(rule("model.embed_tokens.weight", (151936, 1024)), (0.0, 1.0))
        self.assertEqual(rule("lm_head.weight", (151936, 1024)), (0.0, 1.0))
        for norm in ("model.norm.weight", "model.layers.3.input_layernorm.weight",
                     "model.layers.3.post_attention_layernorm.weight", "model.layers.0.self_attn.q_norm.weight",
                     "model.layers.0.self_attn.k_norm.weight"):
            self.assertEqual(rule(norm, (128,)), (1.0, 0.25), norm)
        self.assertEqual(rule("model.layers.0.self_attn.q_proj.weight", (2048, 1024)), (0.0, 4.0 / 32.0))
        self.assertEqual(rule("model.layers.0.mlp.down_proj.weight", (1024, 3072)), (0.0, 4.0 / math.sqrt(3072)))
        with self.assertRaises(ValueError):
            rule("model.something", (2, 3, 4))

    def test_greedy_id_verdicts(self):
        cmp = hf_peer.compare_ids
        self.assertEqual(cmp([5, 6, 7], [5, 6, 7], [3.0, 2.0, 1.0], [30.0, 30.0, 30.0]),
                         {"equal": True, "first_diff": None, "steps": 3, "ok": True})
        # limit at a top logit of 40: 0.25 + 0.02 * 40 = 1.05
        self.assertAlmostEqual(hf_peer.near_tie_limit(-40.0), 1.05)
        near = cmp([5, 6, 7], [5, 9, 1], [3.0, 1.0, 1.0], [40.0, 40.0, 40.0])
        self.assertEqual((near["equal"], near["first_diff"], near["gap_at_diff"], near["top_at_diff"],
                          near["near_tie"], near["ok"]), (False, 1, 1.0, 40.0, True, True))
        real = cmp([5, 6, 7], [5, 6, 8], [3.0, 2.0, 1.1], [40.0, 40.0, 40.0])
        self.assertEqual((real["first_diff"], real["near_tie"], real["ok"]), (2, False, False))
        short = cmp([5, 6, 7], [5, 6], [3.0, 2.0, 0.0], [1.0, 1.0, 1.0])
        self.assertEqual((short["first_diff"], short["near_tie"], short["ok"]), (2, False, False))
        self.assertFalse(cmp([5], [6], [], [])["ok"])  # no gap known: not excused

    def test_statistics(self):
        self.assertEqual(hf_peer.median_after_warmup([100, 100, 1, 2, 3], 2), 2)
        self.assertIsNone(hf_peer.median_after_warmup([1, 2], 2))

    def test_bad_usage_exits_2_without_importing_torch(self):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "test", "gpu", "hf_peer.py"), "cfg.json"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--plan", p.stderr)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "test", "gpu", "hf_peer.py"), "c", "--plan", "p",
                            "--kern-run", "k", "--kernels", "d", "--work", "w", "--json", "j", "--steps", "0"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--steps must be >= 1", p.stderr)


class StandInCache45:
    """transformers 4.5x's StaticCache as far as the protocol sees it: K/V
    written at the caller's cache_position; reset() zeroes them."""

    def __init__(self, n):
        self.slots = [0] * n

    def reset(self):
        self.slots[:] = [0] * len(self.slots)  # in place: a captured graph keeps the same tensor

    def update(self, tokens, positions):
        for t, p in zip(tokens, positions):
            self.slots[p] = t


class StandInLayer5:
    """A transformers 5.x static layer: no cache_position, K/V written at its
    own counter `cumulative_length`."""

    def __init__(self, n, counter):
        self.slots = [0] * n
        self.cumulative_length = counter

    def write(self, t):
        i = int(self.cumulative_length)
        self.slots[i] = t
        if isinstance(self.cumulative_length, int):
            self.cumulative_length += 1
        else:
            self.cumulative_length.add_(1)


class DeviceCounter:
    """A stand-in for a 0-d device tensor counter (zero_ / add_ in place)."""

    def __init__(self):
        self.v = 0

    def zero_(self):
        self.v = 0

    def add_(self, n):
        self.v += n

    def __int__(self):
        return self.v


class StandInCache5:
    """transformers 5.x's StaticCache: layers with counters; its reset() zeroes
    K/V but (the case hf_peer must not rely on) leaves the counters."""

    def __init__(self, n, tensor_counter=False):
        self.layers = [StandInLayer5(n, DeviceCounter() if tensor_counter else 0) for _ in range(2)]

    def reset(self):
        for layer in self.layers:
            layer.slots[:] = [0] * len(layer.slots)

    def update(self, tokens, positions):  # positions ignored: there is no cache_position
        for layer in self.layers:
            for t in tokens:
                layer.write(t)

    @property
    def slots(self):
        return self.layers[0].slots


def next_id(slots):
    """The stand-in model's greedy id: a function of every visible cache slot."""
    return sum((i + 1) * v for i, v in enumerate(slots)) % 997 + 1


class StandInOps:
    """hf_peer.static_graph_protocol's ops over a stand-in cache and model;
    `old_rewind` is the rewind before the fix (position and id only)."""

    def __init__(self, cache, old_rewind=False):
        self.cache, self.old_rewind = cache, old_rewind
        self.prompt = hf_peer.PROMPT_IDS
        self.first = None

    def prefill(self):
        n = len(self.prompt)
        self.cache.update(self.prompt, range(n))
        self.pos = n
        self.cur = next_id(self.cache.slots[:n])
        self.first = self.cur

    def step(self):
        self.cache.update([self.cur], [self.pos])
        self.pos += 1
        self.cur = next_id(self.cache.slots[:self.pos])  # the mask: positions up to pos

    def restart(self):
        if self.old_rewind:
            self.pos, self.cur = len(self.prompt), self.first
        else:
            hf_peer.reset_static_cache(self.cache)
            self.prefill()

    def capture(self):
        self.step()  # torch runs the step's Python side once while capturing

    def replay(self):
        self.step()

    def current_id(self):
        return self.cur


class StaticCacheProtocol(unittest.TestCase):
    """The static-cache graph measurement's rewind on stand-ins for the cache
    APIs of transformers 4.5x (cache_position) and 5.x (own counters, int or
    device tensor): the replayed ids are generate's."""

    @classmethod
    def setUpClass(cls):
        HfPeer.setUpClass()

    def reference(self, n):
        ops = StandInOps(StandInCache45(64))
        ops.prefill()
        ids = [ops.cur]
        for _ in range(n - 1):
            ops.step()
            ids.append(ops.cur)
        return ids

    def test_the_replay_starts_from_the_prompt_on_every_cache_api(self):
        want = self.reference(8)
        self.assertEqual(len(set(want)), 8)  # the ids depend on every slot: a shifted cache shows
        for name, cache in (("4.5x", StandInCache45(64)), ("5.x int counter", StandInCache5(64)),
                            ("5.x tensor counter", StandInCache5(64, tensor_counter=True))):
            with self.subTest(name):
                self.assertEqual(hf_peer.static_graph_protocol(StandInOps(cache), 3, 8), want)

    def test_the_old_rewind_diverges_on_transformers_5(self):
        want = self.reference(8)
        self.assertEqual(hf_peer.static_graph_protocol(StandInOps(StandInCache45(64), old_rewind=True), 3, 8), want)
        got = hf_peer.static_graph_protocol(StandInOps(StandInCache5(64), old_rewind=True), 3, 8)
        self.assertNotEqual(got, want)
        # Three warm-up steps and the capture left the counter 4 slots ahead:
        # the first replayed ids still match, then the mask meets the shifted K/V.
        self.assertEqual(hf_peer.first_difference(got, want), 4)

    def test_reset_sets_every_counter_in_place(self):
        cache = StandInCache5(8, tensor_counter=True)
        counter = cache.layers[0].cumulative_length
        cache.update([5, 6], [0, 1])
        self.assertEqual(hf_peer.reset_static_cache(cache), 2)
        self.assertIs(cache.layers[0].cumulative_length, counter)  # the same object: a graph may hold it
        self.assertEqual([int(layer.cumulative_length) for layer in cache.layers], [0, 0])
        self.assertEqual(cache.slots, [0] * 8)
        ints = StandInCache5(8)
        ints.update([5], [0])
        self.assertEqual(hf_peer.reset_static_cache(ints), 2)
        self.assertEqual([layer.cumulative_length for layer in ints.layers], [0, 0])
        self.assertEqual(hf_peer.reset_static_cache(StandInCache45(8)), 0)

    def test_forward_signature_and_helpers(self):
        class With:
            def forward(self, input_ids, cache_position=None):
                pass

        class Without:
            def forward(self, input_ids, **kwargs):
                pass

        self.assertTrue(hf_peer.forward_takes(With(), "cache_position"))
        self.assertFalse(hf_peer.forward_takes(Without(), "cache_position"))
        self.assertIsNone(hf_peer.first_difference([1, 2], [1, 2]))
        self.assertEqual(hf_peer.first_difference([1, 3], [1, 2]), 1)
        self.assertEqual(hf_peer.first_difference([1], [1, 2]), 1)
        self.assertEqual(hf_peer.versions_text({"transformers": "5.0.0", "torch": "2.11.0", "cuda": "13.0",
                                                "python": "3.12.3"}),
                         "transformers 5.0.0, torch 2.11.0 (CUDA 13.0), python 3.12.3")
        self.assertEqual(hf_peer.versions_text(None), "transformers/torch not imported")


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
