"""Tensor parallelism for the dense families (docs/parallel.md): the
per-rank manifest and weight shards of `gen_manifest.py --tp N` and
`convert_hf.py --tp N`.

Every rank runs the same manifest (meta.world = N) on its own shard:
q/k/v and gate/up split by columns (query and KV heads, intermediate rows by
rank), o_proj and down_proj by rows (their k), embedding, norms and lm_head
replicated. Each row-split projection is a split-K GEMM over TP_SPLITS equal
k slices whose slice sums are added as a pairwise tree; at N > 1 a rank
computes the subtree of its own slices in f32 and one all-reduce per
projection adds the ranks' subtrees in the same tree (rank order) and rounds
to bf16 once. So `--tp 2` and `--tp 4` give `--tp 1`'s bits: the invariance
argument of docs/parallel.md. Two all-reduces per layer, as vLLM does.

The manifest is the generator's unfused one (12 launches per layer: the
fused decode GEMVs have no split-K output to reduce) for the rank's
geometry, with the two projections rewritten. Its decode attention is the
batched decode attention (kern_attention_decode_batch_bf16 over one row), and
its `decode_batch` program is the same dispatches over `batch` sequences
(tp_batch_decode), so a row's bits are the same in `decode` and in any batch.
"""

import copy
import dataclasses

import safetensors_io as st
from decoder_config import ConfigError

TP_SPLITS = 8        # k slices of a row-split projection: --tp must divide it
TP_CHOICES = (1, 2, 4, 8)
SPLITK_SYMBOL = "extern:gemm_bf16_tn_splitk"          # c = bf16(tree of slice dots)
SPLITK_F32_SYMBOL = "extern:gemm_bf16_tn_splitk_f32"  # c = f32 tree of the rank's slice dots
ALLREDUCE_SYMBOL = "extern:allreduce_sum_f32_bf16"    # x = tree over ranks, y = bf16(x)


def check(c, tp, path):
    """Refuses a --tp the model's geometry cannot be split by, naming the field."""
    if tp not in TP_CHOICES:
        raise ConfigError(f"--tp {tp}: must be one of {', '.join(map(str, TP_CHOICES))} (a power of two dividing "
                          f"the {TP_SPLITS} split-K slices, docs/parallel.md)")
    for field, value in (("num_key_value_heads", c.kv_heads), ("num_attention_heads", c.heads),
                         ("intermediate_size", c.intermediate)):
        if value % tp:
            raise ConfigError(f"{path}: {field} {value} does not divide by --tp {tp}: each rank takes a whole "
                              f"share of them")
    for what, k in (("o_proj's k (num_attention_heads x head_dim)", c.heads * c.head_dim),
                    ("down_proj's k (intermediate_size)", c.intermediate)):
        if k % TP_SPLITS:
            raise ConfigError(f"{path}: {what} {k} does not divide into {TP_SPLITS} equal split-K slices")


