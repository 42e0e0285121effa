"""The human report of kern-mine (the --json object, rendered as text)."""


def _fit_text(f):
    v = f['verdict']
    if v in ('const', 'expr'):
        return f['expr']
    if v == 'runtime':
        return 'runtime ' + '/'.join(map(str, f['values']))
    if v == 'underdetermined':
        return 'underdetermined {' + ' | '.join(f['candidates']) + (f' | +{f["more"]}' if f['more'] else '') + '}'
    return 'UNFITTED ' + ' '.join(f'{r}->{o}' for r, o in f['points'])


def render(result):
    lines = []
    for p in result['processes']:
        calls = p.get('library_calls', 0)
        lines.append(f'process {p["pid"]} ({p["exe"]}): {p["launches"] - calls} launches'
                     + (f' and {calls} library calls' if calls else '')
                     + (f' ({p["library_launches"]} launches inside them)' if p.get('library_launches') else '')
                     + f', {p["modules"]} modules, {p["allocations"]} allocations, {p["htod_copies"]} host-to-device copies'
                     + (f', {p["snapshots"]} weight snapshots' if p['snapshots'] else ''))
    ps = result['passes']
    lines.append(f'passes: {ps["count"]} in {ps["windows"]} request windows, each opened by {ps["anchor"]}'
                 + (f'; {ps["jitter_launches_moved"]} boundary launches moved (jitter)' if ps['jitter_launches_moved'] else '')
                 + (f'; {len(ps["prologue"])} prologue launches before the first pass' if ps['prologue'] else ''))
    for s in ps['sequences']:
        lines.append(f'  sequence {s["id"]}: {s["launches"]} launches, {s["passes"]} passes')
    ref = result['reference']
    if ref:
        ns = [str(p['n']) for p in ps['list']]
        lines.append(f'reference n = {ref["quantity"]} of {ref["site"]}; per pass: {" ".join(ns)}')
    else:
        lines.append('reference: none (no launch in every pass changes its grid)')
    lines.append('')
    lines.append('call sites:')
    for s in result['sites']:
        f = s['fits']
        grid = ', '.join(_fit_text(f[f'grid.{a}']) for a in 'xyz')
        block = ', '.join(_fit_text(f[f'block.{a}']) for a in 'xyz')
        lines.append(f'  {s["site"]} ({s["passes"]} passes, {s["params"] if s["params"] is not None else "?"} params'
                     + (', via extra' if s['extra'] else '') + f'): grid [{grid}] block [{block}] '
                     f'shared {_fit_text(f["shared_bytes"])}')
        scalars = [f'{k}={_fit_text(v)}' for k, v in f.items() if k.startswith('param[')]
        if scalars:
            lines.append('      scalars: ' + '; '.join(scalars))
        if s['pointers']:
            lines.append('      pointers: ' + '; '.join(
                f'param[{p["index"]}]={p["class"]}' + (f' alloc {",".join(map(str, p["allocs"]))}' if 'allocs' in p else '')
                for p in s['pointers']))
        for st in s['structs']:
            inner = ', '.join(f'+{c["at"]}={c["class"]}' for c in st['pointer_candidates']) or 'none'
            lines.append(f'      struct param[{st["index"]}] ({st["size"]} B, '
                         f'{"same" if st["same_bytes_every_pass"] else "changing"} bytes across passes): '
                         f'pointer candidates {inner}')
    sm = result['summary']
    lines.append('')
    lines.append(f'summary: {sm["sites"]} call sites; fits ' +
                 ', '.join(f'{k} {v}' for k, v in sorted(sm['verdicts'].items())) + '; pointers ' +
                 ', '.join(f'{k} {v}' for k, v in sorted(sm['pointer_classes'].items())))
    if sm['unexplained']:
        lines.append(f'unexplained ({len(sm["unexplained"])}):')
        lines += [f'  {u}' for u in sm['unexplained']]
    else:
        lines.append('unexplained: none')
    for w in result['warnings']:
        lines.append(f'warning: {w}')
    return '\n'.join(lines) + '\n'
