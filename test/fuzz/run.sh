#!/usr/bin/env bash
# Builds (build.sh) and runs both libFuzzer targets for SECONDS each, seeded
# with the diagnostics corpus (test/corpus) and plans kern-verify writes from
# the good manifests, plus every past finding in test/fuzz/regressions/. Exit 0
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
mkdir -p "$work/manifest-seeds" "$work/plan-seeds" "$work/manifest-new" "$work/plan-new" "$out/findings"
cp "$root"/test/corpus/bad/*.json "$work/manifest-seeds/"
for m in "$root"/test/corpus/good/*.json; do
  name=$(basename "$m" .json)
  # Large example manifests slow every execution; the small ones carry the same constructs.
  [ "$(stat -L -c %s "$m")" -le 65536 ] && cp -L "$m" "$work/manifest-seeds/"
  "$kern_verify" "$m" -o "$work/plan-seeds/$name.kplan" >/dev/null 2>&1 || true
done

status=0
run_target() {
  local target=$1 new=$2 seeds=$3 regressions=$4
  shift 4
  echo "== $target: ${seconds}s"
  local dirs=("$new" "$seeds")
  [ -d "$regressions" ] && dirs+=("$regressions")
  "$out/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/findings/$target-" "$@" "${dirs[@]}" 2>&1 | tee "$work/$target.log" |
    grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written|.*runtime error)" 
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "$target FOUND A PROBLEM (exit $rc); the input is under $out/findings/; log tail:"
    tail -40 "$work/$target.log"
    status=1
  fi
}
run_target manifest_fuzz "$work/manifest-new" "$work/manifest-seeds" "$here/regressions/manifest" \
  -max_len=65536 -dict="$here/manifest.dict" "$@"
run_target plan_fuzz "$work/plan-new" "$work/plan-seeds" "$here/regressions/plan" -max_len=262144 "$@"
exit $status
