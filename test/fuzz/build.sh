#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined)
# into OUT_DIR, separately from the gcc build (meson stays untouched):
#   manifest_fuzz  reader + verifier + renderers + lowering (+ plan round trip)
#   plan_fuzz      the .kplan reader (kern-load PlanFile) and --dump
#   safetensors_fuzz  the safetensors header reader (kern-load Safetensors)
#   tokenizer_fuzz the tokenizer.json reader, then encode/decode
# Incremental: objects are rebuilt only when a source or header is newer.
#
#   test/fuzz/build.sh OUT_DIR
# Exit 77 (skipped) when clang++ or its libFuzzer runtime is missing.
set -euo pipefail
out=${1:?usage: build.sh OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
CXX=${KERN_FUZZ_CXX:-clang++}
command -v "$CXX" >/dev/null || { echo "build.sh: $CXX not found (skipped)"; exit 77; }
command -v flatc >/dev/null || { echo "build.sh: flatc not found (skipped)"; exit 77; }
mkdir -p "$out/obj" "$out/schemas"
probe="$out/probe.cpp"
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe"
if ! "$CXX" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" 2>"$out/probe.log"; then
  echo "build.sh: $CXX cannot link libFuzzer + ASan + UBSan (Debian: libclang-rt-14-dev) (skipped)"
  cat "$out/probe.log"
  exit 77
fi

[ "$out/schemas/plan_generated.h" -nt "$root/schemas/plan.fbs" ] ||
  flatc --cpp --scoped-enums -o "$out/schemas" "$root/schemas/plan.fbs"

flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -fsanitize-ignorelist="$root/test/fuzz/ubsan_ignorelist.txt"
       -I"$root" -I"$out" -DKERN_FUZZ=1)
lib_sources=("$root"/common/*.cpp)
for f in "$root"/kern-verify/*.cpp; do [ "$(basename "$f")" = main.cpp ] || lib_sources+=("$f"); done
lib_sources+=("$root"/kern-load/{mapped_file,mapping_guard,plan_expr,plan_validate,plan_file,safetensors}.cpp)
lib_sources+=("$root"/kern-run/tokenizer/*.cpp)
targets=(manifest_fuzz plan_fuzz safetensors_fuzz tokenizer_fuzz)

# Compile what is stale (a .d file lists each object's headers), two at a time.
compile() {
  local src=$1 obj=$2
  if [ -f "$obj" ] && [ -f "$obj.d" ]; then
    local stale=0 dep
    for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$obj.d"); do
      [ "$dep" -nt "$obj" ] && { stale=1; break; }
    done
    [ $stale = 0 ] && return 0
  fi
  "$CXX" "${flags[@]}" -MMD -MF "$obj.d" -c "$src" -o "$obj"
}
export -f compile
objs=()
jobs=()
for src in "${lib_sources[@]}" "${targets[@]/#/$root/test/fuzz/}"; do
  src=${src%.cpp}.cpp
  rel=${src#"$root"/}
  obj="$out/obj/${rel//\//_}.o"
  objs+=("$obj")
  compile "$src" "$obj" &
  jobs+=($!)
  if [ ${#jobs[@]} -ge "${KERN_FUZZ_JOBS:-2}" ]; then wait "${jobs[0]}"; jobs=("${jobs[@]:1}"); fi
done
for j in "${jobs[@]}"; do wait "$j"; done

lib_objs=()
for o in "${objs[@]}"; do
  case "$o" in *test_fuzz_*) ;; *) lib_objs+=("$o") ;; esac
done
link=(-fsanitize=fuzzer,address,undefined $(pkg-config --libs libcrypto icu-uc libpcre2-8))
for t in "${targets[@]}"; do
  "$CXX" "${lib_objs[@]}" "$out/obj/test_fuzz_$t.cpp.o" "${link[@]}" -o "$out/$t"
done
echo "built ${targets[*]/#/$out/}"
