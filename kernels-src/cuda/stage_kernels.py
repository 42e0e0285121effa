#!/usr/bin/python3
"""stage_kernels.py DEST_DIR STAMP FILE...

Copies each built kernel FILE into DEST_DIR (created if missing; a file is
rewritten only when its bytes changed, so its mtime stays stable) and writes
STAMP listing the staged names. Used by kernels-src/cuda/meson.build to give
kern-run a plain `build/kernels/` directory.
"""
import os
import shutil
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    dest, stamp, files = argv[0], argv[1], argv[2:]
    os.makedirs(dest, exist_ok=True)
    names = []
    for src in files:
        name = os.path.basename(src)
        dst = os.path.join(dest, name)
        with open(src, "rb") as f:
            data = f.read()
        old = None
        if os.path.exists(dst):
            with open(dst, "rb") as f:
                old = f.read()
        if old != data:
            tmp = dst + ".tmp"
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
        names.append(name)
    with open(stamp, "w") as f:
        f.write("\n".join(names) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
