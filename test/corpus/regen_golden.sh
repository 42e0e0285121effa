#!/usr/bin/env bash
# Regenerates the golden human output (bad/NAME.stderr) of the cases listed
# below from a built kern-verify. Review the diff before committing: the
# corpus test compares these files byte for byte.
#
#   test/corpus/regen_golden.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: regen_golden.sh BUILD_DIR}
exe=$(cd "$build" && pwd)/kern-verify/kern-verify
cd "$(dirname "$0")"
golden=(
  E0001-trailing-comma
  E0004-duplicate-symbol
  E0105-unknown-symbol-in-shape
  E0142-dtype-mismatch
  E0147-offset-misaligned
  W0001-step-without-cubin
  multi-verifier-errors
)
for name in "${golden[@]}"; do
  "$exe" "bad/$name.json" --color=never 2> "bad/$name.stderr" >/dev/null || true
done
echo "wrote ${#golden[@]} golden files; review with: git diff -- test/corpus/bad/*.stderr"
