#!/usr/bin/env bash
# The README's run command: installs what building needs, builds kern-verify
# and kern-run, then runs the main job on the built-in tiny Qwen3 example on
# the cpu reference device (no GPU needed):
#   manifest.json --kern-verify--> .kplan --kern-run--> generated token ids.
# It builds what users run: the release build in build-release/ (meson's
# buildtype=release: -O3, asserts off; no -march, so the binaries run on any
# x86-64 CPU, the cpu kernels picking AVX2 / AVX-512 / AVX512_BF16 paths by
# cpuid at run time). The tests' build (scripts/test.sh) stays build/,
# debugoptimized.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build-only
B=build-release
[ -f $B/build.ninja ] || meson setup --wipe --buildtype=release $B >/dev/null 2>&1 || meson setup --buildtype=release $B >/dev/null
echo "== building kern-verify and kern-run in $B/ (release; the first time takes a few minutes)"
ninja -C $B kern-verify/kern-verify kern-run/kern-run >/dev/null

echo "== kern-verify examples/tiny-qwen3.json -o $B/tiny-qwen3.kplan"
$B/kern-verify/kern-verify examples/tiny-qwen3.json -o $B/tiny-qwen3.kplan
echo "ok: the manifest verified; plan written to $B/tiny-qwen3.kplan"
echo "== kern-verify --dump $B/tiny-qwen3.kplan (summary)"
$B/kern-verify/kern-verify --dump $B/tiny-qwen3.kplan | tail -n 1
echo "== kern-run $B/tiny-qwen3.kplan --weights examples/tiny-qwen3.safetensors --prompt-ids 1,2,3,4,5,6,7,8 --steps 24 --device cpu"
$B/kern-run/kern-run $B/tiny-qwen3.kplan --weights examples/tiny-qwen3.safetensors \
  --prompt-ids 1,2,3,4,5,6,7,8 --steps 24 --device cpu
