"""Command-line plumbing shared by the examples/ tools (standard library only).

- Errors are one line, `tool: path: what is wrong`, never a traceback, and
  the exit status says who must act (as kern-verify's and kern-run's):
  0 success; 1 content that is wrong (a config, checkpoint or kernels
  directory kern cannot use); 2 a usage error or a file that cannot be read
  or written (missing, a directory, no permission, disk full).
- Outputs are written atomically: a temporary file in the output's
  directory, fsync'ed, then renamed over it (os.replace). On any failure,
  Ctrl-C included, the temporary file is removed and an existing output is
  left as it was. An existing output that is not a regular file (/dev/null,
  /dev/stdout, a FIFO) is written in place instead of being replaced.
"""

import errno
import os
import stat
import sys
import tempfile

EXIT_CONTENT = 1
EXIT_USAGE_OR_IO = 2
EXIT_INTERRUPTED = 130


class ContentError(Exception):
    """Input content that is wrong (exit 1). ConfigError and SafetensorsError
    derive from it."""


class UsageError(Exception):
    """A command-line value that cannot work (exit 2)."""


def _io_error(err, path, what):
    return OSError(err, what, path)


def check_output_path(path):
    """Raises OSError naming `path` when it cannot be written as an output:
    empty, a directory, or in a directory that is missing, not a directory
    or not writable. Called before any work so a long run does not fail at
    its end."""
    if not path:
        raise UsageError("the output path is empty")
    if os.path.isdir(path):
        raise _io_error(errno.EISDIR, path, "is a directory, not a file")
    directory = os.path.dirname(path) or "."
    if not os.path.exists(directory):
        raise _io_error(errno.ENOENT, path, f"cannot write there: {directory}: No such file or directory")
    if not os.path.isdir(directory):
        raise _io_error(errno.ENOTDIR, path, f"cannot write there: {directory}: Not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _io_error(errno.EACCES, path, f"cannot write there: {directory}: Permission denied")


def write_atomic(path, write, binary=True):
    """Calls `write(f)` with `f` a file open on a temporary file beside
    `path`, then renames it over `path` (mode 0666 less the umask, like
    open()). An existing non-regular `path` (device, FIFO) gets the bytes
    directly. Whatever `write` raises propagates after the cleanup."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        with open(path, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": "\n"})) as f:
            write(f)
        return
    check_output_path(path)
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        if binary:
            f = os.fdopen(fd, "wb")
        else:
            f = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        with f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def error_line(tool, e):
    """The one-line message for exception `e` of `tool`."""
    if isinstance(e, OSError):
        where = f"{e.filename}: " if e.filename else ""
        reason = e.strerror or str(e)
        return f"{tool}: {where}{reason}"
    return f"{tool}: {e}"


def run(tool, main, argv):
    """Runs `main(argv)` and returns its exit status, turning the errors
    above into one line on stderr and their exit status."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (UsageError, OSError) as e:
        print(error_line(tool, e), file=sys.stderr)
        return EXIT_USAGE_OR_IO
    except ContentError as e:
        print(error_line(tool, e), file=sys.stderr)
        return EXIT_CONTENT
