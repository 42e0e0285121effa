"""The whole analysis of a capture (docs/mining.md): passes, call sites,
pointer classes, the reference value chosen by the data, and fits. Returns
one JSON-ready dict (the `kern-mine --json` object)."""
from collections import Counter

from . import align, classify, fit, passes as passes_mod

AXES = 'xyz'
UNEXPLAINED = ('unfitted', 'mixed')


def _quantities(launch):
    """Every fitted quantity of a launch: name -> value."""
    q = {}
    for i, a in enumerate(AXES):
        q[f'grid.{a}'] = launch.grid[i]
        q[f'block.{a}'] = launch.block[i]
    q['shared_bytes'] = launch.shared_bytes
    for i, p in enumerate(launch.params or []):
        if p.data and not p.struct and p.pointer is None and p.size in (1, 2, 4, 8):
            q[f'param[{i}]'] = p.uint()
    return q


def reference_candidates(sites, n_passes):
    """(site, quantity) pairs of launches made once in every pass whose value
    changes between passes: a grid axis, else a scalar argument (a length
    passed to the kernel). Each could be the per-pass size (tokens) the
    other quantities are functions of."""
    out = []
    for s in sites:
        if len(s.samples) != n_passes:
            continue
        values = {}
        for _, l in s.samples:
            for name, v in _quantities(l).items():
                values.setdefault(name, set()).add(v)
        names = [f'grid.{a}' for a in AXES] + sorted((k for k in values if k.startswith('param[')),
                                                     key=lambda k: int(k[6:-1]))
        out += [(s, name) for name in names if len(values.get(name, ())) > 1]
    return out


def fit_site(site, ref_of_pass, sym='n'):
    """Fits every quantity of one site; returns {name: fit result}."""
    samples = {}
    for p, l in site.samples:
        for name, v in _quantities(l).items():
            samples.setdefault(name, []).append((ref_of_pass[p.index], v))
    return {name: fit.fit(pts, sym) for name, pts in samples.items()}


def _score(fits):
    c = Counter(f['verdict'] for site in fits for f in site.values())
    # Then the fewest `runtime` values: a reference that turns a per-pass
    # argument into an expression of n explains more.
    return (c['unfitted'] + c['underdetermined'], c['unfitted'], c['runtime'])


