#!/usr/bin/env python3
"""The diagnostics corpus (test/corpus/): kern-verify rejects every bad/ case
with exactly its expected findings and accepts every good/ manifest; every
code of the catalogue has a case; the json and sarif message formats carry
the same findings; golden human output (bad/NAME.stderr) matches byte for
byte.

usage: corpus_test.py KERN_VERIFY CORPUS_DIR EXAMPLES_DIR
"""
import json
import os
import re
import subprocess
import sys

EXE, CORPUS, EXAMPLES = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
failures = []

JSON_KEYS = {"type", "level", "code", "message", "file", "byte_offset", "end_byte_offset", "line", "column",
             "end_line", "end_column", "pointer", "notes"}


def check(name, cond, detail=""):
    if not cond:
        print("FAIL " + name)
        failures.append(name)
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))
    return cond


def run(*args):
    # cwd = the corpus dir, paths relative: file names in the output are stable.
    p = subprocess.run([EXE, *args], capture_output=True, cwd=CORPUS, timeout=60)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def catalogue():
    rc, out, err = run("--print-catalogue")
    assert rc == 0, err
    return re.findall(r"^\| \[([EW]\d{4})\]\(#[ew]\d{4}\) \| (error|warning) \|", out, re.M)


def json_findings(rel):
    rc, out, err = run(rel, "--message-format", "json")
    lines = [json.loads(line) for line in out.splitlines()]
    return rc, lines, err


codes = dict(catalogue())
check("the catalogue lists at least 75 codes", len(codes) >= 75, len(codes))

bad_dir = os.path.join(CORPUS, "bad")
cases = sorted(f[:-5] for f in os.listdir(bad_dir) if f.endswith(".json"))
check("the bad corpus has at least 60 cases", len(cases) >= 60, len(cases))
covered = set()
goldens = 0
for name in cases:
    rel = "bad/" + name + ".json"
    exp_path = os.path.join(bad_dir, name + ".expected")
    if not check(name + ": has an .expected file", os.path.exists(exp_path)):
        continue
    with open(exp_path) as f:
        expected = sorted(line.rstrip("\n") for line in f if line.strip())
    rc, lines, err = json_findings(rel)
    if not check(name + ": json output parses and ends with a summary", lines and lines[-1].get("type") == "summary",
                 err):
        continue
    diags, summary = lines[:-1], lines[-1]
    found = sorted(d["code"] + " " + d["pointer"] for d in diags)
    check(name + ": reports exactly the expected findings", found == expected,
          "expected %s\nfound    %s\n%s" % (expected, found, "\n".join(d["message"] for d in diags)))
    for d in diags:
        check(name + ": every json diagnostic has the documented keys", JSON_KEYS <= set(d), sorted(d))
        check(name + ": the level matches the catalogue", codes.get(d["code"]) == d["level"], d)
    offsets = [(d["byte_offset"], d["code"]) for d in diags]
    check(name + ": diagnostics come in source order", offsets == sorted(offsets), offsets)
    n_err = sum(1 for d in diags if d["level"] == "error")
    check(name + ": the summary counts them", summary["errors"] == n_err and
          summary["warnings"] == len(diags) - n_err and summary["success"] == (n_err == 0), summary)
    check(name + ": exit code 1 with errors, 0 with warnings only", rc == (1 if n_err else 0), rc)
    if n_err == 0:
        rc2, _, _ = run(rel, "--deny-warnings")
        check(name + ": --deny-warnings turns warnings into exit 1", rc2 == 1, rc2)
    covered.update(e.split(" ")[0] for e in expected)

    # SARIF carries the same findings, with rule ids pointing into the rule table.
    rc, out, err = run(rel, "--message-format", "sarif")
    try:
        log = json.loads(out)
        run0 = log["runs"][0]
        rules = run0["tool"]["driver"]["rules"]
        sarif = sorted(r["ruleId"] + " " + r["properties"]["jsonPointer"] for r in run0["results"])
        check(name + ": sarif results equal the json findings", sarif == found, (sarif, found))
        check(name + ": sarif ruleIndex points at its rule",
              all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run0["results"]))
        check(name + ": sarif is version 2.1.0 with one rule per code",
              log["version"] == "2.1.0" and [r["id"] for r in rules] == list(codes))
    except (ValueError, KeyError, IndexError) as e:
        check(name + ": sarif output is a SARIF log", False, repr(e) + "\n" + out[:300])

    golden = os.path.join(bad_dir, name + ".stderr")
    if os.path.exists(golden):
        goldens += 1
        with open(golden, encoding="utf-8") as f:
            want = f.read()
        rc, out, err = run(rel, "--color=never")
        check(name + ": human output equals the golden file byte for byte", err == want and out == "",
              "--- golden\n" + want + "--- got\n" + err)

missing = sorted(set(codes) - covered)
check("every code of the catalogue has a bad corpus case", not missing, missing)
unknown = sorted(covered - set(codes))
check("every expected code is in the catalogue", not unknown, unknown)
check("at least 5 cases have golden human output", goldens >= 5, goldens)

good_dir = os.path.join(CORPUS, "good")
good = sorted(f for f in os.listdir(good_dir) if f.endswith(".json"))
examples = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".json") and not f.endswith(".config.json"))
check("every example manifest is in the good corpus", set(examples) <= set(good), sorted(set(examples) - set(good)))
for g in good:
    rc, lines, err = json_findings("good/" + g)
    errors = [d for d in lines[:-1] if d["level"] == "error"]
    check("good/" + g + ": accepted (exit 0, no errors)", rc == 0 and not errors and lines[-1]["success"],
          "\n".join(d["code"] + " " + d["message"] for d in errors) or err)

print("%d bad cases, %d good manifests, %d codes covered, %d failures" % (len(cases), len(good), len(covered),
                                                                          len(failures)))
sys.exit(1 if failures else 0)
