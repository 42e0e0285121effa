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
# default 270 s: about 4.5 minutes, so that a rerun fits the same 15 minutes
# of device time); each step has its own timeout (its cap), clipped to what is
# left of the budget (a step that would get under 5 s is skipped). After every
# step its line is appended to $OUT/summary.txt, and $OUT/results.json and
# $OUT/logs.tar.gz (every step's log and raw result) are rewritten, so a run
# killed at any point still returns what it did. $OUT (default ./gpu-results)
# holds only those three files. Without a GPU the run stops at the first step
# with "no NVIDIA GPU: ..." and exit 1.
#
# The steps and their caps are the table test/gpu/steps.txt (KERN_GPU_TABLE
# names another one: the rehearsal's tests use small tables):
#   NAME CAP_S FUNCTION [ARGS...]
# FUNCTION is defined here; it runs under `timeout` with stdout+stderr in
# logs/NN-NAME.log, exit 0 = ok, 77 = skip, else FAIL (124/137: TIMEOUT). It
# may write one line to "$DETAIL" for the summary (default: its last log
# line), raw results to "$RES/<file>" (packed into logs.tar.gz; model_bench.py
# reads them for results.json), or a reason to "$STOP" to end the run after
# it. Useful variables: $BIN (bundle binaries), $KERNELS (fatbins), $WORK
# (scratch), $STEP_TIMEOUT (this step's seconds).
#
# Reruns: KERN_GPU_STEPS="kernels tiny" runs only the named steps (plus gpu
# and bundle, which every other step needs); KERN_GPU_STEPS=failed runs the
# steps that did not pass in the last run's summary ($KERN_GPU_STATE, default
# .gpu-state/ in the repository root, keeps a copy of it: the device machine
# keeps ignored paths between calls), KERN_GPU_STEPS=failed:FILE those of the
# summary.txt FILE. Not passing: FAIL, TIMEOUT, or skipped for lack of budget.
# Exit status: 0 when every step that ran passed and none was skipped for lack
# of budget, 1 otherwise, 2 on a bad table or rerun request.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 2
bundle=$(realpath -m "${1:-.gpu-bundle}")
out=$(realpath -m "${OUT:-$repo/gpu-results}")
budget=${KERN_GPU_BUDGET_S:-270}
only=${KERN_GPU_STEPS:-}
reserve=10  # seconds kept for the final results.json, archive and table
table=$(realpath -m "${KERN_GPU_TABLE:-$repo/test/gpu/steps.txt}")
state=$(realpath -m "${KERN_GPU_STATE:-$repo/.gpu-state}")
# KERN_GPU_STEPS=failed[:FILE]: the steps that did not pass in that summary.
if [[ "$only" == failed || "$only" == failed:* ]]; then
  last=${only#failed}; last=${last#:}; last=${last:-$state/summary.txt}
  [ -f "$last" ] || { echo "run.sh: KERN_GPU_STEPS=$only: no summary at $last" >&2; exit 2; }
  only=$(awk '$2 == "FAIL" || $2 == "TIMEOUT" || ($2 == "skip" && /wall budget/) {print $1}' "$last" | tr '\n' ' ')
  only=${only% }
  echo "rerunning the steps that did not pass in $last: ${only:-none}"
  [ -n "$only" ] || only="-"  # nothing failed: gpu and bundle only
fi
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
    examples/qwen3-4b-unfused.json examples/tiny-llama.json examples/tiny-qwen2.json || bad=1
  if [ $bad != 0 ]; then
    echo "the bundle is unusable (see logs)" > "$STOP"; detail "binaries or fatbins broken: see the log"; return 1
  fi
  local aside=""
  [ -d "$BUNDLE/lib-aside" ] && aside=" (with the machine's libstdc++)"
  detail "$(head -1 "$BUNDLE/VERSION"); binaries start$aside; $(ls "$KERNELS" | wc -l) fatbins match the pins"
}

