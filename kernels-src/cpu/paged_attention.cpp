// Paged causal attention over the KV cache (docs/kernels.md §8):
// kern_paged_attention_partial_bf16 + kern_paged_attention_reduce_bf16 (the
// decode implementation: split-KV into f32 scratch, then a log-sum-exp merge)
// and kern_paged_attention_prefill_bf16 (one step), plus the non-causal
// kern_paged_attention_noncausal_bf16 (speculative decoding's DFlash draft,
// docs/speculative.md). All share one f32 routine that attends one query
// head to a range of cache positions, so the implementations differ only in
// how ranges are combined and where a query's range ends.
//
// Semantics: q_len = cu_seqlens_q[1] - cu_seqlens_q[0], ctx = seq_lens[0];
// query i (row i of q) sits at position ctx - q_len + i and attends to cache
// positions [0, ctx - q_len + i] (non-causal: every query to [0, ctx));
// position p lives in physical page
// block_table[p / 16], slot p % 16; query head h reads kv head h / (H / KV);
// k and v are the stored bf16 values times k_scale / v_scale.
//
// Checked data (batch size 1, the caller contract of SPEC §7):
// cu_seqlens_q = [0, num_tokens], seq_lens[0] >= num_tokens, and every block
// table entry the context uses is >= 0; the block table holds ceil(ctx / 16)
// entries and its pages lie inside the cache the device gave
// (CpuLaunch::avail), checked before anything is computed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/bf16.h"
#include "kernels-src/cpu/attention_dots.h"
#include "kernels-src/cpu/kernel_args.h"
#include "kernels-src/cpu/kernels.h"
#include "kernels-src/cpu/kv_layout.h"
#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {

constexpr const char* kPartial = "kern_paged_attention_partial_bf16";
constexpr const char* kReduce = "kern_paged_attention_reduce_bf16";
constexpr const char* kPrefill = "kern_paged_attention_prefill_bf16";
constexpr const char* kDecode = "kern_attention_decode_bf16";
constexpr const char* kNonCausal = "kern_paged_attention_noncausal_bf16";
constexpr int64_t kMaxGroup = 8;      // query heads per kv head (the CUDA twin's registers)
constexpr int64_t kMaxHeadDim = 512;  // the CUDA twin's shared-memory rows
constexpr int64_t kMaxDecodeRows = 8;  // query rows of one kern_attention_decode_bf16 launch (its scratch's rows)
constexpr int64_t kMaxDecodeSplits = 64;  // num_splits of kern_attention_decode_bf16 (the CUDA twin's shared split weights)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// The interface params (docs/kernels.md §8) of one attention launch, checked.
struct Attention {
  const uint16_t* q = nullptr;         // [T, H * D]
  const uint16_t* cache = nullptr;     // layer base of the paged cache
  const int32_t* block_table = nullptr;
  float k_scale = 1.0f, v_scale = 1.0f;
  int64_t tokens = 0, heads = 0, kv_heads = 0, head_dim = 0, page_stride = 0;
  float scale = 0.0f;
  int64_t ctx = 0;  // seq_lens[0]

  /// Causal length of query i: positions [0, ctx - T + i].
  int64_t causal_len(int64_t i) const { return ctx - tokens + i + 1; }
};

