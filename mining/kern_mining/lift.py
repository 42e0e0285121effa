"""kern-lift: a capture's analysis written as a manifest (docs/mining.md
"kern-lift"). One program per chosen launch sequence, one kernel per
(program, call site) with the captured parameter sizes and the fitted
geometry, one buffer per allocation the launches point into (offsets kept,
so views and kern's arena keep their aliasing), the modules copied beside
the manifest and pinned by sha256, and the weights' snapshots written as
safetensors. What cannot be lifted is a named TODO, never a guess.
"""
import os
import shutil

from . import lift_contract, lift_expr, mine as mine_mod, safetensors_out

SYMBOL = 'tokens'
LIFTABLE = ('weight', 'input', 'output', 'persistent')
MANIFEST_CLASS = {'weight': 'weight', 'input': 'input', 'output': 'output', 'persistent': 'carry'}
SCALAR_TYPE = {1: 'u8', 4: 'u32', 8: 'i64'}
EXTERN_TYPES = {'extern:cublaslt_bf16_tn': 'out', 'extern:cublaslt_bf16_tn_acc': 'inout'}


class LiftError(Exception):
    """A capture kern-lift cannot write a manifest for (the message says why)."""


def _quantity(site_fit, values, name, sym_used):
    """(manifest value, note or None, todo or None) for one grid/block/shared/
    scalar quantity: a fitted const/expr; else, when every launch of this
    program saw one value, that value (the program ran at one size only:
    the note is the quantity's name)."""
    if site_fit['verdict'] == 'const':
        return int(site_fit['expr']), None, None
    if site_fit['verdict'] == 'expr':
        sym_used.add(SYMBOL)
        return lift_expr.parse(site_fit['expr'], SYMBOL), None, None
    if len(set(values)) == 1:
        return values[0], name, None
    return None, None, f'{name} is {site_fit["verdict"]} ({sorted(set(values))[:6]}): not a function of {SYMBOL} ' \
                       'that kern\'s expressions can state'


def choose_programs(result, names=None):
    """{program name: sequence id}: `names` {name: id} when given, else the
    prefill (a sequence run at n > 1) and decode (only ever n = 1) kern-mine
    found, else one program `pass_<id>` per sequence."""
    seqs = {s['id'] for s in result['passes']['sequences']}
    if names:
        for name, sid in names.items():
            if sid not in seqs:
                raise LiftError(f'--program {name}={sid}: kern-mine found sequences {sorted(seqs)}')
        return dict(names)
    by_seq = {}
    for p in result['passes']['list']:
        by_seq.setdefault(p['sequence'], []).append(p['n'])
    multi = [s for s, ns in by_seq.items() if any(n is not None and n > 1 for n in ns)]
    single = [s for s, ns in by_seq.items() if all(n == 1 for n in ns)]
    if result['reference'] is not None and multi and single:
        most = lambda c: max(c, key=lambda s: len(by_seq[s]))  # noqa: E731
        return {'prefill': most(multi), 'decode': most(single)}
    return {f'pass_{s}': s for s in sorted(by_seq)}


