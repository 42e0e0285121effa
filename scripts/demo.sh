#!/usr/bin/env bash
# The README's run command: installs what building needs, builds kern-verify
# and kern-run, then runs the main job on the built-in tiny Qwen3 example on
# the cpu reference device (no GPU needed):
#   manifest.json --kern-verify--> .kplan --kern-run--> generated token ids.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build-only
[ -f build/build.ninja ] || meson setup --wipe build >/dev/null 2>&1 || meson setup build >/dev/null
echo "== building kern-verify and kern-run (the first time takes a few minutes)"
ninja -C build kern-verify/kern-verify kern-run/kern-run >/dev/null

echo "== kern-verify examples/tiny-qwen3.json -o build/tiny-qwen3.kplan"
build/kern-verify/kern-verify examples/tiny-qwen3.json -o build/tiny-qwen3.kplan
echo "ok: the manifest verified; plan written to build/tiny-qwen3.kplan"
echo "== kern-verify --dump build/tiny-qwen3.kplan (summary)"
build/kern-verify/kern-verify --dump build/tiny-qwen3.kplan | tail -n 1
echo "== kern-run build/tiny-qwen3.kplan --weights examples/tiny-qwen3.safetensors --prompt-ids 1,2,3,4,5,6,7,8 --steps 24 --device cpu"
build/kern-run/kern-run build/tiny-qwen3.kplan --weights examples/tiny-qwen3.safetensors \
  --prompt-ids 1,2,3,4,5,6,7,8 --steps 24 --device cpu
