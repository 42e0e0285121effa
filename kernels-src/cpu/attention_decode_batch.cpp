// The cpu reference of kern_attention_decode_batch_bf16 (docs/kernels.md
// §15): batched decode attention, one query row per sequence, row r over its
// own block-table row and length. Same parameter ABI as the CUDA kernel
// (kernels-src/cuda/attention_decode_batch.cu); the values of the
// single-sequence kern_attention_decode_bf16 twin for each row (the same
// splits, the same f32 operation order), so a row's bits never depend on
// how many rows run beside it.
//
// Also the twin of the qkv variants kern_attention_decode_qkv_bf16 (§13a) and
// kern_attention_decode_batch_qkv_bf16 (§15a): one ABI, the q/k norm + RoPE +
// KV write of kern_qk_norm_rope_cache_bf16 (qk_norm_rope.h) for each row's
// decode position seq_lens[r] - 1, then this attention. Both CUDA kernels
// give each row the values of the single-sequence decode, so one twin serves
// both; only their limits differ.
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
#include "kernels-src/cpu/attention_dots.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/kv_layout.h"
#include "kernels-src/cpu/parallel.h"
#include "kernels-src/cpu/qk_norm_rope.h"

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

/// Checks every row's length against its table (seq_lens[r] <= 16 x
/// pages_per_seq, param `pages_param`; every entry the length uses >= 0) and
/// that the highest page used lies inside the KV cache (param `cache_param`).
/// `max_pos` gets the highest decode position seq_lens[r] - 1 (0 when none).
Status check_tables(const CpuLaunch& l, const char* name, const BatchAttention& a, int pages_param, int cache_param,
                    int64_t& max_pos) {
  using namespace detail;
  int64_t max_page = -1;
  max_pos = 0;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t n = a.seq_lens[r];
    if (n > kPageSlots * a.pages)
      return data_error(name, "seq_lens[" + std::to_string(r) + "] is " + std::to_string(n) + "; must be <= " +
                                  std::to_string(kPageSlots * a.pages) + " (16 x param " +
                                  std::to_string(pages_param) + ", pages_per_seq)");
    for (int64_t p = 0; p < (std::max<int64_t>(n, 0) + kPageSlots - 1) / kPageSlots; ++p) {
      const int32_t page = a.tables[r * a.pages + p];
      if (page < 0)
        return data_error(name, "block_tables[" + std::to_string(r) + ", " + std::to_string(p) + "] is " +
                                    std::to_string(page) + "; must be >= 0 (seq_lens[" + std::to_string(r) +
                                    "] = " + std::to_string(n) + " uses it)");
      max_page = std::max<int64_t>(max_page, page);
    }
    max_pos = std::max<int64_t>(max_pos, n - 1);
  }
  if (max_page < 0) return Status::ok_status();
  const uint64_t cache_bytes =
      sat_mul(sat_add(sat_mul(static_cast<uint64_t>(max_page), static_cast<uint64_t>(a.page_stride)),
                      static_cast<uint64_t>(kv_layer_page_elems(a.kv_heads, a.head_dim))),
              2);
  return check_data_extent(l, name, cache_param, "kv_cache", cache_bytes,
                           "block_tables page " + std::to_string(max_page));
}

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
  int64_t max_pos = 0;
  KERN_RETURN_IF_ERROR(check_tables(l, kName, a, 16, 1, max_pos));
  a.k_scale = *ks;
  a.v_scale = *vs;
  return Status::ok_status();
}

/// Row r's cache k of query head h at position pos of its sequence (its v
/// follows at + D).
const uint16_t* slot_kv(const BatchAttention& a, int64_t r, int64_t h, int64_t pos) {
  const int64_t kv_head = h / (a.heads / a.kv_heads);
  const int32_t* table = a.tables + r * a.pages;
  const int64_t slot = static_cast<int64_t>(table[pos / detail::kPageSlots]) * detail::kPageSlots +
                       pos % detail::kPageSlots;
  return a.cache + detail::kv_slot_offset(slot, kv_head, a.page_stride, a.kv_heads, a.head_dim);
}

