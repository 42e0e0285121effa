"""The causal-LM caller contract's names (docs/causal-lm-manifest.md) for a
capture of kern-run, inferred from the host's copies (docs/mining.md
"kern-lift: the caller contract"). kern-run drives a plan through buffers it
finds by name, so a lifted kern-run capture must name them; the capture has
bytes and addresses only, so the names come from how the host used each
allocation:

- the input allocations the host copies k x n bytes to before every prefill
  pass (n the pass's token count), k = 8: the three i64 [tokens] carries
  `token_ids`, `positions`, `slot_mapping`, in the order the prefill program
  first passes them to a launch (the contract's order: the embedding reads
  the ids, RoPE the positions, the KV-cache write the slots); `tokens`'
  maximum is their allocation size / 8;
- the other inputs by allocation size: 4 bytes `seq_lens` (i32 [1], carry),
  8 bytes `cu_seqlens_q` (i32 [2]), and one more, `block_table` (i32
  [bytes / 4]);
- the one allocation read back by device-to-host copies: `next_token`
  (i64 [tokens], output);
- the weight read by the launch that first reads `token_ids`:
  `model.embed_tokens.weight`, bf16 [V, E], where V x E x 2 is its size and
  V and E are two constant scalar arguments of that launch, V the larger (a
  vocabulary is larger than the hidden size in every family kern runs;
  `--vocab` overrides).

`--input NAME=ALLOC` moves one of these names to another allocation (when
the inference picked the wrong one of two look-alikes). Anything that does
not match leaves the contract unnamed, with the reason: the manifest still
verifies, but kern-run cannot drive it.
"""

I64_PER_TOKEN = ('token_ids', 'positions', 'slot_mapping')


def _pass_after(passes, t_ns):
    for p in passes:
        if p.launches[0].t_ns > t_ns:
            return p
    return None


def infer(proc, passes, prefill_passes, ref, alloc_class, first_use, embed_scalars, vocab=None, overrides=None):
    """Returns (names, tokens_max, why): names {alloc id: (name, dtype,
    shape, class)}; why is None when the whole contract was found, else the
    reason (names then empty). `alloc_class` {alloc: mined class};
    `first_use` [alloc] in prefill program order; `embed_scalars`
    {alloc: [constant scalar values of the launch that read it]} is asked
    for the weight beside token_ids (`first_reader_weights` below gives it)."""
    overrides = dict(overrides or {})
    inputs = [a for a, c in alloc_class.items() if c == 'input']
    outputs = [a for a, c in alloc_class.items() if c == 'output']
    prefill_ids = {p.index for p in prefill_passes}
    per_token = {}
    start = proc.launches[0].t_ns if proc.launches else 0
    for a in inputs:
        ratios = set()
        for h in proc.htods:
            if h.alloc != a or h.t_ns < start:
                continue
            p = _pass_after(passes, h.t_ns)
            if p is None or p.index not in prefill_ids:
                continue
            n = ref[p.index]
            ratios.add(h.size / n if n else None)
        if len(ratios) == 1 and (k := ratios.pop()) is not None and k == int(k):
            per_token[a] = int(k)
    i64 = [a for a in first_use if per_token.get(a) == 8]
    if len(i64) != 3:
        return {}, None, f'{len(i64)} allocations take 8 bytes per token before each prefill pass; the contract has 3'
    sizes = {proc.allocs[a].size for a in i64}
    if len(sizes) != 1 or sizes.pop() % 8:
        return {}, None, 'the three per-token allocations differ in size'
    tokens_max = proc.allocs[i64[0]].size // 8
    names = {a: (name, 'i64', ['tokens'], 'carry') for a, name in zip(i64, I64_PER_TOKEN)}
    rest = [a for a in inputs if a not in names]
    by_size = {}
    for a in rest:
        by_size.setdefault(proc.allocs[a].size, []).append(a)
    if len(by_size.get(4, [])) != 1 or len(by_size.get(8, [])) != 1:
        return {}, None, 'no single 4-byte (seq_lens) and 8-byte (cu_seqlens_q) input allocation'
    names[by_size[4][0]] = ('seq_lens', 'i32', [1], 'carry')
    names[by_size[8][0]] = ('cu_seqlens_q', 'i32', [2], 'input')
    others = [a for a in rest if a not in names]
    if len(others) != 1 or proc.allocs[others[0]].size % 4:
        return {}, None, f'{len(others)} further input allocations; the contract has one (block_table)'
    names[others[0]] = ('block_table', 'i32', [proc.allocs[others[0]].size // 4], 'input')
    if len(outputs) != 1 or proc.allocs[outputs[0]].size != 8 * tokens_max:
        return {}, None, f'{len(outputs)} read-back allocations of {[proc.allocs[a].size for a in outputs]} bytes; ' \
                         f'the contract has one, next_token (8 x {tokens_max} bytes)'
    names[outputs[0]] = ('next_token', 'i64', ['tokens'], 'output')
    embed = embed_scalars.get(i64[0])
    if embed is None:
        return {}, None, 'no weight is read by the launch that first reads token_ids'
    w_alloc, scalars = embed
    elements = proc.allocs[w_alloc].size // 2
    if vocab is not None:
        if vocab <= 0 or elements % vocab:
            return {}, None, f'--vocab {vocab} does not divide the embedding\'s {elements} elements'
        v, e = vocab, elements // vocab
    else:
        pairs = [(x, y) for i, x in enumerate(scalars) for y in scalars[i + 1:] if x > 0 and y > 0 and x * y == elements]
        if not pairs:
            return {}, None, 'no two constant arguments of the embedding launch multiply to its element count'
        v, e = max(pairs[0]), min(pairs[0])
    names[w_alloc] = ('model.embed_tokens.weight', 'bf16', [v, e], 'weight')
    for name, a in overrides.items():
        have = [other for other, entry in names.items() if entry[0] == name]
        if not have:
            return {}, None, f'--input {name}={a}: {name} is none of the contract\'s names ' \
                             f'({", ".join(sorted(e[0] for e in names.values()))})'
        if a not in proc.allocs:
            return {}, None, f'--input {name}={a}: the capture has no allocation {a}'
        entry = names.pop(have[0])
        names.pop(a, None)
        names[a] = entry
    return names, tokens_max, None
