#!/usr/bin/env bash
# test/gpu/run.sh [BUNDLE] — every GPU check of kern in one script (docs/gpu.md).
#
# Run from the repository root on a machine with an NVIDIA GPU and the CUDA
# toolkit. BUNDLE (default .gpu-bundle) is what test/gpu/bundle.sh gathered on
# the build machine: kernels/*.fatbin, bin/{kern-gpu-compare,kern-verify,
# kern-run} and lib/ (their non-glibc shared libraries). If BUNDLE has no
# fatbins, they are rebuilt here with nvcc (same flags as meson.build).
#
# Steps (each bounded by `timeout`; a failed step does not stop the others):
#   1. environment: GPU, driver, toolkit; the bundled binaries start;
#   2. offline fatbin ABI check (check_kernel_abi.py), plus cuobjdump's view;
#   3. every CUDA kernel vs its cpu reference on random inputs, several
#      shapes each, outputs poisoned first (tolerances in kernel_cases.h),
#      then a benchmark of the Qwen3-4B shapes against a measured
#      device-to-device copy ceiling (kern-gpu-compare);
#   4. the tiny Qwen3 model end to end: kern-run --device cpu vs --device cuda
#      (greedy ids must match), the checked-in sha256-pinned manifest and an
#      unpinned one, CUDA graphs (default) and --eager, and once under
#      compute-sanitizer (the cpu device's ids are compared with llama.cpp's
#      by test/oracle on the build machine);
#   5. Qwen3-0.6B and Qwen3-4B geometry with random weights (kern-run bench
#      --random-weights, no weights file): decode ms/step and tok/s with
#      graphs and with --eager, prefill tok/s of one 512-token chunk, and the
#      achieved fraction of memory bandwidth (model_bench.py);
#   6. a short table, last. Full results as JSON under $OUT (or ./gpu-results).
# Exit status: 0 when every step passed, 1 otherwise.
set -uo pipefail
bundle=${1:-.gpu-bundle}
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
tmp=$(mktemp -d)
export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:/usr/local/cuda/bin"
declare -a summary
failed=0
step() {  # step NAME STATUS DETAIL
  summary+=("$(printf '%-34s %-6s %s' "$1" "$2" "$3")")
  [ "$2" = ok ] || [ "$2" = skip ] || failed=1
}