/// Row r, head h over positions [begin, end) of the row's sequence, whose
/// q . k dots `scores` holds (from position begin; scaled in place):
/// m = max of the scaled scores, l = sum of exp(score - m),
/// o = sum of exp(score - m) v (unnormalised, times v_scale); the operation
/// order of the single-sequence twin (paged_attention.cpp).
void attend(const BatchAttention& a, int64_t r, int64_t h, int64_t begin, int64_t end, float* scores, float& m,
            float& l, float* o) {
  const int64_t D = a.head_dim;
  const float score_scale = a.scale * a.k_scale;
  m = kNegInf;
  for (int64_t p = begin; p < end; ++p) {
    scores[p - begin] = scores[p - begin] * score_scale;
    if (scores[p - begin] > m) m = scores[p - begin];
  }
  l = 0.0f;
  for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
  for (int64_t p = begin; p < end; ++p) {
    const float e = std::exp(scores[p - begin] - m);
    l += e;
    const uint16_t* v = slot_kv(a, r, h, p) + D;
    for (int64_t d = 0; d < D; ++d) o[d] += e * bf16_to_f32(v[d]);
  }
  for (int64_t d = 0; d < D; ++d) o[d] *= a.v_scale;
}

/// Row r, head h: the splits' partials ([row][head][split]), then their
/// merge in split order into out (zeros when the row has no context).
/// `scores` holds at least the row's seq_len floats, `acc` head_dim.
void attend_head(const BatchAttention& a, int64_t r, int64_t h, float* scores, float* acc) {
  const int64_t D = a.head_dim, S = a.splits;
  const int64_t n = std::max<int64_t>(a.seq_lens[r], 0);
  const int64_t len = (n + S - 1) / S;
  const int64_t first = (r * a.heads + h) * S;
  // Every position's dot at once, whatever the splits (qk_dots: the bits of
  // one at a time): a split holds ceil(n / S) positions, few at a decode's
  // 32 splits, and one call per split left each split's dots a serial chain.
  qk_dots(a.q + (r * a.heads + h) * D, D, 0, n, [&](int64_t pos) { return slot_kv(a, r, h, pos); }, scores);
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
    attend(a, r, h, begin, end, scores + begin, ml[0], ml[1], o);
  }
  uint16_t* dst = a.out + (r * a.heads + h) * D;
  float m_max = kNegInf;
  for (int64_t s = 0; s < S; ++s) m_max = std::max(m_max, a.part_ml[(first + s) * 2]);
  if (m_max == kNegInf) {
    for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(0.0f);
    return;
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

/// The work below which the attention stays on one thread: its dots are
/// scalar (about a multiply-add per cycle, where kThreadWork counts the
/// GEMVs' SIMD ones), so a thread pays for itself at less work.
constexpr int64_t kAttentionThreadWork = int64_t{1} << 17;

/// Every (row, head) of the launch (attend_head), over threads when the
/// multiply-adds (2 * head_dim per position) pass kAttentionThreadWork; each
/// (row, head) is computed alone, so the bits do not depend on the split.
void attend_all(const BatchAttention& a) {
  const int64_t items = a.rows * a.heads;
  int64_t positions = 0;
  for (int64_t r = 0; r < a.rows; ++r) positions += std::max<int64_t>(a.seq_lens[r], 0);
  const int64_t work = positions * a.heads * 2 * a.head_dim;
  run_ranges(items, cpu_threads(work, items, kAttentionThreadWork), [&](unsigned, int64_t b, int64_t e) {
    std::vector<float> scores, acc(static_cast<size_t>(a.head_dim));
    for (int64_t item = b; item < e; ++item) {
      const int64_t r = item / a.heads, h = item % a.heads;
      const auto n = static_cast<size_t>(std::max<int64_t>(a.seq_lens[r], 0));
      if (scores.size() < n) scores.resize(n);
      attend_head(a, r, h, scores.data(), acc.data());
    }
  });
}

/// The two qkv variants' limits (their CUDA kernels' shared memory and registers).
struct QkvVariant {
  const char* name;
  int64_t max_head_dim;
  int64_t max_splits;  ///< 0: any
};
constexpr QkvVariant kDecodeQkv{"kern_attention_decode_qkv_bf16", 512, 64};
constexpr QkvVariant kBatchQkv{"kern_attention_decode_batch_qkv_bf16", kMaxHeadDim, 0};

/// A qkv-variant launch (24 params): the attention of BatchAttention (with q
/// still to be formed) plus the prologue's inputs.
struct QkvLaunch {
  BatchAttention a;
  const uint16_t *qkv = nullptr, *qw = nullptr, *kw = nullptr;
  const float* cos_sin = nullptr;
  uint16_t* cache = nullptr;  ///< a.cache, writable
  int64_t qkv_stride = 0;
  float eps = 0.0f;
  bool neox = false;
  bool work = false;
};

Status parse_qkv(const CpuLaunch& l, const QkvVariant& v, QkvLaunch& k) {
  using namespace detail;
  const char* name = v.name;
  BatchAttention& a = k.a;
  KERN_RETURN_IF_ERROR(check_num_args(l, name, 24));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 13, "num_seqs", 0, a.rows));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 14, "num_heads", 0, a.heads));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 15, "num_kv_heads", 1, a.kv_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 16, "head_dim", 0, a.head_dim));
  KERN_RETURN_IF_ERROR(read_i64(l, name, 17, "page_stride", 0, a.page_stride));
  KERN_RETURN_IF_ERROR(read_f32(l, name, 18, "scale", false, a.scale));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 19, "pages_per_seq", 0, a.pages));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 20, "num_splits", 1, a.splits));
  KERN_RETURN_IF_ERROR(read_i32(l, name, 21, "qkv_stride", 0, k.qkv_stride));
  KERN_RETURN_IF_ERROR(read_f32(l, name, 22, "eps", true, k.eps));
  const uint8_t flags = l.arg<uint8_t>(23);
  if ((flags & ~detail::kRopeFlagsKnown) != 0)
    return launch_error(name, "param 23 (rope_flags) is " + std::to_string(flags) + "; must be 0 to 3 (bit 0 neox, "
                                                                                      "bit 1 no q/k norm)");
  k.neox = (flags & detail::kRopeNeox) != 0;
  const bool norm = (flags & detail::kRopeNoQkNorm) == 0;
  if (a.rows > kMaxRows)
    return launch_error(name, "param 13 (num_seqs) is " + std::to_string(a.rows) + "; must be <= " +
                                  std::to_string(kMaxRows) + " (the scratch's rows)");
  if (a.heads % a.kv_heads != 0 || a.heads / a.kv_heads > kMaxGroup)
    return launch_error(name, "param 14 (num_heads) is " + std::to_string(a.heads) +
                                  "; must be a multiple of param 15 (num_kv_heads) = " + std::to_string(a.kv_heads) +
                                  " with at most " + std::to_string(kMaxGroup) + " query heads per kv head");
  if (a.head_dim > v.max_head_dim || a.head_dim % 2 != 0)
    return launch_error(name, "param 16 (head_dim) is " + std::to_string(a.head_dim) + "; must be even and <= " +
                                  std::to_string(v.max_head_dim));
  if (v.max_splits > 0 && a.splits > v.max_splits)
    return launch_error(name, "param 20 (num_splits) is " + std::to_string(a.splits) + "; must be <= " +
                                  std::to_string(v.max_splits) + " (the merge's split weights in shared memory)");
  KERN_RETURN_IF_ERROR(check_at_least(name, 17, "page_stride", a.page_stride,
                                      kv_layer_page_elems(a.kv_heads, a.head_dim),
                                      "16 * num_kv_heads * 2 * head_dim, one layer's page"));
  KERN_RETURN_IF_ERROR(check_at_least(name, 21, "qkv_stride", k.qkv_stride, (a.heads + 2 * a.kv_heads) * a.head_dim,
                                      "(num_heads + 2 num_kv_heads) * head_dim"));
  k.work = a.rows > 0 && a.heads > 0 && a.head_dim > 0;
  const float* ks = nullptr;
  const float* vs = nullptr;
  int32_t* counters = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 0, "qkv", k.work, k.qkv));
  if (norm) {  // without q/k norm the weights are not read (null: norm_rope_head skips the norm)
    KERN_RETURN_IF_ERROR(read_ptr(l, name, 1, "q_norm_weight", k.work, k.qw));
    KERN_RETURN_IF_ERROR(read_ptr(l, name, 2, "k_norm_weight", k.work, k.kw));
  }
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 3, "cos_sin_cache", k.work, k.cos_sin));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 4, "kv_cache", k.work, k.cache));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 5, "block_tables", k.work && a.pages > 0, a.tables));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 6, "seq_lens", k.work, a.seq_lens));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 7, "k_scale", k.work, ks));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 8, "v_scale", k.work, vs));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 9, "partial_o", k.work, a.part_o));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 10, "partial_ml", k.work, a.part_ml));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 11, "counters", k.work, counters));
  KERN_RETURN_IF_ERROR(read_ptr(l, name, 12, "out", k.work, a.out));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, name, 0, a.kv_heads, "one block per kv head"));
  KERN_RETURN_IF_ERROR(check_grid_equals(l, name, 1, 20, "num_splits", a.splits));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, name, 2, a.rows, "one block per sequence"));
  if (l.block[0] != 128)
    return launch_error(name, "block.x is " + std::to_string(l.block[0]) + "; must be 128 (4 warps)");
  if (!k.work) return Status::ok_status();
  a.cache = k.cache;
  int64_t max_pos = 0;
  KERN_RETURN_IF_ERROR(check_tables(l, name, a, 19, 4, max_pos));
  // Row r's RoPE row is its position max(seq_lens[r] - 1, 0).
  const uint64_t rope_bytes =
      sat_mul(sat_mul(static_cast<uint64_t>(max_pos) + 1, static_cast<uint64_t>(a.head_dim)), 4);
  KERN_RETURN_IF_ERROR(check_data_extent(l, name, 3, "cos_sin_cache", rope_bytes,
                                         "position " + std::to_string(max_pos) + " (seq_lens - 1)"));
  a.k_scale = *ks;
  a.v_scale = *vs;
  return Status::ok_status();
}

