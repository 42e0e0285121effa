#!/usr/bin/python3
"""examples/export_qwen3.py: runs provider/export_qwen3.py (the provider tools live in provider/);
same options, output and exit status, so every documented command keeps working."""

import os
import runpy
import sys

PROVIDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "provider")
sys.path.insert(0, PROVIDER)  # its sibling modules win over this folder's forwarders
runpy.run_path(os.path.join(PROVIDER, "export_qwen3.py"), run_name="__main__")
