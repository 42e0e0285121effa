// The decode step advance (docs/kernels.md §14): the last launch of the Qwen3
// `decode` program. It writes the next step's inputs on the device (the
// sampled token, position, KV slot, sequence length), so consecutive decode
// steps need no host write and no host round trip (docs/causal-lm-manifest.md).
// Integer bookkeeping only: bit-identical to the cpu reference.
//
// Launch: grid [1, 1, 1], block [1, 1, 1]. Bytes moved: ~50.
#include <cstdint>

/// kern_decode_advance(in i64 next_token[T], in i32 block_table[max_pages],
///                     inout i64 token_ids[T], inout i64 positions[T],
///                     inout i64 slot_mapping[T], inout i32 seq_lens[1],
///                     i32 num_tokens, i32 max_pages, i32 page_size)
/// token_ids[0] = next_token[T-1]; p = positions[T-1] + 1; positions[0] = p;
/// slot_mapping[0] = block_table[p / page_size] * page_size + p % page_size,
/// or -1 when p is outside the table; seq_lens[0] += 1. Nothing for T = 0.
extern "C" __global__ void __launch_bounds__(1) kern_decode_advance(
    const int64_t* __restrict__ next_token, const int* __restrict__ block_table,
    int64_t* __restrict__ token_ids, int64_t* __restrict__ positions,
    int64_t* __restrict__ slot_mapping, int* __restrict__ seq_lens, int num_tokens, int max_pages,
    int page_size) {
  if (blockIdx.x != 0 || threadIdx.x != 0 || num_tokens <= 0 || page_size <= 0) return;
  const int last = num_tokens - 1;
  // Unsigned wrap, as the cpu reference: garbage in, garbage out, no UB.
  const int64_t p = static_cast<int64_t>(static_cast<uint64_t>(positions[last]) + 1u);
  const int64_t page = p >= 0 ? p / page_size : -1;
  const int64_t slot = page >= 0 && page < max_pages
                           ? static_cast<int64_t>(block_table[page]) * page_size + p % page_size
                           : -1;
  token_ids[0] = next_token[last];
  positions[0] = p;
  slot_mapping[0] = slot;
  seq_lens[0] = static_cast<int>(static_cast<unsigned>(seq_lens[0]) + 1u);
}
