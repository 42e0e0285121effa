#!/usr/bin/env bash
# test/gpu/run.sh [BUNDLE] — every GPU check of kern, and kern beside HF
# transformers, in one bounded run (docs/gpu.md "Running the GPU checks").
#
# Run from anywhere on the GPU machine; BUNDLE (default .gpu-bundle in the
# repository root) is what test/gpu/bundle.sh gathered on the build machine.
# Its libraries reach only kern's binaries (their $ORIGIN rpath): nothing here
# sets LD_LIBRARY_PATH, so python3, nvidia-smi, nvcc and compute-sanitizer run
# with the machine's own libraries.
#
# Bounded and incremental: the whole run has a wall budget (KERN_GPU_BUDGET_S,
# default 360 s); each step has its own timeout, clipped to what is left of
# the budget (a step that would get under 5 s is skipped). After every step
# its line is appended to $OUT/summary.txt, and $OUT/results.json and
# $OUT/logs.tar.gz (every step's log and raw result) are rewritten, so a run
# killed at any point still returns what it did. $OUT (default ./gpu-results)
# holds only those three files. Without a GPU the run stops at the first step
# with "no NVIDIA GPU: ..." and exit 1.
#
# Adding a check is one line in the list at the bottom:
#   step NAME TIMEOUT_S COMMAND [ARGS...]
# COMMAND is a function defined here (or a program); it runs under `timeout`
# with stdout+stderr in logs/NN-NAME.log, exit 0 = ok, 77 = skip, else FAIL
# (124/137: TIMEOUT). It may write one line to "$DETAIL" for the summary
# (default: its last log line), raw results to "$RES/<file>" (packed into
# logs.tar.gz; model_bench.py reads them for results.json), or a reason to
# "$STOP" to skip every later step. Useful variables: $BIN (bundle binaries),
# $KERNELS (fatbins), $WORK (scratch), $STEP_TIMEOUT (this step's seconds).
#
# KERN_GPU_STEPS="kernels tiny" runs only the named steps (plus gpu and
# bundle, which every other step needs): a quick rerun of what failed.
# Exit status: 0 when every step that ran passed and none was skipped for lack
# of budget, 1 otherwise.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 2
bundle=$(realpath -m "${1:-.gpu-bundle}")
out=$(realpath -m "${OUT:-$repo/gpu-results}")
budget=${KERN_GPU_BUDGET_S:-360}
only=${KERN_GPU_STEPS:-}
reserve=10  # seconds kept for the final results.json, archive and table
mkdir -p "$out" || exit 2
rm -f "$out/summary.txt" "$out/results.json" "$out/logs.tar.gz"
work=$(mktemp -d /tmp/kern-gpu.XXXXXX) || exit 2
mkdir -p "$work/logs" "$work/res"
export BUNDLE=$bundle BIN=$bundle/bin KERNELS=$bundle/kernels WORK=$work RES=$work/res REPO=$repo
export DETAIL=$work/detail STOP=$work/stop PYTHONUNBUFFERED=1
export PATH="$PATH:/usr/local/cuda/bin"
t0=$SECONDS
n=0
failed=0
stopped=""

# --- the steps -------------------------------------------------------------

detail() { printf '%s' "$*" | tr '\n' ' ' | head -c 300 | sed 's/ *$//' > "$DETAIL"; }

