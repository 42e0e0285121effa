"""Library calls in a capture (docs/mining.md "Library calls"): a
cublasLtMatmul record becomes one launch-like call site whose parameters are
its operands and sizes, named by kern's extern op when it is one.

kern's extern GEMM (docs/manifest.md "Extern ops", kern-load/cuda/gemm_mapping.h)
computes row-major c[m, n] = a[m, k] w[n, k]^T as the column-major cublasLt
call D = op(A) op(B) with A = w (transa = T), B = a (transb = N),
M = n, N = m, K = k, lda = ldb = k, ldc = ldd = n, every matrix bf16,
alpha = 1 and beta = 0 (`extern:cublaslt_bf16_tn`) or 1 with C = D
(`extern:cublaslt_bf16_tn_acc`). Such a call becomes a site with kern's ABI
[a, w, c, m, n, k] (pointers, then three 4-byte sizes); any other matmul is
the site `cublasLtMatmul` with its four operands as parameters and `why`
saying what differs (kern-lift writes it as a TODO).
"""

CUDA_R_16BF = 14      # library_types.h cudaDataType_t
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
EXTERN_TN = 'extern:cublaslt_bf16_tn'
EXTERN_TN_ACC = 'extern:cublaslt_bf16_tn_acc'


def _layout(op):
    lay = op.get('layout')
    if lay is None:
        return None
    if not isinstance(lay, dict) or not all(isinstance(lay.get(k), int) and not isinstance(lay.get(k), bool)
                                            for k in ('type', 'rows', 'cols', 'ld')):
        raise ValueError('an operand layout must be {"type", "rows", "cols", "ld"} integers')
    return lay


def _why_not_extern(rec, lays):
    """Why the matmul is not kern's extern GEMM (None when it is)."""
    if not rec.get('desc_known'):
        return 'its matmul descriptor was created before the capture saw it'
    if any(l is None for l in lays):
        return 'an operand layout was created before the capture saw it'
    if any(l['type'] != CUDA_R_16BF for l in lays):
        return 'not every matrix is bf16 (types ' + ', '.join(str(l['type']) for l in lays) + ')'
    if rec.get('transa') != CUBLAS_OP_T or rec.get('transb') != CUBLAS_OP_N:
        return f'transposes {rec.get("transa")}/{rec.get("transb")}, kern\'s GEMM is T/N'
    if rec.get('attributes'):
        return 'descriptor attributes beyond the transposes (ids ' + \
               ', '.join(str(a.get('id')) for a in rec['attributes'] if isinstance(a, dict)) + ')'
    if rec.get('alpha') != 1 or rec.get('beta') not in (0, 1):
        return f'alpha {rec.get("alpha")}, beta {rec.get("beta")}: kern\'s GEMM has alpha 1, beta 0 or 1'
    a, b, c, d = lays
    k, n, m = a['rows'], a['cols'], b['cols']
    if not (a['ld'] == k and b['rows'] == k and b['ld'] == k and c['rows'] == n and c['cols'] == m and
            c['ld'] == n and d == c):
        return 'the shapes are not row-major c[m, n] = a[m, k] w[n, k]^T'
    return None


def describe(rec, operands, pointer):
    """{"symbol", "extern" (bool), "why" (None or text), "params":
    [(bytes, pointer tuple or None)]} for one library_call record.
    `pointer` parses an operand's "pointer" field (capture_file._pointer).
    Raises ValueError for a malformed record."""
    if rec.get('function') != 'cublasLtMatmul':
        raise ValueError(f'unknown library function {rec.get("function")!r}')
    if len(operands) != 4 or not all(isinstance(o, dict) and 'pointer' in o for o in operands):
        raise ValueError('"operands" must be the four objects A, B, C, D with "pointer"')
    ptrs = [pointer(o['pointer']) for o in operands]
    words = []
    for o in operands:
        addr = o.get('address')
        if not isinstance(addr, str):
            raise ValueError('an operand "address" must be a "0x..." string')
        words.append(int(addr, 16).to_bytes(8, 'little'))
    lays = [_layout(o) for o in operands]
    why = _why_not_extern(rec, lays)
    if why is None:
        a, b = lays[0], lays[1]
        k, n, m = a['rows'], a['cols'], b['cols']
        if max(m, n, k) >= 2 ** 31:
            why = 'a size beyond i32'
        else:
            sizes = [(v.to_bytes(4, 'little'), None) for v in (m, n, k)]
            return {'symbol': EXTERN_TN if rec.get('beta') == 0 else EXTERN_TN_ACC, 'extern': True, 'why': None,
                    'params': [(words[1], ptrs[1]), (words[0], ptrs[0]), (words[3], ptrs[3])] + sizes}
    return {'symbol': 'cublasLtMatmul', 'extern': False, 'why': why,
            'params': list(zip(words, ptrs))}
