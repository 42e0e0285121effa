#!/usr/bin/python3
"""docs_commands_test.py SOURCE_ROOT BUILD_ROOT KERN_VERIFY KERN_RUN

The documented commands work as written (issue 25). Every ```sh block of
README.md, examples/README.md and docs/*.md is run, in that order (each
file's blocks in one bash, so a variable set in one block is seen by the
next), in a temporary copy of the source tree whose build/ holds links to
the already-built kern-verify, kern-run and build/kernels (nothing is
rebuilt). A command that exits non-zero fails the test, naming file:line.

Skipped, by a tag in the command's trailing comment (or in an HTML comment
`<!-- docs-test: TAG -->` on the line before the block, for the whole block):
  [install]     installs packages (scripts/setup.sh, demo.sh)
  [suite]       builds or runs the test suite (scripts/test.sh, meson, ninja)
  [gpu]         needs a GPU or the GPU bundle
  [checkpoint]  needs a downloaded checkpoint (nothing is downloaded here)
  [maintainer]  regenerates checked-in files on purpose (labelled so in the docs)
A command reading .cache/ (scripts/setup.sh's npm packages) is skipped, with
a note, when that path does not exist.

Also checked: no documented command writes into the repository outside
build/ or changes a checked-in file; every examples/ and provider/ tool with a shebang is
executable; every shell block has only runnable lines (no `[--opt]`
placeholders or `...`).
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = BUILD = KERN_VERIFY = KERN_RUN = None
TAGS = ("install", "suite", "gpu", "checkpoint", "maintainer")
COPY_IGNORE = {".git", ".cache", "node_modules", "__pycache__", ".gpu-bundle", "gpu-results"}


def doc_files(root):
    docs = sorted(os.path.join("docs", n) for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md"))
    return ["README.md", os.path.join("examples", "README.md")] + docs


class Command:
    def __init__(self, path, line, text, tag):
        self.path, self.line, self.text, self.tag = path, line, text, tag

    def where(self):
        return f"{self.path}:{self.line}"


def tag_of(text):
    """The skip tag in a command's trailing comments, or None."""
    for m in re.finditer(r"#[^\n]*?\[(\w+)\]", text):
        if m[1] in TAGS:
            return m[1]
    return None


def commands(root, path):
    """The commands of the ```sh blocks of `path` (continuation lines joined)."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() not in ("```sh", "```bash"):
            i += 1
            continue
        m = re.match(r"<!-- docs-test: (\w+) -->", lines[i - 1].strip()) if i > 0 else None
        block_tag = m[1] if m else None
        i += 1
        current, start = [], 0
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            if not current:
                start = i + 1
            if line.strip() or current:
                current.append(line)
            if current and not line.rstrip().endswith("\\"):
                text = "\n".join(current)
                if text.strip() and not text.lstrip().startswith("#"):
                    out.append(Command(path, start, text, block_tag or tag_of(text)))
                current = []
            i += 1
        i += 1
    return out


def tree_digest(root):
    """{relative path: sha256} of every file outside build/."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if d not in COPY_IGNORE and not (rel == "." and d == "build")]
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def make_copy(tmp):
    """A copy of the source tree with build/ linking to the built binaries."""
    repo = os.path.join(tmp, "kern")

    def ignore(directory, names):
        top = os.path.abspath(directory) == os.path.abspath(ROOT)
        return [n for n in names if n in COPY_IGNORE or (top and n.startswith("build"))]

    shutil.copytree(ROOT, repo, ignore=ignore, symlinks=True)
    for exe, sub in ((KERN_VERIFY, "kern-verify"), (KERN_RUN, "kern-run")):
        os.makedirs(os.path.join(repo, "build", sub))
        os.symlink(os.path.abspath(exe), os.path.join(repo, "build", sub, os.path.basename(exe)))
    kernels = os.path.join(BUILD, "kernels")
    if os.path.isdir(kernels):
        os.symlink(os.path.abspath(kernels), os.path.join(repo, "build", "kernels"))
    cache = os.path.join(ROOT, ".cache")
    if os.path.isdir(cache):
        os.symlink(os.path.abspath(cache), os.path.join(repo, ".cache"))
    return repo


