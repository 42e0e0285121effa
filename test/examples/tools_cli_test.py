#!/usr/bin/python3
"""tools_cli_test.py SOURCE_ROOT

The examples/ tools (gen_qwen3_manifest.py, gen_random_weights.py,
export_qwen3.py) fail in one line, `tool: path: what is wrong`, never with a
traceback, with exit 2 for usage and I/O errors and 1 for bad content
(provider/tool_io.py); they write outputs atomically (an interrupted run
leaves no partial file, a failed run leaves an old output as it was), write
into devices in place, and refuse configs whose values overflow the
manifest's i32 parameters; never write over their inputs; remove their
temporary file on every terminating signal; write FIFOs (without waiting for
a reader) and descriptors (/dev/stdout) through instead of renaming over them.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = None
TOOLS = ("gen_qwen3_manifest", "gen_random_weights", "export_qwen3")


def example(name):
    return os.path.join(ROOT, "examples", name)


def tiny_config():
    with open(example("tiny-qwen3.config.json"), "r", encoding="utf-8") as f:
        return json.load(f)


def tool(name, *args):
    """Runs a tool; the manifest generator pins only through an explicit --kernels-dir."""
    pins = ["--unpinned"] if name == "gen_qwen3_manifest" and "--kernels-dir" not in args else []
    return subprocess.run(["/usr/bin/python3", example(name + ".py"), *args, *pins], capture_output=True, text=True)


def config_input(name, tmp, config_path):
    """The first argument of tool `name` reading `config_path` (export_qwen3
    takes the checkpoint directory holding config.json)."""
    if name != "export_qwen3":
        return config_path
    ckpt = os.path.join(tmp, "ckpt")
    os.makedirs(ckpt, exist_ok=True)
    with open(config_path, "rb") as a, open(os.path.join(ckpt, "config.json"), "wb") as b:
        b.write(a.read())
    return ckpt


class Errors(unittest.TestCase):
    def check_one_line(self, proc, name, rc, *needles):
        self.assertEqual(proc.returncode, rc, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        lines = proc.stderr.strip().split("\n")
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith(name + ": "), lines[0])
        for needle in needles:
            self.assertIn(needle, lines[0])

    def test_an_output_in_a_missing_directory_is_an_io_error_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in TOOLS:
                with self.subTest(name):
                    out = os.path.join(tmp, "missing", "x.out")
                    proc = tool(name, config_input(name, tmp, example("tiny-qwen3.config.json")), "-o", out)
                    self.check_one_line(proc, name, 2, out + ": cannot write there: ", "No such file or directory")

    def test_an_output_that_is_a_directory_is_an_io_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in TOOLS:
                with self.subTest(name):
                    proc = tool(name, config_input(name, tmp, example("tiny-qwen3.config.json")), "-o", tmp)
                    self.check_one_line(proc, name, 2, tmp + ": is a directory, not a file")
                    self.assertTrue(os.path.isdir(tmp))

    def test_a_config_whose_top_level_is_an_array_is_bad_content(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            with open(config, "w", encoding="utf-8") as f:
                f.write("[1, 2]\n")
            for name in TOOLS:
                with self.subTest(name):
                    proc = tool(name, config_input(name, tmp, config), "-o", os.path.join(tmp, "out"))
                    self.check_one_line(proc, name, 1, "config.json: expected a JSON object at the top level, "
                                                       "found an array")
                    self.assertFalse(os.path.exists(os.path.join(tmp, "out")))

    def test_a_config_that_is_not_utf8_or_not_json_is_bad_content(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            for raw, needle in ((b'{"model_type": "\xff"}', "not UTF-8 text: byte 0xff at offset 16"),
                                (b'{"model_type": }', "config.json:1:16: invalid JSON")):
                with open(config, "wb") as f:
                    f.write(raw)
                for name in TOOLS:
                    with self.subTest(name=name, raw=raw):
                        proc = tool(name, config_input(name, tmp, config), "-o", os.path.join(tmp, "out"))
                        self.check_one_line(proc, name, 1, needle)

    def test_a_missing_config_is_an_io_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("gen_qwen3_manifest", "gen_random_weights"):
                with self.subTest(name):
                    missing = os.path.join(tmp, "none.json")
                    proc = tool(name, missing, "-o", os.path.join(tmp, "out"))
                    self.check_one_line(proc, name, 2, missing + ": No such file or directory")

    def test_config_values_beyond_the_manifests_i32_parameters_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "config.json")
            out = os.path.join(tmp, "m.json")
            for key, value, needle in (("vocab_size", 10**12, "vocab_size = 1000000000000 exceeds 2147483647"),
                                       ("intermediate_size", 2**31 - 8,
                                        "2 x intermediate_size = 4294967280 exceeds 2147483647")):
                cfg = tiny_config()
                cfg[key] = value
                with open(config, "w", encoding="utf-8") as f:
                    json.dump(cfg, f)
                with self.subTest(key):
                    proc = tool("gen_qwen3_manifest", config, "-o", out)
                    self.check_one_line(proc, "gen_qwen3_manifest", 1, needle)
                    self.assertFalse(os.path.exists(out))
            proc = tool("gen_qwen3_manifest", example("tiny-qwen3.config.json"), "-o", out, "--tokens-max", str(2**31))
            self.assertEqual(proc.returncode, 2)
            self.assertIn("--tokens-max must be from 1 to 2147483647", proc.stderr)


def default_signals():
    """In a child before exec: every signal the tests send at SIG_DFL."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGQUIT, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def start_slow_weights(test, tmp):
    """gen_random_weights writing ~1 GB into tmp/out/w.safetensors over an
    old file; returns (process, out_dir, out) once its temporary has data."""
    cfg = tiny_config()
    cfg["vocab_size"] = 4_000_000  # minutes of work: signalled long before
    config = os.path.join(tmp, "config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    out_dir = os.path.join(tmp, "out")
    os.mkdir(out_dir)
    out = os.path.join(out_dir, "w.safetensors")
    with open(out, "wb") as f:
        f.write(b"old weights")
    # The signals at their default disposition in the tool, whatever this
    # run inherited: under nohup SIGHUP is ignored, and a background job of
    # a non-interactive shell ignores SIGINT and SIGQUIT; the tool keeps an
    # ignored signal ignored, so it would finish instead of dying of it.
    proc = subprocess.Popen(["/usr/bin/python3", example("gen_random_weights.py"), config, "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        names = [n for n in os.listdir(out_dir) if n != "w.safetensors"]
        if names and os.path.getsize(os.path.join(out_dir, names[0])) > 0:
            break
        time.sleep(0.05)
    names = [n for n in os.listdir(out_dir) if n != "w.safetensors"]
    test.assertEqual(len(names), 1, "no temporary file appeared")
    test.assertTrue(names[0].startswith("w.safetensors.tmp."), names)
    return proc, out_dir, out


class AtomicOutput(unittest.TestCase):
    def test_a_failed_run_leaves_the_old_output_and_no_temporary_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.json")
            with open(out, "w", encoding="utf-8") as f:
                f.write("old\n")
            cfg = tiny_config()
            cfg["model_type"] = "llama"
            config = os.path.join(tmp, "config.json")
            with open(config, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            for name in TOOLS:
                with self.subTest(name):
                    self.assertEqual(tool(name, config_input(name, tmp, config), "-o", out).returncode, 1)
                    with open(out, "r", encoding="utf-8") as f:
                        self.assertEqual(f.read(), "old\n")
            self.assertEqual(sorted(os.listdir(tmp)), sorted(["m.json", "config.json", "ckpt"]))

    def test_a_successful_run_replaces_the_output_with_mode_0644_under_umask_022(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "m.json")
            with open(out, "w", encoding="utf-8") as f:
                f.write("old\n")
            old_umask = os.umask(0o022)
            try:
                proc = tool("gen_qwen3_manifest", example("tiny-qwen3.config.json"), "-o", out, "--tokens-max", "64")
            finally:
                os.umask(old_umask)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(os.stat(out).st_mode & 0o777, 0o644)
            with open(out, "r", encoding="utf-8") as f:
                self.assertEqual(json.load(f)["symbols"]["tokens"], {"min": 1, "max": 64})
            self.assertEqual(os.listdir(tmp), ["m.json"])

    def test_an_interrupted_gen_random_weights_leaves_the_old_output_and_no_partial_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, out_dir, out = start_slow_weights(self, tmp)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130, err)
            self.assertEqual(err.strip(), "gen_random_weights: interrupted")
            self.assertEqual(os.listdir(out_dir), ["w.safetensors"])
            with open(out, "rb") as f:
                self.assertEqual(f.read(), b"old weights")

    def test_an_existing_fifo_output_is_written_into_not_replaced(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "m.fifo")
            os.mkfifo(fifo)
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the tool's open does not wait
            try:
                proc = subprocess.Popen(["/usr/bin/python3", example("gen_qwen3_manifest.py"),
                                         example("tiny-qwen3.config.json"), "-o", fifo, "--tokens-max", "64", "--unpinned"],
                                        stderr=subprocess.PIPE, text=True)
                data = b""
                while True:
                    try:
                        chunk = os.read(reader, 1 << 16)
                    except BlockingIOError:
                        chunk = None
                    if chunk:
                        data += chunk
                        continue
                    if proc.poll() is not None:  # exited: take what is left
                        try:
                            while chunk := os.read(reader, 1 << 16):
                                data += chunk
                        except BlockingIOError:
                            pass
                        break
                    time.sleep(0.01)
                _, err = proc.communicate(timeout=60)
            finally:
                os.close(reader)
            self.assertEqual(proc.returncode, 0, err)
            self.assertEqual(json.loads(data)["symbols"]["tokens"], {"min": 1, "max": 64})
            self.assertTrue(os.path.exists(fifo) and not os.path.isfile(fifo))
            self.assertEqual(os.listdir(tmp), ["m.fifo"])


def copy(src, dst):
    with open(src, "rb") as a, open(dst, "wb") as b:
        b.write(a.read())


def read(path):
    with open(path, "rb") as f:
        return f.read()


class OutputsAreNotInputs(unittest.TestCase):
    """-o naming a tool's own input (any spelling) is refused before any
    work: exit 2, one line, the input unchanged (export_qwen3 writing into its
    checkpoint: weights_test.py)."""

    def check_refused(self, proc, name, *needles):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        line = proc.stderr.strip()
        self.assertEqual(len(line.split("\n")), 1, proc.stderr)
        self.assertTrue(line.startswith(name + ": "), line)
        for needle in needles:
            self.assertIn(needle, line)

    def test_a_generator_refuses_to_write_over_its_config_in_any_spelling(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "c.json")
            draft = os.path.join(tmp, "d.json")
            copy(example("tiny-qwen3.config.json"), config)
            copy(example("tiny-qwen3-dspark.config.json"), draft)
            os.symlink("c.json", os.path.join(tmp, "link.json"))
            before = (read(config), read(draft))
            cases = [("gen_qwen3_manifest", [config], config, "config"),
                     ("gen_qwen3_manifest", [config], os.path.join(tmp, ".", "c.json"), "config"),
                     ("gen_qwen3_manifest", [config], os.path.join(tmp, "link.json"), "config"),
                     ("gen_qwen3_dspark_manifest", [config, draft], config, "config"),
                     ("gen_qwen3_dspark_manifest", [config, draft], draft, "draft config"),
                     ("gen_random_weights", [config], config, "config"),
                     ("gen_random_weights", [config, "--draft", draft], draft, "draft config")]
            for name, args, out, what in cases:
                with self.subTest(name=name, out=out):
                    proc = tool(name, *args, "-o", out)
                    self.check_refused(proc, name, f"{out}: is the input {what} ", "refusing to overwrite it")
            self.assertEqual((read(config), read(draft)), before)
            self.assertTrue(os.path.islink(os.path.join(tmp, "link.json")))
            self.assertEqual(sorted(os.listdir(tmp)), ["c.json", "d.json", "link.json"])


class SignalsAndSpecialOutputs(unittest.TestCase):
    def test_a_terminating_signal_removes_the_temporary_file_and_still_kills(self):
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGQUIT):
            with self.subTest(signal=sig.name), tempfile.TemporaryDirectory() as tmp:
                proc, out_dir, out = start_slow_weights(self, tmp)
                proc.send_signal(sig)
                proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, -sig)  # died of the signal, as without the cleanup
                self.assertEqual(os.listdir(out_dir), ["w.safetensors"])
                self.assertEqual(read(out), b"old weights")

    def test_a_fifo_output_with_no_reader_is_an_error_at_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "m.fifo")
            os.mkfifo(fifo)
            # The timeout bounds the old behaviour: open(2) waiting forever.
            proc = subprocess.run(["/usr/bin/python3", example("gen_qwen3_manifest.py"),
                                   example("tiny-qwen3.config.json"), "-o", fifo],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertEqual(proc.stderr, f"gen_qwen3_manifest: {fifo}: is a FIFO with no reader; nothing "
                                          "written (start the reader first)\n")
            self.assertEqual(os.listdir(tmp), ["m.fifo"])

    def test_an_output_naming_a_descriptor_is_written_to_it_and_the_link_stays(self):
        # A link into /proc/self/fd, as /dev/stdout is (the real one must not
        # be put at risk): with stdout a regular file, os.replace used to
        # replace the link with a file.
        with tempfile.TemporaryDirectory() as tmp:
            link = os.path.join(tmp, "stdout")
            os.symlink("/proc/self/fd/1", link)
            captured = os.path.join(tmp, "captured.json")
            with open(captured, "wb") as f:
                f.write(b"before;")
                f.flush()
                proc = subprocess.run(["/usr/bin/python3", example("gen_qwen3_manifest.py"),
                                       example("tiny-qwen3.config.json"), "-o", link, "--tokens-max", "64"],
                                      stdout=f, stderr=subprocess.PIPE, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertTrue(os.path.islink(link))
            data = read(captured)
            self.assertTrue(data.startswith(b"before;"), data[:40])
            self.assertEqual(json.loads(data[len(b"before;"):])["symbols"]["tokens"], {"min": 1, "max": 64})
            self.assertEqual(sorted(os.listdir(tmp)), ["captured.json", "stdout"])


if __name__ == "__main__":
    ROOT = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
