#!/usr/bin/env python3
"""Writes a C++ source defining `const char NAME[]` with a text file's bytes.

usage: embed_text.py INPUT OUTPUT.cpp NAMESPACE NAME
"""
import sys

src, out, namespace, name = sys.argv[1:5]
data = open(src, "rb").read()
body = ",".join(str(b) for b in data)
with open(out + ".tmp", "w") as f:
    f.write(f"// Generated from {src.split('/')[-1]} by embed_text.py; do not edit.\n")
    f.write(f"namespace {namespace} {{\nextern const char {name}[];\n")
    f.write(f"const char {name}[] = {{{body},0}};\n}}\n")
import os
os.replace(out + ".tmp", out)
