#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs every test,
# and prints one summary line "N passed, N failed, N skipped" (the last line).
# Before it: the wall time of each phase (setup, configure, build, tests) and,
# from meson's testlog.json, each test suite's span and summed test time and
# the longest tests, so the next slowdown shows where it is.
set -uo pipefail
cd "$(dirname "$0")/.."
phases=()
# phase NAME START: records NAME's wall time from START (bash's $SECONDS) to now.
phase() { phases+=("$(printf '%-10s %5d s' "$1" $((SECONDS - $2)))"); }

t=$SECONDS
scripts/setup.sh || exit 1
phase setup $t
t=$SECONDS
# A build directory this script sets up has no debug info (-O2, assertions
# on): -g costs about 30 % of the library files' compile time and no test
# reads it; and it is a unity build (every library and executable compiled
# as one unit: the headers parsed and their inline code generated once per
# target, not per file), except the cpu kernels, which opt out
# (docs/test-suite.md, sessions 5-7). An existing build directory is kept as
# it is.
opts="-Ddebug=false -Dunity=on -Dunity_size=100"
[ -f build/build.ninja ] || meson setup $opts build || meson setup --wipe $opts build || exit 1
phase configure $t
t=$SECONDS
ninja -C build || exit 1
phase build $t
t=$SECONDS
# Three tests at a time on the 2-core machine: the longest tests mostly
# wait (the serve tests, the GPU rehearsal: 20-40 % of their wall time on
# the CPU), and a third slot runs a test in their waits instead of leaving
# a core idle (docs/test-suite.md, session 5). KERN_TEST_PROCESSES=N
# overrides it (2 = one per core, as before).
meson test -C build --print-errorlogs --num-processes "${KERN_TEST_PROCESSES:-3}" --timeout-multiplier 3 2>&1 | tee build/test-output.txt
rc=${PIPESTATUS[0]}
phase tests $t
ok=$(grep -E '^Ok:' build/test-output.txt | awk '{print $2}')
fail=$(grep -E '^Fail:' build/test-output.txt | awk '{print $2}')
skip=$(grep -E '^Skipped:' build/test-output.txt | awk '{print $2}')
timeout=$(grep -E '^Timeout:' build/test-output.txt | awk '{print $2}')
echo
echo "== wall time by phase"
printf '%s\n' "${phases[@]}"
# Per suite (the part of a test's name before " / "): tests, the wall span
# from its first start to its last end (suites overlap: two tests run at a
# time), and the tests' summed durations; then the longest tests. Why each
# skipped test was skipped: the first line it printed (every test that can
# exit 77 prints its reason, e.g. the upstream schema test without
# ../shared/ beside the checkout).
/usr/bin/python3 - build/meson-logs/testlog.json <<'EOF'
import json, sys
try:
    lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
except OSError:
    lines = []
tests = []
for line in lines:
    try:
        tests.append(json.loads(line))
    except ValueError:
        continue
suites = {}
for t in tests:
    name = t.get("name", "")
    prefix = name.split(" / ", 1)[0] if " / " in name else ""
    suite = prefix.split(":", 1)[1] if ":" in prefix else "(none)"  # "kern:verify+corpus": two suites
    start, took = float(t.get("starttime") or 0), float(t.get("duration") or 0)
    s = suites.setdefault(suite, [0, start, start + took, 0.0])
    s[0] += 1
    s[1], s[2], s[3] = min(s[1], start), max(s[2], start + took), s[3] + took
if suites:
    first = min(s[1] for s in suites.values())
    print(f"== test suites (span: from its first test's start to its last test's end, m:ss after the first test)")
    print(f"{'suite':<14} {'tests':>5} {'span':>11} {'wall':>7} {'test time':>9}")
    for suite, (n, lo, hi, total) in sorted(suites.items(), key=lambda kv: -kv[1][3]):
        a, b = int(lo - first), int(hi - first)
        span = f"{a // 60}:{a % 60:02d}-{b // 60}:{b % 60:02d}"
        print(f"{suite:<14} {n:>5} {span:>11} {int(hi - lo):>5} s {int(total):>7} s")
    print("== longest tests")
    for t in sorted(tests, key=lambda t: -float(t.get("duration") or 0))[:8]:
        print(f"{float(t.get('duration') or 0):6.0f} s  {t.get('result')}  {t.get('name', '')[:110]}")
for t in tests:
    if t.get("result") == "SKIP":
        why = next((l.strip() for l in (t.get("stdout") or "").splitlines() if l.strip()), "(it printed no reason)")
        print(f"skipped: {t.get('name')}: {why[:300]}")
EOF
echo "${ok:-0} passed, $(( ${fail:-0} + ${timeout:-0} )) failed, ${skip:-0} skipped"
exit $rc
