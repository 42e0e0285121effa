"""Splitting a capture into forward passes (docs/mining.md "Passes").

1. Request windows: each process is a window, cut further where the time
   between two launches exceeds `gap_ms` and is 20 times the process's
   median gap (the host waited for a new request). A window must open with
   the anchor (below): a gap before any other launch was a slow launch
   inside a pass (a busy machine), and the window is merged back.
2. The pass anchor: a window starts with a pass, so the symbol that opens
   the windows (after a prologue of launches whose symbol occurs only once
   in the capture: set-up work) starts every pass. The anchor is the most
   common opener; each window is cut before every occurrence of it.
3. ±1 launch jitter: a pass whose launch sequence is one launch longer at
   its end than a sequence seen in other passes, followed by a pass one
   shorter at its start, gives that launch back (align.fix_jitter).
"""
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


def request_windows(launches, gap_ms):
    """Cuts one process's launches at request gaps; returns lists of launches."""
    if not launches:
        return []
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
        for w in request_windows(proc.launches, gap_ms):
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
    # A request opens with a pass: a time gap followed by anything but the
    # anchor was a slow launch inside a pass, not a new request (merged back).
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