/// Reads interface params 0..6 (pointers) and the six scalars that start at
/// param `s` (num_tokens, num_heads, num_kv_heads, head_dim, page_stride,
/// scale), then checks the input data the kernel relies on.
Status parse_attention(const CpuLaunch& l, const char* kname, size_t s, Attention& a) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(read_i32(l, kname, s, "num_tokens", 0, a.tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, s + 1, "num_heads", 0, a.heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, s + 2, "num_kv_heads", 1, a.kv_heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, s + 3, "head_dim", 0, a.head_dim));
  KERN_RETURN_IF_ERROR(read_i64(l, kname, s + 4, "page_stride", 0, a.page_stride));
  KERN_RETURN_IF_ERROR(read_f32(l, kname, s + 5, "scale", false, a.scale));
  if (a.heads % a.kv_heads != 0) {
    return launch_error(kname, "param " + std::to_string(s + 1) + " (num_heads) is " +
                                   std::to_string(a.heads) + "; must be a multiple of param " +
                                   std::to_string(s + 2) + " (num_kv_heads) = " +
                                   std::to_string(a.kv_heads));
  }
  KERN_RETURN_IF_ERROR(check_at_least(kname, s + 4, "page_stride", a.page_stride,
                                      kv_layer_page_elems(a.kv_heads, a.head_dim),
                                      "16 * num_kv_heads * 2 * head_dim, one layer's page"));
  const bool work = a.tokens > 0 && a.heads > 0 && a.head_dim > 0;
  const int32_t* seq_lens = nullptr;
  const int32_t* cu = nullptr;
  const float* ks = nullptr;
  const float* vs = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 0, "q", work, a.q));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 1, "kv_cache", work, a.cache));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 2, "block_table", work, a.block_table));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 3, "seq_lens", work, seq_lens));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 4, "cu_seqlens_q", work, cu));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 5, "k_scale", work, ks));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 6, "v_scale", work, vs));
  if (!work) return Status::ok_status();

  if (cu[0] != 0 || cu[1] != a.tokens) {
    return data_error(kname, "cu_seqlens_q is [" + std::to_string(cu[0]) + ", " +
                                 std::to_string(cu[1]) + "]; must be [0, num_tokens = " +
                                 std::to_string(a.tokens) + "] (batch size 1)");
  }
  a.ctx = seq_lens[0];
  if (a.ctx < a.tokens) {
    return data_error(kname, "seq_lens[0] is " + std::to_string(a.ctx) +
                                 "; must be >= num_tokens = " + std::to_string(a.tokens) +
                                 " (the cache holds this call's tokens)");
  }
  const int64_t pages = (a.ctx + kPageSlots - 1) / kPageSlots;
  KERN_RETURN_IF_ERROR(check_data_extent(l, kname, 2, "block_table", static_cast<uint64_t>(pages) * 4,
                                         "seq_lens[0] = " + std::to_string(a.ctx)));
  int64_t max_page = 0;
  for (int64_t p = 0; p < pages; ++p) {
    if (a.block_table[p] < 0) {
      return data_error(kname, "block_table[" + std::to_string(p) + "] is " +
                                   std::to_string(a.block_table[p]) + "; must be >= 0");
    }
    max_page = std::max<int64_t>(max_page, a.block_table[p]);
  }
  // The last page the context uses must hold this layer's whole page.
  const uint64_t cache_bytes =
      sat_mul(sat_add(sat_mul(static_cast<uint64_t>(max_page), static_cast<uint64_t>(a.page_stride)),
                      static_cast<uint64_t>(kv_layer_page_elems(a.kv_heads, a.head_dim))),
              2);
  KERN_RETURN_IF_ERROR(check_data_extent(l, kname, 1, "kv_cache", cache_bytes,
                                         "block_table page " + std::to_string(max_page)));
  a.k_scale = *ks;
  a.v_scale = *vs;
  return Status::ok_status();
}

/// The cache's k of query head `h` at position pos (its v follows at + D).
const uint16_t* slot_kv(const Attention& a, int64_t h, int64_t pos) {
  const int64_t kv_head = h / (a.heads / a.kv_heads);
  const int64_t slot = static_cast<int64_t>(a.block_table[pos / detail::kPageSlots]) * detail::kPageSlots +
                       pos % detail::kPageSlots;
  return a.cache + detail::kv_slot_offset(slot, kv_head, a.page_stride, a.kv_heads, a.head_dim);
}

/// scores[p] = the q . k dot of query row `i`, head `h` with cache position
/// p, for p < n (qk_dots: interleaved, the bits of one at a time). All of a
/// row's positions at once, whatever the splits: a split of the decode
/// holds few positions (ceil(n / S)), and one call per split left each
/// split's dots a serial chain.
void qk_scores(const Attention& a, int64_t i, int64_t h, int64_t n, float* scores) {
  qk_dots(a.q + (i * a.heads + h) * a.head_dim, a.head_dim, 0, n,
          [&](int64_t pos) { return slot_kv(a, h, pos); }, scores);
}

/// Attends query row `i`, head `h` to cache positions [begin, end) (end >
/// begin), whose q . k dots `scores` holds (qk_scores, from position begin;
/// scaled in place): m = max of the scaled scores, l = sum of
/// exp(score - m), o[d] = sum of exp(score - m) * v[d] (unnormalised; v
/// includes v_scale).
void attend_range(const Attention& a, int64_t h, int64_t begin, int64_t end, float* scores, float& m, float& l,
                  float* o) {
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
    const uint16_t* v = slot_kv(a, h, p) + D;
    for (int64_t d = 0; d < D; ++d) o[d] += e * bf16_to_f32(v[d]);
  }
  for (int64_t d = 0; d < D; ++d) o[d] *= a.v_scale;
}

