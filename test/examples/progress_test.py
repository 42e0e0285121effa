#!/usr/bin/python3
"""progress_test.py SOURCE_ROOT

The examples/ tools that write weights (gen_random_weights.py,
export_qwen3.py) show a progress line on a terminal and erase it at the end,
and print nothing when stderr is a pipe (issue 25; provider/progress.py).
The terminal is a pseudo-terminal (the pty module).
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = None


def example(name):
    return os.path.join(ROOT, "examples", name)


def run_on_pty(args):
    """(exit code, bytes the command wrote to its stderr, a pseudo-terminal)."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(["/usr/bin/python3", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=slave)
        os.close(slave)
        data = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            data += chunk
        return proc.wait(timeout=120), data
    finally:
        os.close(master)


def hf_checkpoint(tmp):
    """A HF-layout checkpoint of the tiny model (weights_test's split of the exported weights)."""
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "provider"))
    import safetensors_io as st
    import weights_test
    from qwen3_config import load_config
    cfg = load_config(example("tiny-qwen3.config.json"))
    ckpt = os.path.join(tmp, "ckpt")
    os.mkdir(ckpt)
    with open(example("tiny-qwen3.config.json"), "rb") as a, open(os.path.join(ckpt, "config.json"), "wb") as b:
        b.write(a.read())
    with st.SafetensorsFile(example("tiny-qwen3.safetensors")) as f:
        weights_test.write_file(st, os.path.join(ckpt, "model.safetensors"), weights_test.hf_tensors(st, f, cfg, False))
    return ckpt


class Progress(unittest.TestCase):
    def check_tool(self, tool, args, out):
        rc, data = run_on_pty([example(tool + ".py"), *args])
        self.assertEqual(rc, 0, data)
        text = data.decode()
        # At least the final line, "tool: OUT 0.00/0.00 GB (100%)", then erased with spaces.
        final = f"{tool}: {out} 0.00/0.00 GB (100%)"
        self.assertIn("\r" + final, text)
        self.assertTrue(re.fullmatch(r"(\r[^\r]* GB \(\d+%\) *)+\r +\r", text), repr(text))
        self.assertTrue(text.endswith("\r" + " " * len(final) + "\r"), repr(text))
        piped = subprocess.run(["/usr/bin/python3", example(tool + ".py"), *args], capture_output=True, text=True)
        self.assertEqual((piped.returncode, piped.stderr), (0, ""))

    def test_gen_random_weights_shows_progress_on_a_terminal_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w.safetensors")
            self.check_tool("gen_random_weights", [example("tiny-qwen3.config.json"), "-o", out, "--seed", "3"], out)

    def test_export_qwen3_shows_progress_on_a_terminal_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w.safetensors")
            self.check_tool("export_qwen3", [hf_checkpoint(tmp), "-o", out], out)


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
