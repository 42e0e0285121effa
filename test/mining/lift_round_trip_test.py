#!/usr/bin/python3
"""The round trip (issue 45's "Done when"): kern-capture --snapshot-weights of
kern-run on the tiny model on the simulated GPU (eager, two prompts, prefill
chunks of 6, --no-prefix-cache) -> kern-lift -> kern-verify -> kern-run of
the lifted plan with the lifted weights on the cpu device gives the greedy
ids the captured run printed. Also checked:

- the same lifted plan on the simulated GPU (its kernels loaded from the
  modules kern-lift copied beside the manifest, CUDA graphs on) gives them too;

- the GEMMs are in the capture as cublasLtMatmul library calls, and kern-mine
  names them by kern's extern op (extern:cublaslt_bf16_tn);
- the lifted prefill and decode programs launch exactly the symbols, in
  order, of the plan that ran (kern-verify --dump of both), extern GEMMs
  included, and there are no TODOs (kern-verify: no warnings W0004);
- kern-lift names the causal-LM caller contract and writes the safetensors
  beside the manifest; the modules are copied and pinned;
- a capture without --snapshot-weights lifts with a note and no weights;
  a folder that is no capture, or an -o that is not .json, is refused
  (exit 1 / 2) and nothing is written.

usage: lift_round_trip_test.py KERN_CAPTURE KERN_MINE KERN_LIFT KERN_RUN KERN_VERIFY PLAN SOURCE_ROOT BUILD_ROOT KERNELS_DIR
Exit 77 (skipped) when the simulated driver is not built.
"""
import json
import os
import subprocess
import sys
import tempfile

PROMPTS = [[1, 2, 3, 4], [5, 9, 2, 7, 1, 3, 8, 6, 4, 10]]
STEPS = 3


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop('timeout', 300), **kw)


def ids_of(stdout):
    return [json.loads(line)['ids'] for line in stdout.splitlines() if line.startswith('{')]


def launch_symbols(kern_verify, plan):
    d = run([kern_verify, '--dump', plan, '--message-format', 'json'])
    if d.returncode != 0:
        raise RuntimeError(f'kern-verify --dump {plan}: {d.stderr}')
    p = json.loads(d.stdout)
    return {pr['name']: [l['symbol'] for l in pr['launches']] for pr in p['programs']}


