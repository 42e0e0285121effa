"""A one-line progress display on stderr for the examples/ tools (issue 25).

Drawn only when stderr is a terminal, so piped or captured runs (tests, CI
logs) stay quiet; redrawn in place with '\\r' at most every 0.2 s, and erased
at the end so the terminal is left as it was. The kern-run counterpart is
kern-run/progress.h.
"""

import sys
import time


class Progress:
    """Reports bytes written of a known total: `tool: W.safetensors 1.2/8.8 GB (14%)`."""

    def __init__(self, tool, what, total_bytes, stream=None, enabled=None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.prefix = f"{tool}: {what}"
        self.total = total_bytes
        self.last_draw = 0.0
        self.width = 0

    def update(self, done_bytes):
        """Redraws the line for `done_bytes` (throttled; the last update always draws)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if done_bytes < self.total and now - self.last_draw < 0.2:
            return
        self.last_draw = now
        percent = 100 * done_bytes // self.total if self.total else 100
        line = f"{self.prefix} {done_bytes / 1e9:.2f}/{self.total / 1e9:.2f} GB ({percent}%)"
        self.stream.write("\r" + line + " " * max(0, self.width - len(line)))
        self.stream.flush()
        self.width = max(self.width, len(line))

    def clear(self):
        """Erases the line, if one was drawn."""
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