def script_for(cmds, repo):
    """A bash script running `cmds` in order, stopping at the first failure."""
    out = ["set -o pipefail", "exec </dev/null"]
    for c in cmds:
        missing = [p for p in re.findall(r"(\.cache/\S+)", c.text) if not os.path.exists(os.path.join(repo, p))]
        if c.tag or missing:
            reason = f"[{c.tag}]" if c.tag else f"{missing[0]} does not exist (scripts/setup.sh installs it)"
            out.append(f"echo 'docs-test: skip {c.where()}: {reason}' >&2")
            continue
        out.append(f"echo 'docs-test: run {c.where()}' >&2")
        out.append("{\n" + c.text + "\n} >/dev/null")
        out.append(f"rc=$?; if [ $rc -ne 0 ]; then echo 'docs-test: FAIL {c.where()}: exit '$rc >&2; exit 1; fi")
    return "\n".join(out) + "\n"


class DocumentedCommands(unittest.TestCase):
    def test_every_documented_command_runs_and_writes_only_under_build(self):
        with tempfile.TemporaryDirectory() as tmp:
            repo = make_copy(tmp)
            before = tree_digest(repo)
            ran = 0
            for path in doc_files(repo):
                cmds = commands(repo, path)
                if not cmds:
                    continue
                proc = subprocess.run(["bash", "-c", script_for(cmds, repo)], cwd=repo, capture_output=True,
                                      text=True, timeout=900)
                sys.stderr.write("".join(line + "\n" for line in proc.stderr.splitlines()
                                         if line.startswith("docs-test: ")))
                self.assertEqual(proc.returncode, 0, f"{path}: a documented command failed:\n{proc.stderr[-4000:]}")
                ran += proc.stderr.count("docs-test: run ")
            after = tree_digest(repo)
            changed = sorted(p for p in before if after.get(p) != before[p])
            added = sorted(p for p in after if p not in before)
            self.assertEqual(changed, [], "documented commands changed checked-in files")
            self.assertEqual(added, [], "documented commands wrote into the repository outside build/")
            self.assertGreaterEqual(ran, 10, "fewer documented commands ran than expected")

    def test_shell_blocks_hold_only_runnable_lines_and_known_tags(self):
        for path in doc_files(ROOT):
            for c in commands(ROOT, path):
                code = re.sub(r"#.*", "", c.text)
                self.assertNotRegex(code, r"\[-", f"{c.where()}: an optional `[--opt]` placeholder cannot run")
                self.assertNotIn("...", code, f"{c.where()}: `...` cannot run")
                for m in re.finditer(r"#[^\n]*?\[(\w+)\]", c.text):
                    if m[1].lower() in TAGS:
                        self.assertIn(m[1], TAGS, f"{c.where()}: tags are lower-case")

    def test_the_parser_finds_commands_tags_and_continuations(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "x.md"), "w", encoding="utf-8") as f:
                f.write("text\n```sh\n# a comment\nrun a \\\n  --flag   # [gpu] why\n\nrun b\n```\n"
                        "<!-- docs-test: maintainer -->\n```sh\nregen c\n```\n```text\nnot a command\n```\n")
            got = [(c.line, c.text, c.tag) for c in commands(tmp, "x.md")]
            self.assertEqual(got, [(4, "run a \\\n  --flag   # [gpu] why", "gpu"), (7, "run b", None),
                                   (11, "regen c", "maintainer")])

    def test_the_provider_tools_and_their_examples_forwarders_are_executable(self):
        for folder in ("examples", "provider"):
            for name in sorted(os.listdir(os.path.join(ROOT, folder))):
                path = os.path.join(ROOT, folder, name)
                if not os.path.isfile(path):
                    continue
                with open(path, "rb") as f:
                    shebang = f.read(2) == b"#!"
                if shebang:
                    self.assertTrue(os.access(path, os.X_OK), f"{folder}/{name} has a shebang but is not executable")


if __name__ == "__main__":
    ROOT, BUILD, KERN_VERIFY, KERN_RUN = sys.argv[1:5]
    unittest.main(argv=sys.argv[:1], verbosity=2)
