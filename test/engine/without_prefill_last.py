#!/usr/bin/python3
"""without_prefill_last.py IN.json OUT.json

Writes manifest IN without its `prefill_last` program and the kernels only
that program used: the manifest an older generator wrote (before
docs/causal-lm-manifest.md "prefill_last"), whose first id comes from a
decode step of the last prompt token. For the engine's tests of that path.
"""
import json
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        doc = json.load(f)
    del doc["programs"]["prefill_last"]
    used = {d["kernel"] for p in doc["programs"].values() for d in p["dispatches"]}
    doc["kernels"] = {name: k for name, k in doc["kernels"].items() if name in used}
    with open(argv[1], "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