def lift(procs, out_json, gap_ms=5.0, programs=None, inputs=None, vocab=None):
    """Lifts `procs` (capture_file.read_capture) for the manifest OUT.json:
    copies the modules it launches beside it (OUT.module_<id>.<kind>), writes
    OUT.safetensors when every weight has a kept snapshot, and returns
    {"manifest" (the dict; the caller writes it), "programs" {name: sequence
    id}, "todos", "notes", "weights" (path or None), "contract" (bool: the
    causal-LM names were found), "foreign_symbols", "modules"}. `programs`
    {name: sequence id}, `inputs` {contract name: allocation id} and `vocab`
    are kern-lift's options. Raises LiftError (more than one process
    launched kernels, an unknown sequence) and OSError."""
    internals = {}
    result = mine_mod.mine(procs, gap_ms, internals)
    active = [i for i, p in enumerate(procs) if p.launches]
    if len(active) != 1:
        raise LiftError(f'{len(active)} processes launched kernels; kern-lift lifts one (capture one process)')
    proc = procs[active[0]]
    passes, sites, ref = internals['passes'], internals['sites'], internals['ref']
    site_json = {s['site']: s for s in result['sites']}
    chosen = choose_programs(result, programs)
    seq_symbols = {s['id']: s['symbols'] for s in result['passes']['sequences']}
    seq_of_pass = {p['index']: p['sequence'] for p in result['passes']['list']}
    by_key = {(s.symbol, s.occurrence): s for s in sites}
    notes, todos = [], []
    if result['summary']['unexplained']:
        notes.append('kern-mine left unexplained: ' + '; '.join(result['summary']['unexplained'][:8]))

    # The sites of each program, in launch order, with this program's samples.
    plan = {}
    for pname, sid in chosen.items():
        pass_ids = {i for i, s in seq_of_pass.items() if s == sid}
        seen, entries = {}, []
        for sym in seq_symbols[sid]:
            k = (sym, seen.get(sym, 0))
            seen[sym] = k[1] + 1
            site = by_key[k]
            entries.append((site, [(p, l) for p, l in site.samples if p.index in pass_ids]))
        plan[pname] = (pass_ids, entries)

    # Allocations: the mined class of every pointer parameter, per allocation.
    alloc_class, typed_bf16, first_use = {}, set(), []
    for pname, (_, entries) in plan.items():
        for site, samples in entries:
            sj = site_json[site.key]
            for ptr in sj['pointers']:
                for a in ptr.get('allocs', []):
                    c = ptr['class']
                    if c not in LIFTABLE:  # its site is a TODO; the allocation takes its class from the others
                        continue
                    old = alloc_class.get(a)
                    rank = ['weight', 'persistent', 'output', 'input']
                    if old is None or rank.index(c) > rank.index(old):
                        alloc_class[a] = c
                    if pname == 'prefill' and a not in first_use:
                        first_use.append(a)
                    if site.symbol in EXTERN_TYPES and ptr['index'] < 3:
                        typed_bf16.add(a)
    if 'prefill' not in plan:
        first_use = [a for a in alloc_class]

    # The caller contract (kern-run's buffer names), when the programs are prefill and decode.
    names, tokens_max, contract_why = {}, None, 'the programs are not a prefill and a decode'
    if set(plan) >= {'prefill', 'decode'} and ref is not None:
        readers = {}
        for site, samples in plan['prefill'][1]:
            l = samples[0][1]
            ptrs = [(p.pointer[1], i) for i, p in enumerate(l.params or []) if p.pointer and p.pointer[0] == 'device']
            consts = [l.params[int(q[6:-1])].uint() for q, f in site_json[site.key]['fits'].items()
                      if q.startswith('param[') and f['verdict'] == 'const']
            weights = [a for a, _ in ptrs if alloc_class.get(a) == 'weight']
            for a, _ in ptrs:
                if a not in readers and weights:
                    readers[a] = (weights[0], consts)
        names, tokens_max, contract_why = lift_contract.infer(
            proc, [p for p in passes if p.process == active[0]],
            [p for p in passes if p.index in plan['prefill'][0]], ref, alloc_class, first_use, readers,
            vocab=vocab, overrides=inputs)
    if contract_why:
        notes.append(f'causal-LM caller contract not named ({contract_why}): the manifest verifies, '
                     'but kern-run cannot drive it')
    if ref is not None and tokens_max is None:
        tokens_max = max(ref.values())

    # Buffers.
    buffers, buf_name = {}, {}
    for a, c in sorted(alloc_class.items()):
        if c not in LIFTABLE:
            continue
        size = proc.allocs[a].size
        if a in names:
            name, dtype, shape, mclass = names[a]
        else:
            dtype = 'bf16' if a in typed_bf16 and size % 2 == 0 else 'u8'
            name, shape, mclass = f'{c}_{a}', [size // (2 if dtype == 'bf16' else 1)], MANIFEST_CLASS[c]
        if a in typed_bf16 and dtype != 'bf16':
            notes.append(f'allocation {a} ({name}) is a GEMM operand but not bf16-sized')
        buf_name[a] = name
        buffers[name] = {'dtype': dtype, 'shape': shape, 'class': mclass}
    mclass_of = {a: buffers[n]['class'] for a, n in buf_name.items()}

    # Kernels and programs: one kernel per (program, call site).
    kernels, progs, modules_used, sym_used = {}, {}, {}, set()
    if any(SYMBOL in b['shape'] for b in buffers.values()):
        sym_used.add(SYMBOL)
    for pname, (_, entries) in plan.items():
        dispatches, output_written = [], set()
        for site, samples in entries:
            step, why = _step(site, samples, site_json[site.key], buf_name, mclass_of, output_written, notes,
                              sym_used, lambda p: ref[p.index] if ref else None)
            if why is not None:
                todos.append({'site': site.key, 'program': pname, 'why': why})
                continue
            if step.get('cubin_module') is not None:
                modules_used[step['cubin_module']] = proc.modules[step['cubin_module']]
            kname = f'{pname}:{site.key}'
            args = step.pop('dispatch_args')
            step.pop('cubin_module', None)
            kernels[kname] = {'params': list(step['params']),
                              'impl': {'steps': [dict(step, args=[{'arg': i} for i in range(len(args))])]}}
            dispatches.append({'kernel': kname, 'label': site.key, 'args': args})
        progs[pname] = {'dispatches': dispatches}

    # Modules beside the manifest, pinned.
    out_dir = os.path.dirname(os.path.abspath(out_json))
    stem = os.path.splitext(os.path.basename(out_json))[0]
    files = {}
    for mid, mrec in sorted(modules_used.items()):
        fname = f'{stem}.{mrec["file"]}'
        files[mid] = fname
        tmp = os.path.join(out_dir, f'.{fname}.part')
        shutil.copyfile(os.path.join(os.path.dirname(proc.path), mrec['file']), tmp)
        os.replace(tmp, os.path.join(out_dir, fname))  # never a partial module under its name
    for k in kernels.values():
        for st in k['impl']['steps']:
            if 'cubin' in st:
                mid = st['cubin']
                st['cubin'], st['sha256'] = files[mid], modules_used[mid]['sha256']
    foreign = sorted({st['symbol'] for k in kernels.values() for st in k['impl']['steps']
                      if not st['symbol'].startswith('extern:')})

    manifest = {'meta': {'version': 2, 'model': f'lifted from a capture of {proc.exe or "a CUDA program"}'}}
    if SYMBOL in sym_used:
        manifest['symbols'] = {SYMBOL: {'min': 1, 'max': tokens_max}}
    manifest.update(buffers=buffers, kernels=kernels, programs=progs)
    if todos:
        manifest['todos'] = todos

    # Weights: the snapshots, as the manifest names them.
    tensors, missing = [], []
    for a, name in buf_name.items():
        if buffers[name]['class'] != 'weight':
            continue
        snap = proc.snapshots.get(a)
        if snap is None:
            missing.append(name)
            continue
        dt = {'bf16': 'BF16', 'u8': 'U8'}[buffers[name]['dtype']]
        tensors.append((name, dt, buffers[name]['shape'], os.path.join(os.path.dirname(proc.path), snap)))
    weights_path = None
    if tensors and not missing:
        weights_path = os.path.splitext(out_json)[0] + '.safetensors'
        safetensors_out.write(weights_path, tensors)
    elif missing:
        notes.append(f'{len(missing)} weights have no kept snapshot ({", ".join(missing[:4])}...): no safetensors '
                     'written (capture with kern-capture --snapshot-weights)')
    return {'manifest': manifest, 'programs': chosen, 'todos': todos, 'notes': notes, 'weights': weights_path,
            'contract': contract_why is None, 'foreign_symbols': foreign, 'modules': sorted(files.values())}


def _step(site, samples, sj, buf_name, mclass_of, output_written, notes, sym_used, ref_of):
    """(step dict with "dispatch_args" and "cubin_module", None) or (None, why)."""
    l = samples[0][1]
    if l.library and l.library.get('why'):
        return None, f'a {l.library["function"]} call that is not kern\'s extern GEMM ({l.library["why"]})'
    if l.params is None:
        return None, f'parameters not readable ({l.layout_error or "no layout"})'
    for i, p in enumerate(l.params):
        if p.struct:
            return None, f'param[{i}] is a {p.size}-byte struct passed by value (its fields are not known)'
        if p.pointer is None and p.size not in SCALAR_TYPE:
            return None, f'param[{i}] is a {p.size}-byte scalar: no manifest parameter type has that size'
    pointers = {p['index']: p for p in sj['pointers']}
    extern = site.symbol in EXTERN_TYPES
    seen_once = []
    params, args = [], []
    for i, p in enumerate(l.params):
        if p.pointer is not None:
            ptr = pointers.get(i)
            if ptr is None or ptr['class'] not in LIFTABLE:
                return None, f'param[{i}] points at {ptr["class"] if ptr else "nothing known"} memory'
            where = {(q.params[i].pointer[1], q.params[i].pointer[2]) for _, q in samples}
            if len(where) != 1:
                return None, f'param[{i}] points at different places in different passes'
            alloc, offset = where.pop()
            if alloc not in buf_name:
                return None, f'param[{i}] points into allocation {alloc}, which no liftable parameter classifies'
            name = buf_name[alloc]
            mclass = mclass_of[alloc]
            if extern:
                kind = 'in' if i < 2 else EXTERN_TYPES[site.symbol]
                params.append(f'{kind} buffer<bf16>')
            else:
                if mclass in ('weight', 'input'):
                    kind = 'in'
                elif mclass == 'output' and name not in output_written:
                    kind = 'out'  # an output's old bytes are not the caller's: the first launch to touch it writes
                else:
                    kind = 'inout'
                params.append(f'{kind} ptr')
            if mclass == 'output':
                output_written.add(name)
            args.append({'buf': name, 'offset': offset})
            continue
        q = f'param[{i}]'
        value, note, todo = _quantity(sj['fits'][q], [x.params[i].uint() for _, x in samples], q, sym_used)
        if todo:
            return None, todo
        if note:
            seen_once.append(note)
        ptype = 'i32' if extern else SCALAR_TYPE[p.size]
        params.append(ptype)
        if isinstance(value, dict):
            args.append({'expr': value})
        elif ptype == 'i64':
            args.append({'i64': value - (1 << 64) if value >= 1 << 63 else value})
        else:
            args.append({ptype: value})
    step = {'symbol': site.symbol, 'params': params}
    grid, block = [], []
    for axis, out in (('grid', grid), ('block', block)):
        for j, a in enumerate('xyz'):
            vals = [getattr(x, axis)[j] for _, x in samples]
            value, note, todo = _quantity(sj['fits'][f'{axis}.{a}'], vals, f'{axis}.{a}', sym_used)
            if todo:
                return None, todo
            if axis == 'block' and isinstance(value, dict):
                return None, f'block.{a} changes with {SYMBOL}: a manifest block is constant'
            if note:
                seen_once.append(note)
            out.append(value)
    shared, note, todo = _quantity(sj['fits']['shared_bytes'], [x.shared_bytes for _, x in samples], 'shared_bytes',
                                   sym_used)
    if todo:
        return None, todo
    if note:
        seen_once.append(note)
    if seen_once:
        ns = sorted({ref_of(p) for p, _ in samples}, key=str)
        notes.append(f'{site.key}: {len(seen_once)} values not decided by the capture (kern-mine: underdetermined), '
                     f'written as seen: this program ran only at n = {", ".join(map(str, ns))}')
    step.update(block=block, grid=grid)
    if shared != 0:
        step['shared_mem'] = shared
    if not extern and l.module is not None:
        step['cubin'] = l.module
        step['cubin_module'] = l.module
        step['sha256'] = None  # filled below from the module record
    step['dispatch_args'] = args
    return step, None