/// The head elements (rows * (num_heads + num_kv_heads) * head_dim) above
/// which the qkv prologue runs its rows on threads: each head's sum of
/// squares is a serial chain (~0.3 us at head_dim 128), so a batch-8 launch
/// of 24 heads per row took ~60 us on the calling thread while the others
/// waited, against a few us to hand rows to the pool.
constexpr int64_t kPrologueThreadElems = int64_t{1} << 14;

/// The prologue of every row (kern_qk_norm_rope_cache_bf16's values): q heads
/// into `q` [B, H * D]; for a row with context, the new k and v into the
/// cache slot of its position seq_lens[r] - 1. Rows over threads when large
/// (each row's values are computed alone, as the CUDA kernel's blocks do).
void qkv_prologue(const QkvLaunch& k, std::vector<uint16_t>& q) {
  const BatchAttention& a = k.a;
  const int64_t D = a.head_dim;
  q.assign(static_cast<size_t>(a.rows * a.heads * D), 0);
  const int64_t elems = a.rows * (a.heads + a.kv_heads) * D;
  run_ranges(a.rows, cpu_threads(elems, a.rows, kPrologueThreadElems), [&](unsigned, int64_t rb, int64_t re) {
    std::vector<float> head(static_cast<size_t>(D));
    for (int64_t r = rb; r < re; ++r) {
      const uint16_t* row = k.qkv + r * k.qkv_stride;
      const int64_t n = std::max<int64_t>(a.seq_lens[r], 0);
      const int64_t pos = std::max<int64_t>(n - 1, 0);
      const float* cs = k.cos_sin + pos * D;
      for (int64_t h = 0; h < a.heads; ++h) {
        detail::norm_rope_head(row + h * D, k.qw, cs, D, k.eps, k.neox, head.data());
        for (int64_t i = 0; i < D; ++i) q[(r * a.heads + h) * D + i] = f32_to_bf16(head[i]);
      }
      if (n == 0) continue;  // a free row: no new token
      const int64_t slot =
          static_cast<int64_t>(a.tables[r * a.pages + pos / detail::kPageSlots]) * detail::kPageSlots +
          pos % detail::kPageSlots;
      for (int64_t h = 0; h < a.kv_heads; ++h) {
        uint16_t* dst = k.cache + detail::kv_slot_offset(slot, h, a.page_stride, a.kv_heads, D);
        detail::norm_rope_head(row + (a.heads + h) * D, k.kw, cs, D, k.eps, k.neox, head.data());
        for (int64_t i = 0; i < D; ++i) dst[i] = f32_to_bf16(head[i] / a.k_scale);
        const uint16_t* v = row + (a.heads + a.kv_heads + h) * D;
        for (int64_t i = 0; i < D; ++i) dst[D + i] = f32_to_bf16(bf16_to_f32(v[i]) / a.v_scale);
      }
    }
  });
}

