"""Command-line plumbing shared by the examples/ tools (standard library only).

- Errors are one line, `tool: path: what is wrong`, never a traceback, and
  the exit status says who must act (as kern-verify's and kern-run's):
  0 success; 1 content that is wrong (a config, checkpoint or kernels
  directory kern cannot use); 2 a usage error or a file that cannot be read
  or written (missing, a directory, no permission, disk full).
- Outputs are written atomically: a temporary file in the output's
  directory, fsync'ed, then renamed over it (os.replace). On any failure,
  Ctrl-C or a terminating signal (SIGTERM, SIGHUP, SIGALRM, SIGUSR1, ...)
  included, the temporary file is removed and an existing output is left as
  it was. An output that is not a regular file (/dev/null, /dev/stdout, a
  FIFO) is written through instead of being replaced; a FIFO with no reader
  is an error, never a wait.
- An output that is one of the tool's inputs (or inside an input checkpoint
  directory) is refused before any work (check_output_path's `inputs`).
- A folder output (convert_hf.py's model folder) is built in a temporary
  folder beside it and swapped in whole (replace_directory): no file of an
  earlier folder survives, and a failed run leaves that folder unchanged.
"""

import errno
import os
import shutil
import stat
import sys
import signal
import tempfile

EXIT_CONTENT = 1
EXIT_USAGE_OR_IO = 2
EXIT_INTERRUPTED = 130


class ContentError(Exception):
    """Input content that is wrong (exit 1). ConfigError and SafetensorsError
    derive from it."""


class UsageError(Exception):
    """A command-line value that cannot work (exit 2)."""


# The signals that end a process by default and can arrive while an output
# is written (signal(7)); each one whose disposition is SIG_DFL removes the
# temporary file first (Python itself ignores SIGPIPE and SIGXFSZ, so a
# closed pipe or `ulimit -f` is an OSError; SIGINT is KeyboardInterrupt).
_TERMINATING = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2",
                                             "SIGXCPU", "SIGPIPE", "SIGVTALRM", "SIGPROF", "SIGPOLL", "SIGPWR")
                if hasattr(signal, n)]


class Signalled(BaseException):
    """A terminating signal arrived while an output was written: the
    temporary file is removed on the way out, then run() ends the process by
    the same signal."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _io_error(err, path, what):
    return OSError(err, what, path)


def _fd_named_by(name):
    """The descriptor of this process `name` stands for (/dev/stdout,
    /dev/fd/N, /proc/self/fd/N, ...), or None."""
    fixed = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
    if name in fixed:
        return fixed[name]
    for prefix in ("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", f"/proc/{os.getpid()}/fd/"):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return int(name[len(prefix):])
    return None


def resolve_output(path):
    """How `path` is written: ("fd", N) for a name of this process's
    descriptor N (also through symlinks: /dev/stdout is one into
    /proc/self/fd); ("through", path) for an existing device, FIFO or socket,
    or a file under /proc; ("replace", target) for a regular or new file,
    `target` being where `path`'s symlinks end (so a link stays a link)."""
    p = path
    for _ in range(40):
        fd = _fd_named_by(p)
        if fd is not None:
            return ("fd", fd)
        try:
            if not stat.S_ISLNK(os.lstat(p).st_mode):
                break
            target = os.readlink(p)
        except OSError:
            break
        p = target if target.startswith("/") else os.path.join(os.path.dirname(p) or ".", target)
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        return ("through", path)
    directory = os.path.realpath(os.path.dirname(p) or ".")
    if directory == "/proc" or directory.startswith("/proc/"):
        return ("through", path)
    return ("replace", p)


