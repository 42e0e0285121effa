"""Splitting a capture into forward passes (docs/mining.md "Passes").

1. Request windows: each process is a window, cut further where the host
   copied data between two launches (a host-to-device or device-to-host
   copy record between their lines: a new request's inputs, a result read
   back). That is the launch order, not timing, so the windows, the anchor
   and the passes are the same on a busy machine and whichever launches
   happen to be slow (issue 47: a simulated GEMM slower than 20 median gaps
   once opened windows of its own and became the anchor). A process that
   copies nothing between two launches is cut where the time between two
   launches exceeds `gap_ms` and is 20 times the process's median gap (the
   host waited for a new request). A window must open with the anchor
   (below): a cut before any other launch was inside a pass (a busy
   machine's slow launch, a value read back mid-pass), and the window is
   merged back.
2. The pass anchor: a window starts with a pass, so the symbol that opens
   the windows (after a prologue of launches whose symbol occurs only once
   in the capture: set-up work) starts every pass. The anchor is the most
   common opener; each window is cut before every occurrence of it.
3. ±1 launch jitter: a pass whose launch sequence is one launch longer at
   its end than a sequence seen in other passes, followed by a pass one
   shorter at its start, gives that launch back (align.fix_jitter).
"""
import bisect
from collections import Counter
from dataclasses import dataclass
from statistics import median


@dataclass
class Pass:
    process: int       # index of the process (capture_file.read_capture order)
    window: int        # request window, counted over the whole capture
    index: int         # pass number over the whole capture
    launches: list     # [capture_file.Launch]

    def symbols(self):
        return tuple(l.symbol for l in self.launches)


def request_windows(launches, gap_ms, copy_lines=()):
    """Cuts one process's launches into request windows; returns lists of
    launches. `copy_lines`: the capture lines of the process's host copies
    (htod and dtoh records); when one lies between two launches, the
    windows are cut at such copies only, else at long pauses (`gap_ms`)."""
    if not launches:
        return []
    copy_lines = sorted(copy_lines)
    # A copy record between launches a and b: the first copy line after a's is before b's.
    after = [bisect.bisect_right(copy_lines, a.line) for a in launches[:-1]]
    copied = [i < len(copy_lines) and copy_lines[i] < b.line for i, b in zip(after, launches[1:])]
    if any(copied):
        windows, current = [], [launches[0]]
        for cut, launch in zip(copied, launches[1:]):
            if cut:
                windows.append(current)
                current = []
            current.append(launch)
        windows.append(current)
        return windows
    gaps = [b.t_ns - a.t_ns for a, b in zip(launches, launches[1:])]
    typical = median(gaps) if gaps else 0
    threshold = max(gap_ms * 1e6, 20 * typical)
    windows, current = [], [launches[0]]
    for gap, launch in zip(gaps, launches[1:]):
        if gap > threshold:
            windows.append(current)
            current = []
        current.append(launch)
    windows.append(current)
    return windows


def split_passes(procs, gap_ms=5.0):
    """Returns (passes, info): the passes in capture order and how they were
    found ({"anchor", "windows", "prologue": [launch lines], "gap_ms"})."""
    counts = Counter(l.symbol for p in procs for l in p.launches)
    windows = []  # (process index, launches)
    for pi, proc in enumerate(procs):
        copies = [c.line for c in proc.htods] + [c.line for c in proc.dtohs]
        for w in request_windows(proc.launches, gap_ms, copies):
            windows.append((pi, w))
    openers = Counter()
    for _, w in windows:
        for l in w:
            if counts[l.symbol] > 1:
                openers[l.symbol] += 1
                break
    if not openers:  # every symbol once: the whole capture is one pass
        anchor = None
    else:
        best = max(openers.values())
        anchor = next(s for s in (l.symbol for _, w in windows for l in w) if openers.get(s) == best)
    # A request opens with a pass: a cut followed by anything but the anchor
    # was inside a pass, not a new request (merged back).
    merged = []
    for pi, w in windows:
        if merged and merged[-1][0] == pi and anchor is not None and w[0].symbol != anchor:
            merged[-1] = (pi, merged[-1][1] + w)
        else:
            merged.append((pi, w))
    windows = merged
    passes, prologue = [], []
    for wi, (pi, w) in enumerate(windows):
        current = None
        for l in w:
            if anchor is None or l.symbol == anchor:
                if current is None or anchor is not None:
                    current = Pass(pi, wi, len(passes), [])
                    passes.append(current)
            if current is None:
                prologue.append({'process': procs[pi].pid, 'line': l.line, 'symbol': l.symbol})
            else:
                current.launches.append(l)
    info = {'anchor': anchor, 'windows': len(windows), 'gap_ms': gap_ms, 'prologue': prologue}
    return passes, info
