// The decode GEMVs' weights packed once, at load, into the order the
// lane-order dots read them (gemv_lanes.h): per w row and split, each block
// of 32 8-element groups as [pair d 0..3][lane 0..31] dwords, dword (d, l)
// holding element 2d of lane l's group in its high 16 bits and element
// 2d + 1 in its low 16 bits. One 64-byte load then gives 16 lanes' elements
// 2d and 2d + 1: widened by a mask and a shift (the fma path) or taken as they
// are by vdpbf16ps, with no transposition in the decode step (the row-major
// w's in-register transpose was most of the GEMV's vector work per byte,
// docs/kernels.md "Session 6"). A split's last `part` (< 32) groups are
// packed compactly, [d][lane 0..part-1], so a packed row holds exactly the k
// elements of its w row at the same offsets per split (row stride k).
//
// The store also keeps each packed matrix's bf16 magnitude range, so the
// vdpbf16ps path's exactness check (vdpbf16ps_exact) is one comparison per
// launch instead of a check of every w value read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "common/result.h"

namespace kern::cpu {

/// Whether a [rows, k] w read with `splits` k splits can be packed: k a
/// positive multiple of 8 (a partial last group stays in the row-major
/// path), rows >= 1, 1 <= splits.
bool gemv_packable(int64_t rows, int64_t k, int64_t splits);

/// Writes w ([rows, k] bf16 bits, row stride k) in the packed order for
/// `splits` splits (the CUDA kernel's: ceil(ceil(k / 8) / splits) groups
/// each) to `out` (rows * k elements), rows [row_begin, row_end) only, and
/// returns over those rows' values min(|x| - 1) and max(|x|) of the bf16
/// magnitudes (bits & 0x7fff; a zero's wraps to 0xffff, so it leaves the
/// minimum alone). Requires gemv_packable(rows, k, splits).
void pack_gemv_rows(const uint16_t* w, int64_t k, int64_t splits, int64_t row_begin, int64_t row_end, uint16_t* out,
                    uint16_t* w_min1, uint16_t* w_max);

/// One packed w: `data` as pack_gemv_rows writes it for all rows, and its
/// magnitude range (for vdpbf16ps_exact).
struct PackedGemvW {
  const uint16_t* data = nullptr;
  int64_t rows = 0;
  uint16_t w_min1 = 0xffff, w_max = 0;
};

/// The packed copies of one device's decode GEMV weights, keyed by the
/// row-major w's address, k and splits. Made at load (the cpu device packs
/// every GEMV launch's w that lies in a weight buffer, CpuDevice::
/// prepare_launches) and read by the GEMV kernels through CpuLaunch::packed;
/// a w it does not hold runs from the row-major w (same bits). The copies
/// live in anonymous memory (MADV_HUGEPAGE) owned by the store.
class GemvPackedStore {
 public:
  GemvPackedStore();
  ~GemvPackedStore();
  GemvPackedStore(const GemvPackedStore&) = delete;
  GemvPackedStore& operator=(const GemvPackedStore&) = delete;

  /// Packs w ([rows, k] bf16 bits, row stride k; it must stay unchanged while
  /// the store is used: a weight) for `splits`, on up to `threads` threads,
  /// unless already held with at least `rows` rows. Returns the bytes
  /// allocated (0 when held or not packable). Errors: kDevice when the
  /// memory cannot be mapped ("mmap: ..."). Not thread-safe with find().
  Result<uint64_t> add(const uint16_t* w, int64_t rows, int64_t k, int64_t splits, unsigned threads);

  /// The packed copy of w for (k, splits) holding at least `rows` rows, or
  /// null. Safe from any thread once loading is done.
  const PackedGemvW* find(const uint16_t* w, int64_t rows, int64_t k, int64_t splits) const;

  /// Bytes of all packed copies (the weights' second layout, for the
  /// memory report).
  uint64_t bytes() const { return bytes_; }

 private:
  struct Entry {
    PackedGemvW w;
    void* map = nullptr;
    size_t map_length = 0;
  };
  std::map<std::tuple<const uint16_t*, int64_t, int64_t>, Entry> entries_;
  uint64_t bytes_ = 0;
};

}  // namespace kern::cpu
