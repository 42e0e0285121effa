"""Writing a safetensors file (the format kern-load reads,
kern-load/safetensors.cpp: an 8-byte little-endian header length, a JSON
header {name: {"dtype", "shape", "data_offsets"}}, then the data), written to
a temporary file and renamed, so a failure leaves no partial file."""
import json
import os
import tempfile

ELEMENT_BYTES = {'BF16': 2, 'F16': 2, 'F32': 4, 'I32': 4, 'I64': 8, 'U8': 1}


def write(path, tensors):
    """`tensors`: [(name, dtype ("BF16", "U8", ...), shape [int], source
    file path)], each file holding exactly the tensor's bytes. Raises OSError
    or ValueError (a file whose size does not match its shape)."""
    header, offset, sizes = {}, 0, []
    for name, dtype, shape, src in tensors:
        n = ELEMENT_BYTES[dtype]
        for d in shape:
            n *= d
        size = os.path.getsize(src)
        if size != n:
            raise ValueError(f'{src}: {size} bytes, {name} ({dtype} {shape}) needs {n}')
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + n]}
        offset += n
        sizes.append(n)
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)  # the data starts 8-byte aligned
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + os.path.basename(path) + '.')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(len(text).to_bytes(8, 'little'))
            f.write(text)
            for (_, _, _, src) in tensors:
                with open(src, 'rb') as g:
                    while chunk := g.read(1 << 20):
                        f.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
