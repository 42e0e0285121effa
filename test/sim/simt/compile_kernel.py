#!/usr/bin/python3
"""compile_kernel.py OBJCOPY OUT DEPFILE -- COMPILER ARGS...

Compiles one family's translation unit of the SIMT emulator (kernels/*.cpp,
the .cu included unchanged) with COMPILER ARGS (which carry the access
instrumentation) into OUT, then renames the object's memcpy, memset and
memmove calls to the emulator's checked versions (kern_sim_memcpy ...), so
that copies the compiler generates inside kernels are checked too.
"""

import os
import subprocess
import sys


def main(argv):
    if len(argv) < 6 or argv[4] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    objcopy, out, depfile, cmd = argv[1], argv[2], argv[3], argv[5:]
    tmp = out + ".tmp.o"
    r = subprocess.run(cmd + ["-MD", "-MF", depfile, "-o", tmp])
    if r.returncode != 0:
        return r.returncode
    rename = []
    for sym in ("memcpy", "memset", "memmove"):
        rename += ["--redefine-sym", f"{sym}=kern_sim_{sym}"]
    r = subprocess.run([objcopy] + rename + [tmp, out])
    os.unlink(tmp)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
