// The cpu reference of kern_attention_decode_batch_bf16 (docs/kernels.md
// §15): batched decode attention, one query row per sequence, row r over its
// own block-table row and length. Same parameter ABI as the CUDA kernel
// (kernels-src/cuda/attention_decode_batch.cu); the values of the
// single-sequence kern_attention_decode_bf16 twin for each row (the same
// splits, the same f32 operation order), so a row's bits never depend on
// how many rows run beside it.
//
// Checked data: every seq_lens[r] <= 16 * pages_per_seq, every block-table
// entry a row's length uses is >= 0 and its page lies inside the cache the
// device gave (CpuLaunch::avail). A row with seq_lens[r] <= 0 (a free batch
// slot) writes zeros.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/kv_layout.h"

namespace kern::cpu {

namespace {

constexpr const char* kName = "kern_attention_decode_batch_bf16";
constexpr int64_t kMaxRows = 8;       // the CUDA kernel's scratch rows
constexpr int64_t kMaxGroup = 8;      // query heads per kv head (the CUDA kernel's registers)
constexpr int64_t kMaxHeadDim = 256;  // 8 dims per lane
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// The launch's params, checked.
struct BatchAttention {
  const uint16_t* q = nullptr;  // [B, H * D]
  const uint16_t* cache = nullptr;
  const int32_t* tables = nullptr;  // [B, pages_per_seq]
  const int32_t* seq_lens = nullptr;
  float* part_o = nullptr;
  float* part_ml = nullptr;
  uint16_t* out = nullptr;
  float k_scale = 1.0f, v_scale = 1.0f, scale = 0.0f;
  int64_t rows = 0, heads = 0, kv_heads = 0, head_dim = 0, page_stride = 0, pages = 0, splits = 0;
};

Status parse(const CpuLaunch& l, BatchAttention& a) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kName, 18));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 10, "num_seqs", 0, a.rows));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 11, "num_heads", 0, a.heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 12, "num_kv_heads", 1, a.kv_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 13, "head_dim", 0, a.head_dim));
  KERN_RETURN_IF_ERROR(read_i64(l, kName, 14, "page_stride", 0, a.page_stride));
  KERN_RETURN_IF_ERROR(read_f32(l, kName, 15, "scale", false, a.scale));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 16, "pages_per_seq", 0, a.pages));
  KERN_RETURN_IF_ERROR(read_i32(l, kName, 17, "num_splits", 1, a.splits));
  if (a.rows > kMaxRows)
    return launch_error(kName, "param 10 (num_seqs) is " + std::to_string(a.rows) + "; must be <= " +
                                   std::to_string(kMaxRows) + " (the scratch's rows)");
  if (a.heads % a.kv_heads != 0 || a.heads / a.kv_heads > kMaxGroup)
    return launch_error(kName, "param 11 (num_heads) is " + std::to_string(a.heads) +
                                   "; must be a multiple of param 12 (num_kv_heads) = " +
                                   std::to_string(a.kv_heads) + " with at most " + std::to_string(kMaxGroup) +
                                   " query heads per kv head");
  if (a.head_dim > kMaxHeadDim)
    return launch_error(kName, "param 13 (head_dim) is " + std::to_string(a.head_dim) + "; must be <= " +
                                   std::to_string(kMaxHeadDim));
  KERN_RETURN_IF_ERROR(check_at_least(kName, 14, "page_stride", a.page_stride,
                                      kv_layer_page_elems(a.kv_heads, a.head_dim),
                                      "16 * num_kv_heads * 2 * head_dim, one layer's page"));
  const bool work = a.rows > 0 && a.heads > 0 && a.head_dim > 0;
  const float* ks = nullptr;
  const float* vs = nullptr;
  int32_t* counters = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 0, "q", work, a.q));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 1, "kv_cache", work, a.cache));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 2, "block_tables", work && a.pages > 0, a.tables));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 3, "seq_lens", work, a.seq_lens));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 4, "k_scale", work, ks));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 5, "v_scale", work, vs));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 6, "partial_o", work, a.part_o));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 7, "partial_ml", work, a.part_ml));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 8, "counters", work, counters));
  KERN_RETURN_IF_ERROR(read_ptr(l, kName, 9, "out", work, a.out));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 0, a.kv_heads, "one block per kv head"));
  KERN_RETURN_IF_ERROR(check_grid_equals(l, kName, 1, 17, "num_splits", a.splits));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kName, 2, a.rows, "one block per sequence"));
  if (!work) return Status::ok_status();
  int64_t max_page = -1;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t n = a.seq_lens[r];
    if (n > kPageSlots * a.pages)
      return data_error(kName, "seq_lens[" + std::to_string(r) + "] is " + std::to_string(n) + "; must be <= " +
                                   std::to_string(kPageSlots * a.pages) + " (16 x param 16, pages_per_seq)");
    for (int64_t p = 0; p < (std::max<int64_t>(n, 0) + kPageSlots - 1) / kPageSlots; ++p) {
      const int32_t page = a.tables[r * a.pages + p];
      if (page < 0)
        return data_error(kName, "block_tables[" + std::to_string(r) + ", " + std::to_string(p) + "] is " +
                                     std::to_string(page) + "; must be >= 0 (seq_lens[" + std::to_string(r) +
                                     "] = " + std::to_string(n) + " uses it)");
      max_page = std::max<int64_t>(max_page, page);
    }
  }
  if (max_page >= 0) {
    const uint64_t cache_bytes =
        sat_mul(sat_add(sat_mul(static_cast<uint64_t>(max_page), static_cast<uint64_t>(a.page_stride)),
                        static_cast<uint64_t>(kv_layer_page_elems(a.kv_heads, a.head_dim))),
                2);
    KERN_RETURN_IF_ERROR(check_data_extent(l, kName, 1, "kv_cache", cache_bytes,
                                           "block_tables page " + std::to_string(max_page)));
  }
  a.k_scale = *ks;
  a.v_scale = *vs;
  return Status::ok_status();
}

