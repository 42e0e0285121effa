#!/usr/bin/env bash
# test/gpu/bundle.sh BUILD_DIR DEST — gathers what test/gpu/run.sh needs on a
# GPU machine that has no Debian -dev packages (gpu-notes.md): the kernel
# fatbins, kern-gpu-compare, kern-verify, kern-run and every shared library
# they load except glibc's own (libc, libm, libdl, libpthread, librt, the
# loader), so the binaries start there with LD_LIBRARY_PATH=DEST/lib.
# DEST must be git-ignored (e.g. listed in .git/info/exclude) and carried.
set -euo pipefail
build=${1:?usage: bundle.sh BUILD_DIR DEST}
dest=${2:?usage: bundle.sh BUILD_DIR DEST}
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/kernels"
cp "$build"/kernels/*.fatbin "$dest/kernels/"
for exe in test/gpu/kern-gpu-compare kern-verify/kern-verify kern-run/kern-run; do
  if [ -x "$build/$exe" ]; then
    cp "$build/$exe" "$dest/bin/"
    strip --strip-debug "$dest/bin/$(basename "$exe")"  # debug info would blow the 64 MiB carry limit
  else
    echo "bundle.sh: $build/$exe not built; run.sh will skip what needs it" >&2
  fi
done
for exe in "$dest"/bin/*; do
  ldd "$exe" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) ;;
      *) cp -L -n "$lib" "$dest/lib/" ;;
    esac
  done
done
du -sh "$dest"
