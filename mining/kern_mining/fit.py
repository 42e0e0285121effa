"""Fitting a launch quantity (a grid or block axis, dynamic shared memory, a
scalar argument) to kern's closed expression set (docs/manifest.md
"Expressions": u64 | sym | ceil_div(e, u64) | mul(e, u64)) over the passes
(docs/mining.md "Fitting").

The samples are (reference value, observed value) pairs, one per pass. The
forms tried: a constant, n, mul(n, k), ceil_div(n, k), mul(ceil_div(n, a), b)
and ceil_div(mul(n, a), b) with gcd(a, b) = 1 (anything else reduces to
these or is deeper than kern's manifests write). The verdict:

- const / expr: with two or more reference values, the simplest forms that
  fit (a constant; else n; else one mul or ceil_div; else two) are kept
  (Occam: a deeper form that also fits is not a rival), and exactly one
  remains. The forms are monotonic, so when a constant fits two reference
  values, every other form that fits is constant between them too;
- runtime: two passes with the same reference value saw different values:
  a value the caller sets per pass (a position, a length), not a function
  of the reference;
- underdetermined: several forms fit and the samples cannot decide between
  them (e.g. one reference value only); all of them are listed;
- unfitted: a function of the reference, but no form fits.
"""
from math import gcd

MAX_MUL_A = 64       # the largest multiplier tried inside ceil_div(mul(n, a), b)
MAX_DIVISOR = 4096   # the largest divisor (a tile size) tried, so a huge value cannot make a fit slow
MAX_CANDIDATES = 8   # candidates listed for an underdetermined quantity


def _ceil(a, b):
    return -(-a // b)


def _divisor_interval(points, scale=1):
    """Integers k >= 2 with ceil(scale * r / k) == o for every (r, o):
    returns (lo, hi) inclusive, or None."""
    lo, hi = 2, None
    for r, o in points:
        v = scale * r
        if o <= 0:
            return None
        lo = max(lo, _ceil(v, o))                   # v / k <= o  =>  k >= v / o
        if o > 1:
            top = (v - 1) // (o - 1)                # v / k > o - 1  =>  k < v / (o - 1)
            hi = top if hi is None else min(hi, top)
    if hi is not None and lo > hi:
        return None
    return lo, hi


class Form:
    """One expression in kern's syntax, its evaluation and its depth (1: n;
    2: one mul or ceil_div; 3: two)."""

    def __init__(self, text, fn, level):
        self.text, self.fn, self.level = text, fn, level


def candidate_forms(points, sym):
    """Every non-constant form that fits all `points` [(r, o)] (r distinct)."""
    refs = [r for r, _ in points]
    max_r = max(refs)
    top = min(max_r, MAX_DIVISOR)
    out = []
    if all(o == r for r, o in points):
        out.append(Form(sym, lambda r: r, 1))
    if all(r > 0 for r in refs):
        ks = {o // r if o % r == 0 else 0 for r, o in points}
        if len(ks) == 1 and (k := ks.pop()) >= 2:
            out.append(Form(f'mul({sym}, {k})', lambda r, k=k: r * k, 2))
    iv = _divisor_interval(points)
    if iv is not None:
        lo, hi = iv
        for k in range(lo, min(hi if hi is not None else top, top) + 1):
            out.append(Form(f'ceil_div({sym}, {k})', lambda r, k=k: _ceil(r, k), 2))
    for a in range(2, top + 1):
        bs = {o // _ceil(r, a) if o % _ceil(r, a) == 0 else 0 for r, o in points}
        if len(bs) == 1 and (b := bs.pop()) >= 2:
            out.append(Form(f'mul(ceil_div({sym}, {a}), {b})', lambda r, a=a, b=b: _ceil(r, a) * b, 3))
    for a in range(2, MAX_MUL_A + 1):
        iv = _divisor_interval(points, scale=a)
        if iv is None:
            continue
        lo, hi = iv
        for b in range(lo, min(hi if hi is not None else a * top, a * top, lo + MAX_DIVISOR) + 1):
            if gcd(a, b) == 1:
                out.append(Form(f'ceil_div(mul({sym}, {a}), {b})', lambda r, a=a, b=b: _ceil(r * a, b), 3))
    return out


def fit(samples, sym='n'):
    """`samples`: [(reference value, observed value)]. Returns a dict:
    {"verdict": "const"|"expr"|"runtime"|"underdetermined"|"unfitted",
     "expr": kern expression text (const and expr), "candidates": [text]
     (underdetermined), "values": [observed, at most 8] (runtime, unfitted)}."""
    by_ref = {}
    for r, o in samples:
        by_ref.setdefault(r, set()).add(o)
    observed = sorted({o for _, o in samples})
    if any(len(v) > 1 for v in by_ref.values()):
        return {'verdict': 'runtime', 'values': observed[:MAX_CANDIDATES]}
    points = sorted((r, next(iter(v))) for r, v in by_ref.items())
    const_fits = len(observed) == 1
    forms = candidate_forms(points, sym) if all(r >= 0 for r, _ in points) and max(r for r, _ in points) > 0 else []
    if len(points) >= 2:
        if const_fits:
            forms = []
        elif forms:
            least = min(f.level for f in forms)
            forms = [f for f in forms if f.level == least]
    else:  # one reference value: list the forms up to one operation deep
        forms = [f for f in forms if f.level <= 2]
    if const_fits and not forms:
        return {'verdict': 'const', 'expr': str(observed[0])}
    if not const_fits and len(forms) == 1:
        return {'verdict': 'expr', 'expr': forms[0].text}
    if not const_fits and not forms:
        return {'verdict': 'unfitted', 'values': observed[:MAX_CANDIDATES],
                'points': [list(p) for p in points[:MAX_CANDIDATES]]}
    texts = ([str(observed[0])] if const_fits else []) + [f.text for f in forms]
    return {'verdict': 'underdetermined', 'candidates': texts[:MAX_CANDIDATES],
            'more': max(0, len(texts) - MAX_CANDIDATES),
            'why': 'one reference value only' if len(points) == 1 else
                   f'{len(texts)} forms fit the {len(points)} reference values seen'}
