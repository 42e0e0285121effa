"""Minimal safetensors reader and streaming writer (standard library only).

Format: an 8-byte little-endian header length N, N bytes of JSON header
`{"__metadata__": {str: str}, NAME: {"dtype": "BF16", "shape": [...],
"data_offsets": [begin, end]}, ...}` (offsets relative to the data start),
then the data. The writer pads the header with spaces so the data starts at a
multiple of 8 bytes, lays tensors out back to back with no holes (the format
forbids them), writes header keys in data order, and so produces the same
bytes for the same input. Callers order tensors so that wider dtypes come
first (then every tensor is aligned to its element size).
"""

import json
import mmap
import struct

import json_in
from tool_io import ContentError, write_atomic

DTYPE_SIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "U32": 4, "U8": 1, "I8": 1,
              "F8_E4M3": 1, "BOOL": 1, "I16": 2, "U16": 2, "U64": 8}


class SafetensorsError(ContentError):
    """A malformed file, or a writer given inconsistent tensors (exit 1)."""


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class TensorSpec:
    """One tensor to write: `chunks` is a zero-argument callable returning an
    iterable of bytes objects whose total length is numel(shape) * dtype size."""

    def __init__(self, name, dtype, shape, chunks):
        if dtype not in DTYPE_SIZE:
            raise SafetensorsError(f"{name}: unknown dtype {dtype}")
        self.name, self.dtype, self.shape, self.chunks = name, dtype, list(shape), chunks

    @property
    def size_bytes(self):
        return numel(self.shape) * DTYPE_SIZE[self.dtype]


def header_bytes(specs, metadata=None):
    """The length prefix + padded JSON header for `specs` laid out in order."""
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for s in specs:
        if s.name in header:
            raise SafetensorsError(f"duplicate tensor name {s.name}")
        header[s.name] = {"dtype": s.dtype, "shape": s.shape, "data_offsets": [offset, offset + s.size_bytes]}
        offset += s.size_bytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode()
    text += b" " * ((-(8 + len(text))) % 8)
    return struct.pack("<Q", len(text)) + text


def write(path, specs, metadata=None, progress=None):
    """Streams `specs` into `path` atomically (tool_io.write_atomic: an
    interrupted or failed write leaves no partial file). `progress`, when
    given, is called with the tensor bytes written so far after each chunk
    (of sum(s.size_bytes) in all; provider/progress.py). Raises
    SafetensorsError when a tensor's chunks do not add up to its declared
    size, OSError when `path` cannot be written."""
    def write_to(f):
        f.write(header_bytes(specs, metadata))
        done = 0
        for s in specs:
            written = 0
            for chunk in s.chunks():
                f.write(chunk)
                written += len(chunk)
                if progress is not None:
                    progress(done + written)
            if written != s.size_bytes:
                raise SafetensorsError(f"{s.name}: wrote {written} bytes, declared {s.size_bytes} bytes")
            done += written

    write_atomic(path, write_to)


def _is_uint(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _well_formed(t):
    """Whether a header entry has a known dtype, a shape and two offsets."""
    return (isinstance(t, dict) and t.get("dtype") in DTYPE_SIZE
            and isinstance(t.get("shape"), list) and all(_is_uint(d) for d in t["shape"])
            and isinstance(t.get("data_offsets"), list) and len(t["data_offsets"]) == 2
            and all(_is_uint(o) for o in t["data_offsets"]))


class SafetensorsFile:
    """A read-only, memory-mapped safetensors file. `tensors` maps name ->
    (dtype, shape, begin, end) with begin/end absolute file offsets in bytes."""

    def __init__(self, path):
        self._file = open(path, "rb")
        size = self._file.seek(0, 2)
        if size < 8:
            raise SafetensorsError(f"{path}: {size} bytes is too short for a header length")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        (n,) = struct.unpack("<Q", self._map[:8])
        if 8 + n > size:
            raise SafetensorsError(f"{path}: header length {n} B exceeds the file size {size} B")
        try:
            header = json_in.loads(bytes(self._map[8:8 + n]), f"{path}: header")
        except json_in.JsonError as e:
            raise SafetensorsError(str(e)) from None
        if not isinstance(header, dict):
            raise SafetensorsError(f"{path}: header: expected a JSON object at the top level")
        self.path = path
        self.metadata = header.pop("__metadata__", {}) or {}
        self.data_start = 8 + n
        self.tensors = {}
        for name, t in header.items():
            if not _well_formed(t):
                raise SafetensorsError(f"{path}: tensor {name}: expected {{\"dtype\": a known dtype, \"shape\": "
                                       "[integers >= 0], \"data_offsets\": [begin, end]}}")
            begin, end = t["data_offsets"]
            want = numel(t["shape"]) * DTYPE_SIZE[t["dtype"]]
            if end - begin != want or begin < 0 or self.data_start + end > size:
                raise SafetensorsError(f"{path}: tensor {name}: data_offsets [{begin}, {end}] do not hold "
                                       f"{t['dtype']} {t['shape']} inside the file")
            self.tensors[name] = (t["dtype"], list(t["shape"]), self.data_start + begin, self.data_start + end)

    def read(self, name, begin=0, end=None):
        """Bytes [begin, end) of the tensor (relative to its start; end
        defaults to its size), copied out of the mapping."""
        _, _, start, stop = self.tensors[name]
        end = stop - start if end is None else end
        return self._map[start + begin:start + end]

    def chunks(self, name, chunk_bytes=1 << 24):
        """Yields the tensor's bytes in pieces of at most chunk_bytes."""
        _, _, start, stop = self.tensors[name]
        for pos in range(start, stop, chunk_bytes):
            yield self._map[pos:min(pos + chunk_bytes, stop)]

    def close(self):
        self._map.close()
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
