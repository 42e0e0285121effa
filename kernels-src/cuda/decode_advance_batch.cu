// The batched decode step advance (docs/kernels.md §16, docs/batching.md):
// the last launch of the Qwen3 `decode_batch` program. Row r of the batch
// is one sequence; the kernel writes row r's next-step inputs on the device
// (its sampled token, position + 1, that position's KV slot through row r of
// the block tables, sequence length + 1), so consecutive batched steps need
// no host write while the batch composition stays. A free batch slot
// (seq_lens[r] <= 0) is left as it is: it never advances into another
// sequence's pages or past the RoPE table. Integer bookkeeping only:
// bit-identical to the cpu reference.
//
// Launch: grid [ceil(B / 64), 1, 1], block [64, 1, 1]. Bytes moved: ~50 B per row.
#include <cstdint>

/// kern_decode_advance_batch(in i64 next_token[B], in i32 block_tables[B, pages_per_seq],
///                           inout i64 token_ids[B], inout i64 positions[B],
///                           inout i64 slot_mapping[B], inout i32 seq_lens[B],
///                           i32 num_seqs, i32 pages_per_seq, i32 page_size)
/// For each row r < B with seq_lens[r] > 0: token_ids[r] = next_token[r];
/// p = positions[r] + 1; positions[r] = p; slot_mapping[r] =
/// block_tables[r, p / page_size] * page_size + p % page_size, or -1 when p
/// is outside the row or the entry is negative (padding); seq_lens[r] += 1.
extern "C" __global__ void __launch_bounds__(64) kern_decode_advance_batch(
    const int64_t* __restrict__ next_token, const int* __restrict__ block_tables,
    int64_t* __restrict__ token_ids, int64_t* __restrict__ positions, int64_t* __restrict__ slot_mapping,
    int* __restrict__ seq_lens, int num_seqs, int pages_per_seq, int page_size) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= num_seqs || page_size <= 0 || pages_per_seq < 0 || seq_lens[r] <= 0) return;
  // Unsigned wrap, as the cpu reference: garbage in, garbage out, no UB.
  const int64_t p = static_cast<int64_t>(static_cast<uint64_t>(positions[r]) + 1u);
  const int64_t page = p >= 0 ? p / page_size : -1;
  const int64_t entry = page >= 0 && page < pages_per_seq
                            ? static_cast<int64_t>(block_tables[static_cast<int64_t>(r) * pages_per_seq + page])
                            : -1;
  token_ids[r] = next_token[r];
  positions[r] = p;
  slot_mapping[r] = entry >= 0 ? entry * page_size + p % page_size : -1;
  seq_lens[r] = static_cast<int>(static_cast<unsigned>(seq_lens[r]) + 1u);
}