/// Row r, head h over positions [begin, end) of the row's sequence:
/// m = max of the scaled scores, l = sum of exp(score - m), o = sum of
/// exp(score - m) v (unnormalised, times v_scale); the operation order of
/// the single-sequence twin (paged_attention.cpp).
void attend(const BatchAttention& a, int64_t r, int64_t h, int64_t begin, int64_t end, float* scores, float& m,
            float& l, float* o) {
  const int64_t D = a.head_dim;
  const int64_t kv_head = h / (a.heads / a.kv_heads);
  const uint16_t* q = a.q + (r * a.heads + h) * D;
  const int32_t* table = a.tables + r * a.pages;
  const auto slot_ptr = [&](int64_t pos) {
    const int64_t slot = static_cast<int64_t>(table[pos / detail::kPageSlots]) * detail::kPageSlots +
                         pos % detail::kPageSlots;
    return a.cache + detail::kv_slot_offset(slot, kv_head, a.page_stride, a.kv_heads, D);
  };
  const float score_scale = a.scale * a.k_scale;
  m = kNegInf;
  for (int64_t p = begin; p < end; ++p) {
    const uint16_t* k = slot_ptr(p);
    float dot = 0.0f;
    for (int64_t d = 0; d < D; ++d) dot += bf16_to_f32(q[d]) * bf16_to_f32(k[d]);
    scores[p - begin] = dot * score_scale;
    if (scores[p - begin] > m) m = scores[p - begin];
  }
  l = 0.0f;
  for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
  for (int64_t p = begin; p < end; ++p) {
    const float e = std::exp(scores[p - begin] - m);
    l += e;
    const uint16_t* v = slot_ptr(p) + D;
    for (int64_t d = 0; d < D; ++d) o[d] += e * bf16_to_f32(v[d]);
  }
  for (int64_t d = 0; d < D; ++d) o[d] *= a.v_scale;
}

