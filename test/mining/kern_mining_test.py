#!/usr/bin/python3
"""Unit tests of kern-mine's analysis steps (mining/kern_mining/), on a
recorded capture and on small hand-made records.

fixtures/tiny_requests.jsonl.gz was recorded with
    kern-capture -o DIR -- test/sim/with-sim-gpu build/kern-run/kern-run build/test/run/tiny-qwen3.kplan \
        --weights examples/tiny-qwen3.safetensors --chunk 6 --device cuda --kernels build/kernels --eager \
        --requests R --max-batch 1
with R three requests (prompts of 4, 10 and 15 ids, max_tokens 3); the module
images are replaced by short stand-ins (their records' sha256 and bytes
rewritten), which the tests write beside it.

usage: kern_mining_test.py MINING_BUILD_DIR   (the folder holding kern-mine and kern_mining/)
"""
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

MINING = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..', 'mining')
sys.path.insert(0, MINING)
from kern_mining import align, capture_file, classify, fit, lift, lift_expr, mine, passes  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'tiny_requests.jsonl.gz')


def write_fixture(folder, edit=None):
    """Writes the recorded capture into `folder` (lines passed through `edit`)."""
    with gzip.open(FIXTURE, 'rt') as f:
        lines = f.read().splitlines()
    for line in lines:
        r = json.loads(line)
        if r['event'] == 'module':
            with open(os.path.join(folder, r['file']), 'wb') as m:
                m.write(f'kern-mining fixture: stand-in for module {r["id"]}\n'.encode())
    if edit:
        lines = edit(lines)
    with open(os.path.join(folder, 'launches.jsonl'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return lines


class Folder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='kern-mining-test-')

    def tearDown(self):
        shutil.rmtree(self.dir)

    def error_of(self, edit=None, raw=None):
        write_fixture(self.dir, edit)
        if raw is not None:
            with open(os.path.join(self.dir, 'launches.jsonl'), 'wb') as f:
                f.write(raw)
        with self.assertRaises(capture_file.CaptureError) as cm:
            capture_file.read_capture(self.dir)
        return str(cm.exception)


class CaptureFileTest(Folder):
    def test_reads_the_recorded_capture(self):
        write_fixture(self.dir)
        procs = capture_file.read_capture(self.dir)
        self.assertEqual(len(procs), 1)
        self.assertEqual(len(procs[0].launches), 228)
        self.assertEqual(len(procs[0].modules), 13)
        first = procs[0].launches[0]
        self.assertEqual(first.symbol, 'kern_embedding_bf16')
        self.assertEqual(first.grid, (3, 1, 1))
        self.assertEqual([p.size for p in first.params], [8, 8, 8, 4, 4, 4])
        self.assertEqual(first.params[0].pointer[0], 'device')
        self.assertEqual(first.params[3].uint(), 3)  # the token count
        self.assertTrue(procs[0].ended)

    def test_a_line_cut_in_half_names_the_line(self):
        write_fixture(self.dir)
        with open(os.path.join(self.dir, 'launches.jsonl'), 'rb') as f:
            raw = f.read()
        n = raw.count(b'\n')
        msg = self.error_of(raw=raw[:-40])
        self.assertIn(f'launches.jsonl:{n}: the last line is cut short', msg)

    def test_malformed_json_names_line_and_column(self):
        msg = self.error_of(edit=lambda ls: ls[:4] + ['{"event": "launch", oops}'] + ls[5:])
        self.assertIn('launches.jsonl:5: column 21: malformed JSON', msg)

    def test_a_missing_module_image(self):
        write_fixture(self.dir)
        os.unlink(os.path.join(self.dir, 'module_3.fatbin'))
        with self.assertRaises(capture_file.CaptureError) as cm:
            capture_file.read_capture(self.dir)
        self.assertRegex(str(cm.exception), r'launches.jsonl:\d+: module 3: its image module_3.fatbin is missing')

    def test_a_changed_module_image(self):
        write_fixture(self.dir)
        with open(os.path.join(self.dir, 'module_0.fatbin'), 'ab') as f:
            f.write(b'x')
        with self.assertRaises(capture_file.CaptureError) as cm:
            capture_file.read_capture(self.dir)
        self.assertIn('module_0.fatbin does not match the recorded sha256', str(cm.exception))

    def test_zero_launches(self):
        msg = self.error_of(edit=lambda ls: [l for l in ls if '"event":"launch"' not in l])
        self.assertIn('zero kernel launches recorded', msg)

    def test_a_launch_of_an_unrecorded_module(self):
        def edit(ls):
            i = next(i for i, l in enumerate(ls) if '"event":"launch"' in l)
            r = json.loads(ls[i])
            r['module'] = 99
            return ls[:i] + [json.dumps(r)] + ls[i + 1:]
        self.assertRegex(self.error_of(edit=edit), r'launches.jsonl:\d+: launch of kern_embedding_bf16: module 99 '
                                                   'has no module record')

    def test_a_field_of_the_wrong_type(self):
        def edit(ls):
            i = next(i for i, l in enumerate(ls) if '"event":"launch"' in l)
            r = json.loads(ls[i])
            r['grid'] = [1, 2]
            return ls[:i] + [json.dumps(r)] + ls[i + 1:]
        self.assertIn('"grid" is [1, 2], expected 3 non-negative integers', self.error_of(edit=edit))

    def test_records_before_the_header(self):
        self.assertIn('launches.jsonl:1: the first record must be the "capture" header',
                      self.error_of(edit=lambda ls: ls[1:]))

    def test_not_a_capture_folder(self):
        with self.assertRaises(capture_file.CaptureError) as cm:
            capture_file.read_capture(self.dir)
        self.assertIn('no launches.jsonl', str(cm.exception))


class MalformedRecordsTest(Folder):
    def test_any_field_of_any_shape_is_an_error_with_a_line_never_a_crash(self):
        """150 records of the recorded capture (a fixed seed), one field each
        given a value of another JSON shape: reading and mining either
        succeed or raise CaptureError naming the file and line."""
        import random
        lines = write_fixture(self.dir)
        rng = random.Random(7)
        shapes = [None, 1, -1, 'x', [], {}, True, 1.5, [1, 2, 3], {'a': 1}, '0xzz']
        for _ in range(150):
            ls = list(lines)
            i = rng.randrange(len(ls))
            r = json.loads(ls[i])
            if isinstance(r.get('params'), list) and r['params'] and rng.random() < 0.7:
                p = rng.choice(r['params'])
                p[rng.choice(list(p))] = rng.choice(shapes)
            else:
                r[rng.choice(list(r))] = rng.choice(shapes)
            ls[i] = json.dumps(r)
            with open(os.path.join(self.dir, 'launches.jsonl'), 'w') as f:
                f.write('\n'.join(ls) + '\n')
            try:
                self.assertIsInstance(mine.mine(capture_file.read_capture(self.dir)), dict)
            except capture_file.CaptureError as e:
                self.assertRegex(str(e), r'launches.jsonl(:\d+)?: ', ls[i][:200])


class FakeLaunch:
    def __init__(self, symbol, t_ns, line=0, grid=(1, 1, 1)):
        self.symbol, self.t_ns, self.line, self.grid = symbol, t_ns, line, grid


class FakeProc:
    def __init__(self, launches, pid=1):
        self.launches, self.pid = launches, pid
        self.htods, self.dtohs, self.snapshots = [], [], {}


class PassesTest(Folder):
    def test_the_recorded_capture_splits_into_its_chunks_and_steps(self):
        write_fixture(self.dir)
        ps, info = passes.split_passes(capture_file.read_capture(self.dir))
        self.assertEqual(info['anchor'], 'kern_embedding_bf16')
        self.assertEqual([p.launches[0].grid[0] for p in ps], [3, 1, 1, 1, 6, 3, 1, 1, 1, 6, 6, 2, 1, 1, 1])
        self.assertEqual([len(p.launches) for p in ps], [17, 14, 14, 14, 17, 17, 14, 14, 14, 17, 17, 17, 14, 14, 14])
        self.assertEqual(info['prologue'], [])

    def test_request_windows_cut_at_long_pauses_only(self):
        ms = 1000000
        ls = [FakeLaunch('a', t) for t in (0, 1 * ms, 2 * ms, 3 * ms, 100 * ms, 101 * ms, 102 * ms)]
        self.assertEqual([len(w) for w in passes.request_windows(ls, gap_ms=5)], [4, 3])
        self.assertEqual([len(w) for w in passes.request_windows(ls, gap_ms=200)], [7])

    def test_a_pause_inside_a_pass_is_not_a_request(self):
        ms = 1000000
        seq = ['emb', 'norm', 'mlp', 'emb', 'norm', 'mlp']
        times = [0, 1, 2, 3, 90, 91]  # a slow launch before the second pass's 'mlp'... and one before 'norm'
        ls = [FakeLaunch(s, t * ms, line=i + 1) for i, (s, t) in enumerate(zip(seq, times))]
        ps, info = passes.split_passes([FakeProc(ls)], gap_ms=5)
        self.assertEqual([[l.symbol for l in p.launches] for p in ps], [seq[:3], seq[3:]])
        self.assertEqual(info['windows'], 1)

    def test_slow_launches_inside_passes_change_nothing(self):
        # Issue 47: how fast each launch runs (a busy machine, the simulated
        # GPU's GEMMs, a build that inlines differently) must not change the
        # passes. A 1 s pause before every kern_head_rmsnorm_bf16 (two per
        # pass, 30 pauses, against 15 passes opened by the embedding): cut
        # by time, those pauses opened most windows and their symbol became
        # the anchor; the host copies between passes are the same as before.
        write_fixture(self.dir)
        want, want_info = passes.split_passes(capture_file.read_capture(self.dir))
        want_sites = [s.key for s in align.align_sites(want)]

        def slow(lines):
            out, shift = [], 0
            for line in lines:
                r = json.loads(line)
                if r.get('event') == 'launch' and r.get('symbol') == 'kern_head_rmsnorm_bf16':
                    shift += 1000000000
                if 't_ns' in r:
                    r['t_ns'] += shift
                out.append(json.dumps(r))
            return out
        write_fixture(self.dir, slow)
        got, info = passes.split_passes(capture_file.read_capture(self.dir))
        self.assertEqual(info['anchor'], 'kern_embedding_bf16')
        self.assertEqual(info['windows'], want_info['windows'])
        self.assertEqual([p.symbols() for p in got], [p.symbols() for p in want])
        self.assertEqual([s.key for s in align.align_sites(got)], want_sites)

    def test_windows_are_cut_at_host_copies_when_there_are_any(self):
        ms = 1000000
        seq = ['emb', 'norm', 'mlp', 'emb', 'norm', 'mlp']
        times = [0, 500, 501, 502, 503, 504]   # a long pause before 'norm', none before the second 'emb'
        ls = [FakeLaunch(s, t * ms, line=10 * (i + 1)) for i, (s, t) in enumerate(zip(seq, times))]
        self.assertEqual([len(w) for w in passes.request_windows(ls, 5, copy_lines=[35])], [3, 3])
        self.assertEqual([len(w) for w in passes.request_windows(ls, 5, copy_lines=[5, 65])], [1, 5])  # outside: by time
        self.assertEqual([len(w) for w in passes.request_windows(ls, 5)], [1, 5])
        proc = FakeProc(ls)
        proc.dtohs = [capture_file.HtoD(1, 0, 4, 502 * ms, 35)]
        ps, info = passes.split_passes([proc], gap_ms=5)
        self.assertEqual(info['anchor'], 'emb')
        self.assertEqual([list(p.symbols()) for p in ps], [seq[:3], seq[3:]])
        self.assertEqual(info['windows'], 2)

    def test_set_up_launches_before_the_first_pass_are_a_prologue(self):
        seq = ['init', 'emb', 'x', 'emb', 'x']
        ls = [FakeLaunch(s, i, line=i + 1) for i, s in enumerate(seq)]
        ps, info = passes.split_passes([FakeProc(ls)], gap_ms=5)
        self.assertEqual(info['anchor'], 'emb')
        self.assertEqual(len(ps), 2)
        self.assertEqual(info['prologue'], [{'process': 1, 'line': 1, 'symbol': 'init'}])


class AlignTest(unittest.TestCase):
    def make(self, seqs):
        out, line = [], 0
        for i, s in enumerate(seqs):
            ls = []
            for sym in s:
                line += 1
                ls.append(FakeLaunch(sym, line, line))
            out.append(passes.Pass(0, 0, i, ls))
        return out

    def test_one_launch_of_jitter_is_given_back(self):
        ps = self.make([['a', 'b', 'c'], ['a', 'b', 'c', 'a'], ['b', 'c'], ['a', 'b', 'c']])
        self.assertEqual(align.fix_jitter(ps), 1)
        self.assertEqual([p.symbols() for p in ps], [('a', 'b', 'c')] * 4)

    def test_sites_are_symbol_and_occurrence(self):
        ps = self.make([['a', 'b', 'a'], ['a', 'b', 'a', 'c']])
        sites = align.align_sites(ps)
        self.assertEqual([s.key for s in sites], ['a#0', 'b#0', 'a#1', 'c#0'])
        self.assertEqual([len(s.samples) for s in sites], [2, 2, 2, 1])


class ClassifyTest(unittest.TestCase):
    def proc(self):
        p = FakeProc([FakeLaunch('a', 100)])
        p.htods = [capture_file.HtoD(1, 0, 64, 10, 1),     # before the first launch: loaded once
                   capture_file.HtoD(2, 0, 16, 150, 2)]    # after it: written per pass
        p.dtohs = [capture_file.HtoD(3, 0, 4, 160, 3)]     # read back
        return p

    def cls(self, ptrs):
        return classify.classify_pointer([(0, p) for p in ptrs], [self.proc()])['class']

    def test_the_classes(self):
        self.assertEqual(self.cls([('device', 1, 0)] * 3), 'weight')
        self.assertEqual(self.cls([('device', 2, 8)] * 3), 'input')
        self.assertEqual(self.cls([('device', 3, 0)] * 3), 'output')
        self.assertEqual(self.cls([('device', 4, 0)] * 3), 'persistent')
        self.assertEqual(self.cls([('device', 4, 0), ('device', 4, 256)]), 'workspace')
        self.assertEqual(self.cls([('device', 2, 32)] * 2), 'persistent')  # past the copied bytes
        self.assertEqual(self.cls([('host', 9, 0)] * 2), 'host')
        self.assertEqual(self.cls([('unknown',)] * 2), 'unknown')
        self.assertEqual(self.cls([('device', 4, 0), None]), 'mixed')
        self.assertIsNone(classify.classify_pointer([(0, None)] * 2, [self.proc()]))

    def test_a_kept_snapshot_alone_is_not_a_weight(self):
        p = self.proc()
        p.snapshots = {5: 'alloc_5.bin'}  # bytes unchanged, but never loaded by the host: kernel-restored state
        self.assertEqual(classify.classify_pointer([(0, ('device', 5, 0))] * 2, [p])['class'], 'persistent')


class FitTest(unittest.TestCase):
    def check(self, points, verdict, expr=None):
        r = fit.fit(points)
        self.assertEqual(r['verdict'], verdict, r)
        if expr is not None:
            self.assertEqual(r.get('expr'), expr, r)
        return r

    def test_forms(self):
        self.check([(1, 7), (4, 7), (9, 7)], 'const', '7')
        self.check([(1, 1), (4, 4), (9, 9)], 'expr', 'n')
        self.check([(1, 32), (4, 128), (9, 288)], 'expr', 'mul(n, 32)')
        self.check([(1, 1), (2, 1), (3, 2), (6, 3)], 'expr', 'ceil_div(n, 2)')
        self.check([(1, 8), (2, 8), (5, 16), (8, 16)], 'expr', 'mul(ceil_div(n, 4), 8)')
        # Two operations deep with a ratio: the samples leave close ratios open.
        r = self.check([(1, 2), (2, 3), (3, 5), (4, 6)], 'underdetermined')
        self.assertEqual(r['candidates'][0], 'ceil_div(mul(n, 3), 2)')

    def test_underdetermined_lists_every_form(self):
        r = self.check([(1, 16)], 'underdetermined')
        self.assertEqual(r['candidates'], ['16', 'mul(n, 16)'])
        self.assertEqual(r['why'], 'one reference value only')
        r = self.check([(1, 1), (4, 1), (7, 2), (8, 2)], 'underdetermined')
        self.assertEqual(r['candidates'], ['ceil_div(n, 4)', 'ceil_div(n, 5)', 'ceil_div(n, 6)'])

    def test_runtime_and_unfitted(self):
        self.check([(1, 5), (1, 6), (3, 7)], 'runtime')
        r = self.check([(1, 3), (4, 9), (7, 5)], 'unfitted')
        self.assertEqual(r['points'], [[1, 3], [4, 9], [7, 5]])


class MineTest(Folder):
    def test_the_recorded_capture(self):
        write_fixture(self.dir)
        r = mine.mine(capture_file.read_capture(self.dir))
        self.assertEqual(r['reference']['site'], 'kern_embedding_bf16#0')
        self.assertEqual(r['reference']['quantity'], 'grid.x')
        sites = {s['site']: s for s in r['sites']}
        self.assertEqual(sites['kern_head_rmsnorm_bf16#1']['fits']['grid.x']['expr'], 'ceil_div(n, 2)')
        self.assertEqual(sites['kern_paged_attention_prefill_bf16#0']['fits']['grid.x']['expr'], '4')
        self.assertEqual(sites['kern_paged_attention_prefill_bf16#0']['fits']['grid.y']['expr'], 'n')
        gemv = sites['kern_gemv_rmsnorm_bf16#0']['fits']['grid.x']
        self.assertEqual((gemv['verdict'], gemv['why']), ('underdetermined', 'one reference value only'))
        emb = {p['index']: p['class'] for p in sites['kern_embedding_bf16#0']['pointers']}
        self.assertEqual(emb, {0: 'input', 1: 'weight', 2: 'persistent'})
        self.assertEqual(r['summary']['unexplained'], [])
        self.assertEqual(r['passes']['count'], 15)

    def test_unreadable_parameters_are_unexplained(self):
        def edit(ls):
            out = []
            for l in ls:
                r = json.loads(l)
                if r['event'] == 'launch' and r['symbol'] == 'kern_decode_advance':
                    r['params'], r['layout'], r['layout_error'] = None, None, 'cuFuncGetParamInfo(0): CUresult 500'
                out.append(json.dumps(r))
            return out
        write_fixture(self.dir, edit)
        r = mine.mine(capture_file.read_capture(self.dir))
        self.assertEqual(r['summary']['unexplained'],
                         ['kern_decode_advance#0: parameters not readable (cuFuncGetParamInfo(0): CUresult 500)'])

    def test_the_command(self):
        write_fixture(self.dir)
        exe = os.path.join(MINING, 'kern-mine')
        if not os.path.isfile(exe):
            exe = os.path.join(MINING, 'kern-mine.py')
        r = subprocess.run([sys.executable, exe, self.dir, '--json'], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)['passes']['count'], 15)
        r = subprocess.run([sys.executable, exe, self.dir], capture_output=True, text=True)
        self.assertIn('unexplained: none', r.stdout)
        with open(os.path.join(self.dir, 'launches.jsonl'), 'ab') as f:
            f.write(b'{"event":"launch","seq"')
        r = subprocess.run([sys.executable, exe, self.dir], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r'^kern-mine: error: .*launches.jsonl:\d+: the last line is cut short')
        self.assertNotIn('Traceback', r.stderr)
        self.assertEqual(r.stdout, '')


