#!/usr/bin/python3
"""dependency_rule_test.py SOURCE_ROOT

The engine's dependency rule (docs/design.md, "The engine"): kern-engine/
depends on kern-load only. Every #include of its files names a standard
header (<...> without a slash, or <sys/...>-style POSIX headers are refused
too: the engine needs none) or a header of common/, kern-load/, schemas/ or
kern-engine/ itself; kern-engine/meson.build lists kern_load_dep as its only
dependency. The checker is also run on a planted violation, which it must
find. Standard library only.
"""

import os
import re
import sys
import tempfile
import unittest

ALLOWED_DIRS = ("common/", "kern-load/", "kern-engine/", "schemas/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def violations(engine_dir):
    """(file, included header) pairs that break the rule, sorted."""
    bad = []
    for name in sorted(os.listdir(engine_dir)):
        if not name.endswith((".h", ".cpp")):
            continue
        with open(os.path.join(engine_dir, name), encoding="utf-8") as f:
            text = f.read()
        for kind, header in INCLUDE.findall(text):
            if kind == "<" and "/" not in header:
                continue  # the C++ standard library
            if kind == '"' and header.startswith(ALLOWED_DIRS):
                continue
            bad.append((name, header))
    with open(os.path.join(engine_dir, "meson.build"), encoding="utf-8") as f:
        meson = f.read()
    deps = re.findall(r"dependencies\s*:\s*\[([^\]]*)\]", meson)
    for d in deps:
        names = [x.strip() for x in d.split(",") if x.strip()]
        if names != ["kern_load_dep"]:
            bad.append(("meson.build", "dependencies: [" + ", ".join(names) + "]"))
    return bad


class DependencyRule(unittest.TestCase):
    def test_the_engine_includes_only_kern_load_and_common(self):
        self.assertEqual(violations(os.path.join(ROOT, "kern-engine")), [])

    def test_a_planted_violation_is_found(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "a.cpp"), "w") as f:
                f.write('#include <vector>\n#include "kern-load/executable.h"\n#include "kern-run/progress.h"\n'
                        '#include "spdlog/spdlog.h"\n#include <CLI/CLI.hpp>\n')
            with open(os.path.join(tmp, "meson.build"), "w") as f:
                f.write("x = static_library('x', 'a.cpp', dependencies : [kern_load_dep, spdlog_dep])\n")
            self.assertEqual(violations(tmp), [("a.cpp", "kern-run/progress.h"), ("a.cpp", "spdlog/spdlog.h"),
                                               ("a.cpp", "CLI/CLI.hpp"),
                                               ("meson.build", "dependencies: [kern_load_dep, spdlog_dep]")])


def main(argv):
    global ROOT
    ROOT = argv[1]
    prog = unittest.main(argv=[argv[0]], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
