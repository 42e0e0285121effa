#!/usr/bin/python3
"""source_headers_test.py SOURCE_ROOT

Every source file of the repository opens with a line on what it is for
(helpers' rule; issue 25 item 9): a C/C++/CUDA file's first line is a `//`
or `/*` comment, a Python file's first line after an optional shebang is a
docstring or a `#` comment, a shell script's first line after its shebang
is a `#` comment, and so are meson.build files and schemas. Files under
build*/, .cache/, node_modules/ and the golden/corpus data are not sources.
Prints each offending file and exits 1; exits 0 when every file is headed.
"""
import os
import sys

SKIP_DIRS = {".git", ".cache", "node_modules", "__pycache__", ".gpu-bundle", "gpu-results"}
COMMENT = {
    ".cpp": ("//", "/*"), ".h": ("//", "/*"), ".cu": ("//", "/*"), ".c": ("//", "/*"), ".in": ("//", "/*", "#"),
    ".js": ("//", "/*"), ".fbs": ("//",), ".py": ('"""', "#", "r\"\"\"", "'''"), ".sh": ("#",),
}


def first_line(path):
    """The first line that is not a shebang, or None for an empty file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("#!"):
                continue
            return line.rstrip("\n")
    return None


def offenders(root):
    """(relative path, first line) of every source file without a heading comment."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not (rel_dir == "." and d.startswith("build")))
        for name in sorted(filenames):
            ext = os.path.splitext(name)[1]
            prefixes = ("#",) if name == "meson.build" else COMMENT.get(ext)
            if prefixes is None:
                continue
            path = os.path.join(dirpath, name)
            line = first_line(path)
            if line is None or not line.lstrip().startswith(prefixes):
                out.append((os.path.relpath(path, root), line))
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    bad = offenders(sys.argv[1])
    for path, line in bad:
        print(f"{path}: the first line is {line!r}, not a comment saying what the file is for")
    print(f"{len(bad)} source files without a heading comment")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
