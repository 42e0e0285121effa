#!/usr/bin/python3
"""examples/convert_hf.py: runs provider/convert_hf.py (the provider tools live in provider/);
same options, output and exit status, so every documented command keeps working."""

import os
import runpy
import sys

PROVIDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "provider")
sys.path.insert(0, PROVIDER)  # its sibling modules win over this folder's forwarders
runpy.run_path(os.path.join(PROVIDER, "convert_hf.py"), run_name="__main__")