echo "== 1. environment"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "$gpu"
nvcc --version 2>&1 | tail -1
kernels="$bundle/kernels"
if ! ls "$kernels"/*.fatbin >/dev/null 2>&1; then
  echo "no bundled fatbins: building them with nvcc"
  kernels="$tmp/kernels"
  mkdir -p "$kernels"
  for f in kernels-src/cuda/*.cu; do
    nvcc -O3 -std=c++20 --no-compress -fatbin -gencode arch=compute_80,code=sm_80 \
      -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
      -gencode arch=compute_100,code=compute_100 -o "$kernels/$(basename "${f%.cu}").fatbin" "$f" &
  done
  wait
fi
for exe in kern-gpu-compare kern-verify kern-run; do
  if [ ! -x "$bundle/bin/$exe" ]; then
    step "$exe present" FAIL "not in $bundle/bin (run test/gpu/bundle.sh)"
  elif ldd "$bundle/bin/$exe" 2>&1 | grep -q "not found"; then
    step "$exe starts" FAIL "$(ldd "$bundle/bin/$exe" 2>&1 | grep "not found" | tr '\n' ' ')"
  fi
done

echo "== 2. fatbin ABI (offline)"
if /usr/bin/env python3 test/gpu/check_kernel_abi.py --manifest examples/qwen3-4b.json \
    --manifest examples/tiny-qwen3.json --doc docs/kernels.md "$kernels"/*.fatbin > "$out/abi.txt" 2>&1; then
  step "fatbin abi check" ok "$(tail -1 "$out/abi.txt")"
else
  step "fatbin abi check" FAIL "$(head -1 "$out/abi.txt")"
fi
command -v cuobjdump >/dev/null && cuobjdump --list-elf --list-ptx "$kernels"/*.fatbin > "$tmp/cuobjdump.txt" 2>&1 \
  && echo "cuobjdump: $(grep -c 'ELF file' "$tmp/cuobjdump.txt") cubins, $(grep -c 'PTX file' "$tmp/cuobjdump.txt") ptx"

echo "== 3. kernels vs cpu reference, benchmark"
timeout 300 "$bundle/bin/kern-gpu-compare" --kernels-dir "$kernels" --json "$out/kernels.json" --reps 100 \
  2>&1 | tee "$out/kernels.txt"
rc=${PIPESTATUS[0]}
kline=$(grep -E '^[0-9]+ cases' "$out/kernels.txt" | head -1)
[ "$rc" = 0 ] && step "kernels vs cpu reference" ok "$kline" || step "kernels vs cpu reference" FAIL "rc $rc: $kline"

echo "== 4. tiny Qwen3 end to end, cpu vs cuda"
ids=1,17,42,99,3,250,7
e2e() {  # e2e LABEL PLAN EXTRA...
  local label=$1 plan=$2; shift 2
  timeout 120 "$bundle/bin/kern-run" "$plan" --weights examples/tiny-qwen3.safetensors --prompt-ids "$ids" \
    --steps 32 --json "$@" > "$out/e2e_$label.json" 2> "$tmp/e2e_$label.err"
}
# examples/tiny-qwen3.json is pinned (cubin + sha256) to the fatbins the build
# produces; the unpinned variant resolves each symbol in any loaded file.
if timeout 60 "$bundle/bin/kern-verify" examples/tiny-qwen3.json -o "$tmp/tiny-pinned.kplan" > "$tmp/verify.txt" 2>&1 &&
   /usr/bin/env python3 examples/gen_qwen3_manifest.py examples/tiny-qwen3.config.json -o "$tmp/tiny.json" \
     > /dev/null 2>&1 &&
   timeout 60 "$bundle/bin/kern-verify" "$tmp/tiny.json" -o "$tmp/tiny.kplan" >> "$tmp/verify.txt" 2>&1; then
  e2e cpu "$tmp/tiny.kplan" --device cpu
  e2e cuda "$tmp/tiny.kplan" --device cuda --kernels "$kernels"
  e2e cuda_pinned "$tmp/tiny-pinned.kplan" --device cuda --kernels "$kernels"
  e2e cuda_eager "$tmp/tiny-pinned.kplan" --device cuda --kernels "$kernels" --eager
  for label in cuda cuda_pinned cuda_eager; do
    verdict=$(/usr/bin/env python3 - "$out/e2e_cpu.json" "$out/e2e_$label.json" <<'EOF'
import json, sys
try:
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
except Exception as e:
    print(f"FAIL no result ({e})"); sys.exit()
same = a["generated_ids"] == b["generated_ids"]
first = next((i for i, (x, y) in enumerate(zip(a["generated_ids"], b["generated_ids"])) if x != y), None)
print(("ok" if same else "FAIL") + f" {len(b['generated_ids'])} ids" + ("" if same else f", first diff at {first}")
      + f"; decode {b.get('decode_tokens_per_s', 0):.0f} tok/s (cpu {a.get('decode_tokens_per_s', 0):.0f})")
EOF
)
    if grep -q "CUDA graphs disabled" "$tmp/e2e_$label.err"; then  # a graph failure fell back to eager
      verdict="FAIL $(grep -m1 'CUDA graphs disabled' "$tmp/e2e_$label.err" | cut -c1-160)"
    fi
    step "tiny e2e cpu vs $label" "${verdict%% *}" "${verdict#* }"
    [ "${verdict%% *}" = ok ] || head -3 "$tmp/e2e_$label.err"
  done
  if command -v compute-sanitizer >/dev/null; then
    timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$bundle/bin/kern-run" "$tmp/tiny-pinned.kplan" \
      --weights examples/tiny-qwen3.safetensors --prompt-ids "$ids" --steps 4 --device cuda --kernels "$kernels" \
      > "$out/memcheck.txt" 2>&1
    rc=$?
    [ "$rc" = 0 ] && step "memcheck tiny e2e" ok "$(grep -m1 'ERROR SUMMARY' "$out/memcheck.txt")" \
                  || step "memcheck tiny e2e" FAIL "rc $rc: $(grep -m1 -E 'ERROR SUMMARY|Invalid' "$out/memcheck.txt")"
  else
    step "memcheck tiny e2e" skip "no compute-sanitizer"
  fi
else
  step "tiny e2e" FAIL "kern-verify / manifest generation failed: $(head -2 "$tmp/verify.txt")"
fi

echo "== 5. Qwen3-0.6B / Qwen3-4B geometry, random weights: decode graph vs eager, 512-token prefill"
for m in qwen3-0.6b qwen3-4b; do
  if ! timeout 60 "$bundle/bin/kern-verify" "examples/$m.json" -o "$tmp/$m.kplan" > "$tmp/verify_$m.txt" 2>&1; then
    step "$m bench" FAIL "kern-verify: $(head -1 "$tmp/verify_$m.txt")"
    continue
  fi
  for mode in graph eager; do
    flag=()
    [ "$mode" = eager ] && flag=(--eager)
    timeout 240 "$bundle/bin/kern-run" bench "$tmp/$m.kplan" --random-weights 1 --device cuda --kernels "$kernels" \
      -p 512 -n 128 -r 5 --warmup 1 -o json "${flag[@]}" > "$out/bench_${m}_$mode.json" 2> "$tmp/bench_${m}_$mode.err"
    rc=$?
    if [ "$rc" != 0 ]; then
      step "$m bench $mode" FAIL "rc $rc: $(grep -m1 -i error "$tmp/bench_${m}_$mode.err" | cut -c1-140)"
    elif grep -q "CUDA graphs disabled" "$tmp/bench_${m}_$mode.err"; then
      step "$m bench $mode" FAIL "$(grep -m1 'CUDA graphs disabled' "$tmp/bench_${m}_$mode.err" | cut -c1-160)"
    fi
  done
done
if /usr/bin/env python3 test/gpu/model_bench.py "$out" > "$tmp/models.txt" 2>&1; then
  step "qwen3 0.6b/4b decode + prefill" ok "table below"
else
  step "qwen3 0.6b/4b decode + prefill" FAIL "incomplete: $(tail -1 "$tmp/models.txt" | cut -c1-120)"
fi
cat "$tmp/models.txt"

echo
echo "== summary"
grep -A100 '^benchmark' "$out/kernels.txt" 2>/dev/null
cat "$tmp/models.txt" 2>/dev/null
{ echo "gpu: ${gpu:-none}"; printf '%s\n' "${summary[@]}"; } | tee "$out/summary.txt"
rm -rf "$tmp"
exit $failed