# Offline fatbin ABI check, cuobjdump's view of the fatbins, and the kernels
# documented with 16-/8-byte loads (docs/kernels.md "Vector loads") really
# have them in the SASS of every architecture (cuobjdump -sass; the meson
# test checks the PTX on the build machine). Without cuobjdump, only the ABI.
s_abi() {
  python3 test/gpu/check_kernel_abi.py --manifest examples/qwen3-4b.json --manifest examples/tiny-qwen3.json --manifest examples/qwen3-4b-dspark.json \
    --manifest examples/tiny-llama.json --manifest examples/tiny-qwen2.json \
    --doc docs/kernels.md "$KERNELS"/*.fatbin || return 1
  local last; last=$(tail -1 "$WORK/logs/$LOGNAME_")
  if ! command -v cuobjdump >/dev/null; then detail "$last; no cuobjdump: SASS not checked"; return 0; fi
  cuobjdump --list-elf --list-ptx "$KERNELS"/*.fatbin > "$WORK/cuobjdump.txt" 2>&1
  cat "$WORK/cuobjdump.txt"
  last="$last; cuobjdump: $(grep -c 'ELF file' "$WORK/cuobjdump.txt") cubins, $(grep -c 'PTX file' "$WORK/cuobjdump.txt") ptx"
  python3 test/kernels/check_vector_loads.py --self-test --doc docs/kernels.md --sass "$KERNELS"/*.fatbin > "$WORK/sass.txt" 2>&1
  local rc=$?
  cat "$WORK/sass.txt"
  detail "$last; vector loads in SASS: $([ $rc = 0 ] && echo ok || echo "FAILED: $(tail -1 "$WORK/sass.txt")")"
  return $rc
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
  python3 examples/gen_qwen3_manifest.py examples/tiny-qwen3.config.json -o "$WORK/tiny-unpinned.json" --unpinned &&
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

# Tensor parallelism on GPUs (docs/parallel.md "On GPUs"): the tiny model
# at TP = 2 (two GPUs, NCCL) against TP = 1 on the cuda device, 32 greedy ids
# each, graphs on; passes when the ids are equal. The summary gives both
# decode ms/step (decode_gpu_wall_ms_per_step). With fewer than two GPUs
# (nvidia-smi -L) it is skipped, saying how many there are.
s_tp() {
  local n tp cfg=examples/tiny-qwen3.config.json
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ "${n:-0}" -lt 2 ]; then detail "skipped: ${n:-0} GPU"; return 77; fi
  for tp in 1 2; do
    mkdir -p "$WORK/tp$tp"
    python3 provider/gen_manifest.py "$cfg" -o "$WORK/tp$tp/manifest.json" --tp $tp --unpinned --tokens-max 64 &&
      "$BIN/kern-verify" "$WORK/tp$tp/manifest.json" -o "$WORK/tp$tp/model.kplan" || { detail "tp $tp plan failed"; return 1; }
    if [ $tp = 1 ]; then
      cp examples/tiny-qwen3.safetensors "$WORK/tp1/weights.safetensors"
    else
      python3 provider/shard_weights.py "$cfg" examples/tiny-qwen3.safetensors --tp $tp -o "$WORK/tp$tp" ||
        { detail "shard_weights.py --tp $tp failed"; return 1; }
    fi
    "$BIN/kern-run" "$WORK/tp$tp" --tp $tp --device cuda --kernels "$KERNELS" --prompt-ids 1,17,42,99,3,250,7 \
      --steps 32 --ignore-eos --json > "$RES/tp_$tp.json" 2> "$WORK/tp_$tp.err"
    echo "== tp $tp: exit $?"; cat "$WORK/tp_$tp.err"
  done
  python3 - "$RES" "$WORK" > "$WORK/tp_verdict.txt" <<'EOF'
import json, os, sys
def run(tp):
    try:
        return json.load(open(os.path.join(sys.argv[1], f"tp_{tp}.json")))
    except Exception:
        lines = [l for l in open(os.path.join(sys.argv[2], f"tp_{tp}.err")).read().splitlines() if l.strip()]
        return "no result: " + (lines[-1][:120] if lines else "?")
one, two = run(1), run(2)
if isinstance(one, str) or isinstance(two, str):
    print(f"tp 1: {one if isinstance(one, str) else 'ok'}; tp 2: {two if isinstance(two, str) else 'ok'}")
    sys.exit(1)
def ms(d):
    v = d.get("decode_gpu_wall_ms_per_step")
    return "n/a" if v is None else f"{v:.3f}"
same = one["generated_ids"] == two["generated_ids"]
print(f"{len(one['generated_ids'])} ids, tp 2 {'equals' if same else 'DIFFERS from'} tp 1; "
      f"decode ms/step tp 1 {ms(one)}, tp 2 {ms(two)}")
sys.exit(0 if same else 1)
EOF
  local v=$?
  cat "$WORK/tp_verdict.txt"
  detail "$(cat "$WORK/tp_verdict.txt")"
  return $v
}

# kern-run compare (docs/compare.md): one plan on the cpu device (A) and on
# cuda (B), every dispatch a span, replayed from A's inputs and run free: the
# tiny model with its weights (8 decode steps) and the Qwen3-0.6B geometry
# with random weights (4 prompt ids, 2 steps), so a first GPU run names the
# first dispatch that disagrees instead of only a different id list. PASS
# (exit 0) passes; FAIL (1) and INCONCLUSIVE (3) fail with the verdict's
# reason; 2 is an error. The JSON reports are compare_<model>.json.
s_compare() {
  local m args v ok=0 line=""
  plan tiny-qwen3 || return 1
  plan qwen3-0.6b || return 1
  for m in tiny-qwen3 qwen3-0.6b; do
    case $m in
      tiny-qwen3) args=(--weights examples/tiny-qwen3.safetensors --prompt-ids 1,17,42,99,3,250,7 --steps 8) ;;
      qwen3-0.6b) args=(--random-weights 1 --prompt-ids 1,17,42,99 --steps 2) ;;
    esac
    "$BIN/kern-run" compare "$WORK/$m.kplan" --device-a cpu --device-b cuda --kernels-b "$KERNELS" "${args[@]}" \
      --json > "$RES/compare_$m.json" 2> "$WORK/compare_$m.err"
    v=$?
    echo "== $m: exit $v"; cat "$WORK/compare_$m.err"
    if [ $v = 2 ] || [ ! -s "$RES/compare_$m.json" ]; then
      ok=1; line="$line $m: error: $(grep -v '^\s*$' "$WORK/compare_$m.err" | tail -1 | cut -c1-150);"; continue
    fi
    python3 - "$RES/compare_$m.json" > "$WORK/compare_$m.txt" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
first = d["first_bad_span"]
where = (f"; first span by the {first.get('by', 'tolerance')} ({first['mode']}): {first['program']} {first['span']} "
         f"{'+'.join(first['b_labels'])}") if first else ""
print(f"{d['verdict']}: {d['reason']}{where}")
err = lambda r: float("inf") if r["replay"]["max_abs"] is None else r["replay"]["max_abs"]  # null: not finite
spans = sorted(d["spans"], key=lambda s: -max([err(r) for r in s["regions"]] or [0]))
for s in spans[:5]:
    worst = max(s["regions"], key=err) if s["regions"] else None
    if worst:
        f = worst["replay"]["first_diff"]
        print(f"  {s['program']} span {s['span']} {'+'.join(s['b_labels'])}: {worst['name']} replay max abs "
              f"{worst['replay']['max_abs']}, free {worst['free']['max_abs']}"
              + (f"; first at {f['index']} ({f['at']}): cpu {f['a']} cuda {f['b']}" if f else "")
              + f"; ms cpu {s['a_ms']:.3f} cuda {s['b_ms']:.3f}; replay measure rel L2 {worst['measure']['rel_l2']} "
              f"bias {worst['measure']['scale_bias']} (z {worst['measure']['bias_z']}): {worst['measure']['class']}")
for k, s in enumerate(d["steps"]):
    l = s["logits"]
    print(f"  step {k}: ids {s['a_id']}/{s['b_id']} KL {l['kl']} floor {s['floor']['kl']}"
          + (f" flip {'near-tie' if l['near_tie'] else 'NOT a near-tie'} gap {l['a_gap']}" if l["flip"] else ""))
EOF2
    cat "$WORK/compare_$m.txt"
    [ $v = 0 ] || ok=1
    line="$line $m: $(head -1 "$WORK/compare_$m.txt" | cut -c1-200);"
  done
  detail "$line"
  return $ok
}

# PDL on and off (docs/gpu.md "Programmatic dependent launch"): greedy ids of
# MODEL with random weights (STEPS ids, default 64), with PDL under CUDA
# graphs, with --no-pdl under graphs and with --no-pdl --eager: all must be
# equal. A difference with PDL only is a PDL race (a kernel reading before
# its griddepcontrol.wait).
s_pdl() {
  local m=$1 steps=${2:-64} label args
  plan "$m" || return 1
  for label in pdl nopdl nopdl_eager; do
    case $label in
      pdl) args=() ;;
      nopdl) args=(--no-pdl) ;;
      nopdl_eager) args=(--no-pdl --eager) ;;
    esac
    "$BIN/kern-run" "$WORK/$m.kplan" --random-weights 1 --device cuda --kernels "$KERNELS" \
      --prompt-ids 1,17,42,99,3,250,7 --steps "$steps" --ignore-eos --json "${args[@]}" > "$RES/pdl_$label.json" \
      2> "$WORK/pdl_$label.err"
    echo "== $label: exit $?"; cat "$WORK/pdl_$label.err"
  done
  python3 test/gpu/model_bench.py --pdl-verdict "$RES" "$WORK" > "$WORK/pdl_verdict.txt"
  local v=$?
  cat "$WORK/pdl_verdict.txt"
  detail "$(cat "$WORK/pdl_verdict.txt")"
  return $v
}

# kern-run bench at a model's geometry with random weights, CUDA graphs and
# --eager: 512-token prefill, single decode steps (tg1: the per-step median)
# and 32-step runs (tg32), REPS repetitions each after 2 warm-ups. The
# weights are generated on the host on up to 16 threads (kern-load
# random_weights.h): a 4B process pays about the 8 GB copy, not 8 s each. Decode runs
# both asynchronously (tgN) and synchronously (tgN-sync, --decode both): the
# tg32 pair gives wall ms/step, GPU busy ms/step and the host gap of each
# (docs/runtime.md "Asynchronous decode"); the unfused comparison model runs
# the asynchronous loop under CUDA graphs only (its step's time budget: it is
# there to compare kernels with bench-4b, not modes). PROMPT and GEN (default
# 512 and 1,32: the figures results.json reads) are for the simulated GPU's
# reduced rehearsal.
s_bench() {
  local m=$1 reps=${2:-20} pp=${3:-512} ng=${4:-1,32} mode modes=(graph eager) flag decode=(--decode both) rc=0 line=""
  plan "$m" || return 1
  [ "$m" = qwen3-4b-unfused ] && decode=() && modes=(graph)
  for mode in "${modes[@]}"; do
    flag=()
    [ $mode = eager ] && flag=(--eager)
    "$BIN/kern-run" bench "$WORK/$m.kplan" --random-weights 1 --device cuda --kernels "$KERNELS" \
      -p "$pp" -n "$ng" -r "$reps" --warmup 2 "${decode[@]}" -o json "${flag[@]}" > "$RES/bench_${m}_$mode.json" \
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
# equal); then the DSpark manifest MODEL (default qwen3-4b-dspark, the
# Qwen3-4B geometry; the simulated GPU's rehearsal passes the tiny one) with
# random weights on cuda for STEPS ids (default 64): ms per round by phase (draft, verify, precompute)
# and the tok/s it projects at the reference system's 3.44 tokens per round
# (random weights accept almost nothing, so the measured tokens/round is
# about 1).
s_spec() {
  local big=${1:-qwen3-4b-dspark} steps=${2:-64}
  plan tiny-qwen3-dspark || return 1
  plan "$big" || return 1
  local ids=1,17,42,99,3,250,7
  "$BIN/kern-run" "$WORK/tiny-qwen3-dspark.kplan" --random-weights 3 --device cpu --prompt-ids $ids --steps 40 \
    --json > "$RES/spec_tiny_cpu.json" 2> "$WORK/spec.err" &&
  "$BIN/kern-run" "$WORK/tiny-qwen3-dspark.kplan" --random-weights 3 --device cuda --kernels "$KERNELS" \
    --prompt-ids $ids --steps 40 --spec --json > "$RES/spec_tiny_cuda.json" 2>> "$WORK/spec.err" &&
  "$BIN/kern-run" "$WORK/$big.kplan" --random-weights 1 --device cuda --kernels "$KERNELS" \
    --prompt-ids $ids --steps "$steps" --spec --json > "$RES/spec_4b_cuda.json" 2>> "$WORK/spec.err"
  local rc=$?
  cat "$WORK/spec.err"
  [ $rc = 0 ] || { detail "exit $rc: $(grep -m1 -i error "$WORK/spec.err" | cut -c1-200)"; return 1; }
  python3 - "$RES" "$big" > "$WORK/spec_verdict.txt" <<'EOF2'
import json, os, sys
load = lambda n: json.load(open(os.path.join(sys.argv[1], n)))
label = "4b" if sys.argv[2] == "qwen3-4b-dspark" else sys.argv[2]
cpu, cuda, big = load("spec_tiny_cpu.json"), load("spec_tiny_cuda.json"), load("spec_4b_cuda.json")
same = cpu["generated_ids"] == cuda["generated_ids"]
s = big["spec"]
m = s["ms_per_round"]
print(f"tiny --spec cuda vs plain cpu: {'equal' if same else 'DIFFERS'} ({len(cuda['generated_ids'])} ids); "
      f"{label}: {s['rounds']} rounds, {s['tokens_per_round']:.2f} tokens/round, ms/round draft {m['draft']:.3f} "
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
    --kernels "$KERNELS" --work "$scratch/hf_$m" --json "$RES/hf_$m.json" --decode-steps 64 \
    --deadline-s $((STEP_TIMEOUT - 8))
  local rc=$?
  rm -rf "$scratch/hf_$m"
  [ "$scratch" != "$WORK" ] && rm -rf "$scratch"
  detail "$(tail -1 "$WORK/logs/$LOGNAME_")"
  return $rc
}

# Kernel mining (docs/mining.md "On a GPU machine"): kern-capture runs a
# program, kern-mine analyses the capture, kern-lift writes it as a manifest
# and mine_summary.py prints kernels, flat vs struct ABIs, fitted vs
# underdetermined sites and the liftable share. SOURCE torch: HF
# transformers' Qwen3 (2 layers of examples/qwen3-0.6b.config.json: one
# prefill and 3 decode steps, two requests), eager then torch.compile (a
# variant that would not fit the step's time left is skipped and said so,
# and a compile cut short by it is reported, not failed; no torch: a skip); SOURCE kern-run: kern-run on the tiny model, eager,
# captured with --snapshot-weights, whose lifted manifest must also verify
# and give the captured ids on the cpu device (the round trip; the simulated
# GPU's rehearsal runs this one).
s_mine() {
  local source=$1 tools=$BUNDLE/mining v variants line="" bad=0 ran=0 start=$SECONDS
  [ -x "$tools/kern-capture" ] && [ -f "$tools/libkern-capture.so" ] ||
    { detail "no mining tools in the bundle (bundle.sh copies build/mining when the capture library is built)"; return 1; }
  if [ "$source" = torch ]; then variants="eager compile"; else variants="kern-run"; fi
  for v in $variants; do
    local dir=$WORK/mine_$v cmd=() snap=() left=$((STEP_TIMEOUT - (SECONDS - start) - 3))
    if [ $left -lt 5 ]; then line="$line $v: skipped (no time left in the step);"; continue; fi
    case $v in
      kern-run)
        plan tiny-qwen3 || return 1
        printf '%s\n' '{"prompt_ids": [1,17,42,99], "max_tokens": 3}' \
          '{"prompt_ids": [1,17,42,99,3,250,7,8,9,10], "max_tokens": 3}' > "$WORK/mine_requests.jsonl"
        snap=(--snapshot-weights)
        cmd=("$BIN/kern-run" "$WORK/tiny-qwen3.kplan" --weights examples/tiny-qwen3.safetensors --device cuda
             --kernels "$KERNELS" --eager --requests "$WORK/mine_requests.jsonl" --max-batch 1 --no-prefix-cache
             --chunk 6) ;;
      *) cmd=(python3 test/gpu/mine_torch.py examples/qwen3-0.6b.config.json "$v") ;;
    esac
    timeout "$left" "$tools/kern-capture" "${snap[@]}" -o "$dir" -- "${cmd[@]}" > "$WORK/mine_$v.out" 2>&1
    local rc=$?
    cat "$WORK/mine_$v.out"
    if [ $rc = 77 ]; then line="$line $v: skipped ($(grep -m1 '^SKIP' "$WORK/mine_$v.out"));"; continue; fi
    if [ $rc = 124 ] && [ "$v" = compile ]; then  # Inductor's build is the slow part: best effort in the time left
      line="$line $v: did not finish in the ${left} s left;"; continue
    fi
    if [ $rc != 0 ]; then line="$line $v: capture failed (exit $rc);"; bad=1; continue; fi
    ran=1
    if ! "$tools/kern-mine" "$dir" --json > "$RES/mine_$v.json" 2> "$WORK/mine_$v.err" ||
       ! "$tools/kern-lift" "$dir" -o "$dir/lifted.json" > "$WORK/mine_${v}_lift.txt" 2>> "$WORK/mine_$v.err"; then
      cat "$WORK/mine_$v.err"; line="$line $v: $(tail -1 "$WORK/mine_$v.err");"; bad=1; continue
    fi
    cat "$WORK/mine_${v}_lift.txt"
    local sum; sum=$(python3 test/gpu/mine_summary.py "$RES/mine_$v.json" "$dir/lifted.json" "$v") || bad=1
    echo "$sum"
    line="$line $sum;"
    if [ "$v" = kern-run ]; then  # the round trip: verify, run on cpu, the captured ids
      local got want
      want=$(grep -o '"ids":\[[0-9,]*\]' "$WORK/mine_$v.out" | tr '\n' ' ')
      got=$("$BIN/kern-verify" "$dir/lifted.json" -o "$dir/lifted.kplan" 2>&1 > /dev/null &&
            "$BIN/kern-run" "$dir/lifted.kplan" --weights "$dir/lifted.safetensors" --device cpu \
              --requests "$WORK/mine_requests.jsonl" --max-batch 1 --no-prefix-cache --chunk 6 2>&1 |
            grep -o '"ids":\[[0-9,]*\]' | tr '\n' ' ')
      if [ -n "$want" ] && [ "$got" = "$want" ]; then line="$line round trip on cpu: the captured ids;"
      else line="$line round trip FAILED (captured $want, lifted on cpu $got);"; bad=1; fi
    fi
  done
  detail "${line# }"
  [ $bad = 0 ] || return 1
  [ $ran = 1 ] || return 77
  return 0
}

# compute-sanitizer memcheck over 2 eager tiny-model steps, last (slow).
# Only kern's kernels are instrumented (--kernel-name kns=kern_: cublasLt's
# run unchecked, at full speed). A sanitizer that refuses the machine (under
# gVisor it answers "Device not supported") is a skip with its words.
s_memcheck() {
  command -v compute-sanitizer >/dev/null || { detail "skipped: no compute-sanitizer on PATH"; return 77; }
  plan tiny-qwen3 || return 1
  local run=("$BIN/kern-run" "$WORK/tiny-qwen3.kplan" --weights examples/tiny-qwen3.safetensors
             --prompt-ids 1,17,42,99,3,250,7 --steps 2 --eager --device cuda --kernels "$KERNELS")
  compute-sanitizer --tool memcheck --error-exitcode 9 --kernel-name kns=kern_ "${run[@]}" > "$WORK/memcheck.txt" 2>&1
  local rc=$?
  if [ $rc != 0 ] && grep -qiE "(unrecognized|unknown|invalid) (option|argument)|kernel-name" "$WORK/memcheck.txt" &&
     ! grep -q "ERROR SUMMARY" "$WORK/memcheck.txt"; then
    echo "== this compute-sanitizer has no --kernel-name filter: every kernel instrumented"
    compute-sanitizer --tool memcheck --error-exitcode 9 "${run[@]}" > "$WORK/memcheck.txt" 2>&1
    rc=$?
  fi
  cat "$WORK/memcheck.txt"
  local refused
  refused=$(grep -m1 -iE "device not supported|not supported on this (platform|device)|unsupported (device|platform)" \
    "$WORK/memcheck.txt")
  if [ -n "$refused" ]; then detail "skipped: compute-sanitizer refuses this machine: $refused"; return 77; fi
  detail "$(grep -m1 -E 'ERROR SUMMARY' "$WORK/memcheck.txt" || echo "exit $rc: $(grep -v '^\s*$' "$WORK/memcheck.txt" | tail -1)")"
  return $rc
}

export -f detail bins_start s_gpu s_bundle s_abi s_kernels plan s_tiny s_tp s_compare s_pdl s_bench s_spec s_hf s_mine s_memcheck

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
  # Kept for KERN_GPU_STEPS=failed (a missing or read-only state dir only loses that).
  mkdir -p "$state" 2>/dev/null && cp -f "$out/summary.txt" "$state/summary.txt" 2>/dev/null
  echo
  echo "== summary ($out: summary.txt, results.json, logs.tar.gz)"
  cat "$out/summary.txt"
  echo
  cat "$WORK/table.txt" 2>/dev/null
  rm -rf "$WORK" "/dev/shm/$(basename "$WORK")-hf"
  exit $failed
}
trap 'failed=1; finish "interrupted after $((SECONDS - t0))s"' INT TERM

# --- the table ---------------------------------------------------------------

# Reads $table into rows "NAME CAP FUNCTION ARGS..."; a malformed line, an
# unknown function or a step listed twice is an error naming the line
# (exit 2, before any step runs), as is a rerun naming no such step.
bad_table() { echo "run.sh: $*" >&2; rm -rf "$work"; exit 2; }
rows=()
names=" "
lineno=0
[ -f "$table" ] || bad_table "no step table at $table"
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  line=${line%%#*}
  read -r -a f <<< "$line"
  [ ${#f[@]} = 0 ] && continue
  if [ ${#f[@]} -lt 3 ] || ! [[ "${f[1]}" =~ ^[0-9]+$ ]]; then
    bad_table "$table:$lineno: expected NAME CAP_S FUNCTION [ARGS...], got: $line"
  fi
  if ! declare -F "${f[2]}" >/dev/null && ! command -v "${f[2]}" >/dev/null; then
    bad_table "$table:$lineno: step ${f[0]}: no function or program ${f[2]}"
  fi
  [[ "$names" == *" ${f[0]} "* ]] && bad_table "$table:$lineno: step ${f[0]} listed twice"
  names="$names${f[0]} "
  rows+=("${f[*]}")
done < "$table"
if [ -n "$only" ] && [ "$only" != "-" ]; then
  for want in $only; do
    [[ "$names" == *" $want "* ]] || bad_table "KERN_GPU_STEPS: no step $want in $table (steps:$names)"
  done
fi

{
  echo "kern GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ), bundle $bundle ($(head -1 "$bundle/VERSION" 2>/dev/null || echo 'no VERSION'))"
  echo "budget ${budget}s; steps: name status seconds detail${only:+; only: $only}"
} > "$out/summary.txt"

for row in "${rows[@]}"; do
  read -r -a f <<< "$row"
  step "${f[@]}"
  [ -n "$stopped" ] && finish
done
finish
