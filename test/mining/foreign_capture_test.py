#!/usr/bin/python3
"""kern-capture + kern-mine on a foreign CUDA program (foreign/foreign_app.cpp,
foreign/foreign_kernels.cu: not kern, nothing kern-specific in the path) on
the simulated GPU. Five requests of lengths 384, 385, 512, 513, 1000, each:
foreign_scale (a struct by value, grid ceil(n/128)), foreign_partial (grid
ceil(n/256), writing a scratch buffer) and foreign_reduce (reading it; its
parameters packed in `extra`). Checked: five passes opened by foreign_scale;
the reference chosen by the data is the length n; the grids fit
ceil_div(n, 128) and ceil_div(n, 256), the reduce's block count
ceil_div(n, 256); the scratch buffer is one persistent allocation shared by
the pair; the input is an input, the sum an output; the struct is flagged
with its two pointers found inside; the `extra` launch is flagged with its
parameters split by the driver's layout; nothing unexplained.

Then kern-lift (issue 45): the capture lifts to a manifest whose only TODO
is the struct-by-value site (foreign_scale#0), the other two sites become
kernels pinned to the copied module (the `extra` launch too: its layout is
the driver's), the lift says the kernels run on cuda only, and kern-verify
accepts it with exactly that site as warning W0004.

usage: foreign_capture_test.py KERN_CAPTURE KERN_MINE FOREIGN_APP FATBIN SOURCE_ROOT BUILD_ROOT KERN_LIFT KERN_VERIFY
(FOREIGN_APP and FATBIN empty when nvcc or the CUDA headers are missing.)
Exit 77 (skipped, saying why) when the program or the simulated GPU is not built.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expr_eval  # noqa: E402


def main(argv):
    kern_capture, kern_mine, app, fatbin, src, build, kern_lift, kern_verify = argv[1:9]
    if not app or not fatbin:
        print('SKIP: the foreign program is not built (it needs nvcc and the CUDA headers)')
        return 77
    if not os.path.isfile(os.path.join(build, 'test', 'sim', 'driver', 'libcuda.so.1')):
        print('SKIP: the simulated GPU is not built (test/sim/driver needs the CUDA headers, '
              'its SIMT emulator clang++-14 and Boost.Context)')
        return 77
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'capture')
        r = subprocess.run([kern_capture, '-o', out, '--', os.path.join(src, 'test', 'sim', 'with-sim-gpu'), app,
                            fatbin], env=dict(os.environ, KERN_BUILD_DIR=build), capture_output=True, text=True,
                           timeout=240)
        if r.returncode != 0:
            print(f'FAIL: the captured program exited {r.returncode}: {r.stdout}{r.stderr}')
            return 1
        if r.stdout.count('sum=') != 5:
            errors.append(f'the program did not serve its five requests: {r.stdout}')
        m = subprocess.run([kern_mine, out, '--json'], capture_output=True, text=True, timeout=120)
        if m.returncode != 0:
            print(f'FAIL: kern-mine exit {m.returncode}: {m.stderr}')
            return 1
        res = json.loads(m.stdout)
        errors += check_lift(kern_lift, kern_verify, out, tmp)
        with open(os.path.join(out, 'module_0.fatbin'), 'rb') as f, open(fatbin, 'rb') as g:
            if f.read() != g.read():
                errors.append('module_0.fatbin is not byte for byte the fatbin the program loaded')
    ps = res['passes']
    if ps['count'] != 5 or ps['anchor'] != 'foreign_scale':
        errors.append(f'passes: {ps["count"]} opened by {ps["anchor"]}, expected 5 opened by foreign_scale')
    ns = [p['n'] for p in ps['list']]
    if ns != [384, 385, 512, 513, 1000]:
        errors.append(f'the reference {res["reference"]} gives n = {ns}, expected the lengths 384 385 512 513 1000')
    sites = {s['site']: s for s in res['sites']}
    if sorted(sites) != ['foreign_partial#0', 'foreign_reduce#0', 'foreign_scale#0']:
        errors.append(f'call sites {sorted(sites)}')
        return report(errors)

    def fitted(site, q, expr):
        f = sites[site]['fits'][q]
        if f['verdict'] not in ('const', 'expr') or not expr_eval.same(f['expr'], expr, 1, 4096):
            errors.append(f'{site} {q}: {f}, expected {expr}')

    fitted('foreign_scale#0', 'grid.x', 'ceil_div(n, 128)')
    fitted('foreign_scale#0', 'block.x', '128')
    fitted('foreign_partial#0', 'grid.x', 'ceil_div(n, 256)')
    fitted('foreign_partial#0', 'param[2]', 'n')
    fitted('foreign_reduce#0', 'grid.x', '1')
    fitted('foreign_reduce#0', 'param[2]', 'ceil_div(n, 256)')
    ptr = {(s, p['index']): p for s in sites for p in sites[s]['pointers']}
    scratch_w, scratch_r = ptr.get(('foreign_partial#0', 1)), ptr.get(('foreign_reduce#0', 0))
    if not scratch_w or not scratch_r or scratch_w['class'] != 'persistent' or scratch_w['allocs'] != scratch_r['allocs']:
        errors.append(f'the shared scratch buffer: partial {scratch_w}, reduce {scratch_r}')
    if ptr.get(('foreign_reduce#0', 1), {}).get('class') != 'output':
        errors.append(f'the sum: {ptr.get(("foreign_reduce#0", 1))}, expected output')
    if ptr.get(('foreign_partial#0', 0), {}).get('class') != 'persistent':
        errors.append(f'the scaled buffer: {ptr.get(("foreign_partial#0", 0))}, expected persistent')
    scale = sites['foreign_scale#0']
    if scale['params'] != 1 or len(scale['structs']) != 1 or scale['structs'][0]['size'] != 24:
        errors.append(f'foreign_scale\'s struct parameter: {scale["structs"]}')
    else:
        inner = {c['at']: c['class'] for c in scale['structs'][0]['pointer_candidates']}
        if inner != {0: 'input', 8: 'persistent'}:
            errors.append(f'pointers found inside the struct: {inner}, expected src (+0) input, dst (+8) persistent')
        if scale['structs'][0]['same_bytes_every_pass']:
            errors.append('the struct\'s bytes (its n and src) should change between passes')
    reduce_site = sites['foreign_reduce#0']
    if not reduce_site['extra'] or reduce_site['params_source'] != 'extra' or reduce_site['params'] != 3:
        errors.append(f'the `extra` launch: extra {reduce_site["extra"]}, source {reduce_site["params_source"]}, '
                      f'params {reduce_site["params"]}')
    if res['summary']['unexplained']:
        errors.append(f'unexplained: {res["summary"]["unexplained"]}')
    return report(errors, res)


def check_lift(kern_lift, kern_verify, capture, tmp):
    """kern-lift: exactly the struct site is a TODO, kern-verify warns W0004 for it and nothing else."""
    errors = []
    out = os.path.join(tmp, 'lifted.json')
    r = subprocess.run([kern_lift, capture, '-o', out], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return [f'kern-lift exit {r.returncode}: {r.stderr}']
    with open(out) as f:
        m = json.load(f)
    todos = [(t['site'], t['program']) for t in m.get('todos', [])]
    if todos != [('foreign_scale#0', 'pass_0')] or 'struct' not in m['todos'][0]['why']:
        errors.append(f'lifted TODOs {m.get("todos")}, expected exactly the struct site foreign_scale#0')
    steps = [st for k in m['kernels'].values() for st in k['impl']['steps']]
    if sorted(st['symbol'] for st in steps) != ['foreign_partial', 'foreign_reduce']:
        errors.append(f'lifted kernels {sorted(st["symbol"] for st in steps)}')
    for st in steps:
        if not os.path.isfile(os.path.join(tmp, st.get('cubin') or '-')) or len(st.get('sha256') or '') != 64:
            errors.append(f'{st["symbol"]}: module not copied beside the manifest and pinned ({st.get("cubin")})')
    grid = {st['symbol']: st['grid'][0] for st in steps}
    if grid.get('foreign_partial') != {'ceil_div': [{'sym': 'tokens'}, 256]}:
        errors.append(f'foreign_partial grid.x {grid.get("foreign_partial")}, expected ceil_div(tokens, 256)')
    if 'cuda device' not in r.stdout or 'TODO pass_0: foreign_scale#0' not in r.stdout:
        errors.append(f'kern-lift\'s report does not name the cuda-only kernels and the TODO: {r.stdout}')
    v = subprocess.run([kern_verify, out, '--message-format', 'json', '-o', os.path.join(tmp, 'lifted.kplan')],
                       capture_output=True, text=True, timeout=60)
    found = [json.loads(x) for x in v.stdout.splitlines() if x.startswith('{')]
    codes = [(d.get('code'), d.get('pointer')) for d in found if d.get('code')]
    if v.returncode != 0 or codes != [('W0004', '/todos/0')]:
        errors.append(f'kern-verify on the lifted manifest: exit {v.returncode}, findings {codes}: {v.stderr[-500:]}')
    return errors


def report(errors, res=None):
    for e in errors:
        print('FAIL: ' + e)
    if not errors:
        print(f'ok: {res["passes"]["count"]} passes, reference {res["reference"]["site"]} '
              f'{res["reference"]["quantity"]}, {res["summary"]["verdicts"]}')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
