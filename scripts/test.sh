#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs every test,
# and prints one summary line "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
[ -f build/build.ninja ] || meson setup build || meson setup --wipe build || exit 1
ninja -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 --timeout-multiplier 3 2>&1 | tee build/test-output.txt
rc=${PIPESTATUS[0]}
ok=$(grep -E '^Ok:' build/test-output.txt | awk '{print $2}')
fail=$(grep -E '^Fail:' build/test-output.txt | awk '{print $2}')
skip=$(grep -E '^Skipped:' build/test-output.txt | awk '{print $2}')
timeout=$(grep -E '^Timeout:' build/test-output.txt | awk '{print $2}')
# Why each skipped test was skipped: the first line it printed (every test
# that can exit 77 prints its reason, e.g. the upstream schema test without
# ../shared/ beside the checkout).
/usr/bin/python3 - build/meson-logs/testlog.json <<'EOF'
import json, sys
try:
    lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
except OSError:
    lines = []
for line in lines:
    try:
        t = json.loads(line)
    except ValueError:
        continue
    if t.get("result") == "SKIP":
        why = next((l.strip() for l in (t.get("stdout") or "").splitlines() if l.strip()), "(it printed no reason)")
        print(f"skipped: {t.get('name')}: {why[:300]}")
EOF
echo "${ok:-0} passed, $(( ${fail:-0} + ${timeout:-0} )) failed, ${skip:-0} skipped"
exit $rc