def _file_id(path):
    """(dev, ino, "") of an existing file, else (dev, ino, name) of its
    directory and its last name; None when neither can be examined."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino, "")
    except FileNotFoundError:
        pass
    except OSError:
        return None
    kind, target = resolve_output(path)
    if kind != "replace":
        return None
    try:
        st = os.stat(os.path.dirname(target) or ".")
    except OSError:
        return None
    return (st.st_dev, st.st_ino, os.path.basename(target))


def same_file(a, b):
    """Whether `a` and `b` name one file whatever the spelling ("./c.json",
    a hard link, a symlink; a file not yet there by directory and name)."""
    ia, ib = _file_id(a), _file_id(b)
    return ia is not None and ia == ib


def _inside(path, directory):
    """Whether output `path` would be written in `directory` or below it."""
    kind, target = resolve_output(path)
    if kind != "replace":
        return False
    try:
        top = os.stat(directory)
    except OSError:
        return False
    d = os.path.realpath(os.path.dirname(target) or ".")
    while True:
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) == (top.st_dev, top.st_ino):
                return True
        except OSError:
            pass
        parent = os.path.dirname(d)
        if parent == d:
            return False
        d = parent


def check_output_path(path, inputs=(), input_dirs=()):
    """Raises when `path` cannot be written as an output: UsageError when it
    is empty, is one of `inputs` (pairs (what, path): the same file whatever
    the spelling) or lies inside one of `input_dirs` (pairs (what, directory),
    e.g. a checkpoint); OSError naming `path` when it is a directory, or in a
    directory that is missing, not a directory or not writable. Called before
    any work so a long run does not fail at its end, or destroy its input."""
    if not path:
        raise UsageError("the output path is empty")
    for what, other in inputs:
        if other and same_file(path, other):
            raise UsageError(f"{path}: is the input {what} {other}; refusing to overwrite it "
                             "(choose another output path)")
    for what, directory in input_dirs:
        if directory and _inside(path, directory):
            raise UsageError(f"{path}: is inside the input {what} {directory}; refusing to write there "
                             "(choose a path outside it)")
    kind, target = resolve_output(path)
    if kind == "fd":
        try:
            os.fstat(target)
        except OSError as e:
            raise _io_error(e.errno, path, f"cannot write to file descriptor {target}: {e.strerror}") from None
        return
    if os.path.isdir(target):
        raise _io_error(errno.EISDIR, path, "is a directory, not a file")
    if kind == "through":
        return
    directory = os.path.dirname(target) or "."
    if not os.path.exists(directory):
        raise _io_error(errno.ENOENT, path, f"cannot write there: {directory}: No such file or directory")
    if not os.path.isdir(directory):
        raise _io_error(errno.ENOTDIR, path, f"cannot write there: {directory}: Not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _io_error(errno.EACCES, path, f"cannot write there: {directory}: Permission denied")


def _open_mode(fd, binary):
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def _open_through(path):
    """os.open of an existing non-regular output without blocking: a FIFO
    with no reader is an error at once (ENXIO), not a wait forever."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise _io_error(errno.ENXIO, path, "is a FIFO with no reader; nothing written (start the reader first)") \
                from None
        raise
    os.set_blocking(fd, True)
    return fd


class _TempGuard:
    """While active, each terminating signal at SIG_DFL raises Signalled;
    on any exception the registered temporary file is removed."""

    def __init__(self):
        self.tmp = None
        self._old = {}

    def _raise(self, signum, frame):
        raise Signalled(signum)

    def __enter__(self):
        for sig in _TERMINATING:
            try:
                if signal.getsignal(sig) == signal.SIG_DFL:
                    self._old[sig] = signal.signal(sig, self._raise)
            except (OSError, ValueError):  # not settable, or not the main thread
                pass
        return self

    def __exit__(self, kind, value, tb):
        if kind is not None and self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def write_atomic(path, write, binary=True):
    """Calls `write(f)` with `f` a file open on a temporary file beside
    `path`, then renames it over `path` (mode 0666 less the umask, like
    open()); `path`'s symlinks are followed, so a link stays a link. A
    non-regular `path` is written through instead, never renamed over: a
    name of this process's descriptor (/dev/stdout, /dev/fd/N) gets the
    bytes on that descriptor, a device or FIFO (opened without blocking; no
    reader is an error) in place. Whatever `write` raises propagates after
    the cleanup; a terminating signal removes the temporary file and raises
    Signalled (run() then ends the process by it)."""
    kind, target = resolve_output(path)
    if kind == "fd":
        for stream, number in ((sys.stdout, 1), (sys.stderr, 2)):
            if target == number and stream is not None:
                stream.flush()
        with _open_mode(os.dup(target), binary) as f:
            write(f)
        return
    if kind == "through":
        with _open_mode(_open_through(path), binary) as f:
            write(f)
        return
    check_output_path(path)
    directory = os.path.dirname(target) or "."
    blocked = set(_TERMINATING) | {signal.SIGINT}
    with _TempGuard() as guard:
        # Blocked until the name is registered: no signal leaves an unknown file.
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            fd, guard.tmp = tempfile.mkstemp(prefix=os.path.basename(target) + ".tmp.", dir=directory)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with _open_mode(fd, binary) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(guard.tmp, target)
        guard.tmp = None


def replace_directory(tmp, target):
    """Moves the finished folder `tmp` to `target` (both in one directory):
    an existing `target` is first renamed aside, then removed, so that no
    file of it survives and no reader sees half of either. `tmp` gets the
    old folder's mode, or 0777 less the umask for a new one (mkdtemp's
    0700 otherwise). Terminating signals and Ctrl-C are held off until the
    swap is done; when the second rename fails, the old folder is put back."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o777 & ~umask
    os.chmod(tmp, mode)
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(_TERMINATING) | {signal.SIGINT})
    try:
        aside = None
        if os.path.isdir(target):
            aside = tempfile.mkdtemp(prefix=os.path.basename(target) + ".old.", dir=os.path.dirname(target))
            try:
                os.rename(target, aside)  # over the empty folder mkdtemp made
            except BaseException:
                os.rmdir(aside)
                raise
        try:
            os.rename(tmp, target)
        except BaseException:
            if aside is not None:
                os.rename(aside, target)
            raise
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


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
    except Signalled as e:  # the temporary file is gone: die of the signal, as without us
        signal.signal(e.signum, signal.SIG_DFL)
        os.kill(os.getpid(), e.signum)
        return 128 + e.signum
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (UsageError, OSError) as e:
        print(error_line(tool, e), file=sys.stderr)
        return EXIT_USAGE_OR_IO
    except ContentError as e:
        print(error_line(tool, e), file=sys.stderr)
        return EXIT_CONTENT