def matmul_record(beta=0, transa=1, m=3, n=128, k=64, d_address='0x10000', **extra):
    """A cublasLtMatmul library_call record as kern's extern GEMM writes it
    (gemm_mapping.h): A = w (k x n, ld k), B = a (k x m), C = D (n x m)."""
    def op(name, addr, rows, cols, ld):
        return {'name': name, 'address': addr, 'pointer': None,
                'layout': {'type': 14, 'rows': rows, 'cols': cols, 'ld': ld}}
    r = {'event': 'library_call', 'seq': 0, 't_ns': 5, 'library': 'cublasLt', 'function': 'cublasLtMatmul',
         'stream': '0x1', 'in_capture': False, 'result': 0, 'desc_known': True, 'compute_type': 68, 'scale_type': 0,
         'transa': transa, 'transb': 0, 'attributes': [], 'alpha': 1, 'beta': beta,
         'operands': [op('A', '0x20000', k, n, k), op('B', '0x30000', k, m, k), op('C', d_address, n, m, n),
                      op('D', d_address, n, m, n)]}
    r.update(extra)
    return json.dumps(r)


class LibraryCallTest(Folder):
    def read_with(self, *records):
        def edit(ls):
            i = next(i for i, l in enumerate(ls) if '"event":"launch"' in l)
            return ls[:i] + list(records) + ls[i:]
        write_fixture(self.dir, edit)
        return capture_file.read_capture(self.dir)[0]

    def test_kerns_gemm_becomes_its_extern_op_with_kerns_abi(self):
        proc = self.read_with(matmul_record(), matmul_record(beta=1))
        gemm, acc = proc.launches[0], proc.launches[1]
        self.assertEqual((gemm.symbol, acc.symbol), ('extern:cublaslt_bf16_tn', 'extern:cublaslt_bf16_tn_acc'))
        self.assertEqual(proc.library_calls, 2)
        # [a, w, c, m, n, k]: a = B's address, w = A's, c = D's; then the row-major sizes.
        self.assertEqual([p.uint() for p in gemm.params], [0x30000, 0x20000, 0x10000, 3, 128, 64])
        self.assertEqual([p.size for p in gemm.params], [8, 8, 8, 4, 4, 4])

    def test_any_other_matmul_is_named_by_its_function_with_the_reason(self):
        proc = self.read_with(matmul_record(transa=0), matmul_record(beta=0.5), matmul_record(desc_known=False))
        whys = [l.library['why'] for l in proc.launches[:3]]
        self.assertEqual([l.symbol for l in proc.launches[:3]], ['cublasLtMatmul'] * 3)
        self.assertIn('transposes 0/0', whys[0])
        self.assertIn('beta 0.5', whys[1])
        self.assertIn('descriptor was created before', whys[2])

    def test_a_librarys_own_launches_are_left_out(self):
        def edit(ls):
            i = next(i for i, l in enumerate(ls) if '"event":"launch"' in l)
            r = json.loads(ls[i])
            r['in_library'] = 'cublasLtMatmul'
            return ls[:i] + [json.dumps(r)] + ls[i + 1:]
        write_fixture(self.dir, edit)
        proc = capture_file.read_capture(self.dir)[0]
        self.assertEqual((len(proc.launches), proc.library_launches), (227, 1))

    def test_a_malformed_library_call_names_its_line(self):
        def edit(ls):
            return ls[:3] + [matmul_record(operands=[{'name': 'A'}])] + ls[3:]
        self.assertRegex(self.error_of(edit=edit), r'launches.jsonl:4: library_call record: "operands" must be')


