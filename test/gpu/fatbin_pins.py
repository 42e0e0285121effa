#!/usr/bin/env python3
"""fatbin_pins.py KERNELS_DIR MANIFEST... — checks that the fatbins in
KERNELS_DIR are the bytes the manifests pin (every object in a manifest
holding `cubin` and `sha256`, i.e. each kernel step: the file named by
`cubin` must exist there with that digest). Used by
test/gpu/bundle.sh (refuse a stale build) and test/gpu/run.sh (the bundle
arrived intact). Prints one line per mismatch and a summary line.
Exit 0 when every pin matches, 1 on a mismatch or missing file, 2 on bad
usage or an unreadable manifest. Standard library only.
"""

import hashlib
import json
import os
import sys


def pins(node, where):
    """(where, cubin, sha256) of every object under `node` holding both keys."""
    if isinstance(node, dict):
        if isinstance(node.get("cubin"), str) and isinstance(node.get("sha256"), str):
            yield where, node["cubin"], node["sha256"]
        for key, value in node.items():
            yield from pins(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from pins(value, f"{where}[{i}]")


def check(kernels_dir, manifests):
    """(number of distinct files checked, list of mismatch messages)."""
    digests, problems = {}, []
    for manifest in manifests:
        with open(manifest, "r", encoding="utf-8") as f:
            doc = json.load(f)
        for where, cubin, sha256 in pins(doc.get("kernels", {}), "kernels"):
            path = os.path.join(kernels_dir, cubin)
            if path not in digests:
                try:
                    with open(path, "rb") as f:
                        digests[path] = hashlib.sha256(f.read()).hexdigest()
                except OSError as e:
                    digests[path] = f"unreadable ({e.strerror})"
            if digests[path] != sha256:
                problems.append(f"{manifest}: {where}: {path}: sha256 {digests[path]}, pinned {sha256}")
    return len(digests), problems


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    try:
        files, problems = check(argv[1], argv[2:])
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"fatbin_pins.py: cannot read the manifests: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    print(f"{files} pinned fatbins, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