def mine(procs, gap_ms=5.0, internals=None):
    """The analysis as one JSON-ready dict. `internals`, a dict when given,
    also receives the objects behind it (kern-lift reads them): "passes"
    [passes.Pass], "sites" [align.Site] (the order of the dict's sites) and
    "ref" {pass index: n} (None without a reference)."""
    passes, pass_info = passes_mod.split_passes(procs, gap_ms)
    moved = align.fix_jitter(passes)
    passes = [p for p in passes if p.launches]
    sites = align.align_sites(passes)

    # The reference value: the candidate whose choice leaves the fewest
    # quantities unfitted or underdetermined (then: fewest unfitted, fewest
    # runtime; ties: the first seen).
    best = None
    for site, quantity in reference_candidates(sites, len(passes)):
        ref = {p.index: _quantities(l)[quantity] for p, l in site.samples}
        fits = [fit_site(s, ref) for s in sites]
        score = _score(fits)
        if best is None or score < best[0]:
            best = (score, site, quantity, ref, fits)
    if best is None:  # no per-pass size: every quantity against a constant reference
        ref = {p.index: 1 for p in passes}
        reference = None
        fits = [fit_site(s, ref) for s in sites]
    else:
        _, rsite, quantity, ref, fits = best
        reference = {'site': rsite.key, 'symbol': rsite.symbol, 'occurrence': rsite.occurrence,
                     'quantity': quantity, 'name': 'n'}

    if internals is not None:
        internals.update(passes=passes, sites=sites, ref=ref if reference else None)
    out_sites = []
    for s, f in zip(sites, fits):
        out_sites.append(_site_json(s, f, procs))
    sequences = Counter(p.symbols() for p in passes)
    seq_ids = {seq: i for i, (seq, _) in enumerate(sequences.most_common())}
    verdicts = Counter(v['verdict'] for s in out_sites for v in s['fits'].values())
    classes = Counter(p['class'] for s in out_sites for p in s['pointers'])
    unexplained = [f'{s["site"]} {name}: {v["verdict"]}' for s in out_sites for name, v in s['fits'].items()
                   if v['verdict'] in UNEXPLAINED]
    unexplained += [f'{s["site"]} param[{p["index"]}]: pointer classes differ between passes ({p.get("kinds")})'
                    for s in out_sites for p in s['pointers'] if p['class'] in UNEXPLAINED]
    unexplained += [f'{s["site"]}: parameters not readable ({s["layout_error"] or "no layout"})'
                    for s in out_sites if s['params'] is None]
    warnings = []
    for pr in procs:
        if pr.graph_launches:
            warnings.append(f'pid {pr.pid}: {pr.graph_launches} CUDA graph launches; the kernels they ran are not in '
                            'the capture (run the program eager)')
        if pr.captured_launches:
            warnings.append(f'pid {pr.pid}: {pr.captured_launches} launches were made into a CUDA graph being '
                            'captured; they are left out (they ran only when the graph was launched)')
        if pr.failed_launches:
            warnings.append(f'pid {pr.pid}: {pr.failed_launches} launches the driver refused are left out')
        if not pr.ended:
            warnings.append(f'pid {pr.pid}: no end record: the process did not exit normally')
    return {
        'processes': [{'pid': p.pid, 'exe': p.exe, 'launches': len(p.launches), 'modules': len(p.modules),
                       'allocations': len(p.allocs), 'htod_copies': len(p.htods),
                       'graph_launches': p.graph_launches, 'captured_launches': p.captured_launches,
                       'failed_launches': p.failed_launches, 'library_calls': p.library_calls,
                       'library_launches': p.library_launches, 'snapshots': len(p.snapshots), 'ended': p.ended}
                      for p in procs],
        'passes': {'count': len(passes), 'anchor': pass_info['anchor'], 'windows': pass_info['windows'],
                   'gap_ms': gap_ms, 'jitter_launches_moved': moved, 'prologue': pass_info['prologue'],
                   'sequences': [{'id': seq_ids[seq], 'launches': len(seq), 'passes': n, 'symbols': list(seq)}
                                 for seq, n in sequences.most_common()],
                   'list': [{'index': p.index, 'pid': procs[p.process].pid, 'window': p.window,
                             'launches': len(p.launches), 'first_line': p.launches[0].line,
                             'sequence': seq_ids[p.symbols()],
                             'n': ref.get(p.index) if reference else None} for p in passes]},
        'reference': reference,
        'sites': out_sites,
        'summary': {'sites': len(out_sites), 'verdicts': dict(verdicts), 'pointer_classes': dict(classes),
                    'unexplained': unexplained},
        'warnings': warnings,
    }


def _site_json(site, fits, procs):
    first = site.samples[0][1]
    pointers, structs = [], []
    n_params = max(len(l.params or []) for _, l in site.samples)
    for i in range(n_params):
        samples = [(p.process, l.params[i].pointer if l.params and i < len(l.params) else None)
                   for p, l in site.samples]
        c = classify.classify_pointer(samples, procs)
        if c is not None:
            pointers.append({'index': i, **c})
        param = first.params[i] if first.params and i < len(first.params) else None
        if param is not None and param.struct:
            inner = {}
            for p, l in site.samples:
                for at, cls, alloc, off in l.params[i].candidates:
                    inner.setdefault(at, []).append((p.process, (cls, alloc, off)))
            structs.append({'index': i, 'size': param.size,
                            'same_bytes_every_pass': len({l.params[i].data for _, l in site.samples}) == 1,
                            'pointer_candidates': [{'at': at, **classify.classify_pointer(v, procs)}
                                                   for at, v in sorted(inner.items())]})
    return {'site': site.key, 'symbol': site.symbol, 'occurrence': site.occurrence, 'module': first.module,
            'library': first.library,
            'passes': len(site.samples), 'first_line': first.line,
            'params': len(first.params) if first.params is not None else None,
            'layout_error': first.layout_error or None,
            'params_source': first.params_source, 'extra': any(l.extra for _, l in site.samples),
            'fits': fits, 'pointers': pointers, 'structs': structs}
