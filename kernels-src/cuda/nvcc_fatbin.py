#!/usr/bin/python3
"""nvcc_fatbin.py [--ptx ARCH=OUT]... -- NVCC ARGS...

Runs NVCC ARGS (the -fatbin compile of one .cu, kernels-src/cuda/meson.build)
with `--keep` in a scratch directory and keeps the PTX that nvcc's front end
(cicc) wrote there for each virtual architecture ARCH (e.g. compute_90) as
OUT. The fatbin is byte for byte the one nvcc writes without --keep (checked
with nvcc 13.0 on every kernel: --keep only leaves the intermediate files).

Why: the PTX check (test/kernels/check_vector_loads.py --ptx) and the static
launch reports (bench/launch_report.py --ptx-dir, which then runs only
ptxas) read this PTX instead of running cicc on every .cu again: about 4 to
5 CPU-s per file and test on the 2-core dev VM (docs/test-suite.md).

nvcc names a kept file <stem>.ptx when the compile has one virtual
architecture and <stem>.<ARCH>.ptx when it has several. Exit status: nvcc's;
1 when an asked-for PTX was not written (ARCH not among the -gencode
options); 2 bad usage.
"""

import os
import shutil
import subprocess
import sys
import tempfile


def main(argv):
    wanted = []  # [(arch, out)]
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--ptx" and i + 1 < len(argv) and "=" in argv[i + 1]:
            wanted.append(tuple(argv[i + 1].split("=", 1)))
            i += 2
        else:
            print(__doc__, file=sys.stderr)
            return 2
    cmd = argv[i + 1:]
    sources = [a for a in cmd if a.endswith(".cu")]
    if i >= len(argv) or not cmd or len(sources) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    stem = os.path.basename(sources[0])[:-3]
    # The scratch directory sits beside the first output, so the PTX is
    # renamed into place (same filesystem) and a failed compile leaves none.
    scratch_parent = os.path.dirname(os.path.abspath(wanted[0][1])) if wanted else None
    with tempfile.TemporaryDirectory(prefix=stem + ".keep-", dir=scratch_parent) as keep:
        r = subprocess.run(cmd + ["--keep", "--keep-dir", keep])
        if r.returncode != 0:
            return r.returncode
        for arch, out in wanted:
            for name in (f"{stem}.{arch}.ptx", f"{stem}.ptx"):
                src = os.path.join(keep, name)
                if os.path.isfile(src):
                    break
            else:
                print(f"nvcc_fatbin.py: nvcc kept no PTX for {arch} of {sources[0]} (is it in the -gencode options?)",
                      file=sys.stderr)
                return 1
            # <stem>.ptx is only the single architecture's file: with
            # several, each has its architecture in its name.
            if name == f"{stem}.ptx" and len(wanted) > 1:
                print(f"nvcc_fatbin.py: nvcc kept one PTX for {sources[0]}, {len(wanted)} architectures asked for",
                      file=sys.stderr)
                return 1
            shutil.move(src, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
