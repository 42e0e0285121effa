"""The runtime knows no model (issue 40, SPEC: a model-agnostic runtime):
kern-load, kern-verify and common/ name no model family (llama, qwen2,
mistral; `llama.cpp`, the reference implementation, may be cited) and not
the words MoE or expert, comments included. Every file under those folders
is read; a hit names the file, line and word.

Usage: no_family_test.py SOURCE_ROOT
"""

import os
import re
import sys
import tempfile
import unittest

FOLDERS = ("kern-load", "kern-verify", "common")
# Whole words or name parts, case-insensitive; "llama.cpp" is allowed as a citation.
FORBIDDEN = re.compile(r"llama(?!\.cpp)|qwen2|mistral|\bmoe\b|expert", re.IGNORECASE)


def hits(root):
    """(path relative to root, line number, matched text) of every forbidden word."""
    out = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                with open(path, "r", encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        for m in FORBIDDEN.finditer(line):
                            out.append((os.path.relpath(path, root), number, m.group(0)))
    return out


class NoFamilyInTheRuntime(unittest.TestCase):
    def test_kern_load_kern_verify_and_common_name_no_model_family(self):
        found = hits(ROOT)
        self.assertEqual(found, [], "\n".join(f"{p}:{n}: {w}" for p, n, w in found))

    def test_the_check_finds_each_word_and_lets_the_llama_cpp_citation_pass(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "common"))
            with open(os.path.join(tmp, "common", "x.h"), "w", encoding="utf-8") as f:
                f.write("// as llama.cpp does\n// Llama 3\nint qwen2_bias;\n// MISTRAL\n// MoE routing\n"
                        "// the experts\n// moexyz is a name\n")
            self.assertEqual(hits(tmp), [("common/x.h", 2, "Llama"), ("common/x.h", 3, "qwen2"),
                                         ("common/x.h", 4, "MISTRAL"), ("common/x.h", 5, "MoE"),
                                         ("common/x.h", 6, "expert")])


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