def rank_config(c, tp):
    """The geometry one rank computes: 1/tp of the heads, KV heads and intermediate rows."""
    return dataclasses.replace(c, heads=c.heads // tp, kv_heads=c.kv_heads // tp, intermediate=c.intermediate // tp)


def _kernel(symbol, params):
    return {"params": params,
            "impl": {"steps": [{"symbol": symbol, "params": params, "block": [1, 1, 1], "grid": [1, 1, 1],
                                "args": [{"arg": i} for i in range(len(params))]}]}}


def manifest(gen, c, tp, tokens_max, label, max_batch=8):
    """The manifest every rank of a `tp`-rank world runs (gen: the gen_manifest
    module); `max_batch` (0: none) adds decode_batch for that many sequences."""
    rc = rank_config(c, tp)
    doc = gen.manifest(rc, tokens_max, label, fused=False)
    add_decode_attention(gen, doc, rc, max_batch)
    if max_batch:
        add_batch_decode(gen, doc, rc, max_batch)
    if tp > 1:
        doc["meta"]["world"] = tp
    ks = doc["kernels"]
    bf16_in, i32 = "in buffer<bf16>", "i32"
    if tp == 1:
        ks["gemm_splitk"] = _kernel(SPLITK_SYMBOL, [bf16_in, bf16_in, "out buffer<bf16>", i32, i32, i32, i32])
    else:
        ks["gemm_splitk_f32"] = _kernel(SPLITK_F32_SYMBOL, [bf16_in, bf16_in, "out buffer<f32>", i32, i32, i32, i32])
        ks["allreduce_bf16"] = _kernel(ALLREDUCE_SYMBOL, ["inout buffer<f32>", "out buffer<bf16>", i32])
        doc["buffers"]["proj_partial"] = {"dtype": "f32", "shape": ["tokens", c.hidden], "class": "workspace"}
    for prog in doc["programs"].values():
        out = []
        for d in prog["dispatches"]:
            if d["kernel"] == "gemm" and d["label"].endswith((".o_proj", ".down_proj")):
                out += _row_split(gen, d, c.hidden, tp)
            else:
                out.append(d)
        prog["dispatches"] = out
    return doc


# ---- The decode attention and the batched decode of a TP manifest. The
# unfused decode's split-KV attention (kern_paged_attention_partial + reduce)
# reads one block table, so a batch cannot use it; both programs use the
# batched decode attention instead (docs/kernels.md §15), whose rows each get
# the single-sequence values, so `decode` and every row of `decode_batch`
# have the same bits. Everything else in decode_batch is decode's dispatch
# over `batch` rows: the unfused kernels are row-wise and the GEMMs' rows
# depend only on their own a row (docs/kernels.md §10).

# The step inputs decode reads and their per-sequence decode_batch twins.
_BATCH_INPUTS = {"token_ids": "batch_token_ids", "positions": "batch_positions", "slot_mapping": "batch_slot_mapping",
                 "seq_lens": "batch_seq_lens", "block_table": "batch_block_tables"}
# Kernels whose launch is the same in decode_batch (no grid over rows).
_ROWLESS = ("gemm",)


def _attention_dispatch(gen, c, d):
    """The batched decode attention in place of the unfused decode's
    attention dispatch `d` (ATTN_PARAMS args: q, kv, block_table, seq_lens,
    cu_seqlens_q, k_scale, v_scale, out, rows, H, KV, D, page_stride, scale)."""
    q, kv, table, lens, _cu, ks, vs, out, rows, H, KV, D, stride, scale = d["args"]
    return gen.dispatch(d["label"], "attention_decode_tp",
                        [q, kv, table, lens, ks, vs, gen.COUNTERS, out, rows, H, KV, D, stride, scale,
                         gen.i32(gen.block_table_pages(c))])


def add_decode_attention(gen, doc, c, max_batch):
    """Makes `decode` use the batched decode attention over its one row:
    the kernel `attention_decode_tp`, the `decode_counters` state it needs."""
    attn = copy.deepcopy(gen.batch_kernels(c, max(max_batch, 1), fold_qk=False)["attention_decode_batch"])
    attn["impl"]["steps"][0]["grid"][2] = gen.TOK
    doc["kernels"]["attention_decode_tp"] = attn
    del doc["kernels"]["attention_decode"]
    doc["states"]["decode_counters"] = {"bytes_fixed": 4 * gen.counter_slots(c), "align": 256}
    decode = doc["programs"]["decode"]["dispatches"]
    decode[:] = [_attention_dispatch(gen, c, d) if d["kernel"] == "attention_decode" else d for d in decode]


def _rows_to_batch(node, max_batch):
    """A copy of a kernel or dispatch args with the `tokens` row symbol
    replaced by `batch` (grids, expressions) and `tokens` scratch rows by
    max_batch (scratch is sized by literals or symbols' maxima)."""
    if node == {"sym": "tokens"}:
        return {"sym": "batch"}
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "shape" and isinstance(v, list):
                out[k] = [max_batch if x == "tokens" else x for x in v]
            else:
                out[k] = _rows_to_batch(v, max_batch)
        return out
    if isinstance(node, list):
        return [_rows_to_batch(v, max_batch) for v in node]
    return node


def _batch_args(args, max_batch):
    """decode's args over `batch` rows and the per-sequence step inputs."""
    out = []
    for a in _rows_to_batch(args, max_batch):
        if isinstance(a, dict) and a.get("buf") in _BATCH_INPUTS:
            a = dict(a, buf=_BATCH_INPUTS[a["buf"]])
        out.append(a)
    return out


def add_batch_decode(gen, doc, c, max_batch):
    """Adds the `batch` symbol, the batch step inputs, each decode kernel's
    `_batch` variant (its grid over `batch`) and the decode_batch program:
    decode's dispatches over `batch` sequences (docs/batching.md)."""
    doc["symbols"]["batch"] = {"min": 1, "max": max_batch}
    doc["buffers"].update(gen.batch_buffers(c))
    ks = doc["kernels"]
    out = []
    for d in doc["programs"]["decode"]["dispatches"]:
        name = d["kernel"]
        if name == "decode_advance":  # the batch's advance reads [batch, pages] block tables
            ks.setdefault("decode_advance_batch", gen.batch_kernels(c, max_batch)["decode_advance_batch"])
            name = "decode_advance_batch"
        elif name not in _ROWLESS:
            batch_name = name + "_batch"
            if batch_name not in ks:
                ks[batch_name] = _rows_to_batch(ks[name], max_batch)
            name = batch_name
        out.append(gen.dispatch(d["label"], name, _batch_args(d["args"], max_batch)))
    doc["programs"]["decode_batch"] = {"dispatches": out}


def _row_split(gen, d, hidden, tp):
    """A row-split projection's dispatches in place of its plain GEMM `d`
    (args: a, w, out, tokens, n, k of the rank)."""
    a, w, out, rows, n, k = d["args"]
    local_splits = TP_SPLITS // tp
    if tp == 1:
        return [gen.dispatch(d["label"], "gemm_splitk", [a, w, out, rows, n, k, gen.i32(local_splits)])]
    count = {"expr": {"mul": [rows, hidden]}}
    return [gen.dispatch(d["label"] + ".partial", "gemm_splitk_f32",
                         [a, w, gen.buf("proj_partial"), rows, n, k, gen.i32(local_splits)]),
            gen.dispatch(d["label"] + ".allreduce", "allreduce_bf16", [gen.buf("proj_partial"), out, count])]


# ---- Weight shards: the exported layout (decoder_config.exported_tensors) of
# one rank, sliced from the full tensors. A tensor is read whole (one at a
# time) and its rows or column blocks copied out.

def _rows(data, shape, ranges, elem):
    """The bytes of `ranges` (row begin, end) of a row-major [rows, cols] tensor, in order."""
    cols = shape[1] if len(shape) > 1 else 1
    row_bytes = cols * elem
    return b"".join(bytes(data[b * row_bytes:e * row_bytes]) for b, e in ranges)


def _cols(data, shape, begin, end, elem):
    """Columns [begin, end) of a row-major [rows, cols] tensor."""
    rows, cols = shape
    mv = memoryview(data)
    return b"".join(bytes(mv[(r * cols + begin) * elem:(r * cols + end) * elem]) for r in range(rows))


def shard_plan(c, tp, rank):
    """{tensor name suffix: (how, ranges)} for rank `rank`: 'rows' with the
    row ranges it keeps, 'cols' with its column range; absent: replicated."""
    H, KV, D, I = c.heads, c.kv_heads, c.head_dim, c.intermediate
    h, kv, i = H // tp, KV // tp, I // tp
    q0, k0, v0 = 0, H * D, (H + KV) * D
    qkv = [(q0 + rank * h * D, q0 + (rank + 1) * h * D), (k0 + rank * kv * D, k0 + (rank + 1) * kv * D),
           (v0 + rank * kv * D, v0 + (rank + 1) * kv * D)]
    return {
        "self_attn.qkv_proj.weight": ("rows", qkv),
        "self_attn.qkv_proj.bias": ("rows", qkv),
        "mlp.gate_up_proj.weight": ("rows", [(rank * i, (rank + 1) * i), (I + rank * i, I + (rank + 1) * i)]),
        "self_attn.o_proj.weight": ("cols", (rank * h * D, (rank + 1) * h * D)),
        "mlp.down_proj.weight": ("cols", (rank * i, (rank + 1) * i)),
    }


def shard_specs(specs, c, tp, rank):
    """TensorSpecs of rank `rank`'s weights from the full exported `specs`."""
    plan = shard_plan(c, tp, rank)
    out = []
    for s in specs:
        rule = next((v for k, v in plan.items() if s.name.endswith("." + k)), None)
        if rule is None:
            out.append(s)
            continue
        elem = st.DTYPE_SIZE[s.dtype]
        how, ranges = rule
        if how == "rows":
            shape = [sum(e - b for b, e in ranges)] + s.shape[1:]
            fn = (lambda s=s, ranges=ranges, elem=elem: [_rows(b"".join(s.chunks()), s.shape, ranges, elem)])
        else:
            b, e = ranges
            shape = [s.shape[0], e - b]
            fn = (lambda s=s, b=b, e=e, elem=elem: [_cols(b"".join(s.chunks()), s.shape, b, e, elem)])
        out.append(st.TensorSpec(s.name, s.dtype, shape, fn))
    return out


def rank_weights_file(rank):
    """The weights file of `rank` in a tensor-parallel model folder (kern-run reads the same names)."""
    return f"weights.rank{rank}.safetensors"
