#!/usr/bin/python3
"""gen_qwen3_manifest.py CONFIG.json -o MANIFEST.json [...]: gen_manifest.py
under its first name (same options and output; messages say
gen_qwen3_manifest). Its config may be of any family gen_manifest.py reads."""

import sys

import gen_manifest
from tool_io import run

if __name__ == "__main__":
    sys.exit(run("gen_qwen3_manifest", lambda argv: gen_manifest.main(argv, "gen_qwen3_manifest"), sys.argv[1:]))