Status qkv_attention(const CpuLaunch& l, const QkvVariant& v) {
  QkvLaunch k;
  KERN_RETURN_IF_ERROR(parse_qkv(l, v, k));
  if (!k.work) return Status::ok_status();
  std::vector<uint16_t> q;
  qkv_prologue(k, q);
  k.a.q = q.data();
  attend_all(k.a);
  return Status::ok_status();  // counters: the CUDA kernel's, left at zero
}

Status qkv_attention_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  if (l.num_args < 24) return Status::ok_status();  // the kernel reports the param count
  const uint64_t rows = size_i32(l, 13), heads = size_i32(l, 14), kv_heads = size_i32(l, 15);
  const uint64_t head_dim = size_i32(l, 16), pages = size_i32(l, 19), splits = size_i32(l, 20);
  const uint64_t stride = size_i32(l, 21);
  if (rows == 0 || heads == 0 || head_dim == 0) return Status::ok_status();
  e.touch(0, "qkv", strided_bytes(rows, stride, sat_mul(heads + 2 * kv_heads, head_dim), 2));
  if ((l.arg<uint8_t>(23) & detail::kRopeNoQkNorm) == 0) {  // else the norm weights are not read
    e.touch(1, "q_norm_weight", sat_mul(head_dim, 2));
    e.touch(2, "k_norm_weight", sat_mul(head_dim, 2));
  }
  // cos_sin_cache (3) and kv_cache (4): rows / pages chosen by data, checked by the kernel.
  if (pages > 0) e.touch(5, "block_tables", sat_product({rows, pages, 4}));
  e.touch(6, "seq_lens", sat_mul(rows, 4));
  e.touch(7, "k_scale", 4);
  e.touch(8, "v_scale", 4);
  e.touch(9, "partial_o", sat_product({rows, heads, splits, head_dim, 4}));
  e.touch(10, "partial_ml", sat_product({rows, heads, splits, 2, 4}));
  e.touch(11, "counters", sat_product({rows, kv_heads, 4}));
  e.touch(12, "out", sat_product({rows, heads, head_dim, 2}));
  return Status::ok_status();
}

}  // namespace

Status attention_decode_batch_bf16(const CpuLaunch& l) {
  BatchAttention a;
  KERN_RETURN_IF_ERROR(parse(l, a));
  if (a.rows == 0 || a.heads == 0 || a.head_dim == 0) return Status::ok_status();
  attend_all(a);
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

namespace kern::cpu {

Status attention_decode_qkv_bf16(const CpuLaunch& l) { return qkv_attention(l, kDecodeQkv); }

Status attention_decode_batch_qkv_bf16(const CpuLaunch& l) { return qkv_attention(l, kBatchQkv); }

Status attention_decode_qkv_bf16_extents(const CpuLaunch& l, CpuExtents& e) { return qkv_attention_extents(l, e); }

Status attention_decode_batch_qkv_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  return qkv_attention_extents(l, e);
}

}  // namespace kern::cpu