class LiftHelpersTest(unittest.TestCase):
    def test_expressions_in_the_manifest_form(self):
        self.assertEqual(lift_expr.parse('ceil_div(mul(n, 2), 4)', 'tokens'),
                         {'ceil_div': [{'mul': [{'sym': 'tokens'}, 2]}, 4]})
        self.assertEqual(lift_expr.parse('16', 'tokens'), 16)
        self.assertEqual(lift_expr.evaluate(lift_expr.parse('mul(ceil_div(n, 3), 5)', 't'), 7), 15)
        for bad in ('ceil_div(n)', 'add(n, 1)', 'mul(n, m)', 'n n'):
            with self.assertRaises(ValueError):
                lift_expr.parse(bad, 'tokens')

    def test_default_programs_are_the_prefill_and_decode_sequences(self):
        result = {'reference': {'site': 'x'}, 'passes': {
            'sequences': [{'id': 0}, {'id': 1}],
            'list': [{'sequence': 1, 'n': 3}, {'sequence': 0, 'n': 1}, {'sequence': 0, 'n': 1}, {'sequence': 1, 'n': 6}]}}
        self.assertEqual(lift.choose_programs(result), {'prefill': 1, 'decode': 0})
        self.assertEqual(lift.choose_programs(result, {'warm': 0}), {'warm': 0})
        with self.assertRaisesRegex(lift.LiftError, r'--program x=7: kern-mine found sequences \[0, 1\]'):
            lift.choose_programs(result, {'x': 7})
        result['reference'] = None  # no per-pass size: one program per sequence
        self.assertEqual(lift.choose_programs(result), {'pass_0': 0, 'pass_1': 1})

    def test_the_fixture_without_gemms_or_snapshots_lifts_without_the_contracts_weights(self):
        folder = tempfile.mkdtemp(prefix='kern-lift-test-')
        try:
            write_fixture(folder)
            out = os.path.join(folder, 'out.json')
            report = lift.lift(capture_file.read_capture(folder), out)
            self.assertTrue(report['contract'])  # the copies name the caller contract
            self.assertIsNone(report['weights'])
            self.assertTrue(any('no kept snapshot' in n for n in report['notes']), report['notes'])
            m = report['manifest']
            self.assertEqual(m['buffers']['token_ids'], {'dtype': 'i64', 'shape': ['tokens'], 'class': 'carry'})
            self.assertEqual(m['buffers']['model.embed_tokens.weight']['shape'], [256, 64])
            self.assertEqual(m['symbols'], {'tokens': {'min': 1, 'max': 512}})
            self.assertEqual(len(m['programs']['prefill']['dispatches']), 17)
            self.assertEqual(len(m['programs']['decode']['dispatches']), 14)
            # --vocab decides the embedding's rows; one that does not divide it is refused by name.
            m2 = lift.lift(capture_file.read_capture(folder), out, vocab=128)['manifest']
            self.assertEqual(m2['buffers']['model.embed_tokens.weight']['shape'], [128, 128])
            # --input moves a name: positions and slot_mapping swap places.
            procs = capture_file.read_capture(folder)
            m4 = lift.lift(procs, out, inputs={'positions': 8})['manifest']
            uses = {a['buf'] for d in m4['programs']['prefill']['dispatches'] for a in d['args'] if 'buf' in a}
            self.assertIn('positions', uses)
            self.assertIn('input_7', m4['buffers'])  # the allocation positions left, now unnamed
            r5 = lift.lift(procs, out, inputs={'position': 8})
            self.assertTrue(any('--input position=8: position is none of' in n for n in r5['notes']), r5['notes'])
            r3 = lift.lift(capture_file.read_capture(folder), out, vocab=3)
            self.assertFalse(r3['contract'])
            self.assertTrue(any('--vocab 3 does not divide' in n for n in r3['notes']), r3['notes'])
        finally:
            shutil.rmtree(folder)


