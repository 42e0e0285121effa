#!/usr/bin/python3
"""version_test.py KERN_VERIFY KERN_RUN VERSION BUILD_TYPE PLAN_FORMAT_H SOURCE_ROOT

`--version` of kern-verify and kern-run (issue 25): one line, "TOOL VERSION
(commit C, plan format N, BUILD_TYPE build)", where C is the build's `git
describe` (12 hex digits, maybe -dirty) or "unknown" outside a git checkout;
the same fields in kern-verify's json summary and SARIF driver and in
kern-run --json (key "kern").
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

KV = KR = VERSION = BUILD_TYPE = PLAN_FORMAT = ROOT = None


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


class Version(unittest.TestCase):
    def expected(self, tool, out):
        m = re.fullmatch(rf"{tool} {re.escape(VERSION)} \(commit ([0-9a-f]{{12}}(?:-dirty)?|unknown), plan format "
                         rf"{PLAN_FORMAT}, {re.escape(BUILD_TYPE)} build\)\n", out)
        self.assertIsNotNone(m, repr(out))
        return {"version": VERSION, "commit": m[1], "plan_format": int(PLAN_FORMAT), "build_type": BUILD_TYPE}

    def test_both_tools_print_version_commit_plan_format_and_build_type(self):
        rc, out, err = run(KV, "--version")
        self.assertEqual((rc, err), (0, ""))
        kv = self.expected("kern-verify", out)
        rc, out, err = run(KR, "--version")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(self.expected("kern-run", out), kv)

    def test_the_json_summary_sarif_and_kern_run_json_carry_the_same_fields(self):
        _, out, _ = run(KV, "--version")
        want = self.expected("kern-verify", out)
        manifest = os.path.join(ROOT, "examples", "tiny-qwen3.json")
        rc, out, err = run(KV, manifest, "--message-format", "json")
        self.assertEqual(rc, 0, err)
        summary = json.loads(out.splitlines()[-1])
        self.assertEqual(summary["kern"], want)
        rc, out, err = run(KV, manifest, "--message-format", "sarif")
        driver = json.loads(out)["runs"][0]["tool"]["driver"]
        self.assertEqual((driver["version"], driver["properties"]), (VERSION, want))
        with tempfile.TemporaryDirectory() as tmp:
            plan = os.path.join(tmp, "tiny.kplan")
            self.assertEqual(run(KV, manifest, "-o", plan)[0], 0)
            rc, out, err = run(KR, plan, "--weights", os.path.join(ROOT, "examples", "tiny-qwen3.safetensors"),
                               "--device", "cpu", "--prompt-ids", "1,2", "--steps", "2", "--json")
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["kern"], want)


if __name__ == "__main__":
    KV, KR, VERSION, BUILD_TYPE, plan_format_h, ROOT = sys.argv[1:7]
    with open(plan_format_h, encoding="utf-8") as f:
        PLAN_FORMAT = re.search(r"kPlanFormatVersion = (\d+);", f.read())[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