# The GPU, driver and clocks (nvidia-smi; never changes any setting). No GPU:
# stop everything.
s_gpu() {
  if ! command -v nvidia-smi >/dev/null; then
    echo "no NVIDIA GPU: nvidia-smi not found" > "$STOP"; detail "$(cat "$STOP")"; return 1
  fi
  local q x base=name,driver_version,memory.total
  local extra=compute_cap,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu
  if ! q=$(timeout 15 nvidia-smi --query-gpu=$base --format=csv,noheader,nounits 2>&1) || [ -z "$q" ]; then
    echo "no NVIDIA GPU: nvidia-smi: $(echo "$q" | head -1)" > "$STOP"; detail "$(cat "$STOP")"; return 1
  fi
  echo "$q"
  # Optional fields (an older nvidia-smi may not know one): their absence is no failure.
  x=$(timeout 10 nvidia-smi --query-gpu=$extra --format=csv,noheader,nounits 2>&1) || x=""
  echo "$x"
  python3 - "$base" "$(echo "$q" | head -1)" "$extra" "$(echo "$x" | head -1)" > "$RES/env.json" <<'EOF2'
import json, sys
env = {}
for keys, values in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    values = [v.strip() for v in values.split(",")]
    if len(values) == len(keys.split(",")):
        env.update(zip(keys.split(","), values))
print(json.dumps(env, indent=1))
EOF2
  nvidia-smi -L; timeout 10 nvidia-smi -q -d CLOCK | head -40
  echo "== toolkit and python"; command -v nvcc && nvcc --version | tail -2
  command -v python3 && python3 --version; uname -a
  echo "== CUDA libraries the loader sees"; ldconfig -p | grep -E 'libcuda\.so|libcublasLt' || echo "(none in the loader cache)"
  ls -d /usr/local/cuda*/lib64 /usr/local/nvidia/lib64 2>&1
  ls /usr/local/cuda*/lib64/libcublasLt.so* 2>&1 | head -3
  echo "== cublasLt in the CUDA wheels of python3 (kern-load/cuda/library_search.h looks there too)"
  ls "$(dirname "$(command -v python3)")"/../lib/python3*/site-packages/nvidia/*/lib/libcublasLt.so* 2>&1 | head -3
  detail "$(echo "$q" | head -1 | cut -d, -f1-4)"
}

# Each bundled binary starts: the loader resolved everything and main ran
# (kern-gpu-compare answers --help with its usage line and exit 2). Errors
# also go to $WORK/start.txt.
bins_start() {
  local exe o r ok=0
  : > "$WORK/start.txt"
  for exe in kern-gpu-compare kern-verify kern-run; do
    echo "== $exe"; ldd "$BIN/$exe"
    o=$("$BIN/$exe" --help 2>&1); r=$?
    if [ $r = 127 ] || [ $r -ge 128 ] || ! grep -qi usage <<< "$o"; then
      echo "$exe does not start (exit $r): $(head -3 <<< "$o")" | tee -a "$WORK/start.txt"; ok=1
    fi
  done
  return $ok
}

# The bundle: present, its binaries start with its own libraries, its fatbins
# are the pinned bytes.
s_bundle() {
  if [ ! -f "$BUNDLE/VERSION" ]; then
    echo "no bundle at $BUNDLE (test/gpu/bundle.sh BUILD DEST on the build machine, carry DEST)" > "$STOP"
    detail "$(cat "$STOP")"; return 1
  fi
  cat "$BUNDLE/VERSION"; cp "$BUNDLE/VERSION" "$RES/VERSION"
  local bad=0
  if ! bins_start; then
    # Debian 12's libstdc++ needs glibc 2.36: on an older glibc, fall back to
    # the machine's own libstdc++ and libgcc_s (kept aside, not deleted).
    if grep -q "GLIBC_2" "$WORK/start.txt" && [ -f "$BUNDLE/lib/libstdc++.so.6" ]; then
      echo "== the bundled libstdc++ needs a newer glibc: retrying with the machine's"
      mkdir -p "$BUNDLE/lib-aside" && mv "$BUNDLE/lib/libstdc++.so.6" "$BUNDLE/lib/libgcc_s.so.1" "$BUNDLE/lib-aside/"
      bins_start || bad=1
    else
      bad=1
    fi
  fi
  if ldd "$BIN"/* | grep -q "not found"; then bad=1; fi
  python3 test/gpu/fatbin_pins.py "$KERNELS" examples/tiny-qwen3.json examples/qwen3-0.6b.json examples/qwen3-4b.json \
    examples/qwen3-4b-unfused.json || bad=1
  if [ $bad != 0 ]; then
    echo "the bundle is unusable (see logs)" > "$STOP"; detail "binaries or fatbins broken: see the log"; return 1
  fi
  local aside=""
  [ -d "$BUNDLE/lib-aside" ] && aside=" (with the machine's libstdc++)"
  detail "$(head -1 "$BUNDLE/VERSION"); binaries start$aside; $(ls "$KERNELS" | wc -l) fatbins match the pins"
}

# Offline fatbin ABI check, and cuobjdump's view of the fatbins.
s_abi() {
  python3 test/gpu/check_kernel_abi.py --manifest examples/qwen3-4b.json --manifest examples/tiny-qwen3.json --manifest examples/qwen3-4b-dspark.json \
    --doc docs/kernels.md "$KERNELS"/*.fatbin || return 1
  local last; last=$(tail -1 "$WORK/logs/$LOGNAME_")
  if command -v cuobjdump >/dev/null; then
    cuobjdump --list-elf --list-ptx "$KERNELS"/*.fatbin > "$WORK/cuobjdump.txt" 2>&1
    cat "$WORK/cuobjdump.txt"
    last="$last; cuobjdump: $(grep -c 'ELF file' "$WORK/cuobjdump.txt") cubins, $(grep -c 'PTX file' "$WORK/cuobjdump.txt") ptx"
  fi
  detail "$last"
}

# The kernels documented with 16-/8-byte loads (docs/kernels.md "Vector
# loads") really have them in the SASS of every architecture (cuobjdump -sass;
# skip without cuobjdump). The meson test checks the PTX on the build machine.
s_sass() {
  command -v cuobjdump >/dev/null || { echo "no cuobjdump"; return 77; }
  python3 test/kernels/check_vector_loads.py --self-test --doc docs/kernels.md --sass "$KERNELS"/*.fatbin
}

# Every CUDA kernel vs its cpu reference, then the Qwen3-4B shapes timed
# against a measured device-to-device copy (kern-gpu-compare).
s_kernels() {
  "$BIN/kern-gpu-compare" --kernels-dir "$KERNELS" --json "$RES/kernels.json" --reps 100
  local rc=$?
  local cases copy
  cases=$(grep -m1 -E '^[0-9]+ cases' "$WORK/logs/$LOGNAME_")
  copy=$(python3 test/gpu/model_bench.py --copy-line "$RES/kernels.json")
  if [ -n "$cases" ]; then detail "$cases${copy:+; $copy}"
  else detail "exit $rc: $(grep -v '^\s*$' "$WORK/logs/$LOGNAME_" | tail -1)"; fi
  return $rc
}

plan() {  # plan NAME: kern-verify examples/NAME.json -> $WORK/NAME.kplan (once)
  [ -f "$WORK/$1.kplan" ] || "$BIN/kern-verify" "examples/$1.json" -o "$WORK/$1.kplan" > "$WORK/verify_$1.txt" 2>&1 \
    || { cat "$WORK/verify_$1.txt"; detail "kern-verify examples/$1.json failed: $(head -1 "$WORK/verify_$1.txt")"; return 1; }
}

# The tiny Qwen3 model: --device cpu vs cuda (unpinned, pinned, --eager): the
# greedy ids must match and no graph may fall back to eager.
s_tiny() {
  plan tiny-qwen3 || return 1
  python3 examples/gen_qwen3_manifest.py examples/tiny-qwen3.config.json -o "$WORK/tiny-unpinned.json" &&
    "$BIN/kern-verify" "$WORK/tiny-unpinned.json" -o "$WORK/tiny-unpinned.kplan" || { detail "unpinned plan failed"; return 1; }
  local label args ok=1 line=""
  for label in cpu cuda cuda_pinned cuda_eager; do
    case $label in
      cpu) args=("$WORK/tiny-unpinned.kplan" --device cpu) ;;
      cuda) args=("$WORK/tiny-unpinned.kplan" --device cuda --kernels "$KERNELS") ;;
      cuda_pinned) args=("$WORK/tiny-qwen3.kplan" --device cuda --kernels "$KERNELS") ;;
      cuda_eager) args=("$WORK/tiny-qwen3.kplan" --device cuda --kernels "$KERNELS" --eager) ;;
    esac
    "$BIN/kern-run" "${args[@]}" --weights examples/tiny-qwen3.safetensors --prompt-ids 1,17,42,99,3,250,7 \
      --steps 32 --json > "$RES/tiny_$label.json" 2> "$WORK/tiny_$label.err"
    echo "== $label: exit $?"; cat "$WORK/tiny_$label.err"
    if grep -q "CUDA graphs disabled" "$WORK/tiny_$label.err"; then ok=0; line="$line $label: graph fell back to eager;"; fi
  done
  python3 - "$RES" "$WORK" > "$WORK/tiny_verdict.txt" <<'EOF'
import json, os, sys
def ids(label):
    try:
        return json.load(open(os.path.join(sys.argv[1], f"tiny_{label}.json")))["generated_ids"]
    except Exception as e:
        try:
            lines = [l for l in open(os.path.join(sys.argv[2], f"tiny_{label}.err")).read().splitlines() if l.strip()]
        except OSError:
            lines = []
        return "no result: " + (lines[-1][:100] if lines else type(e).__name__)
ref, bad = ids("cpu"), 0
parts = []
for label in ("cuda", "cuda_pinned", "cuda_eager"):
    got = ids(label)
    if got == ref and isinstance(ref, list):
        parts.append(f"{label} ok")
    else:
        bad = 1
        first = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), None) if isinstance(got, list) and isinstance(ref, list) else None
        parts.append(f"{label} DIFFERS" + (f" at step {first}" if first is not None else f": {got}"))
print(f"{len(ref) if isinstance(ref, list) else 0} ids vs cpu: " + ", ".join(parts))
sys.exit(bad)
EOF
  local v=$?
  cat "$WORK/tiny_verdict.txt"
  detail "$(cat "$WORK/tiny_verdict.txt")$line"
  [ $v = 0 ] && [ $ok = 1 ]
}

# kern-run bench at a model's geometry with random weights, CUDA graphs and
# --eager: 512-token prefill, single decode steps (tg1: the per-step median)
# and 32-step runs (tg32), 50 repetitions each after 2 warm-ups. Decode runs
# both asynchronously (tgN) and synchronously (tgN-sync, --decode both): the
# tg32 pair gives wall ms/step, GPU busy ms/step and the host gap of each
# (docs/runtime.md "Asynchronous decode"); the unfused comparison model runs
# the asynchronous loop under CUDA graphs only (its step's time budget: it is
# there to compare kernels with bench-4b, not modes).
s_bench() {
  local m=$1 mode modes=(graph eager) flag decode=(--decode both) rc=0 line=""
  plan "$m" || return 1
  [ "$m" = qwen3-4b-unfused ] && decode=() && modes=(graph)
  for mode in "${modes[@]}"; do
    flag=()
    [ $mode = eager ] && flag=(--eager)
    "$BIN/kern-run" bench "$WORK/$m.kplan" --random-weights 1 --device cuda --kernels "$KERNELS" \
      -p 512 -n 1,32 -r 50 --warmup 2 "${decode[@]}" -o json "${flag[@]}" > "$RES/bench_${m}_$mode.json" \
      2> "$WORK/bench.err"
    local r=$?
    echo "== $mode: exit $r"; cat "$WORK/bench.err"
    if [ $r != 0 ]; then rc=1; line="$line $mode: exit $r $(grep -m1 -i error "$WORK/bench.err" | cut -c1-120);"
    elif grep -q "CUDA graphs disabled" "$WORK/bench.err"; then rc=1; line="$line $mode: graph fell back to eager;"
    else line="$line $mode: $(python3 test/gpu/model_bench.py --bench-line "$RES/bench_${m}_$mode.json");"
    fi
  done
  detail "$line"
  return $rc
}

# Speculative decoding (docs/speculative.md): the tiny DSpark model with
# random weights, --spec on cuda against plain greedy decoding on cpu (ids
# equal); then the Qwen3-4B-geometry DSpark manifest with random weights on
# cuda: ms per round by phase (draft, verify, precompute) and the tok/s it
# projects at the reference system's 3.44 tokens per round (random weights
# accept almost nothing, so the measured tokens/round is about 1).
s_spec() {
  plan tiny-qwen3-dspark || return 1
  plan qwen3-4b-dspark || return 1
  local ids=1,17,42,99,3,250,7
  "$BIN/kern-run" "$WORK/tiny-qwen3-dspark.kplan" --random-weights 3 --device cpu --prompt-ids $ids --steps 40 \
    --json > "$RES/spec_tiny_cpu.json" 2> "$WORK/spec.err" &&
  "$BIN/kern-run" "$WORK/tiny-qwen3-dspark.kplan" --random-weights 3 --device cuda --kernels "$KERNELS" \
    --prompt-ids $ids --steps 40 --spec --json > "$RES/spec_tiny_cuda.json" 2>> "$WORK/spec.err" &&
  "$BIN/kern-run" "$WORK/qwen3-4b-dspark.kplan" --random-weights 1 --device cuda --kernels "$KERNELS" \
    --prompt-ids $ids --steps 64 --spec --json > "$RES/spec_4b_cuda.json" 2>> "$WORK/spec.err"
  local rc=$?
  cat "$WORK/spec.err"
  [ $rc = 0 ] || { detail "exit $rc: $(grep -m1 -i error "$WORK/spec.err" | cut -c1-200)"; return 1; }
  python3 - "$RES" > "$WORK/spec_verdict.txt" <<'EOF2'
import json, os, sys
load = lambda n: json.load(open(os.path.join(sys.argv[1], n)))
cpu, cuda, big = load("spec_tiny_cpu.json"), load("spec_tiny_cuda.json"), load("spec_4b_cuda.json")
same = cpu["generated_ids"] == cuda["generated_ids"]
s = big["spec"]
m = s["ms_per_round"]
print(f"tiny --spec cuda vs plain cpu: {'equal' if same else 'DIFFERS'} ({len(cuda['generated_ids'])} ids); "
      f"4b: {s['rounds']} rounds, {s['tokens_per_round']:.2f} tokens/round, ms/round draft {m['draft']:.3f} "
      f"verify {m['verify']:.3f} precompute {m['precompute']:.3f} total {m['total']:.3f}; "
      f"projected at 3.44 tokens/round: {3.44 * 1000 / m['total']:.0f} tok/s")
sys.exit(0 if same else 1)
EOF2
  local v=$?
  cat "$WORK/spec_verdict.txt"
  detail "$(cat "$WORK/spec_verdict.txt")"
  return $v
}

# HF transformers beside kern on the same random weights (hf_peer.py). The
# weights (twice 8 GB at 4B) go to /dev/shm when it has room: RAM speed.
s_hf() {
  local m=$1 scratch=$WORK
  plan "$m" || return 1
  if [ "$(df --output=avail -B1G /dev/shm 2>/dev/null | tail -1)" -ge 40 ] 2>/dev/null; then
    scratch=/dev/shm/$(basename "$WORK")-hf  # finish removes it even after a timeout
    mkdir -p "$scratch" || scratch=$WORK
  fi
  echo "scratch: $scratch"
  python3 test/gpu/hf_peer.py "examples/$m.config.json" --plan "$WORK/$m.kplan" --kern-run "$BIN/kern-run" \
    --kernels "$KERNELS" --work "$scratch/hf_$m" --json "$RES/hf_$m.json" --deadline-s $((STEP_TIMEOUT - 8))
  local rc=$?
  rm -rf "$scratch/hf_$m"
  [ "$scratch" != "$WORK" ] && rm -rf "$scratch"
  detail "$(tail -1 "$WORK/logs/$LOGNAME_")"
  return $rc
}

# compute-sanitizer memcheck over a short tiny-model run (last: slow, capped).
s_memcheck() {
  command -v compute-sanitizer >/dev/null || { detail "no compute-sanitizer"; return 77; }
  plan tiny-qwen3 || return 1
  compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/kern-run" "$WORK/tiny-qwen3.kplan" \
    --weights examples/tiny-qwen3.safetensors --prompt-ids 1,17,42,99,3,250,7 --steps 2 --device cuda \
    --kernels "$KERNELS"
  local rc=$?
  detail "$(grep -m1 -E 'ERROR SUMMARY' "$WORK/logs/$LOGNAME_" || echo "exit $rc")"
  return $rc
}

export -f detail bins_start s_gpu s_bundle s_abi s_sass s_kernels plan s_tiny s_bench s_spec s_hf s_memcheck

# --- the runner ------------------------------------------------------------

# Rewrites $OUT/results.json (model_bench.py over $RES and the summary) and
# $OUT/logs.tar.gz (logs/ and res/), each through a temporary name + rename.
pack() {
  timeout 20 python3 test/gpu/model_bench.py "$RES" "$out/summary.txt" "$out/.results.json" > "$WORK/table.txt" \
    2> "$WORK/logs/zz-results.log" && mv -f "$out/.results.json" "$out/results.json"
  tar -C "$WORK" -czf "$out/.logs.tar.gz" logs res 2>/dev/null && mv -f "$out/.logs.tar.gz" "$out/logs.tar.gz"
  rm -f "$out/.results.json" "$out/.logs.tar.gz"
}

# step NAME TIMEOUT_S COMMAND [ARGS...]: see the header.
step() {
  local name=$1 cap=$2 status detail_text rc t s ran=""
  shift 2
  if [ -n "$only" ] && [ "$name" != gpu ] && [ "$name" != bundle ] && [[ " $only " != *" $name "* ]]; then return 0; fi
  n=$((n + 1))
  export LOGNAME_
  LOGNAME_=$(printf '%02d-%s.log' "$n" "$name")
  local left=$((budget - (SECONDS - t0) - reserve))
  t=$cap
  [ "$t" -gt "$left" ] && t=$left
  s=$SECONDS
  rm -f "$DETAIL"
  if [ -n "$stopped" ]; then
    status=skip; detail_text=$stopped; echo "skipped: $stopped" > "$WORK/logs/$LOGNAME_"
  elif [ "$t" -lt 5 ]; then
    status=skip; detail_text="wall budget of ${budget}s spent"; echo "skipped: $detail_text" > "$WORK/logs/$LOGNAME_"
    failed=1  # the run is incomplete
  else
    echo "== $name (timeout ${t}s; $((SECONDS - t0))s of ${budget}s used)"
    ran=1
    STEP_TIMEOUT=$t timeout -k 5 "$t" bash -c '"$@"' "step-$name" "$@" > "$WORK/logs/$LOGNAME_" 2>&1 < /dev/null
    rc=$?
    case $rc in
      0) status=ok ;;
      77) status=skip ;;
      124|137) status=TIMEOUT; echo "step $name: killed after ${t}s" >> "$WORK/logs/$LOGNAME_" ;;
      *) status=FAIL ;;
    esac
    if [ -s "$DETAIL" ]; then detail_text=$(cat "$DETAIL")
    else detail_text=$(grep -v '^\s*$' "$WORK/logs/$LOGNAME_" | tail -1 | cut -c1-200); fi
    [ "$status" = TIMEOUT ] && detail_text="killed after ${t}s; last: $detail_text"
    [ -s "$STOP" ] && [ -z "$stopped" ] && stopped=$(cat "$STOP")
  fi
  case $status in ok|skip) ;; *) failed=1 ;; esac
  local line
  line=$(printf '%-12s %-7s %5ds  %s' "$name" "$status" $((SECONDS - s)) "$detail_text")
  echo "$line" >> "$out/summary.txt"
  echo "$line"
  if [ "$status" != ok ] && [ "$status" != skip ]; then tail -5 "$WORK/logs/$LOGNAME_" | sed 's/^/    | /'; fi
  # A step that ran is packed at once; skipped ones wait for the next pack
  # (or finish's), so a spent budget is not spent again on packing.
  [ -n "$ran" ] && pack
}

finish() {
  local why=${1:-}
  [ -n "$why" ] && echo "$why" >> "$out/summary.txt"
  [ -n "$stopped" ] && echo "stopped: $stopped" >> "$out/summary.txt"
  echo "wall $((SECONDS - t0))s of ${budget}s; exit $failed" >> "$out/summary.txt"
  pack
  echo
  echo "== summary ($out: summary.txt, results.json, logs.tar.gz)"
  cat "$out/summary.txt"
  echo
  cat "$WORK/table.txt" 2>/dev/null
  rm -rf "$WORK" "/dev/shm/$(basename "$WORK")-hf"
  exit $failed
}
trap 'failed=1; finish "interrupted after $((SECONDS - t0))s"' INT TERM

{
  echo "kern GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ), bundle $bundle ($(head -1 "$bundle/VERSION" 2>/dev/null || echo 'no VERSION'))"
  echo "budget ${budget}s; steps: name status seconds detail"
} > "$out/summary.txt"

# --- the list of steps (NAME TIMEOUT_S COMMAND...): the caps add up to 350 s,
# inside the default 360 s budget less the 10 s reserve (docs/gpu.md has why each;
# spec's 20 s came out of hf-4b's 75)
step gpu        15 s_gpu
[ -n "$stopped" ] && finish
step bundle     10 s_bundle
[ -n "$stopped" ] && finish
step abi        10 s_abi
step sass       10 s_sass
step kernels    40 s_kernels
step tiny       25 s_tiny
step bench-0.6b 25 s_bench qwen3-0.6b
step hf-0.6b    40 s_hf qwen3-0.6b
step bench-4b   50 s_bench qwen3-4b
step bench-4b-unfused 30 s_bench qwen3-4b-unfused
step spec       20 s_spec
step hf-4b      60 s_hf qwen3-4b
step memcheck   15 s_memcheck
finish
