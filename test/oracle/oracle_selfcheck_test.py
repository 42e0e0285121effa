#!/usr/bin/python3
"""oracle_selfcheck_test.py SOURCE_ROOT

Checks the oracle setup itself, without kern-run: our numpy model of kern's
pipeline (qwen3_ref.py) on examples/tiny-qwen3.safetensors agrees with the
llama.cpp oracle under oracle_lib.compare for every test prompt, its greedy
sequences are discriminating (at least half of the ids differ from their
predecessor), and the same model with interleaved RoPE is rejected for every
prompt. A failure here means the GGUF conversion, the C oracle, the weights
or the tolerance are wrong, not kern.
"""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "provider"))

import oracle_lib as ol  # noqa: E402
import qwen3_ref  # noqa: E402
from qwen3_config import load_config  # noqa: E402


def main(argv):
    root = argv[1]
    config_path = os.path.join(root, "examples", "tiny-qwen3.config.json")
    weights_path = os.path.join(root, "examples", "tiny-qwen3.safetensors")
    cfg = load_config(config_path)
    weights = qwen3_ref.load_weights(weights_path)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        try:
            oracle = ol.Oracle(root, work)
        except ol.OracleSetupError as e:
            print(f"FAIL: {e}")
            return 1
        oracle.load(config_path, weights_path, cfg.vocab)
        for n in ol.PROMPT_LENGTHS:
            prompt = ol.prompt_ids(n, cfg.vocab)
            ids, last = qwen3_ref.greedy(cfg, weights, prompt, ol.STEPS)
            _, rows = oracle.run(prompt, ol.STEPS, forced=ids)
            ok, report = ol.compare(prompt, ids, last, rows)
            print(f"prompt length {n}: {'agrees' if ok else 'DISAGREES'}")
            for line in report:
                print("  " + line)
            if not ok:
                failures.append(f"numpy model disagrees with the oracle at prompt length {n}")
            if ol.changes(prompt, ids) * 2 < len(ids):
                failures.append(f"prompt length {n}: greedy sequence is not discriminating: {ids}")
            bad_ids, bad_last = qwen3_ref.greedy(cfg, weights, prompt, ol.STEPS, is_neox=False)
            _, bad_rows = oracle.run(prompt, ol.STEPS, forced=bad_ids)
            bad_ok, bad_report = ol.compare(prompt, bad_ids, bad_last, bad_rows)
            print(f"  interleaved RoPE: {'ACCEPTED' if bad_ok else 'rejected'} ({bad_report[-2]})")
            if bad_ok:
                failures.append(f"interleaved RoPE is accepted at prompt length {n}: the comparison has no teeth")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
