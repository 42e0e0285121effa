#!/usr/bin/python3
"""tp_side_by_side.py KERN_RUN DIR_TP1 DIR_TPN [--tp N] [kern-run bench options...]

Runs `kern-run bench` on a --tp 1 model folder and on the same model's
--tp N folder (docs/parallel.md) on the cpu device, one after the other on
this machine, and prints their results side by side: per test the median
t/s of each, the ratio TP=N / TP=1, and at TP=N the median ms per repetition
rank 0 spent in the collectives and its share of the repetition. Extra
arguments go to both benches (e.g. -p 64 -n 32 -r 5).

Exit status: kern-run bench's when it fails, else 0.
"""

import json
import subprocess
import sys


def bench(kern_run, folder, tp, extra):
    proc = subprocess.run([kern_run, "bench", folder, "--tp", str(tp), "--device", "cpu", "-o", "json", *extra],
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(proc.returncode)
    return {t["test"]: t for t in json.loads(proc.stdout)}


def median(values):
    v = sorted(values)
    n = len(v)
    return 0.0 if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    kern_run, one, many, rest = argv[0], argv[1], argv[2], argv[3:]
    tp = 2
    if rest[:1] == ["--tp"]:
        tp, rest = int(rest[1]), rest[2:]
    a, b = bench(kern_run, one, 1, rest), bench(kern_run, many, tp, rest)
    print(f"| test | TP=1 t/s | TP={tp} t/s | TP={tp} / TP=1 | TP={tp} collectives ms/rep | share |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, t1 in a.items():
        tn = b.get(name)
        if tn is None:
            continue
        coll = median(tn.get("samples_collective_ms", []))
        rep = median(tn["samples_ms"])
        print(f"| {name} | {t1['median_ts']:.2f} | {tn['median_ts']:.2f} | {tn['median_ts'] / t1['median_ts']:.3f} | "
              f"{coll:.3f} | {100.0 * coll / rep if rep else 0.0:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
