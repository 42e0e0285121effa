// The paged KV-cache layout shared by kern_reshape_and_cache_bf16 and the
// paged attention kernels (docs/kernels.md "KV cache layout"; private to
// kernels-src/cpu): [page][layer][16 slots][kv heads][2 (k, v)][head_dim]
// bf16. Kernels receive the layer's base pointer and `page_stride`, the
// elements between consecutive pages (layers * 16 * KV * 2 * D).
#pragma once

#include <cstdint>

namespace kern::cpu::detail {

/// Slots per page (the block size).
inline constexpr int64_t kPageSlots = 16;

/// Element offset, from the layer base, of the k vector of kv head `head` in
/// physical slot `slot` (page slot / 16, slot slot % 16); v follows at + head_dim.
inline int64_t kv_slot_offset(int64_t slot, int64_t head, int64_t page_stride,
                              int64_t num_kv_heads, int64_t head_dim) {
  return (slot / kPageSlots) * page_stride +
         ((slot % kPageSlots) * num_kv_heads + head) * 2 * head_dim;
}

/// Elements of one layer's part of a page: the smallest valid page_stride.
inline int64_t kv_layer_page_elems(int64_t num_kv_heads, int64_t head_dim) {
  return kPageSlots * num_kv_heads * 2 * head_dim;
}

}  // namespace kern::cpu::detail
