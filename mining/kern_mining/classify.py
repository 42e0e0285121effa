"""Pointer classes across passes (docs/mining.md "Pointer classes").

For one parameter of one call site, the (allocation, offset) it points at in
every pass, and what the host copied where:

- input: the bytes it points at are written by a host-to-device copy after
  the process's first launch (the caller fills it per pass);
- output: the bytes it points at are read back by a device-to-host copy
  after the first launch (and never written by the host then);
- weight: the same address in every pass, written by host-to-device copies
  only before the first launch. (A kept --snapshot-weights snapshot does
  not decide it: kernels may write and restore bytes, as kern's decode
  counters and sampling histogram do, and those would look read-only.)
- persistent: the same address in every pass, never written by the host
  (a KV cache, a carried value, or workspace the program placed at a fixed
  address: the launch stream does not say whether its bytes live on);
- workspace: an address that changes between passes (per-pass memory);
- host / unknown: a pinned host buffer, or an address in no recorded
  allocation; mixed: not the same kind of value in every pass.
"""


def _covered(htods, alloc, offset, before=None, after=None):
    for h in htods:
        if h.alloc == alloc and h.offset <= offset < h.offset + h.size:
            if (before is None or h.t_ns < before) and (after is None or h.t_ns >= after):
                return True
    return False


def classify_pointer(samples, procs):
    """`samples`: [(process index, pointer tuple or None)] over the passes of
    one site parameter. Returns {"class", ...details} or None when no
    sample is a pointer."""
    kinds = {p[0] if p else None for _, p in samples}
    if kinds == {None}:
        return None
    if len(kinds) > 1:
        return {'class': 'mixed', 'kinds': sorted(k or 'scalar' for k in kinds)}
    kind = kinds.pop()
    if kind in ('host', 'unknown'):
        return {'class': kind}
    by_proc = {}
    for pi, p in samples:
        by_proc.setdefault(pi, set()).add((p[1], p[2]))
    stable = all(len(v) == 1 for v in by_proc.values())
    written_per_pass = read_back = weight_like = False
    for pi, addrs in by_proc.items():
        proc = procs[pi]
        start = proc.launches[0].t_ns if proc.launches else 0
        for alloc, offset in addrs:
            if _covered(proc.htods, alloc, offset, after=start):
                written_per_pass = True
            if _covered(proc.dtohs, alloc, offset, after=start):
                read_back = True
            if _covered(proc.htods, alloc, offset, before=start):
                weight_like = True
    where = sorted({(a, o) for v in by_proc.values() for a, o in v})
    detail = {'allocs': sorted({a for a, _ in where}), 'offsets': sorted({o for _, o in where})[:8]}
    if written_per_pass:
        return {'class': 'input', **detail}
    if read_back:
        return {'class': 'output', **detail}
    if not stable:
        return {'class': 'workspace', **detail}
    if weight_like:
        return {'class': 'weight', **detail}
    return {'class': 'persistent', **detail}
