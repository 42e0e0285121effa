"""Reading a kern-capture folder (docs/mining.md "The capture format").

Every problem is a CaptureError naming the file and line, never a Python
traceback: a line cut in half, malformed JSON, a record missing a field or
with a field of the wrong type, a module image that is missing or does not
match its sha256, a launch naming an unrecorded module, zero launches.
"""
import glob
import hashlib
import json
import os
from dataclasses import dataclass, field

from . import library_calls


class CaptureError(Exception):
    """A capture that cannot be analysed; str() is 'PATH[:LINE]: message'."""

    def __init__(self, path, line, message):
        super().__init__(f'{path}:{line}: {message}' if line else f'{path}: {message}')


@dataclass
class Param:
    """One kernel parameter of one launch (sizes and offsets in bytes)."""
    offset: int
    size: int
    data: bytes            # its bytes (b'' when the capture could not read them)
    pointer: tuple = None  # ('device'|'host', alloc id, offset) or ('unknown',) or None (not an address)
    struct: bool = False   # passed by value, size not 1/2/4/8
    candidates: list = field(default_factory=list)  # [(at, class, alloc, offset)] pointers found inside a struct

    def uint(self):
        """The little-endian unsigned value of a 1/2/4/8-byte parameter."""
        return int.from_bytes(self.data, 'little')


@dataclass
class Launch:
    index: int        # position among the process's executed launches
    line: int         # line in launches.jsonl
    t_ns: int
    symbol: str
    module: int
    grid: tuple
    block: tuple
    shared_bytes: int
    stream: str
    params: list      # [Param] or None (layout unknown)
    params_source: str
    extra: bool       # parameters travelled in `extra`
    attributes: list
    layout_error: str = ''  # why the parameters could not be read (params None)
    library: dict = None    # a library call (library_calls.py): {"library", "function", "extern", "why"}


@dataclass
class Alloc:
    id: int
    base: int
    size: int
    host: bool
    t_ns: int
    free_t_ns: int = None


@dataclass
class HtoD:
    """A host-to-device copy (or, in Process.dtohs, a device-to-host one)."""
    alloc: int
    offset: int
    size: int
    t_ns: int
    line: int


@dataclass
class Process:
    """What one CUDA process of the capture recorded."""
    path: str
    pid: int = 0
    exe: str = ''
    modules: dict = field(default_factory=dict)     # id -> record
    allocs: dict = field(default_factory=dict)      # id -> Alloc
    htods: list = field(default_factory=list)
    dtohs: list = field(default_factory=list)       # HtoD records of device-to-host copies
    launches: list = field(default_factory=list)    # executed launches only
    captured_launches: int = 0                      # made into a CUDA graph being captured
    failed_launches: int = 0                        # the driver refused them
    graph_launches: int = 0
    library_calls: int = 0                          # library_call records (each also a Launch)
    library_launches: int = 0                       # kernels launched inside a library call (its own)
    snapshots: dict = field(default_factory=dict)   # alloc id -> file (kept snapshots)
    ended: bool = False


def _need(rec, key, types, path, line):
    """rec[key], checked against `types` (a bool is not an integer here)."""
    types = types if isinstance(types, tuple) else (types,)
    if key not in rec:
        raise CaptureError(path, line, f'{rec.get("event")} record has no "{key}"')
    v = rec[key]
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
        raise CaptureError(path, line, f'{rec.get("event")} record: "{key}" is {json.dumps(v)[:40]}, '
                                       f'expected {_type_names(types)}')
    return v


def _type_names(types):
    types = types if isinstance(types, tuple) else (types,)
    names = {int: 'an integer', str: 'a string', list: 'a list', bool: 'true or false', dict: 'an object',
             type(None): 'null'}
    return ' or '.join(names.get(t, t.__name__) for t in types)


def _dims(rec, key, path, line):
    v = _need(rec, key, list, path, line)
    if len(v) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v):
        raise CaptureError(path, line, f'launch record: "{key}" is {json.dumps(v)}, expected 3 non-negative integers')
    return tuple(v)


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _pointer(p):
    """A parameter's "pointer" value as a tuple; ValueError when malformed."""
    if p is None:
        return None
    if not isinstance(p, dict) or p.get('class') not in ('device', 'host', 'unknown'):
        raise ValueError('"pointer" must be null or {"class": "device"|"host"|"unknown", ...}')
    if p['class'] == 'unknown':
        return ('unknown',)
    if not _int(p.get('alloc')) or not _int(p.get('offset')):
        raise ValueError('"pointer" needs integer "alloc" and "offset"')
    return (p['class'], p['alloc'], p['offset'])


def _candidate(c):
    if not isinstance(c, dict) or not all(_int(c.get(k)) for k in ('at', 'alloc', 'offset')) or \
            c.get('class') not in ('device', 'host'):
        raise ValueError('a struct pointer candidate must be {"at", "class", "alloc", "offset"}')
    return (c['at'], c['class'], c['alloc'], c['offset'])


