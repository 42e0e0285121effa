#!/usr/bin/python3
"""kern-capture + kern-mine on kern-run (the tiny model, eager) on the
simulated GPU, checked against the plan kern-run ran (issue 44's "Done when").
kern-run serves three prompts of different lengths one after another in one
process (--requests, --max-batch 1, --eager, --no-prefix-cache: with the
prefix cache on, --requests decodes through decode_batch even at batch 1), so
the capture holds prefill chunks of several sizes and `decode` steps:

- the passes are the prefill chunks and decode steps kern-run ran, in order,
  with the reference value n = the chunk's token count (1 for decode), and
  each pass's kernel sequence is the plan's prefill or decode program (its
  launches: extern GEMMs are the cublasLtMatmul calls, named by their extern op);
- every call site's grid, block and dynamic shared memory agrees with the
  plan's expressions (a fitted expression equals the plan's for every
  tokens value; an underdetermined one lists it), every literal argument
  is fitted to its value, every `expr` argument agrees like a grid;
- every pointer argument's class fits the plan buffer's class;
- every module image is byte for byte a fatbin kern-run loaded;
- --snapshot-weights kept every weight's allocation (the file of its size
  and sha256) and neither an input's nor the KV cache's;
- nothing is unexplained;
- with CUDA graphs (no --eager) both commands say to run eager, and the
  launches made into the graph being captured are left out.

usage: capture_kern_run_test.py KERN_CAPTURE KERN_MINE KERN_RUN KERN_VERIFY PLAN SOURCE_ROOT BUILD_ROOT KERNELS_DIR
Exit 77 (skipped) when the simulated driver is not built.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import expr_eval  # noqa: E402

PROMPTS = [4, 10, 15]   # prompt lengths: prefill of L-1 tokens in chunks, then decode
CHUNK = 6
STEPS = 3

# The mining classes each plan class may show (docs/mining.md "Pointer classes"):
# the capture sees host copies, not the kernels' reads and writes, so state,
# carried values and workspace kern placed at fixed addresses are all
# "persistent"; a carry the host writes per pass (token ids, positions) is
# "input"; a plan input the host never wrote during this run (greedy
# sampling's parameters, left at their initial values) is "persistent".
ALLOWED = {
    'weight': {'weight'},
    'input': {'input', 'persistent'},
    'carry': {'input', 'persistent'},
    'output': {'output'},
    'workspace': {'persistent'},
    'state': {'persistent'},
    'scratch': {'persistent'},
}


def fail(msg):
    print('FAIL: ' + msg)
    return 1


def main(argv):
    kern_capture, kern_mine, kern_run, kern_verify, plan, src, build, kernels = argv[1:9]
    if not os.path.isfile(os.path.join(build, 'test', 'sim', 'driver', 'libcuda.so.1')):
        print('SKIP: the simulated driver is not built (it needs the CUDA headers)')
        return 77
    sim = os.path.join(src, 'test', 'sim', 'with-sim-gpu')
    weights = os.path.join(src, 'examples', 'tiny-qwen3.safetensors')
    env = dict(os.environ, KERN_BUILD_DIR=build)
    with tempfile.TemporaryDirectory() as tmp:
        # One process, the prompts one after another (--max-batch 1): each
        # request is the batch-1 prefill and decode programs.
        requests = os.path.join(tmp, 'requests.jsonl')
        with open(requests, 'w') as f:
            for n in PROMPTS:
                f.write(json.dumps({'prompt_ids': list(range(1, n + 1)), 'max_tokens': STEPS}) + '\n')
        out = os.path.join(tmp, 'capture')
        r = subprocess.run([kern_capture, '--snapshot-weights', '-o', out, '--', sim, kern_run, plan, '--weights', weights,
                            '--requests', requests, '--max-batch', '1', '--chunk', str(CHUNK), '--device', 'cuda',
                            '--kernels', kernels, '--eager', '--no-prefix-cache'], env=env, capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            return fail(f'kern-capture exit {r.returncode}: {r.stderr[-2000:]}')
        m = subprocess.run([kern_mine, out, '--json'], capture_output=True, text=True, timeout=300)
        if m.returncode != 0:
            return fail(f'kern-mine exit {m.returncode}: {m.stderr[-2000:]}')
        result = json.loads(m.stdout)
        snapshots = read_snapshots(out)
        module_errors = check_modules(out, kernels)
        graph_errors = check_graph_run(kern_capture, kern_mine, [sim, kern_run, plan, '--weights', weights,
                                                                 '--prompt-ids', '1,2,3,4,5', '--steps', '4',
                                                                 '--chunk', '4', '--device', 'cuda',
                                                                 '--kernels', kernels], env, tmp)
        human = subprocess.run([kern_mine, out], capture_output=True, text=True, timeout=300)
        if human.returncode != 0 or 'unexplained: none' not in human.stdout:
            return fail('the human report does not say "unexplained: none":\n' + human.stdout[-3000:])
    d = subprocess.run([kern_verify, '--dump', plan, '--message-format', 'json'], capture_output=True, text=True)
    if d.returncode != 0:
        return fail(f'kern-verify --dump: {d.stderr}')
    p = json.loads(d.stdout)
    errors = check(result, p)
    errors += check_snapshots(result, p, snapshots) + module_errors + graph_errors
    for e in errors[:40]:
        print('FAIL: ' + e)
    if errors:
        return 1
    print(f'ok: {result["passes"]["count"]} passes, {len(result["sites"])} call sites, '
          f'{result["summary"]["verdicts"]}, pointers {result["summary"]["pointer_classes"]}')
    return 0


def check_graph_run(kern_capture, kern_mine, command, env, tmp):
    """kern-run with CUDA graphs (no --eager): kern-capture and kern-mine
    both say the graphs' kernels are not recorded and to run eager, and the
    launches made into the graph being captured are left out of the passes."""
    out = os.path.join(tmp, 'graphs')
    r = subprocess.run([kern_capture, '-o', out, '--', *command], env=env, capture_output=True, text=True,
                       timeout=300)
    errors = []
    if r.returncode != 0 or 'CUDA graph launches' not in r.stderr or 'kern-run --eager' not in r.stderr:
        errors.append(f'kern-capture on a graph run: exit {r.returncode}, stderr {r.stderr[-600:]}')
    m = subprocess.run([kern_mine, out, '--json'], capture_output=True, text=True, timeout=300)
    if m.returncode != 0:
        return errors + [f'kern-mine on a graph run: exit {m.returncode}: {m.stderr}']
    res = json.loads(m.stdout)
    proc = res['processes'][0]
    if not proc['graph_launches'] or not proc['captured_launches']:
        errors.append(f'graph run: {proc}')
    if not any('run the program eager' in w for w in res['warnings']):
        errors.append(f'graph run: no warning to run eager in {res["warnings"]}')
    # The prefill chunk (4 tokens), prefill_last's (the 5th) and the eager
    # first decode; the graph's steps unseen.
    if res['passes']['count'] != 3:
        errors.append(f'graph run: {res["passes"]["count"]} passes, expected the 3 launched eagerly')
    return errors


def check_modules(folder, kernels):
    """Every module image the capture wrote is byte for byte one of the
    fatbins kern-run loaded (its size read from the fatbin header)."""
    import hashlib
    loaded = {}
    for name in os.listdir(kernels):
        if name.endswith('.fatbin'):
            with open(os.path.join(kernels, name), 'rb') as f:
                loaded[hashlib.sha256(f.read()).hexdigest()] = name
    images = sorted(n for n in os.listdir(folder) if n.startswith('module_'))
    errors = [] if images else ['the capture wrote no module image']
    for n in images:
        with open(os.path.join(folder, n), 'rb') as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        if not n.endswith('.fatbin') or digest not in loaded:
            errors.append(f'{n} is none of the fatbins in {kernels}')
    return errors


def read_snapshots(folder):
    """{alloc id: (kept, bytes)} from the capture's snapshot records, each
    kept file checked against its recorded size and sha256."""
    import hashlib
    out, sizes = {}, {}
    with open(os.path.join(folder, 'launches.jsonl')) as f:
        for line in f:
            r = json.loads(line)
            if r['event'] == 'alloc':
                sizes[r['id']] = r['bytes']
            if r['event'] != 'snapshot':
                continue
            if r['kept']:
                with open(os.path.join(folder, r['file']), 'rb') as g:
                    data = g.read()
                ok = len(data) == r['bytes'] == sizes[r['alloc']] and hashlib.sha256(data).hexdigest() == r['sha256']
                out[r['alloc']] = (True, ok)
            else:
                out[r['alloc']] = (False, True)
    return out


def check_snapshots(result, p, snapshots):
    """--snapshot-weights: every weight's allocation kept (its file the
    recorded size and sha256), no input's and not the KV cache's."""
    errors = []
    kv_allocs = set()
    for s in result['sites']:
        for ptr in s['pointers']:
            for a in ptr.get('allocs', []):
                kept, ok = snapshots.get(a, (False, True))
                if not ok:
                    errors.append(f'snapshot of allocation {a}: its file does not match its record')
                if ptr['class'] == 'weight' and not kept:
                    errors.append(f'{s["site"]} param[{ptr["index"]}]: weight allocation {a} has no kept snapshot')
                if ptr['class'] == 'input' and kept:
                    errors.append(f'{s["site"]} param[{ptr["index"]}]: input allocation {a} was kept as a weight')
    prefill = program_kernels(p, 'prefill')
    for s in result['sites']:
        launches = [l for l in prefill if l['symbol'] == s['symbol']]
        if s['occurrence'] >= len(launches):
            continue
        for i, arg in enumerate(launches[s['occurrence']]['args']):
            if arg['kind'] == 'state' and arg['name'] == 'kv_cache':
                kv_allocs |= {a for ptr in s['pointers'] if ptr['index'] == i for a in ptr.get('allocs', [])}
    if not kv_allocs:
        errors.append('no call site passes the KV cache')
    for a in kv_allocs:
        if snapshots.get(a, (False, True))[0]:
            errors.append(f'the KV cache (allocation {a}) was kept as a weight: it changes every pass')
    return errors


def program_kernels(p, name):
    """The program's launches as the capture sees them: kernels, and extern
    GEMMs as the cublasLtMatmul calls kern-mine names by their extern op."""
    prog = next(pr for pr in p['programs'] if pr['name'] == name)
    return list(prog['launches'])


def check(result, p):
    errors = []
    tokens_max = next(s['max'] for s in p['symbols'] if s['name'] == 'tokens')
    prefill, decode = program_kernels(p, 'prefill'), program_kernels(p, 'decode')
    programs = {'prefill': prefill, 'decode': decode}
    # With prefill_last (docs/causal-lm-manifest.md) the prompt's last chunk
    # runs it and yields the first id: one decode step fewer.
    last = any(pr['name'] == 'prefill_last' for pr in p['programs'])
    if last:
        programs['prefill_last'] = program_kernels(p, 'prefill_last')
    # Passes: per process, the chunks then the decode steps, with n.
    expected = []
    for n in PROMPTS:
        left = n if last else n - 1
        while left > 0:
            chunk = min(CHUNK, left)
            left -= chunk
            expected.append(('prefill_last' if last and left == 0 else 'prefill', chunk))
        expected += [('decode', 1)] * (STEPS - 1 if last else STEPS)
    passes = result['passes']['list']
    seqs = {s['id']: s['symbols'] for s in result['passes']['sequences']}
    got = []
    for ps in passes:
        symbols = seqs[ps['sequence']]
        kind = next((k for k, prog in programs.items() if [l['symbol'] for l in prog] == symbols), None)
        got.append((kind, ps['n']))
    if got != expected:
        errors.append(f'passes {got} != the chunks and steps run {expected}')
        return errors
    pass_kind = {ps['index']: k for ps, (k, _) in zip(passes, got)}
    if result['summary']['unexplained']:
        errors.append(f'unexplained: {result["summary"]["unexplained"]}')
    bufclass = {i: b['class'] for i, b in enumerate(p['buffers'])}
    for site in result['sites']:
        kinds = {pass_kind[ps['index']] for ps in passes}  # narrowed below
        kinds = set()
        for ps in passes:
            symbols = seqs[ps['sequence']]
            if site['occurrence'] < symbols.count(site['symbol']):
                kinds.add(pass_kind[ps['index']])
        for kind in sorted(kinds):
            launches = [l for l in programs[kind] if l['symbol'] == site['symbol']]
            launch = launches[site['occurrence']]
            step = p['steps'][launch['step']]
            where = f'{site["site"]} ({kind} dispatch {launch["dispatch"]} {launch["label"]})'
            # decode runs at tokens = 1 only: its expressions need to agree
            # with a fit there alone (a call site it shares with prefill_last's
            # one-row head sees literal 1s at every n).
            n_max = 1 if kind == 'decode' else tokens_max
            if not site['symbol'].startswith('extern:'):  # an extern op's geometry is the library's
                for i, a in enumerate('xyz'):
                    check_fit(errors, f'{where} grid.{a}', site['fits'][f'grid.{a}'], step['grid'][i], n_max)
                    check_fit(errors, f'{where} block.{a}', site['fits'][f'block.{a}'], str(step['block'][i]),
                              n_max)
                check_fit(errors, f'{where} shared_bytes', site['fits']['shared_bytes'], step['shared_mem'] or '0',
                          n_max)
            pointers = {x['index']: x for x in site['pointers']}
            for i, arg in enumerate(launch['args']):
                if arg['kind'] in ('buffer', 'state', 'scratch'):
                    plan_class = bufclass[arg['index']] if arg['kind'] == 'buffer' else arg['kind']
                    got_class = pointers.get(i, {}).get('class')
                    if got_class not in ALLOWED[plan_class]:
                        errors.append(f'{where} param[{i}] ({arg["name"]}, plan class {plan_class}): '
                                      f'mined class {got_class}')
                elif arg['kind'] == 'literal':
                    value = int(arg['bits'], 16)
                    check_fit(errors, f'{where} param[{i}]', site['fits'].get(f'param[{i}]'), str(value), n_max)
                elif arg['kind'] == 'expr':
                    check_fit(errors, f'{where} param[{i}]', site['fits'].get(f'param[{i}]'), arg['expr'], n_max)
    return errors


def check_fit(errors, where, fit, plan_expr, tokens_max):
    if fit is None:
        errors.append(f'{where}: not fitted (plan: {plan_expr})')
        return
    plan_expr = plan_expr.replace('tokens', 'n')
    if fit['verdict'] in ('const', 'expr'):
        if not expr_eval.same(fit['expr'], plan_expr, 1, tokens_max):
            errors.append(f'{where}: fitted {fit["expr"]}, the plan has {plan_expr}')
    elif fit['verdict'] == 'underdetermined':
        if not any(expr_eval.same(c, plan_expr, 1, tokens_max) for c in fit['candidates']):
            errors.append(f'{where}: underdetermined {fit["candidates"]} without the plan\'s {plan_expr}')
    else:
        errors.append(f'{where}: {fit["verdict"]} ({fit}); the plan has {plan_expr}')


if __name__ == '__main__':
    sys.exit(main(sys.argv))
