#!/usr/bin/env python3
"""docs/diagnostics.md cannot drift from the code: it must equal what
`kern-verify --print-catalogue` prints (generated from the same tables that
`--explain` reads). Every code listed there has an `--explain` text with a
failing and a fixed example; an unknown code is a usage error (exit 2).

usage: docs_test.py KERN_VERIFY DOCS_DIAGNOSTICS_MD
"""
import re
import subprocess
import sys

EXE, DOC = sys.argv[1], sys.argv[2]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name)
    if not cond:
        failures.append(name)
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))


def run(*args):
    p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


rc, generated, err = run("--print-catalogue")
check("--print-catalogue exits 0", rc == 0, err)
with open(DOC, encoding="utf-8") as f:
    committed = f.read()
if generated != committed:
    import difflib
    diff = "".join(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True), "docs", "generated", n=1))
    check("docs/diagnostics.md equals `kern-verify --print-catalogue` "
          "(regenerate: kern-verify --print-catalogue > docs/diagnostics.md)", False, diff[:3000])
else:
    check("docs/diagnostics.md equals `kern-verify --print-catalogue`", True)

codes = re.findall(r"^### ([EW]\d{4})$", generated, re.M)
check("the catalogue documents at least 75 codes, each once", len(codes) >= 75 and len(set(codes)) == len(codes),
      len(codes))
for code in codes:
    rc, out, err = run("--explain", code)
    low = out.lower()
    check(code + ": --explain prints its title and a failing and a fixed example",
          rc == 0 and out.startswith(code + ": ") and "failing" in low and "fixed" in low, out[:200] + err)
    section = generated.split("### " + code + "\n", 1)[1].split("\n### ", 1)[0]
    title = out.split("\n", 1)[0].split(": ", 1)[1]
    check(code + ": the document shows the same title", title in section, title)

rc, out, err = run("--explain", "pdl")
check("--explain pdl says what the pdl flag promises (griddepcontrol.wait before reading earlier results)",
      rc == 0 and out.startswith("pdl: ") and "griddepcontrol.wait" in out and "cuLaunchKernelEx" in out
      and "\n### pdl\n" in generated, out[:300] + err)

# Codes are matched case-insensitively (issue 25: `--explain e0133` is E0133).
rc, lower, _ = run("--explain", "e0133")
rc_upper, upper, _ = run("--explain", "E0133")
check("--explain e0133 explains E0133", rc == 0 and rc_upper == 0 and lower == upper, lower[:200])

for bad in ("E9999", "e9999", "W0", "E0133x", ""):
    rc, out, err = run("--explain", bad)
    check("--explain %r is a usage error that says so" % bad,
          rc == 2 and out == "" and ("no diagnostic has the code" in err or "give exactly one" in err), err)

sys.exit(1 if failures else 0)
