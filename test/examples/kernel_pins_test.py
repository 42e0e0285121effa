#!/usr/bin/python3
"""kernel_pins_test.py SOURCE_ROOT KERNELS_DIR

The checked-in manifests (examples/tiny-qwen3.json, qwen3-0.6b.json,
qwen3-4b.json) pin every kernel step to a fatbin and its sha256: each pin
must equal the sha256 of the file this build produced in KERNELS_DIR
(<build>/kernels, staged by kernels-src/cuda). nvcc 13 output is
deterministic (same bytes from any build dir), so a mismatch means a kernel
source changed without regenerating the manifests:

  examples/gen_qwen3_manifest.py examples/X.config.json -o examples/X.json --kernels-dir <build>/kernels

Without nvcc no fatbins are built: the test is skipped (exit 77).
"""

import hashlib
import json
import os
import sys

MODELS = ("tiny-qwen3", "tiny-qwen3-textvocab", "qwen3-0.6b", "qwen3-4b", "tiny-qwen3-unfused", "qwen3-4b-unfused",
          "tiny-llama", "llama-3.2-1b", "llama-3.1-8b", "tiny-qwen2", "tiny-qwen3-moe", "qwen3-30b-a3b")


def main(root, kernels_dir):
    if not kernels_dir or not os.path.isdir(kernels_dir):
        print("SKIP: no CUDA fatbins were built (nvcc not found)")
        return 77
    failures = 0
    digests = {}
    for model in MODELS:
        with open(os.path.join(root, "examples", model + ".json"), "r", encoding="utf-8") as f:
            doc = json.load(f)
        pins, before = 0, failures
        for kname, kernel in doc["kernels"].items():
            for step in kernel["impl"]["steps"]:
                if step["symbol"].startswith("extern:"):
                    continue
                pins += 1
                name = step.get("cubin")
                path = os.path.join(kernels_dir, name or "")
                if not name or not os.path.isfile(path):
                    print(f"FAIL {model}: {kname} {step['symbol']}: pinned to {name!r}, not built in {kernels_dir}")
                    failures += 1
                    continue
                if path not in digests:
                    with open(path, "rb") as f:
                        data = f.read()
                    digests[path] = hashlib.sha256(data).hexdigest()
                    # nvcc names __shared__ variables of internal-linkage
                    # functions "_INTERNAL_<hash of the source path>": such a
                    # fatbin's sha256 depends on where it was built, so a pin
                    # checked in from one checkout fails in another.
                    if b"_INTERNAL_" in data:
                        print(f"FAIL {name}: contains path-dependent _INTERNAL_ names "
                              f"(move __shared__ users out of anonymous namespaces)")
                        failures += 1
                if step.get("sha256") != digests[path]:
                    print(f"FAIL {model}: {kname} {step['symbol']}: pinned sha256 {step.get('sha256')} != "
                          f"built {name} {digests[path]} (regenerate the manifest with --kernels-dir)")
                    failures += 1
        print(f"{'ok  ' if pins and failures == before else 'FAIL'} {model}: {pins} pinned steps checked")
        failures += pins == 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""))
