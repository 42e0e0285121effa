"""Call-site alignment (docs/mining.md "Call sites"): a call site is
(symbol, occurrence of that symbol within its pass); eager launch sequences
are deterministic, so the k-th launch of a symbol in every pass is the same
line of the program. One launch of jitter at a pass boundary is given back
to the pass it belongs to first (fix_jitter)."""
from collections import Counter, defaultdict
from dataclasses import dataclass, field


@dataclass
class Site:
    symbol: str
    occurrence: int
    samples: list = field(default_factory=list)  # [(Pass, Launch)], one per pass that has it

    @property
    def key(self):
        return f'{self.symbol}#{self.occurrence}'


def fix_jitter(passes):
    """Moves a boundary launch between neighbouring passes when that turns
    both into launch sequences seen elsewhere in the capture (seen twice or
    more). Returns the number of launches moved."""
    common = {s for s, n in Counter(p.symbols() for p in passes).items() if n >= 2}
    moved = 0
    for a, b in zip(passes, passes[1:]):
        if a.process != b.process or a.window != b.window:
            continue
        sa, sb = a.symbols(), b.symbols()
        if sa in common and sb in common:
            continue
        if len(sa) > 1 and sa[:-1] in common and (sa[-1],) + sb in common:
            b.launches.insert(0, a.launches.pop())
            moved += 1
        elif len(sb) > 1 and sb[1:] in common and sa + (sb[0],) in common:
            a.launches.append(b.launches.pop(0))
            moved += 1
    return moved


def align_sites(passes):
    """The call sites in first-seen order, each with its samples."""
    sites = {}
    order = []
    for p in passes:
        seen = defaultdict(int)
        for l in p.launches:
            k = (l.symbol, seen[l.symbol])
            seen[l.symbol] += 1
            if k not in sites:
                sites[k] = Site(l.symbol, k[1])
                order.append(k)
            sites[k].samples.append((p, l))
    return [sites[k] for k in order]
