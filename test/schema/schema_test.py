#!/usr/bin/env python3
"""JSON Schema oracles for the manifest format, run with ajv (an off-the-shelf
JSON Schema 2020-12 validator, installed by scripts/setup.sh into .cache/):

  upstream  every good manifest (test/corpus/good/, examples/) validates against
            the upstream schema (../shared/reference/kern-manifest-v2.schema.json,
            read from beside the checkout, never copied); on the bad corpus it
            agrees with kern-verify's reader except the documented cases.
  ours      schemas/manifest.schema.json (written by us) compiles in ajv's strict
            mode, accepts every good manifest, rejects every reader mistake a
            schema can see and the value-local verifier mistakes it states, and
            accepts every other verifier case (it is no verifier).

Disagreements are explained in schemas/README.md. Exit 77 (skipped) when
node/ajv, or for `upstream` the upstream schema, is absent.

usage: schema_test.py upstream|ours SOURCE_ROOT
"""
import json
import os
import shutil
import subprocess
import sys

MODE, ROOT = sys.argv[1], os.path.abspath(sys.argv[2])
AJV = os.path.join(ROOT, ".cache", "schema", "node_modules", "ajv")
UPSTREAM = os.path.join(ROOT, "..", "shared", "reference", "kern-manifest-v2.schema.json")
OURS = os.path.join(ROOT, "schemas", "manifest.schema.json")
CORPUS = os.path.join(ROOT, "test", "corpus")

# Reader mistakes no JSON Schema can see: a \u0000 escape is valid JSON, and
# duplicate keys vanish in parsing (JSON.parse keeps the last).
INVISIBLE = {"E0002-escaped-nul-in-name", "E0004-duplicate-symbol"}
# Reader cases the upstream schema accepts: its tagged-argument objects do not
# forbid a second tag, and its domain states "min/max or index_into" in prose only.
UPSTREAM_LOOSER = INVISIBLE | {"E0014-two-tags", "E0015-domain-bounds-and-index"}
# Cases the upstream schema rejects for a field it does not know: meta.world is
# kern's extension for tensor parallelism (docs/parallel.md), absent upstream.
UPSTREAM_STRICTER = {"E0167-world-zero", "E0167-world-over-limit", "E0168-collective-in-world-one"}
# Verifier cases using kern's own optional `todos` section (docs/manifest.md
# "TODO sites"), which the upstream schema does not have (it rejects the field).
KERN_ONLY = {"W0004-todo-site", "E0166-todo-unknown-program"}
# Verifier codes our schema also states, value by value, for editors.
OURS_STATES = {"E0100", "E0106", "E0116", "E0117", "E0119", "E0123", "E0124", "E0167"}

failures = []


def check(name, cond, detail=""):
    if not cond:
        print("FAIL " + name)
        failures.append(name)
        if detail:
            print("     " + str(detail).replace("\n", "\n     "))


node = shutil.which("node")
if node is None or not os.path.isdir(AJV):
    print("SKIP: node or ajv missing (scripts/setup.sh installs ajv into .cache/schema)")
    sys.exit(77)
schema = OURS if MODE == "ours" else UPSTREAM
if not os.path.exists(schema):
    print("SKIP: the upstream schema is not beside the checkout: " + os.path.normpath(UPSTREAM))
    sys.exit(77)


def validate(files):
    p = subprocess.run([node, os.path.join(ROOT, "test", "schema", "validate.cjs"), AJV, schema, *files],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        check("ajv compiles the schema and runs", False, p.stderr[-2000:])
        sys.exit(1)
    return {os.path.basename(r["file"]): r for r in map(json.loads, p.stdout.splitlines())}


good = sorted(os.path.join(CORPUS, "good", f) for f in os.listdir(os.path.join(CORPUS, "good")) if f.endswith(".json"))
examples = sorted(os.path.join(ROOT, "examples", f) for f in os.listdir(os.path.join(ROOT, "examples"))
                  if f.endswith(".json") and not f.endswith(".config.json"))
results = validate(good + examples)
for f in good + examples:
    r = results[os.path.basename(f)]
    check(os.path.relpath(f, ROOT) + " validates", r["valid"], r["errors"])

bad_dir = os.path.join(CORPUS, "bad")
cases = sorted(f[:-5] for f in os.listdir(bad_dir) if f.endswith(".json"))
results = validate([os.path.join(bad_dir, c + ".json") for c in cases])
disagreements = 0
for case in cases:
    with open(os.path.join(bad_dir, case + ".expected")) as f:
        codes = {line.split()[0] for line in f if line.strip()}
    reader_case = all(c.startswith("E00") for c in codes)
    if MODE == "upstream":
        want_valid = (not reader_case or case in UPSTREAM_LOOSER) and case not in UPSTREAM_STRICTER and case not in KERN_ONLY
    else:
        want_valid = (case in INVISIBLE) if reader_case else not (codes & OURS_STATES)
    r = results[case + ".json"]
    disagreements += 0 if (r["valid"] != reader_case) else 1
    check("%s: %s" % (case, "accepted" if want_valid else "rejected"), r["valid"] == want_valid,
          "codes %s, ajv: %s" % (sorted(codes), r["errors"] or "valid"))

print("%s schema: %d good manifests, %d bad cases, %d documented disagreements with the reader, %d failures" %
      (MODE, len(good) + len(examples), len(cases), disagreements, len(failures)))
sys.exit(1 if failures else 0)
