// kern_reshape_and_cache_bf16 (docs/kernels.md §7, vLLM's reshape_and_cache):
// stores each token's k and v heads into its slot of the paged KV cache as
// bf16(x / scale). A negative slot skips the token (vLLM's padding
// convention). Only the documented elements are written.
//
// A slot beyond the cache the device gave (CpuLaunch::avail) is an error,
// found before anything is written.
#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/kv_layout.h"

namespace kern::cpu {

namespace {
constexpr const char* kName = "kern_reshape_and_cache_bf16";
}  // namespace

Status reshape_and_cache_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 12));
  int64_t tokens = 0, kv_heads = 0, head_dim = 0, k_stride = 0, v_stride = 0, page_stride = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 6, "num_tokens", 0, tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 7, "num_kv_heads", 0, kv_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 8, "head_dim", 0, head_dim));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 9, "k_stride", 0, k_stride));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 10, "v_stride", 0, v_stride));
  KERN_RETURN_IF_ERROR(read_i64(l, kName, 11, "page_stride", 0, page_stride));
  KERN_RETURN_IF_ERROR(check_at_least(kName, 9, "k_stride", k_stride, kv_heads * head_dim,
                                      "num_kv_heads * head_dim"));
  KERN_RETURN_IF_ERROR(check_at_least(kName, 10, "v_stride", v_stride, kv_heads * head_dim,
                                      "num_kv_heads * head_dim"));
  KERN_RETURN_IF_ERROR(check_at_least(kName, 11, "page_stride", page_stride,
                                      kv_layer_page_elems(kv_heads, head_dim),
                                      "16 * num_kv_heads * 2 * head_dim, one layer's page"));
  const bool work = tokens > 0 && kv_heads > 0 && head_dim > 0;
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  uint16_t* cache = nullptr;
  const int64_t* slots = nullptr;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "k", work, k));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "v", work, v));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "kv_cache", work, cache));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "slot_mapping", work, slots));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 4, "k_scale", work, k_scale));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 5, "v_scale", work, v_scale));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, tokens, "one block per token"));
  if (!work) return Status::ok_status();

  for (int64_t t = 0; t < tokens; ++t) {  // all checks before the first write
    const int64_t slot = slots[t];
    if (slot < 0) continue;
    const uint64_t end = sat_add(sat_mul(static_cast<uint64_t>(slot / kPageSlots), static_cast<uint64_t>(page_stride)),
                                 static_cast<uint64_t>(kv_slot_offset(slot % kPageSlots, kv_heads - 1, 0, kv_heads,
                                                                      head_dim) + 2 * head_dim));
    KERN_RETURN_IF_ERROR(check_data_extent(l, kName, 2, "kv_cache", sat_mul(end, 2),
                                           "slot_mapping[" + std::to_string(t) + "] = " + std::to_string(slot)));
  }
  const float ks = *k_scale, vs = *v_scale;
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t slot = slots[t];
    if (slot < 0) continue;  // padding token
    for (int64_t h = 0; h < kv_heads; ++h) {
      uint16_t* dst = cache + kv_slot_offset(slot, h, page_stride, kv_heads, head_dim);
      const uint16_t* kh = k + t * k_stride + h * head_dim;
      const uint16_t* vh = v + t * v_stride + h * head_dim;
      for (int64_t j = 0; j < head_dim; ++j) {
        dst[j] = f32_to_bf16(bf16_to_f32(kh[j]) / ks);
        dst[head_dim + j] = f32_to_bf16(bf16_to_f32(vh[j]) / vs);
      }
    }
  }
  return Status::ok_status();
}

Status reshape_and_cache_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, 6), kv_heads = size_i32(l, 7), head_dim = size_i32(l, 8);
  if (tokens == 0 || kv_heads == 0 || head_dim == 0) return Status::ok_status();
  const uint64_t row = sat_mul(kv_heads, head_dim);
  e.touch(0, "k", strided_bytes(tokens, size_i32(l, 9), row, 2));
  e.touch(1, "v", strided_bytes(tokens, size_i32(l, 10), row, 2));
  // kv_cache (param 2): the slots chosen by slot_mapping are checked by the kernel.
  e.touch(3, "slot_mapping", sat_mul(tokens, 8));
  e.touch(4, "k_scale", 4);
  e.touch(5, "v_scale", 4);
  return Status::ok_status();
}

}  // namespace kern::cpu
