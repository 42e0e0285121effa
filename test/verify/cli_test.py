#!/usr/bin/env python3
"""The kern-verify command line: exit codes (0 ok, 1 manifest errors, 2 usage
or I/O), the plan is written only on success, --dump, --deny-warnings,
--color, --explain, --message-format json|sarif, --workspace-warn-bytes, an
empty or unwritable -o, a FIFO -o without a reader, -o through a link to a
descriptor (/dev/stdout), and write errors on stdout (/dev/full).

usage: cli_test.py KERN_VERIFY BASE_MANIFEST_JSON
"""
import json
import os
import subprocess
import sys
import tempfile

EXE, BASE = sys.argv[1], sys.argv[2]
failures = []


def run(*args):
    p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def run_to_dev_full(*args):
    """Runs kern-verify with stdout on /dev/full (every write fails with
    ENOSPC); returns (exit code, stderr)."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([EXE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    return p.returncode, p.stderr


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name)
    if not cond:
        failures.append(name)
        if detail:
            print("     " + detail.replace("\n", "\n     "))


def write(path, obj_or_text):
    with open(path, "w") as f:
        f.write(obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text))
    return path


with open(BASE) as f:
    base = json.load(f)

with tempfile.TemporaryDirectory() as tmp:
    good = write(os.path.join(tmp, "good.json"), base)
    plan = os.path.join(tmp, "good.kplan")

    rc, out, err = run(good, "-o", plan)
    check("a valid manifest exits 0 and prints nothing", rc == 0 and err == "", f"rc={rc}\n{err}")
    with open(plan, "rb") as f:
        head = f.read(8)
    check("the plan carries the KPLN identifier", head[4:8] == b"KPLN", repr(head))

    rc, out, err = run(good)
    check("checking without -o exits 0", rc == 0, err)

    rc, out, err = run("--dump", plan)
    check("--dump of the plan exits 0", rc == 0, err)
    check("--dump shows launches and the summary",
          "program decode: 4 dispatches, 5 launches" in out and "summary: 6 buffers" in out, out[-400:])

    bad = dict(base, meta={"version": 1, "model": "x"})
    badp = write(os.path.join(tmp, "bad.json"), bad)
    badplan = os.path.join(tmp, "bad.kplan")
    rc, out, err = run(badp, "-o", badplan, "--color=never")
    check("a manifest with errors exits 1", rc == 1, f"rc={rc}\n{err}")
    check("errors are rendered rustc-style with code, location and pointer",
          "error[E0100]" in err and "--> " in err and "pointer: /meta/version" in err and "1 error emitted" in err,
          err)
    check("no plan is written when there are errors", not os.path.exists(badplan))
    check("no temporary file is left behind", sorted(os.listdir(tmp)) == ["bad.json", "good.json", "good.kplan"],
          str(os.listdir(tmp)))

    rc, out, err = run(badp, "--color=always")
    check("--color=always colours diagnostics", rc == 1 and "\x1b[" in err, repr(err[:80]))
    rc, out, err = run(badp, "--color=never")
    check("--color=never does not", rc == 1 and "\x1b[" not in err, repr(err[:80]))

    rc, out, err = run(write(os.path.join(tmp, "syntax.json"), '{"meta": '))
    check("a JSON syntax error exits 1", rc == 1 and "error[E0" in err, f"rc={rc}\n{err}")

    warn = json.loads(json.dumps(base))
    step = warn["kernels"]["embed"]["impl"]["steps"][0]
    del step["cubin"], step["sha256"]
    warnp = write(os.path.join(tmp, "warn.json"), warn)
    warnplan = os.path.join(tmp, "warn.kplan")
    rc, out, err = run(warnp, "-o", warnplan)
    check("warnings alone exit 0 and still write the plan",
          rc == 0 and "warning[W0001]" in err and os.path.exists(warnplan), f"rc={rc}\n{err}")
    os.remove(warnplan)
    rc, out, err = run(warnp, "-o", warnplan, "--deny-warnings")
    check("--deny-warnings makes warnings fatal (exit 1, no plan)",
          rc == 1 and not os.path.exists(warnplan), f"rc={rc}\n{err}")

    # Machine-readable formats go to stdout, nothing to stderr; exit codes stay 0/1/2.
    rc, out, err = run(warnp, "--message-format", "json", "--deny-warnings")
    lines = [json.loads(line) for line in out.splitlines()]
    check("--message-format json prints one object per diagnostic and a final summary on stdout",
          rc == 1 and err == "" and [d["type"] for d in lines] == ["diagnostic", "summary"] and
          lines[0]["code"] == "W0001" and lines[0]["level"] == "warning" and
          lines[0]["pointer"] == "/kernels/embed/impl/steps/0/symbol" and lines[0]["line"] == 1 and
          lines[0]["column"] == lines[0]["byte_offset"] + 1 and
          lines[0]["byte_offset"] > 0 and "help" in lines[0] and lines[0]["notes"] == [] and
          set(lines[1].pop("kern", {})) == {"version", "commit", "plan_format", "build_type"} and
          lines[1] == {"type": "summary", "file": warnp, "errors": 0, "warnings": 1, "success": False},
          f"rc={rc}\n{out}\n{err}")
    rc, out, err = run(good, "--message-format", "json")
    check("--message-format json of a clean manifest is only the summary",
          rc == 0 and {k: v for k, v in json.loads(out).items() if k != "kern"} == {
              "type": "summary", "file": good, "errors": 0, "warnings": 0, "success": True}, out)
    rc, out, err = run(badp, "--message-format", "sarif")
    try:
        log = json.loads(out)
        res = log["runs"][0]["results"]
        ok = (rc == 1 and err == "" and log["version"] == "2.1.0" and len(res) == 1 and
              res[0]["ruleId"] == "E0100" and res[0]["level"] == "error" and
              res[0]["locations"][0]["physicalLocation"]["region"]["startColumn"] ==
              res[0]["locations"][0]["physicalLocation"]["region"]["byteOffset"] + 1 and
              res[0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "/meta/version")
    except (ValueError, KeyError, IndexError):
        ok = False
    check("--message-format sarif writes a SARIF 2.1.0 log with the finding (exit 1)", ok, f"rc={rc}\n{out[:400]}")
    rc, out, err = run(good, "--message-format", "xml")
    check("an unknown --message-format is a usage error (exit 2)", rc == 2, f"rc={rc}\n{err}")
    rc, out, err = run(os.path.join(tmp, "missing.json"), "--message-format", "json")
    check("an I/O error stays exit 2 in json mode", rc == 2 and "missing.json" in err, f"rc={rc}\n{err}")
    rc, out, err = run(badp, "--color=auto")
    check("--color=auto does not colour output that is not a terminal", rc == 1 and "\x1b[" not in err, repr(err[:80]))
    rc, out, err = run(warnp, "--workspace-warn-bytes", "64")
    check("--workspace-warn-bytes lowers the W0003 threshold",
          rc == 0 and "warning[W0003]" in err and "buffers.logits" in err, err)

    rc, out, err = run(os.path.join(tmp, "missing.json"))
    check("a missing manifest exits 2", rc == 2 and "missing.json" in err, f"rc={rc}\n{err}")
    rc, out, err = run(good, "-o", os.path.join(tmp, "no-such-dir", "x.kplan"))
    check("an unwritable output path exits 2", rc == 2, f"rc={rc}\n{err}")

    rc, out, err = run(good, "-o", "")
    check("an empty -o is a usage error (exit 2) that says so",
          rc == 2 and "-o needs a file name" in err, f"rc={rc}\n{err}")
    rc, out, err = run(badp, "-o", os.path.join(tmp, "no-such-dir", "x.kplan"))
    check("an unwritable output path is reported before the manifest is checked (exit 2, no findings)",
          rc == 2 and "no-such-dir" in err and "error[E" not in err, f"rc={rc}\n{err}")
    rc, out, err = run(good, "-o", tmp)
    check("a directory as the output path exits 2", rc == 2 and "is a directory" in err, f"rc={rc}\n{err}")
    for value in ["-1", "-0", " 64", "+64", "0x40", "1e3", "18446744073709551616", ""]:
        rc, out, err = run(warnp, "--workspace-warn-bytes", value)
        check(f"--workspace-warn-bytes {value!r} is a usage error (exit 2)",
              rc == 2 and "--workspace-warn-bytes" in err, f"rc={rc}\n{err}")
    rc, out, err = run(warnp, "--workspace-warn-bytes", "18446744073709551615")
    check("--workspace-warn-bytes takes 2^64-1 (W0003 off)", rc == 0 and "W0003" not in err, f"rc={rc}\n{err}")

    # A failed write to stdout is an I/O error, never a silent exit 0.
    for name, args in [("--dump", ["--dump", plan]), ("--explain", ["--explain", "E0133"]),
                       ("--print-catalogue", ["--print-catalogue"]), ("--help", ["--help"]),
                       ("--message-format json", [good, "--message-format", "json"]),
                       ("--message-format sarif", [good, "--message-format", "sarif"]),
                       ("--message-format json with errors", [badp, "--message-format", "json"])]:
        rc, err = run_to_dev_full(*args)
        check(f"{name} with stdout on /dev/full exits 2 with a write error",
              rc == 2 and "stdout: write error: No space left on device" in err, f"rc={rc}\n{err}")
    rc, err = run_to_dev_full(good)
    check("human mode writes nothing to stdout, so /dev/full there is no error", rc == 0, f"rc={rc}\n{err}")

    corrupt = write(os.path.join(tmp, "corrupt.kplan"), "this is not a plan at all, not even close")
    rc, out, err = run("--dump", corrupt)
    # A corrupt, truncated or foreign plan is a content error, exit 1, as from
    # kern-run (docs/runtime.md); a file that cannot be read stays exit 2.
    check("--dump of a corrupt file exits 1", rc == 1 and "not a valid plan" in err, f"rc={rc}\n{err}")
    with open(plan, "rb") as f:
        data = f.read()
    trunc = os.path.join(tmp, "trunc.kplan")
    with open(trunc, "wb") as f:
        f.write(data[: len(data) // 2])
    rc, out, err = run("--dump", trunc)
    check("--dump of a truncated plan exits 1", rc == 1, f"rc={rc}\n{err}")
    rc, out, err = run("--dump", os.path.join(tmp, "missing.kplan"))
    check("--dump of a missing file exits 2", rc == 2, f"rc={rc}\n{err}")

    rc, out, err = run()
    check("no arguments is a usage error (exit 2)", rc == 2, f"rc={rc}\n{err}")
    rc, out, err = run(good, "--no-such-flag")
    check("an unknown flag is a usage error (exit 2)", rc == 2, f"rc={rc}\n{err}")
    rc, out, err = run(good, "--color=sometimes")
    check("a bad --color value is a usage error (exit 2)", rc == 2, f"rc={rc}\n{err}")
    rc, out, err = run("--help")
    check("--help exits 0", rc == 0 and "--dump" in out, f"rc={rc}")

    rc, out, err = run("--explain", "E0133")
    check("--explain prints the long explanation", rc == 0 and "failing:" in out and "fixed:" in out, out)
    rc, out, err = run("--explain", "E0005")
    check("--explain knows the reader's codes", rc == 0 and "E0005" in out, out)
    rc, out, err = run("--explain", "E9999")
    check("--explain of an unknown code exits 2", rc == 2, f"rc={rc}")

    # Control bytes and ANSI escapes from the user never reach the terminal
    # raw: they show as rustc shows them (ESC as U+241B "␛").
    rc, out, err = run("--explain", "E\x1b[31mX\x07")
    check("--explain echoes an unknown code with its escapes made visible",
          rc == 2 and "\x1b" not in err and "\x07" not in err and "`E\u241b[31mX\u2407`" in err, repr(err))
    esc = json.loads(json.dumps(base))
    esc["meta"]["model"] = "tiny\x1b[2J\x1b]0;pwned\x07"
    esc["buffers"]["ids"]["clas\x1b[31ms"] = "input"
    escp = write(os.path.join(tmp, "esc.json"), esc)
    rc, out, err = run(escp, "--color=never")
    check("a diagnostic naming a field with escapes shows them visibly (message, pointer)",
          rc == 1 and "\x1b" not in err and "unknown field `clas\u241b[31ms`" in err
          and "pointer: /buffers/ids/clas\u241b[31ms" in err, repr(err))
    # Raw control bytes in the file (not JSON: E0001) on the source line.
    with open(escp) as f:
        raw_text = f.read().replace("\\u001b", "\x1b")
    rawp = write(os.path.join(tmp, "raw.json"), raw_text)
    rc, out, err = run(rawp, "--color=never")
    check("a source line with raw escape bytes shows them visibly",
          rc == 1 and "\x1b" not in err and "\u241b[2J\u241b]0;pwned" in err, repr(err))
    del esc["buffers"]["ids"]["clas\x1b[31ms"]
    escp = write(os.path.join(tmp, "esc.json"), esc)
    escplan = os.path.join(tmp, "esc.kplan")
    rc, out, err = run(escp, "-o", escplan)
    check("a model name with escapes is a valid manifest", rc == 0, err)
    rc, out, err = run("--dump", escplan)
    check("--dump shows names from the plan with their escapes made visible",
          rc == 0 and "\x1b" not in out and "\x07" not in out
          and 'model "tiny\u241b[2J\u241b]0;pwned\u2407"' in out, repr(out[:300]))

# Hostile inputs and outputs (issue 9): nothing hangs, nothing is lost.
with tempfile.TemporaryDirectory() as tmp:
    m = write(os.path.join(tmp, "m.json"), base)
    with open(m, "rb") as f:
        original = f.read()
    os.link(m, os.path.join(tmp, "hard.json"))
    for out_path in (m, os.path.join(tmp, ".", "m.json"), os.path.join(tmp, "hard.json")):
        rc, out, err = run(m, "-o", out_path)
        with open(m, "rb") as f:
            kept = f.read() == original  # bytes: an overwrite leaves a binary plan here
        check(f"-o {os.path.relpath(out_path, tmp)} (the input itself) is exit 2 and the manifest is kept",
              rc == 2 and kept and "is the input manifest" in err, f"rc={rc}\n{err}")
        if not kept:  # the checks below need the manifest back (same inode, so the hard link too)
            with open(m, "r+b") as f:
                f.write(original)
                f.truncate()

    rc, out, err = run("/dev/zero")
    check("/dev/zero as the manifest is refused at once (exit 2)",
          rc == 2 and "/dev/zero: is a character device, not a regular file" in err, f"rc={rc}\n{err}")
    fifo = os.path.join(tmp, "p.fifo")
    os.mkfifo(fifo)
    for args in ([fifo], ["--dump", fifo]):
        try:
            rc, out, err = run(*args)
        except subprocess.TimeoutExpired:
            rc, err = None, "timed out (blocked in open)"
        check(f"a FIFO for {' '.join(a for a in args if a != fifo) or 'the manifest'} is refused, not waited on",
              rc == 2 and "is a FIFO, not a regular file" in err, f"rc={rc}\n{err}")
    out_fifo = os.path.join(tmp, "out.fifo")
    os.mkfifo(out_fifo)
    try:
        rc, out, err = run(m, "-o", out_fifo)
    except subprocess.TimeoutExpired:
        rc, err = None, "timed out (blocked in open waiting for a reader)"
    check("-o a FIFO with no reader is exit 2 at once, naming it, not a wait",
          rc == 2 and err == f"error: {out_fifo}: is a FIFO with no reader; nothing written (start the reader "
                             "first)\n", f"rc={rc}\n{err}")
    # A link into /proc/self/fd, as /dev/stdout is (not the real one): with
    # stdout a regular file, the plan used to be renamed over the link.
    link = os.path.join(tmp, "stdout-link")
    os.symlink("/proc/self/fd/1", link)
    captured = os.path.join(tmp, "captured.kplan")
    with open(captured, "wb") as f:
        p = subprocess.run([EXE, m, "-o", link], stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
    with open(captured, "rb") as f:
        plan = f.read()
    check("-o a link to /proc/self/fd/1 writes the plan to stdout and the link stays",
          p.returncode == 0 and os.path.islink(link) and plan[4:8] == b"KPLN", f"rc={p.returncode}\n{p.stderr}")
    big = os.path.join(tmp, "big.kplan")
    with open(big, "wb") as f:
        f.truncate(3 << 30)  # sparse
    rc, out, err = run("--dump", big)
    check("--dump of a 3 GiB file is refused from its size (exit 2, no abort)",
          rc == 2 and "is 3221225472 B; the limit is" in err, f"rc={rc}\n{err}")

    # A 20 MB one-line manifest with a syntax error: the snippet shows a window around the caret.
    # Under a 1 GiB address-space limit: the renderer once built one string
    # per byte of the line (20 MB -> over 1.3 GB, a 100 MB line took 4.5 GB).
    long_line = write(os.path.join(tmp, "long.json"), '{"a": "' + "x" * (20 << 20) + '" ]}')
    import resource

    def one_gib():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    p = subprocess.run([EXE, long_line, "--color=never"], capture_output=True, text=True, timeout=60,
                       preexec_fn=one_gib)
    rc, err = p.returncode, p.stderr
    check("a syntax error on a 20 MB line shows a short window around the caret, in bounded memory",
          rc == 1 and len(err) < 2000 and "..." in err and "^" in err, f"rc={rc} stderr {len(err)} B\n{err[:600]}")

    # Under ulimit -f the write fails with EFBIG (SIGXFSZ ignored): exit 2, no partial file.
    outdir = os.path.join(tmp, "d")
    os.mkdir(outdir)

    def small_fsize():
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    p = subprocess.run([EXE, m, "-o", os.path.join(outdir, "t.kplan")], capture_output=True, text=True,
                       timeout=60, preexec_fn=small_fsize)
    check("ulimit -f: exit 2 naming the write error, and no temporary file is left",
          p.returncode == 2 and "File too large" in p.stderr and os.listdir(outdir) == [],
          f"rc={p.returncode}\n{p.stderr}\n{os.listdir(outdir)}")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