def _parse_params(rec, path, line):
    params = rec.get('params')
    if params is None:
        return None
    if not isinstance(params, list):
        raise CaptureError(path, line, 'launch record: "params" is not a list')
    out = []
    for i, p in enumerate(params):
        try:
            if not isinstance(p, dict):
                raise ValueError('not an object')
            if not _int(p.get('offset')) or not _int(p.get('size')):
                raise ValueError('"offset" and "size" must be non-negative integers')
            raw = p.get('bytes')
            if raw is not None and not isinstance(raw, str):
                raise ValueError('"bytes" must be a hex string or null')
            data = bytes.fromhex(raw) if raw is not None else b''
            if raw is not None and len(data) != p['size']:
                raise ValueError(f'{len(data)} bytes, its size says {p["size"]}')
            candidates = p.get('candidates', [])
            if not isinstance(candidates, list):
                raise ValueError('"candidates" must be a list')
            out.append(Param(offset=p['offset'], size=p['size'], data=data, pointer=_pointer(p.get('pointer')),
                             struct=p.get('struct', False) is True, candidates=[_candidate(c) for c in candidates]))
        except ValueError as e:
            raise CaptureError(path, line, f'launch record: params[{i}]: {e}')
    return out


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


def read_process(path):
    """Reads one launches.jsonl (and checks the module images beside it)."""
    proc = Process(path=path)
    folder = os.path.dirname(path)
    try:
        with open(path, 'rb') as f:
            raw = f.read()
    except OSError as e:
        raise CaptureError(path, 0, f'cannot read: {e.strerror}')
    lines = raw.split(b'\n')
    if lines and lines[-1] == b'':
        lines.pop()
    elif lines:
        raise CaptureError(path, len(lines), 'the last line is cut short (no newline): the capture was truncated '
                                             '(did the program or the disk stop while it ran?)')
    saw_header = False
    for n, text in enumerate(lines, start=1):
        try:
            rec = json.loads(text.decode('utf-8'))
        except UnicodeDecodeError:
            raise CaptureError(path, n, 'not UTF-8 text')
        except json.JSONDecodeError as e:
            raise CaptureError(path, n, f'column {e.colno}: malformed JSON ({e.msg})')
        if not isinstance(rec, dict) or not isinstance(rec.get('event'), str):
            raise CaptureError(path, n, 'a record must be a JSON object with an "event" string')
        ev = rec['event']
        try:
            saw_header = _read_record(proc, rec, ev, saw_header, folder, path, n)
        except (KeyError, TypeError, ValueError, AttributeError) as e:  # a field of a shape not checked above
            raise CaptureError(path, n, f'malformed "{ev}" record ({type(e).__name__}: {e})')
    if not saw_header:
        raise CaptureError(path, 0, 'empty: no "capture" header (the process recorded nothing)')
    return proc


def _read_record(proc, rec, ev, saw_header, folder, path, n):
    """Applies one record to `proc`; returns whether the header was seen."""
    if not saw_header and ev != 'capture':
        raise CaptureError(path, n, f'the first record must be the "capture" header, not "{ev}"')
    if ev == 'capture':
        if saw_header:
            raise CaptureError(path, n, 'a second "capture" header: two captures were written into one file')
        saw_header = True
        fmt = _need(rec, 'format', int, path, n)
        if fmt != 1:
            raise CaptureError(path, n, f'capture format {fmt}; this kern-mine reads format 1')
        proc.pid = _need(rec, 'pid', int, path, n)
        proc.exe = rec.get('exe') or ''
    elif proc.ended:
        raise CaptureError(path, n, f'a "{ev}" record after the "end" record')
    elif ev == 'module':
        mid = _need(rec, 'id', int, path, n)
        fname = _need(rec, 'file', (str, type(None)), path, n)
        if fname is not None:
            image = os.path.join(folder, fname)
            if not os.path.isfile(image):
                raise CaptureError(path, n, f'module {mid}: its image {fname} is missing from the capture folder')
            if _sha256_file(image) != _need(rec, 'sha256', str, path, n):
                raise CaptureError(path, n, f'module {mid}: {fname} does not match the recorded sha256 '
                                            '(the image was changed or cut short after the capture)')
        proc.modules[mid] = rec
    elif ev == 'alloc':
        aid = _need(rec, 'id', int, path, n)
        base = _need(rec, 'base', str, path, n)
        try:
            base_v = int(base, 16)
        except ValueError:
            raise CaptureError(path, n, f'alloc record: "base" is {json.dumps(base)}, expected "0x..." hex')
        proc.allocs[aid] = Alloc(aid, base_v, _need(rec, 'bytes', int, path, n), bool(rec.get('host')),
                                 _need(rec, 't_ns', int, path, n))
    elif ev == 'free':
        aid = _need(rec, 'alloc', (int, type(None)), path, n)
        if aid is not None:
            if aid not in proc.allocs:
                raise CaptureError(path, n, f'free record: allocation {aid} was never recorded')
            proc.allocs[aid].free_t_ns = _need(rec, 't_ns', int, path, n)
    elif ev == 'htod':
        aid = _need(rec, 'alloc', (int, type(None)), path, n)
        if aid is not None:
            proc.htods.append(HtoD(aid, _need(rec, 'offset', int, path, n), _need(rec, 'bytes', int, path, n),
                                   _need(rec, 't_ns', int, path, n), n))
    elif ev == 'dtoh':
        aid = _need(rec, 'alloc', (int, type(None)), path, n)
        if aid is not None:
            proc.dtohs.append(HtoD(aid, _need(rec, 'offset', int, path, n), _need(rec, 'bytes', int, path, n),
                                   _need(rec, 't_ns', int, path, n), n))
    elif ev == 'launch':
        _read_launch(proc, rec, path, n)
    elif ev == 'library_call':
        _read_library_call(proc, rec, path, n)
    elif ev == 'graph_launch':
        proc.graph_launches += 1
    elif ev == 'snapshot':
        if rec.get('kept'):
            proc.snapshots[_need(rec, 'alloc', int, path, n)] = _need(rec, 'file', str, path, n)
    elif ev == 'end':
        proc.ended = True
    else:
        raise CaptureError(path, n, f'unknown event "{ev}"')
    return saw_header


