#!/usr/bin/env bash
# test/gpu/bundle.sh BUILD_DIR DEST — gathers what test/gpu/run.sh needs on a
# GPU machine that has no Debian -dev packages (docs/gpu.md "Running the GPU
# checks"), into DEST (git-ignored, then carried):
#   kernels/  the fatbins, refused unless their sha256 equal the pins of the
#             checked-in manifests (examples/*.json): the GPU machine's nvcc
#             could produce other bytes, and every pinned run would then fail;
#   bin/      kern-gpu-compare, kern-verify, kern-run (debug info stripped),
#             each with an $ORIGIN/../lib rpath (DT_RPATH, set with patchelf):
#             only these binaries see lib/, never python3, nvcc or nvidia-smi;
#   lib/      every shared library they load except glibc's own, each with an
#             $ORIGIN rpath; ICU's 31 MB data library is replaced by an empty
#             one (icu_stub_data.c; kern's NFC data is inside libicuuc);
#   VERSION   the commit (and whether the tree was dirty) and the nvcc that
#             built the fatbins.
# Prints the total size and refuses (exit 1, DEST removed) above
# KERN_BUNDLE_LIMIT_MB (default 32 MB = 32,000,000 bytes; 20 MB until serve, compare and batched decode grew kern-run): the
# checkout plus what is carried must stay under 64 MiB. Exit 2 on bad usage.
set -euo pipefail
usage() { echo "usage: test/gpu/bundle.sh BUILD_DIR DEST" >&2; exit 2; }
[ $# -eq 2 ] || usage
build=$1
dest=$2
limit_mb=${KERN_BUNDLE_LIMIT_MB:-32}
here=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "bundle.sh: $*" >&2; rm -rf "$dest"; exit 1; }
command -v patchelf >/dev/null || die "patchelf is needed (Debian package patchelf; scripts/setup.sh installs it)"
[ -d "$build" ] || die "$build: no such build directory"

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/kernels"

# Kernels: all of them, and exactly the pinned bytes.
n_src=$(ls "$here"/kernels-src/cuda/*.cu | wc -l)
n_bin=$(ls "$build"/kernels/*.fatbin 2>/dev/null | wc -l)
[ "$n_bin" -eq "$n_src" ] || die "$build/kernels has $n_bin fatbins for $n_src kernels-src/cuda/*.cu (build with nvcc: ninja -C $build)"
cp "$build"/kernels/*.fatbin "$dest/kernels/"
python3 "$here/test/gpu/fatbin_pins.py" "$dest/kernels" "$here"/examples/tiny-qwen3.json "$here"/examples/qwen3-0.6b.json \
  "$here"/examples/qwen3-4b.json "$here"/examples/tiny-qwen3-dspark.json "$here"/examples/qwen3-4b-dspark.json >&2 ||
  die "the fatbins in $build/kernels are not the ones the manifests pin (rebuild, or regenerate the manifests: docs/gpu.md 'Pinned manifests')"

# Binaries, then the non-glibc libraries they need.
for exe in test/gpu/kern-gpu-compare kern-verify/kern-verify kern-run/kern-run; do
  [ -x "$build/$exe" ] || die "$build/$exe is not built (the bundle needs the CUDA build: ninja -C $build)"
  cp "$build/$exe" "$dest/bin/"
  strip --strip-debug "$dest/bin/$(basename "$exe")"
done
# The Gloo plugin (docs/parallel.md): the ranks of --tp N meet through it
# (on the cuda device it carries rank 0's NCCL unique id), found beside
# kern-run; its libraries (libgloo and what it needs) follow like the
# binaries'. NCCL itself is the GPU machine's (dlopened, never bundled).
if [ -f "$build/kern-load/kern-gloo.so" ]; then
  cp "$build/kern-load/kern-gloo.so" "$dest/bin/"
  strip --strip-debug "$dest/bin/kern-gloo.so"
fi
for exe in "$dest"/bin/*; do
  ldd "$exe" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  case "$name" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) ;;  # glibc: the machine's own
    libicudata.so.*)
      major=${name#libicudata.so.}
      major=${major%%.*}
      gcc -shared -fPIC -O2 -Wall -Wextra -Werror -DKERN_ICU_ENTRY="icudt${major}_dat" \
        -Wl,-soname,"libicudata.so.$major" -o "$dest/lib/$name" "$here/test/gpu/icu_stub_data.c" ;;
    *) cp -L "$lib" "$dest/lib/$name" ;;
  esac
done
ldd "$dest"/bin/* | grep -q "not found" && die "unresolved libraries: $(ldd "$dest"/bin/* | grep 'not found' | sort -u | tr -s ' \t\n' ' ')"
for f in "$dest"/bin/*; do patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$dest"/lib/*; do patchelf --force-rpath --set-rpath '$ORIGIN' "$f"; done

# The mining tools (docs/mining.md; run.sh's `mine` step): the three commands,
# their Python package and the capture library. The library is preloaded into
# the captured program (python3 and torch included), so it keeps the
# machine's own libstdc++ and libcrypto: no rpath into lib/.
if [ -f "$build/mining/libkern-capture.so" ]; then
  mkdir -p "$dest/mining/kern_mining"
  cp "$build"/mining/kern-capture "$build"/mining/kern-mine "$build"/mining/kern-lift "$dest/mining/"
  cp "$build"/mining/libkern-capture.so "$dest/mining/"
  strip --strip-debug "$dest/mining/libkern-capture.so"
  cp "$build"/mining/kern_mining/*.py "$dest/mining/kern_mining/"
fi
{
  echo "commit $(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
  echo "nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo unknown)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
} > "$dest/VERSION"

bytes=$(du -sb "$dest" | cut -f1)
limit=$((limit_mb * 1000000))
printf 'bundle.sh: %s: %d bytes (%.1f MB; limit %d MB): %s fatbins, %s binaries, %s libraries\n' "$dest" "$bytes" \
  "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')" "$limit_mb" "$n_bin" "$(ls "$dest/bin" | wc -l)" "$(ls "$dest/lib" | wc -l)"
[ "$bytes" -le "$limit" ] || die "$dest is $bytes bytes, over the $limit_mb MB limit (KERN_BUNDLE_LIMIT_MB)"