/// Row r: the splits' partials ([row][head][split]), then their merge in
/// split order into out (zeros when the row has no context).
void attend_row(const BatchAttention& a, int64_t r, std::vector<float>& scores, std::vector<float>& acc) {
  const int64_t D = a.head_dim, S = a.splits;
  const int64_t n = std::max<int64_t>(a.seq_lens[r], 0);
  const int64_t len = (n + S - 1) / S;
  if (scores.size() < static_cast<size_t>(n)) scores.resize(static_cast<size_t>(n));
  for (int64_t h = 0; h < a.heads; ++h) {
    const int64_t first = (r * a.heads + h) * S;
    for (int64_t s = 0; s < S; ++s) {
      float* o = a.part_o + (first + s) * D;
      float* ml = a.part_ml + (first + s) * 2;
      const int64_t begin = s * len, end = std::min((s + 1) * len, n);
      if (begin >= end) {
        ml[0] = kNegInf;
        ml[1] = 0.0f;
        for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
        continue;
      }
      attend(a, r, h, begin, end, scores.data(), ml[0], ml[1], o);
    }
    uint16_t* dst = a.out + (r * a.heads + h) * D;
    float m_max = kNegInf;
    for (int64_t s = 0; s < S; ++s) m_max = std::max(m_max, a.part_ml[(first + s) * 2]);
    if (m_max == kNegInf) {
      for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(0.0f);
      continue;
    }
    float denom = 0.0f;
    for (int64_t d = 0; d < D; ++d) acc[d] = 0.0f;
    for (int64_t s = 0; s < S; ++s) {
      const float* ml = a.part_ml + (first + s) * 2;
      if (ml[0] == kNegInf) continue;
      const float w = std::exp(ml[0] - m_max);
      denom += w * ml[1];
      const float* o = a.part_o + (first + s) * D;
      for (int64_t d = 0; d < D; ++d) acc[d] += w * o[d];
    }
    for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(acc[d] / denom);
  }
}

}  // namespace

Status attention_decode_batch_bf16(const CpuLaunch& l) {
  BatchAttention a;
  KERN_RETURN_IF_ERROR(parse(l, a));
  if (a.rows == 0 || a.heads == 0 || a.head_dim == 0) return Status::ok_status();
  std::vector<float> scores, acc(static_cast<size_t>(a.head_dim));
  for (int64_t r = 0; r < a.rows; ++r) attend_row(a, r, scores, acc);
  return Status::ok_status();  // counters: the CUDA kernel's, left at zero
}

Status attention_decode_batch_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  if (l.num_args < 18) return Status::ok_status();  // the kernel reports the param count
  const uint64_t rows = size_i32(l, 10), heads = size_i32(l, 11), kv_heads = size_i32(l, 12);
  const uint64_t head_dim = size_i32(l, 13), pages = size_i32(l, 16), splits = size_i32(l, 17);
  if (rows == 0 || heads == 0 || head_dim == 0) return Status::ok_status();
  e.touch(0, "q", sat_product({rows, heads, head_dim, 2}));
  if (pages > 0) e.touch(2, "block_tables", sat_product({rows, pages, 4}));
  e.touch(3, "seq_lens", sat_mul(rows, 4));
  e.touch(4, "k_scale", 4);
  e.touch(5, "v_scale", 4);
  e.touch(6, "partial_o", sat_product({rows, heads, splits, head_dim, 4}));
  e.touch(7, "partial_ml", sat_product({rows, heads, splits, 2, 4}));
  e.touch(8, "counters", sat_product({rows, kv_heads, 4}));
  e.touch(9, "out", sat_product({rows, heads, head_dim, 2}));
  return Status::ok_status();
}

}  // namespace kern::cpu