def _read_launch(proc, rec, path, n):
    symbol = _need(rec, 'symbol', (str, type(None)), path, n)
    module = _need(rec, 'module', (int, type(None)), path, n)
    if module is not None and module not in proc.modules:
        raise CaptureError(path, n, f'launch of {symbol}: module {module} has no module record before it')
    result = _need(rec, 'result', int, path, n)
    in_capture = _need(rec, 'in_capture', bool, path, n)
    grid, block = _dims(rec, 'grid', path, n), _dims(rec, 'block', path, n)
    params = _parse_params(rec, path, n)
    if result != 0:
        proc.failed_launches += 1
        return
    if in_capture:
        proc.captured_launches += 1
        return
    if rec.get('in_library') is not None and _need(rec, 'in_library', str, path, n):
        proc.library_launches += 1  # the library call's own work: the call itself is the site
        return
    proc.launches.append(Launch(
        index=len(proc.launches), line=n, t_ns=_need(rec, 't_ns', int, path, n),
        symbol=symbol if symbol is not None else f'<unnamed function of module {module}>', module=module,
        grid=grid, block=block, shared_bytes=_need(rec, 'shared_bytes', int, path, n),
        stream=_need(rec, 'stream', str, path, n), params=params,
        params_source=rec.get('params_source') or '', extra=rec.get('params_source') == 'extra',
        attributes=rec.get('attributes') or [], layout_error=rec.get('layout_error') or ''))


def _read_library_call(proc, rec, path, n):
    """A library call (docs/mining.md "Library calls") becomes a Launch whose
    symbol is kern's extern op when it is one (library_calls.py), else the
    library function's name; its operands and sizes are its parameters."""
    _need(rec, 'function', str, path, n)
    result = _need(rec, 'result', int, path, n)
    in_capture = _need(rec, 'in_capture', bool, path, n)
    operands = _need(rec, 'operands', list, path, n)
    try:
        call = library_calls.describe(rec, operands, _pointer)
    except ValueError as e:
        raise CaptureError(path, n, f'library_call record: {e}')
    if result != 0:
        proc.failed_launches += 1
        return
    if in_capture:
        proc.captured_launches += 1
        return
    proc.library_calls += 1
    params = [Param(offset=8 * i, size=len(data), data=data, pointer=ptr) for i, (data, ptr) in enumerate(call['params'])]
    proc.launches.append(Launch(
        index=len(proc.launches), line=n, t_ns=_need(rec, 't_ns', int, path, n), symbol=call['symbol'], module=None,
        grid=(1, 1, 1), block=(1, 1, 1), shared_bytes=0, stream=_need(rec, 'stream', str, path, n), params=params,
        params_source='library', extra=False, attributes=[],
        library={'library': rec.get('library'), 'function': rec['function'], 'extern': call['extern'],
                 'why': call['why']}))


def read_capture(folder):
    """Every process log of a capture folder, the folder's own first.
    Raises CaptureError for a folder with no log or zero executed launches."""
    if not os.path.isdir(folder):
        raise CaptureError(folder, 0, 'not a folder')
    logs = [os.path.join(folder, 'launches.jsonl')] if os.path.isfile(os.path.join(folder, 'launches.jsonl')) else []
    logs += sorted(glob.glob(os.path.join(folder, 'pid*', 'launches.jsonl')),
                   key=lambda p: int(''.join(c for c in os.path.basename(os.path.dirname(p)) if c.isdigit()) or 0))
    if not logs:
        raise CaptureError(folder, 0, 'no launches.jsonl: not a kern-capture folder (kern-capture -o DIR -- COMMAND)')
    procs = [read_process(p) for p in logs]
    if sum(len(p.launches) for p in procs) == 0:
        graphs = sum(p.graph_launches for p in procs)
        hint = (f' ({graphs} CUDA graph launches: run the program eager)' if graphs else '')
        raise CaptureError(logs[0], 0, 'zero kernel launches recorded: nothing to analyse' + hint)
    return procs
