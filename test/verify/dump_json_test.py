#!/usr/bin/python3
"""dump_json_test.py KERN_VERIFY SOURCE_ROOT

`kern-verify --dump PLAN --message-format json` (issue 25): one JSON object
with the whole plan (docs/plan-format.md "JSON dump"), whose counts, names,
arena offsets, launches and memory equal the text dump's, on the tiny Qwen3
and its speculative variant; no option is silently ignored in any mode
(exact messages); a manifest given to --dump says how to compile it; and
--explain takes a code in either case.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

EXE = ROOT = None


def run(*args):
    p = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


class JsonDump(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.plans = {}
        for model in ("tiny-qwen3", "tiny-qwen3-dspark"):
            path = os.path.join(cls.tmp.name, model + ".kplan")
            rc, _, err = run(os.path.join(ROOT, "examples", model + ".json"), "-o", path)
            assert rc == 0, err
            cls.plans[model] = path

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def dumps(self, plan, *extra):
        rc, text, err = run("--dump", plan, *extra)
        self.assertEqual((rc, err), (0, ""))
        rc, out, err = run("--dump", plan, "--message-format", "json", *extra)
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.endswith("}\n") and out.count("\n") == 1, "one object on one line")
        return text, json.loads(out)

    def test_the_json_dump_has_the_text_dumps_counts_names_offsets_and_launches(self):
        for model, plan in self.plans.items():
            with self.subTest(model=model):
                text, doc = self.dumps(plan, "--capacity", "1024")
                self.assertEqual(doc["format_version"], int(re.search(r"^plan: format (\d+),", text, re.M)[1]))
                self.assertIn(f'model "{doc["model"]}"', text)
                self.assertIn("manifest sha256: " + doc["manifest_sha256"], text)
                for section in ("symbols", "states", "cubins", "kernels", "scratch"):
                    n = int(re.search(rf"^{section} \((\d+)\):", text, re.M)[1])
                    self.assertEqual(len(doc[section]), n, section)
                m = re.search(r"^buffers \((\d+)\): input (\d+), output (\d+), weight (\d+), workspace (\d+), "
                              r"carry (\d+)$", text, re.M)
                self.assertEqual(len(doc["buffers"]), int(m[1]))
                for i, cls in enumerate(("input", "output", "weight", "workspace", "carry")):
                    self.assertEqual(sum(b["class"] == cls for b in doc["buffers"]), int(m[i + 2]), cls)
                for i, b in enumerate(doc["buffers"]):
                    line = f"  [{i}] {b['name']} {b['class']} {b['dtype']} [{', '.join(b['shape'])}] " \
                           f"{b['max_size_bytes']} B"
                    if b["class"] == "workspace":
                        line += f" @arena+{b['arena_offset']}"
                    else:
                        self.assertIsNone(b["arena_offset"])
                    self.assertIn("\n" + line + "\n", text)
                for i, s in enumerate(doc["symbols"]):
                    self.assertIn(f"\n  [{i}] {s['name']} {s['min']}..{s['max']}\n", text)
                steps = sum(len(k["steps"]) for k in doc["kernels"])
                self.assertEqual(len(doc["steps"]), steps)
                for si, s in enumerate(doc["steps"]):
                    self.assertIn(si, doc["kernels"][s["kernel"]]["steps"])
                    cubin = f" cubin [{s['cubin']}]" if s["cubin"] is not None else ""
                    self.assertIn(f"step [{si}] {s['symbol']}{cubin} ({', '.join(s['params'])})\n", text)
                summary = f"summary: {len(doc['buffers'])} buffers"
                for p in doc["programs"]:
                    self.assertIn(f"\nprogram {p['name']}: {p['dispatch_count']} dispatches, "
                                  f"{len(p['launches'])} launches\n", text)
                    summary += f"; {p['name']}: {p['dispatch_count']} dispatches, {len(p['launches'])} launches, " \
                               f"{p['buffers_used']} buffers"
                    for launch in p["launches"]:
                        label = " " + launch["label"] if launch["label"] else ""
                        self.assertIn(f"  #{launch['dispatch']}{label}: {launch['kernel']} step [{launch['step']}] "
                                      f"{launch['symbol']}\n", text)
                        for a in launch["args"]:
                            self.assertIn(a["kind"], ("buffer", "state", "scratch", "literal", "expr"))
                            if a["kind"] == "buffer":
                                self.assertEqual(doc["buffers"][a["index"]]["name"], a["name"])
                self.assertIn("\n" + summary + "\n", text)
                mem = doc["memory"]
                self.assertIn(f"  weights    {mem['weights_bytes']} B (", text)
                self.assertIn(f"  arena      {mem['arena_bytes']} B (", text)
                self.assertIn(f"; before planning {mem['arena_unplanned_bytes']} B (", text)
                self.assertEqual(mem["capacity_tokens"], 1024)
                self.assertEqual(mem["states_bytes"], mem["state_bytes_per_token"] * 1024 + mem["state_bytes_fixed"])
                self.assertIn(f"  total      {mem['total_bytes']} B (", text)
                self.assertEqual(set(doc["kern"]), {"version", "commit", "plan_format", "build_type"})
                self.assertEqual(doc["spec"] is not None, model.endswith("dspark"))

    def test_a_literal_carries_its_type_value_and_bits(self):
        _, doc = self.dumps(self.plans["tiny-qwen3"])
        literals = [a for p in doc["programs"] for launch in p["launches"] for a in launch["args"]
                    if a["kind"] == "literal"]
        self.assertTrue(literals)
        for a in literals:
            self.assertRegex(a["bits"], r"^0x[0-9a-f]+$")
            if a["type"] in ("i32", "u32", "i64", "u8"):
                self.assertEqual(int(a["bits"], 16) & 0xFFFFFFFF, a["value"] & 0xFFFFFFFF)
        self.assertIsNone(doc["memory"]["states_bytes"])  # no --capacity

    def test_no_option_is_silently_ignored(self):
        plan = self.plans["tiny-qwen3"]
        manifest = os.path.join(ROOT, "examples", "tiny-qwen3.json")
        for args, message in (
                (["--dump", plan, "--message-format", "sarif"],
                 "--dump prints human text or json, not sarif (SARIF reports diagnostics)"),
                (["--dump", plan, "--deny-warnings"], "--deny-warnings needs a MANIFEST.json to check"),
                (["--dump", plan, "--color", "always"], "--color colours the diagnostics of a MANIFEST.json check"),
                (["--dump", plan, "--workspace-warn-bytes", "1"], "--workspace-warn-bytes needs a MANIFEST.json to check"),
                (["--explain", "E0101", "--message-format", "json"],
                 "--message-format applies to a MANIFEST.json check or a --dump"),
                ([manifest, "--message-format", "json", "--color", "always"],
                 "--color colours human diagnostics; --message-format json has no colour")):
            with self.subTest(args=args):
                self.assertEqual(run(*args), (2, "", "error: " + message + "\n"))

    def test_a_manifest_or_weights_given_to_dump_say_what_to_run(self):
        manifest = os.path.join(ROOT, "examples", "tiny-qwen3.json")
        rc, out, err = run("--dump", manifest)
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, f"error: {manifest}: not a valid plan: the file is JSON (a manifest?): compile it into a "
                              f"plan first: kern-verify {manifest} -o {manifest[:-5]}.kplan\n")
        weights = os.path.join(ROOT, "examples", "tiny-qwen3.safetensors")
        rc, out, err = run("--dump", weights, "--message-format", "json")
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, f"error: {weights}: not a valid plan: the file is a safetensors file (weights): give the "
                              "plan (kern-verify -o) first and this file with --weights\n")

    def test_explain_takes_a_code_or_topic_in_either_case(self):
        rc, upper, _ = run("--explain", "E0101")
        self.assertEqual(rc, 0)
        self.assertEqual(run("--explain", "e0101"), (0, upper, ""))
        rc, topic, _ = run("--explain", "pdl")
        self.assertEqual(rc, 0)
        self.assertEqual(run("--explain", "PDL"), (0, topic, ""))
        rc, out, err = run("--explain", "e9999")
        self.assertEqual((rc, out), (2, ""))
        self.assertTrue(err.startswith("error: no diagnostic has the code `e9999` "), err)


if __name__ == "__main__":
    EXE, ROOT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