class LiftCommandTest(Folder):
    def lift_cmd(self, *args):
        exe = os.path.join(MINING, 'kern-lift')
        if not os.path.isfile(exe):
            exe = os.path.join(MINING, 'kern-lift.py')
        return subprocess.run([sys.executable, exe, *args], capture_output=True, text=True, timeout=120)

    def test_the_command_writes_the_manifest_and_refuses_bad_options_writing_nothing(self):
        write_fixture(self.dir)
        out = os.path.join(self.dir, 'lifted', 'm.json')
        os.mkdir(os.path.dirname(out))
        r = self.lift_cmd(self.dir, '-o', out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('caller contract: named (causal-LM)', r.stdout)
        with open(out) as f:
            m = json.load(f)
        self.assertEqual(sorted(m['programs']), ['decode', 'prefill'])
        # The modules the lifted steps launch (9 of the 13 loaded), copied and named by the steps.
        pinned = {st['cubin'] for k in m['kernels'].values() for st in k['impl']['steps']}
        copied = {n for n in os.listdir(os.path.dirname(out)) if n.startswith('m.module_')}
        self.assertEqual((pinned, len(copied)), (copied, 9))
        bad = os.path.join(self.dir, 'bad.json')
        for args, code, text in ((['--program', 'prefill'], 2, 'NAME=VALUE'),
                                 (['--program', 'p=x'], 2, 'not a non-negative integer'),
                                 (['--program', 'p=9'], 1, 'kern-mine found sequences [0, 1]'),
                                 (['--gap-ms', '0'], 2, '--gap-ms must be positive')):
            r = self.lift_cmd(self.dir, '-o', bad, *args)
            self.assertEqual(r.returncode, code, (args, r.stderr))
            self.assertIn(text, r.stderr)
            self.assertNotIn('Traceback', r.stderr)
            self.assertFalse(os.path.exists(bad), args)
        r = self.lift_cmd(self.dir, '-o', os.path.join(self.dir, 'm.txt'))
        self.assertEqual(r.returncode, 2)
        r = self.lift_cmd(self.dir, '-o', os.path.join(self.dir, 'no', 'such', 'm.json'))
        self.assertEqual((r.returncode, 'no such folder' in r.stderr), (1, True))


if __name__ == '__main__':
    unittest.main(verbosity=1)
