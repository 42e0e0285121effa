#!/bin/sh
# After changing a CUDA kernel (kernels-src/cuda/): rebuild the fatbins,
# regenerate the checked-in manifests' pins (docs/gpu.md "Pinned
# manifests") and the static launch reports of the Qwen3-4B, Llama-3.2-1B,
# Llama-3.1-8B and Qwen3-30B-A3B decodes (docs/kernels.md "Static launch report"). Rewrites checked-in files:
# review the diff. Needs nvcc and a configured build directory.
#
#   scripts/regen_kernels.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || { echo "regen_kernels.sh: no build directory '$build' (meson setup $build)" >&2; exit 2; }
ninja -C "$build" -j2
for m in tiny-qwen3 tiny-qwen3-textvocab qwen3-0.6b qwen3-4b; do
  examples/gen_qwen3_manifest.py examples/$m.config.json -o examples/$m.json --kernels-dir "$build/kernels"
done
for m in tiny-qwen3 qwen3-4b; do
  examples/gen_qwen3_manifest.py examples/$m.config.json -o examples/$m-unfused.json --kernels unfused \
    --kernels-dir "$build/kernels"
  examples/gen_qwen3_dspark_manifest.py examples/$m.config.json examples/$m-dspark.config.json \
    -o examples/$m-dspark.json --kernels-dir "$build/kernels"
done
for m in tiny-llama llama-3.2-1b llama-3.1-8b tiny-qwen2 tiny-qwen3-moe qwen3-30b-a3b; do
  provider/gen_manifest.py examples/$m.config.json -o examples/$m.json --kernels-dir "$build/kernels"
done
for m in qwen3-4b llama-3.2-1b llama-3.1-8b qwen3-30b-a3b; do
  bench/launch_report.py examples/$m.json --kern-verify "$build/kern-verify/kern-verify" \
    -o bench/results/launch-report-$m-decode.md
done
echo "regenerated the manifests' pins and bench/results/launch-report-*-decode.md"