def main(argv):
    kern_capture, kern_mine, kern_lift, kern_run, kern_verify, plan, src, build, kernels = argv[1:10]
    if not os.path.isfile(os.path.join(build, 'test', 'sim', 'driver', 'libcuda.so.1')):
        print('SKIP: the simulated driver is not built (it needs the CUDA headers)')
        return 77
    sim = os.path.join(src, 'test', 'sim', 'with-sim-gpu')
    weights = os.path.join(src, 'examples', 'tiny-qwen3.safetensors')
    env = dict(os.environ, KERN_BUILD_DIR=build)
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        requests = os.path.join(tmp, 'requests.jsonl')
        with open(requests, 'w') as f:
            for p in PROMPTS:
                f.write(json.dumps({'prompt_ids': p, 'max_tokens': STEPS}) + '\n')
        serve = ['--requests', requests, '--max-batch', '1', '--chunk', '6', '--no-prefix-cache']
        cap = os.path.join(tmp, 'capture')
        r = run([kern_capture, '--snapshot-weights', '-o', cap, '--', sim, kern_run, plan, '--weights', weights,
                 '--device', 'cuda', '--kernels', kernels, '--eager'] + serve, env=env, timeout=600)
        if r.returncode != 0:
            print(f'FAIL: kern-capture exit {r.returncode}: {r.stderr[-2000:]}')
            return 1
        captured_ids = ids_of(r.stdout)
        if len(captured_ids) != len(PROMPTS) or any(len(i) != STEPS for i in captured_ids):
            print(f'FAIL: the captured run printed {captured_ids}')
            return 1

        m = run([kern_mine, cap, '--json'])
        if m.returncode != 0:
            print(f'FAIL: kern-mine exit {m.returncode}: {m.stderr}')
            return 1
        mined = json.loads(m.stdout)
        proc = mined['processes'][0]
        gemm_sites = [s['site'] for s in mined['sites'] if s['symbol'] == 'extern:cublaslt_bf16_tn']
        if not proc['library_calls'] or not gemm_sites:
            errors.append(f'no cublasLtMatmul calls mapped to extern:cublaslt_bf16_tn ({proc})')

        out = os.path.join(tmp, 'lifted', 'lifted.json')
        os.mkdir(os.path.dirname(out))
        lift = run([kern_lift, cap, '-o', out])
        if lift.returncode != 0:
            print(f'FAIL: kern-lift exit {lift.returncode}: {lift.stderr}')
            print(run([kern_mine, cap]).stdout[-6000:])
            return 1
        if 'caller contract: named' not in lift.stdout or 'TODO' in lift.stdout:
            errors.append(f'kern-lift report: {lift.stdout[:1500]}\nkern-mine report: {run([kern_mine, cap]).stdout[-4000:]}')
        lifted_st = os.path.join(tmp, 'lifted', 'lifted.safetensors')
        if not os.path.isfile(lifted_st):
            return report(errors + ['no lifted.safetensors beside the manifest'])
        with open(out) as f:
            manifest = json.load(f)
        if manifest.get('todos'):
            errors.append(f'TODOs on kern-run\'s capture: {manifest["todos"]}')
        for k in manifest['kernels'].values():
            for st in k['impl']['steps']:
                if not st['symbol'].startswith('extern:') and \
                        not os.path.isfile(os.path.join(tmp, 'lifted', st.get('cubin') or '-')):
                    errors.append(f'{st["symbol"]}: module {st.get("cubin")} not beside the manifest')

        kplan = os.path.join(tmp, 'lifted.kplan')
        v = run([kern_verify, out, '-o', kplan, '--message-format', 'json'])
        findings = [json.loads(x) for x in v.stdout.splitlines() if x.startswith('{')]
        bad = [d for d in findings if d.get('code', '').startswith(('E', 'W0004'))]
        if v.returncode != 0 or bad:
            return report(errors + [f'kern-verify lifted.json: exit {v.returncode}, {bad[:5]} {v.stderr[-800:]}'])
        lifted_launches, plan_launches = launch_symbols(kern_verify, kplan), launch_symbols(kern_verify, plan)
        for prog in ('prefill', 'decode'):
            if lifted_launches.get(prog) != plan_launches.get(prog):
                errors.append(f'lifted {prog} launches {lifted_launches.get(prog)} != the plan\'s '
                              f'{plan_launches.get(prog)}')

        cpu = run([kern_run, kplan, '--weights', lifted_st, '--device', 'cpu'] + serve)
        if cpu.returncode != 0:
            return report(errors + [f'kern-run of the lifted plan on cpu: exit {cpu.returncode}: {cpu.stderr[-1500:]}'])
        if ids_of(cpu.stdout) != captured_ids:
            errors.append(f'lifted plan on cpu: ids {ids_of(cpu.stdout)} != the captured run\'s {captured_ids}')

        # The same plan on the simulated GPU, its kernels from the modules copied beside the manifest.
        sim_run = run([sim, kern_run, kplan, '--weights', lifted_st, '--device', 'cuda', '--kernels',
                       os.path.dirname(out)] + serve, env=env)
        if sim_run.returncode != 0 or ids_of(sim_run.stdout) != captured_ids:
            errors.append(f'lifted plan on the simulated GPU: exit {sim_run.returncode}, ids {ids_of(sim_run.stdout)} '
                          f'!= {captured_ids}: {sim_run.stderr[-800:]}')

        # Without --snapshot-weights: the manifest, a note, no weights.
        cap2 = os.path.join(tmp, 'capture-nosnap')
        r = run([kern_capture, '-o', cap2, '--', sim, kern_run, plan, '--weights', weights, '--device', 'cuda',
                 '--kernels', kernels, '--eager'] + serve, env=env, timeout=600)
        out2 = os.path.join(tmp, 'nosnap.json')
        l2 = run([kern_lift, cap2, '-o', out2])
        if r.returncode != 0 or l2.returncode != 0 or 'no safetensors written' not in l2.stdout or \
                os.path.exists(os.path.join(tmp, 'nosnap.safetensors')):
            errors.append(f'lift without snapshots: capture {r.returncode}, lift {l2.returncode}: {l2.stdout[-600:]}'
                          f'{l2.stderr[-300:]}')
        # Refusals: nothing written.
        bad_out = os.path.join(tmp, 'refused.json')
        e1 = run([kern_lift, tmp, '-o', bad_out])
        if e1.returncode != 1 or 'not a kern-capture folder' not in e1.stderr or os.path.exists(bad_out):
            errors.append(f'a folder that is no capture: exit {e1.returncode}: {e1.stderr}')
        e2 = run([kern_lift, cap, '-o', os.path.join(tmp, 'refused.txt')])
        if e2.returncode != 2 or os.path.exists(os.path.join(tmp, 'refused.txt')):
            errors.append(f'-o without .json: exit {e2.returncode}: {e2.stderr}')
    if not errors:
        print(f'ok: captured ids {captured_ids} reproduced by the lifted plan on cpu; '
              f'{len(manifest["kernels"])} kernels, {len(manifest["buffers"])} buffers, {len(gemm_sites)} GEMM sites')
    return report(errors)


def report(errors):
    for e in errors:
        print('FAIL: ' + e)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