/// The decode splits (docs/kernels.md §8): for every (query i, head h, split
/// s) of [T][H][S], the unnormalised o and (m, l) of positions
/// [s L, min((s + 1) L, n_i)), L = ceil(n_i / S); an empty split writes
/// (-inf, 0) and o = 0.
void split_partials(const Attention& a, int64_t splits, float* part_o, float* part_ml) {
  const int64_t D = a.head_dim;
  std::vector<float> scores(static_cast<size_t>(a.ctx));
  for (int64_t i = 0; i < a.tokens; ++i) {
    const int64_t n = a.causal_len(i);
    const int64_t len = (n + splits - 1) / splits;  // L = ceil(n_i / S)
    for (int64_t h = 0; h < a.heads; ++h) {
      qk_scores(a, i, h, n, scores.data());
      for (int64_t s = 0; s < splits; ++s) {
        const int64_t cell = (i * a.heads + h) * splits + s;  // [T][H][S]
        float* o = part_o + cell * D;
        float* ml = part_ml + cell * 2;
        const int64_t begin = s * len, end = std::min((s + 1) * len, n);
        if (begin >= end) {  // empty split
          ml[0] = kNegInf;
          ml[1] = 0.0f;
          for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
          continue;
        }
        attend_range(a, h, begin, end, scores.data() + begin, ml[0], ml[1], o);
      }
    }
  }
}

/// out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s per (query, head),
/// splits added in order 0, 1, ...; zeros when every split is empty.
void merge_splits(int64_t tokens, int64_t heads, int64_t D, int64_t splits, const float* part_o,
                  const float* part_ml, uint16_t* out) {
  std::vector<float> acc(static_cast<size_t>(D));
  for (int64_t i = 0; i < tokens; ++i) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t first = (i * heads + h) * splits;
      uint16_t* dst = out + (i * heads + h) * D;
      float m_max = kNegInf;
      for (int64_t s = 0; s < splits; ++s) m_max = std::max(m_max, part_ml[(first + s) * 2]);
      if (m_max == kNegInf) {  // every split empty: no context, write zeros
        for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(0.0f);
        continue;
      }
      float denom = 0.0f;
      for (int64_t d = 0; d < D; ++d) acc[d] = 0.0f;
      for (int64_t s = 0; s < splits; ++s) {
        const float* ml = part_ml + (first + s) * 2;
        if (ml[0] == kNegInf) continue;  // empty split: weight 0 (and its o is 0)
        const float w = std::exp(ml[0] - m_max);
        denom += w * ml[1];
        const float* o = part_o + (first + s) * D;
        for (int64_t d = 0; d < D; ++d) acc[d] += w * o[d];
      }
      for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(acc[d] / denom);
    }
  }
}

/// The params the split-KV launches share: the attention interface from
/// param `s`, num_splits at `splits_at`, out f32 partial_o (param 7) and
/// partial_ml (param 8), read only when there is work.
struct SplitLaunch {
  Attention a;
  int64_t splits = 0;
  float* part_o = nullptr;
  float* part_ml = nullptr;
  bool work = false;  ///< tokens, heads and head_dim all > 0
};

Status parse_split_launch(const CpuLaunch& l, const char* kname, size_t s, size_t splits_at, SplitLaunch& p) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(parse_attention(l, kname, s, p.a));
  KERN_RETURN_IF_ERROR(read_i32(l, kname, splits_at, "num_splits", 1, p.splits));
  p.work = p.a.tokens > 0 && p.a.heads > 0 && p.a.head_dim > 0;
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 7, "partial_o", p.work, p.part_o));
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 8, "partial_ml", p.work, p.part_ml));
  return Status::ok_status();
}

}  // namespace

Status paged_attention_partial_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kPartial, 16));
  SplitLaunch p;
  KERN_RETURN_IF_ERROR(parse_split_launch(l, kPartial, 9, 15, p));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kPartial, 0, p.a.heads, "one block per query head"));
  KERN_RETURN_IF_ERROR(check_grid_equals(l, kPartial, 1, 15, "num_splits", p.splits));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kPartial, 2, p.a.tokens, "one block per query"));
  if (!p.work) return Status::ok_status();

  split_partials(p.a, p.splits, p.part_o, p.part_ml);
  return Status::ok_status();
}

