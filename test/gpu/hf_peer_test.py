#!/usr/bin/python3
"""hf_peer_test.py SOURCE_ROOT

Tests of test/gpu/hf_peer.py that need no torch (the GPU machine runs the
rest): the file compiles (py_compile) and imports without torch or
transformers; the weight rule matches examples/gen_random_weights.py for
every HF Qwen3 parameter name; the greedy-id verdict (equal, a difference
after a near tie, a real difference, different lengths); the statistics;
bad usage exits 2 before importing torch. Standard library only.
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
        sys.path.insert(0, os.path.join(ROOT, "examples"))
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


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
