#!/usr/bin/python3
"""chat_pty_test.py KERN_RUN PLAN WEIGHTS TOKENIZER

kern-run --chat --interactive in a pseudo-terminal (the way a user runs it):
the help line and the "> " prompt appear, a typed message gets its reply and
the prompt again, Ctrl-D at the prompt ends it with exit 0; Ctrl-C typed at
the prompt (the terminal sends SIGINT) ends it with exit 130. Every read is
bounded in time (60 s); no verdict depends on the machine's speed. Exit 77
(skipped) without the tokenizer (scripts/setup.sh). Standard library only.
"""

import os
import pty
import select
import sys
import time
import unittest

ARGS = None


def spawn():
    kern_run, plan, weights, tokenizer = ARGS
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(kern_run, [kern_run, plan, "--weights", weights, "--device", "cpu", "--tokenizer", tokenizer,
                            "--chat", "-i", "--steps", "4"])
    return pid, fd


def read_until(fd, needle, seen, start=None, limit_s=60):
    """Reads the terminal until `needle` (bytes) is in `seen` from `start` (default: its current end)."""
    start = len(seen) if start is None else start
    end = time.monotonic() + limit_s
    while needle not in seen[start:]:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {needle!r} within {limit_s} s; the terminal shows {bytes(seen)!r}")
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                raise AssertionError(f"the terminal closed before {needle!r}: {bytes(seen)!r}")
            seen += chunk
    return seen


def wait_exit(pid, limit_s=60):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError(f"kern-run did not exit within {limit_s} s")


class ChatInATerminal(unittest.TestCase):
    def test_prompt_reply_and_ctrl_d(self):
        pid, fd = spawn()
        seen = bytearray()
        read_until(fd, b"kern-run: chat: type a message and press Enter", seen)
        read_until(fd, b"> ", seen, start=seen.index(b"Ctrl-C stops a reply"))
        os.write(fd, b"Hello\r")
        read_until(fd, b"> ", seen)  # the reply, then the prompt again
        reply = bytes(seen).split(b"Hello", 1)[1]
        self.assertGreater(len(reply.strip(b"\r\n> ")), 0, bytes(seen))
        os.write(fd, b"\x04")  # Ctrl-D at the start of a line: end of input
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass
        self.assertEqual(wait_exit(pid), 0)
        os.close(fd)

    def test_ctrl_c_at_the_prompt_exits_130(self):
        pid, fd = spawn()
        seen = bytearray()
        read_until(fd, b"> ", seen, start=0)
        os.write(fd, b"\x03")  # the terminal turns it into SIGINT for kern-run
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass
        self.assertEqual(wait_exit(pid), 130)
        os.close(fd)


if __name__ == "__main__":
    ARGS = sys.argv[1:5]
    if not os.path.exists(ARGS[3]):
        print(f"skipped: no tokenizer at {ARGS[3]} (scripts/setup.sh installs it)")
        sys.exit(77)
    unittest.main(argv=sys.argv[:1], verbosity=2)