Status paged_attention_reduce_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kReduce, 7));
  int64_t tokens = 0, heads = 0, head_dim = 0, splits = 0;
  KERN_RETURN_IF_ERROR(read_i32(l, kReduce, 3, "num_tokens", 0, tokens));
  KERN_RETURN_IF_ERROR(read_i32(l, kReduce, 4, "num_heads", 0, heads));
  KERN_RETURN_IF_ERROR(read_i32(l, kReduce, 5, "head_dim", 0, head_dim));
  KERN_RETURN_IF_ERROR(read_i32(l, kReduce, 6, "num_splits", 1, splits));
  const bool work = tokens > 0 && heads > 0 && head_dim > 0;
  const float* part_o = nullptr;
  const float* part_ml = nullptr;
  uint16_t* out = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kReduce, 0, "partial_o", work, part_o));
  KERN_RETURN_IF_ERROR(read_ptr(l, kReduce, 1, "partial_ml", work, part_ml));
  KERN_RETURN_IF_ERROR(read_ptr(l, kReduce, 2, "out", work, out));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kReduce, 0, heads, "one block per query head"));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kReduce, 1, tokens, "one block per query"));
  if (!work) return Status::ok_status();

  merge_splits(tokens, heads, head_dim, splits, part_o, part_ml, out);
  return Status::ok_status();
}

Status attention_decode_bf16(const CpuLaunch& l) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kDecode, 18));
  SplitLaunch p;
  KERN_RETURN_IF_ERROR(parse_split_launch(l, kDecode, 11, 17, p));
  const Attention& a = p.a;
  const bool work = p.work;
  int32_t* counters = nullptr;
  uint16_t* out = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kDecode, 9, "counters", work, counters));
  KERN_RETURN_IF_ERROR(read_ptr(l, kDecode, 10, "out", work, out));
  if (a.heads / a.kv_heads > kMaxGroup) {
    return launch_error(kDecode, "param 12 (num_heads) / param 13 (num_kv_heads) is " +
                                     std::to_string(a.heads / a.kv_heads) + "; must be <= " + std::to_string(kMaxGroup) +
                                     " query heads per kv head");
  }
  if (a.head_dim > kMaxHeadDim) {
    return launch_error(kDecode, "param 14 (head_dim) is " + std::to_string(a.head_dim) + "; must be <= " +
                                     std::to_string(kMaxHeadDim));
  }
  if (a.tokens > kMaxDecodeRows) {
    return launch_error(kDecode, "param 11 (num_tokens) is " + std::to_string(a.tokens) + "; must be <= " +
                                     std::to_string(kMaxDecodeRows) +
                                     " (decode rows; prefill uses kern_paged_attention_prefill_bf16)");
  }
  if (p.splits > kMaxDecodeSplits) {
    return launch_error(kDecode, "param 17 (num_splits) is " + std::to_string(p.splits) + "; must be <= " +
                                     std::to_string(kMaxDecodeSplits));
  }
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kDecode, 0, a.kv_heads, "one block per kv head"));
  KERN_RETURN_IF_ERROR(check_grid_equals(l, kDecode, 1, 17, "num_splits", p.splits));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kDecode, 2, a.tokens, "one block per query"));
  if (!work) return Status::ok_status();
  split_partials(a, p.splits, p.part_o, p.part_ml);
  merge_splits(a.tokens, a.heads, a.head_dim, p.splits, p.part_o, p.part_ml, out);
  return Status::ok_status();  // counters: the CUDA twin's, left at zero
}

namespace {

/// The one-step attention (prefill, non-causal): block (h, i) of grid
/// [H, T] writes bf16(o / l) over positions [0, causal_len(i)) (causal) or
/// [0, ctx) (non-causal).
Status one_step_attention(const CpuLaunch& l, const char* kname, bool causal) {
  using namespace detail;
  KERN_RETURN_IF_ERROR(check_num_args(l, kname, 14));
  Attention a;
  KERN_RETURN_IF_ERROR(parse_attention(l, kname, 8, a));
  const bool work = a.tokens > 0 && a.heads > 0 && a.head_dim > 0;
  uint16_t* out = nullptr;
  KERN_RETURN_IF_ERROR(read_ptr(l, kname, 7, "out", work, out));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kname, 0, a.heads, "one block per query head"));
  KERN_RETURN_IF_ERROR(check_grid_covers(l, kname, 1, a.tokens, "one block per query"));
  if (!work) return Status::ok_status();

  const int64_t D = a.head_dim;
  // The (query, head) blocks are independent: balanced over the cores at
  // run time (later queries attend to more positions), a query row's heads
  // at a time, each block computed alone whatever thread runs it.
  const int64_t blocks = a.tokens * a.heads;
  const unsigned threads = cpu_threads(blocks * a.ctx * D * 2, a.tokens);
  std::vector<float> scores(static_cast<size_t>(threads * a.ctx));
  std::vector<float> o(static_cast<size_t>(threads * D));
  run_chunks(blocks, a.heads, threads, [&](unsigned t, int64_t b, int64_t e) {
    float* sc = scores.data() + t * a.ctx;
    float* ot = o.data() + t * D;
    for (int64_t x = b; x < e; ++x) {
      const int64_t i = x / a.heads, h = x % a.heads;
      float m = 0.0f, sum = 0.0f;
      const int64_t n = causal ? a.causal_len(i) : a.ctx;
      qk_scores(a, i, h, n, sc);
      attend_range(a, h, 0, n, sc, m, sum, ot);
      uint16_t* dst = out + x * D;
      for (int64_t d = 0; d < D; ++d) dst[d] = f32_to_bf16(ot[d] / sum);
    }
  });
  return Status::ok_status();
}

}  // namespace

