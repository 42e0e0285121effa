#!/usr/bin/env bash
# Builds (build.sh) and runs the libFuzzer targets for SECONDS each, seeded
# with the diagnostics corpus (test/corpus), plans kern-verify writes from
# the good manifests, real safetensors headers (the example weights and the
# test files) and real tokenizer.json files (test/tokenizer/fixtures), plus
# every past finding in test/fuzz/regressions/. KERN_FUZZ_TARGETS (a
# space-separated list) runs only some targets. libFuzzer's -max_total_time
# is wall time, which on a shared machine says little about the work done:
# KERN_FUZZ_CPU_SECONDS=N stops each target (SIGINT) once it has used N
# seconds of CPU, SECONDS then being only the wall cap. Every target's CPU
# time (user + sys, sampled every 5 s from /proc) is printed. Exit 0
# when neither target found anything; 1 with the crashing input's path
# otherwise (turn it into a regression and a corpus case: test/fuzz/README.md);
# 77 (skipped) without clang/libFuzzer.
#
# SECONDS per target: KERN_FUZZ_SECONDS if set, else the SECONDS argument,
# else ci_seconds below, the suite's budget (meson test passes none).
#
#   test/fuzz/run.sh BUILD_DIR KERN_VERIFY [SECONDS [extra libFuzzer flags...]]
set -uo pipefail
# The suite's fuzz budget per target (test/fuzz/README.md "Running"): each
# target first replays every seed and regression input, whatever the
# budget, then mutates for this long.
ci_seconds=5
build=${1:?usage: run.sh BUILD_DIR KERN_VERIFY [SECONDS [libFuzzer flags...]]}
kern_verify=${2:?}
seconds=${KERN_FUZZ_SECONDS:-${3:-$ci_seconds}}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$build/fuzz"

"$here/build.sh" "$out"
rc=$?
[ $rc -eq 0 ] || exit $rc

work=$(mktemp -d "${TMPDIR:-/tmp}/kern-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{manifest,plan,safetensors,tokenizer,serve_request}-{seeds,new} "$out/findings"
cp "$root"/test/corpus/bad/*.json "$work/manifest-seeds/"
for m in "$root"/test/corpus/good/*.json; do
  name=$(basename "$m" .json)
  # Large example manifests slow every execution; the small ones carry the same constructs.
  [ "$(stat -L -c %s "$m")" -le 65536 ] && cp -L "$m" "$work/manifest-seeds/"
  "$kern_verify" "$m" -o "$work/plan-seeds/$name.kplan" >/dev/null 2>&1 || true
done

# Safetensors seeds: the header JSON of each real file (the target frames it).
for f in "$root"/examples/*.safetensors "$root"/test/oracle/*.safetensors; do
  [ -f "$f" ] || continue
  python3 - "$f" "$work/safetensors-seeds/$(basename "$f" .safetensors).json" <<'PY'
import struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = f.read(n)
with open(sys.argv[2], "wb") as f:
    f.write(header)
PY
done
printf '%s' '{"__metadata__":{"format":"pt"},"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}}' \
  > "$work/safetensors-seeds/small.json"
cp "$root"/test/tokenizer/fixtures/*.json "$work/tokenizer-seeds/"
# kern-run serve's requests: valid ones and the hostile shapes of
# test/serve/hostile_test.mjs (deep nesting, chunked bodies, odd codings).
s=$work/serve_request-seeds
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 58\r\n\r\n{"messages":[{"role":"user","content":"hi"}],"stop":["a"]}' > "$s/chat"
printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\n{"prompt":[1,2],"stream":1}\r\n0\r\n\r\n' > "$s/chunked"
printf 'POST /tokenize HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00' > "$s/gzip"
printf '{"prompt":"x","max_tokens":3,"temperature":0.5,"logprobs":null,"\u001b[2J":1}' > "$s/body"
head -c 300 /dev/zero | tr '\0' '[' > "$s/deep"
printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\n\r\n' > "$s/pipelined"

targets=${KERN_FUZZ_TARGETS:-manifest_fuzz plan_fuzz safetensors_fuzz tokenizer_fuzz serve_request_fuzz}
status=0
cpu_budget=${KERN_FUZZ_CPU_SECONDS:-}
tck=$(getconf CLK_TCK)
# Sets `cpu` to the CPU seconds (user + sys) process $1 has used so far, or
# to "" once it is gone. Builtins only: the watcher below calls it every few
# seconds for the whole run, and a fork per call would cost CPU of its own.
read_cpu() {
  local stat
  cpu=""
  read -r stat < "/proc/$1/stat" 2>/dev/null || return 0
  stat=${stat##*) }  # the fields after "(comm)"; comm may hold spaces
  local f=($stat)
  cpu=$(( (f[11] + f[12]) / tck ))
}
run_target() {
  local target=$1 new=$2 seeds=$3 regressions=$4
  shift 4
  echo "== $target: ${seconds}s wall${cpu_budget:+, stopped at ${cpu_budget} CPU-s}"
  local dirs=("$new" "$seeds")
  [ -d "$regressions" ] && dirs+=("$regressions")
  local log="$work/$target.log" stopped="$work/$target.stopped" used="$work/$target.cpu"
  "$out/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/findings/$target-" "$@" "${dirs[@]}" >"$log" 2>&1 &
  local pid=$!
  # Sample the fuzzer's CPU time every 5 s; at the budget, interrupt it
  # (libFuzzer then prints its final stats and exits 72).
  ( while kill -0 "$pid" 2>/dev/null; do
      read_cpu "$pid"
      [ -n "$cpu" ] && echo "$cpu" > "$used"
      if [ -n "$cpu_budget" ] && [ -n "$cpu" ] && [ "$cpu" -ge "$cpu_budget" ] && [ ! -e "$stopped" ]; then
        : > "$stopped"; kill -INT "$pid"
      fi
      sleep 5
    done ) &
  local watcher=$!
  wait "$pid"
  local rc=$?
  wait "$watcher"
  grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written|.*runtime error)" "$log"
  # The last status line carries the coverage reached (also when interrupted, where there is no DONE line).
  echo "last status: $(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1)"
  echo "cpu: $(cat "$used" 2>/dev/null || echo '?') s (user + sys)"
  if [ "$rc" -eq 72 ] && [ -e "$stopped" ]; then
    echo "$target: CPU budget reached, stopped cleanly"
    rc=0
  fi
  # build.sh links every target into one binary that picks its target by
  # the name it runs as: this run must have been the target it was meant to be.
  if ! grep -qx "kern fuzz target: $target" "$log"; then
    echo "$target: the fuzz binary did not say it ran $target (no 'kern fuzz target: $target' in $log)"
    status=1
  fi
  if [ "$rc" -ne 0 ]; then
    echo "$target FOUND A PROBLEM (exit $rc); the input is under $out/findings/; log tail:"
    tail -40 "$log"
    status=1
  fi
}
for target in $targets; do
  name=${target%_fuzz}
  case $name in
    manifest) extra=(-max_len=65536 -dict="$here/manifest.dict") ;;
    plan) extra=(-max_len=262144) ;;
    safetensors) extra=(-max_len=65536) ;;
    tokenizer) extra=(-max_len=65536) ;;
    serve_request) extra=(-max_len=65536) ;;
    *) echo "run.sh: unknown target $target"; exit 2 ;;
  esac
  run_target "$target" "$work/$name-new" "$work/$name-seeds" "$here/regressions/$name" "${extra[@]}" "$@"
done
exit $status
