#!/usr/bin/env bash
# Builds (build.sh) and runs the libFuzzer targets for SECONDS each, seeded
# with the diagnostics corpus (test/corpus), plans kern-verify writes from
# the good manifests, real safetensors headers (the example weights and the
# test files) and real tokenizer.json files (test/tokenizer/fixtures), plus
# every past finding in test/fuzz/regressions/. KERN_FUZZ_TARGETS (a
# space-separated list) runs only some targets. Exit 0
# when neither target found anything; 1 with the crashing input's path
# otherwise (turn it into a regression and a corpus case: test/fuzz/README.md);
# 77 (skipped) without clang/libFuzzer.
#
#   test/fuzz/run.sh BUILD_DIR KERN_VERIFY SECONDS [extra libFuzzer flags...]
set -uo pipefail
build=${1:?usage: run.sh BUILD_DIR KERN_VERIFY SECONDS}
kern_verify=${2:?}
seconds=${KERN_FUZZ_SECONDS:-${3:?}}
shift 3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$build/fuzz"

"$here/build.sh" "$out"
rc=$?
[ $rc -eq 0 ] || exit $rc

work=$(mktemp -d "${TMPDIR:-/tmp}/kern-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{manifest,plan,safetensors,tokenizer}-{seeds,new} "$out/findings"
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

targets=${KERN_FUZZ_TARGETS:-manifest_fuzz plan_fuzz safetensors_fuzz tokenizer_fuzz}
status=0
run_target() {
  local target=$1 new=$2 seeds=$3 regressions=$4
  shift 4
  echo "== $target: ${seconds}s"
  local dirs=("$new" "$seeds")
  [ -d "$regressions" ] && dirs+=("$regressions")
  "$out/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/findings/$target-" "$@" "${dirs[@]}" 2>&1 | tee "$work/$target.log" |
    grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written|.*runtime error)" 
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "$target FOUND A PROBLEM (exit $rc); the input is under $out/findings/; log tail:"
    tail -40 "$work/$target.log"
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
    *) echo "run.sh: unknown target $target"; exit 2 ;;
  esac
  run_target "$target" "$work/$name-new" "$work/$name-seeds" "$here/regressions/$name" "${extra[@]}" "$@"
done
exit $status