Status paged_attention_prefill_bf16(const CpuLaunch& l) { return one_step_attention(l, kPrefill, true); }

Status paged_attention_noncausal_bf16(const CpuLaunch& l) { return one_step_attention(l, kNonCausal, false); }

namespace {

/// Declares the interface params 0..6 (scalars from param `s`): q and the
/// small per-call inputs; kv_cache and the block table entries past the
/// first ceil(T / 16) are chosen by data and checked in parse_attention.
void attention_extents(const CpuLaunch& l, size_t s, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, s), heads = size_i32(l, s + 1), head_dim = size_i32(l, s + 3);
  if (tokens == 0 || heads == 0 || head_dim == 0) return;
  e.touch(0, "q", sat_product({tokens, heads, head_dim, 2}));
  e.touch(2, "block_table", sat_mul((tokens + 15) / 16, 4));  // ctx >= T
  e.touch(3, "seq_lens", 4);
  e.touch(4, "cu_seqlens_q", 8);
  e.touch(5, "k_scale", 4);
  e.touch(6, "v_scale", 4);
}

}  // namespace

Status paged_attention_partial_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  attention_extents(l, 9, e);
  const uint64_t tokens = size_i32(l, 9), heads = size_i32(l, 10), head_dim = size_i32(l, 12);
  const uint64_t splits = size_i32(l, 15);
  if (tokens == 0 || heads == 0 || head_dim == 0) return Status::ok_status();
  e.touch(7, "partial_o", sat_product({tokens, heads, splits, head_dim, 4}));
  e.touch(8, "partial_ml", sat_product({tokens, heads, splits, 2, 4}));
  return Status::ok_status();
}

Status paged_attention_reduce_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  const uint64_t tokens = size_i32(l, 3), heads = size_i32(l, 4), head_dim = size_i32(l, 5);
  const uint64_t splits = size_i32(l, 6);
  if (tokens == 0 || heads == 0 || head_dim == 0) return Status::ok_status();
  e.touch(0, "partial_o", sat_product({tokens, heads, splits, head_dim, 4}));
  e.touch(1, "partial_ml", sat_product({tokens, heads, splits, 2, 4}));
  e.touch(2, "out", sat_product({tokens, heads, head_dim, 2}));
  return Status::ok_status();
}

Status paged_attention_prefill_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  attention_extents(l, 8, e);
  const uint64_t tokens = size_i32(l, 8), heads = size_i32(l, 9), head_dim = size_i32(l, 11);
  if (tokens == 0 || heads == 0 || head_dim == 0) return Status::ok_status();
  e.touch(7, "out", sat_product({tokens, heads, head_dim, 2}));
  return Status::ok_status();
}

Status attention_decode_bf16_extents(const CpuLaunch& l, CpuExtents& e) {
  using namespace detail;
  if (l.num_args < 18) return Status::ok_status();  // the kernel reports the param count
  attention_extents(l, 11, e);
  const uint64_t tokens = size_i32(l, 11), heads = size_i32(l, 12), kv_heads = size_i32(l, 13);
  const uint64_t head_dim = size_i32(l, 14), splits = size_i32(l, 17);
  if (tokens == 0 || heads == 0 || head_dim == 0) return Status::ok_status();
  e.touch(7, "partial_o", sat_product({tokens, heads, splits, head_dim, 4}));
  e.touch(8, "partial_ml", sat_product({tokens, heads, splits, 2, 4}));
  e.touch(9, "counters", sat_product({tokens, kv_heads, 4}));
  e.touch(10, "out", sat_product({tokens, heads, head_dim, 2}));
  return Status::ok_status();
}

}  // namespace kern::cpu
