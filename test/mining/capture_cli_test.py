#!/usr/bin/python3
"""kern-capture's command line without a GPU program: usage errors exit 2
and leave nothing behind, COMMAND's exit status is kern-capture's, a
program that never loads a CUDA driver records nothing (and says so), and
the capture library is inherited across exec without disturbing it.

usage: capture_cli_test.py KERN_CAPTURE
"""
import os
import subprocess
import sys
import tempfile
import unittest

KERN_CAPTURE = sys.argv.pop(1)


def run(*args):
    return subprocess.run([KERN_CAPTURE, *args], capture_output=True, text=True, timeout=60)


class CaptureCliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, 'out')

    def tearDown(self):
        self.tmp.cleanup()

    def test_no_command(self):
        r = run('-o', self.out)
        self.assertEqual(r.returncode, 2)
        self.assertIn('no COMMAND given', r.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_no_output_folder(self):
        r = run('--', 'true')
        self.assertEqual(r.returncode, 2)
        self.assertIn('-o/--output', r.stderr)

    def test_a_folder_with_files_is_refused(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, 'launches.jsonl'), 'w') as f:
            f.write('old\n')
        r = run('-o', self.out, '--', 'true')
        self.assertEqual(r.returncode, 2)
        self.assertIn('exists and is not an empty folder', r.stderr)
        with open(os.path.join(self.out, 'launches.jsonl')) as f:
            self.assertEqual(f.read(), 'old\n')

    def test_a_missing_program(self):
        r = run('-o', self.out, '--', os.path.join(self.tmp.name, 'no-such-program'))
        self.assertEqual(r.returncode, 2)
        self.assertIn('cannot run', r.stderr)

    def test_exit_status_and_a_program_without_cuda(self):
        r = run('-o', self.out, '--', 'sh', '-c', 'echo "$KERN_CAPTURE_DIR"; exit 3')
        self.assertEqual(r.returncode, 3)
        self.assertEqual(r.stdout.strip(), os.path.abspath(self.out))
        self.assertIn('nothing recorded', r.stderr)
        self.assertEqual(os.listdir(self.out), [])

    def test_the_library_is_preloaded_across_exec(self):
        r = run('-o', self.out, '--', 'sh', '-c', 'exec sh -c "echo \\$LD_PRELOAD"')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.strip().endswith('libkern-capture.so'), r.stdout)
        self.assertTrue(os.path.isabs(r.stdout.split()[0]))


if __name__ == '__main__':
    unittest.main(verbosity=1)
