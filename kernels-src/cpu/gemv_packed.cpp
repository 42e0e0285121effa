// GemvPackedStore and the packed lane order (gemv_packed.h).
#include "kernels-src/cpu/gemv_packed.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "kernels-src/cpu/parallel.h"

namespace kern::cpu {

namespace {

constexpr int kLanes = 32;

}  // namespace

bool gemv_packable(int64_t rows, int64_t k, int64_t splits) {
  return rows >= 1 && k >= 8 && k % 8 == 0 && splits >= 1;
}

void pack_gemv_rows(const uint16_t* w, int64_t k, int64_t splits, int64_t row_begin, int64_t row_end, uint16_t* out,
                    uint16_t* w_min1, uint16_t* w_max) {
  const int64_t groups = k / 8;
  const int64_t per_split = (groups + splits - 1) / splits;
  uint16_t mn1 = 0xffff, mx = 0;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint16_t* row = w + r * k;
    uint16_t* dst_row = out + r * k;
    for (int64_t x = 0; x < k; ++x) {
      const auto abs = static_cast<uint16_t>(row[x] & 0x7fffu);
      mx = std::max(mx, abs);
      mn1 = std::min(mn1, static_cast<uint16_t>(abs - 1));
    }
    for (int64_t s = 0; s < splits; ++s) {
      const int64_t gb = std::min(groups, s * per_split), ge = std::min(groups, gb + per_split);
      const int64_t full = (ge - gb) / kLanes, part = (ge - gb) % kLanes;
      for (int64_t t = 0; t <= full; ++t) {
        const int64_t live = t < full ? kLanes : part;  // lanes of this block
        const int64_t g0 = gb + kLanes * t;
        // dword (d, l) at element offset 8 g0 + 2 (d live + l): low word first.
        uint16_t* dst = dst_row + 8 * g0;
        for (int d = 0; d < 4; ++d)
          for (int64_t l = 0; l < live; ++l) {
            const uint16_t* g = row + 8 * (g0 + l);
            dst[2 * (d * live + l)] = g[2 * d + 1];  // low word: element 2d + 1
            dst[2 * (d * live + l) + 1] = g[2 * d];  // high word: element 2d
          }
      }
    }
  }
  *w_min1 = mn1;
  *w_max = mx;
}

GemvPackedStore::GemvPackedStore() = default;

GemvPackedStore::~GemvPackedStore() {
  for (auto& [key, e] : entries_)
    if (e.map != nullptr) munmap(e.map, e.map_length);
}

Result<uint64_t> GemvPackedStore::add(const uint16_t* w, int64_t rows, int64_t k, int64_t splits, unsigned threads) {
  if (!gemv_packable(rows, k, splits) || w == nullptr) return uint64_t{0};
  const auto key = std::make_tuple(w, k, splits);
  const auto it = entries_.find(key);
  if (it != entries_.end() && it->second.w.rows >= rows) return uint64_t{0};
  const size_t length = static_cast<size_t>(rows) * static_cast<size_t>(k) * sizeof(uint16_t);
  void* map = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) {
    return make_error(ErrorKind::kDevice, "packing a decode GEMV weight of " + std::to_string(length) +
                                              " B (mmap: " + std::strerror(errno) + ")");
  }
  // 2 MiB pages where the kernel has them: a decode step walks the whole
  // copy, and on a VM each 4 KiB page's first touch is costly (docs/kernels.md).
  madvise(map, length, MADV_HUGEPAGE);
  auto* out = static_cast<uint16_t*>(map);
  const unsigned t = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<int64_t>(rows, kMaxThreads))));
  std::vector<uint16_t> mn1(t, 0xffff), mx(t, 0);
  run_ranges(rows, t, [&](unsigned i, int64_t b, int64_t e) { pack_gemv_rows(w, k, splits, b, e, out, &mn1[i], &mx[i]); });
  Entry entry;
  entry.w = {out, rows, *std::min_element(mn1.begin(), mn1.end()), *std::max_element(mx.begin(), mx.end())};
  entry.map = map;
  entry.map_length = length;
  if (it != entries_.end()) {  // a longer w at the same address replaces the shorter copy
    bytes_ -= it->second.map_length;
    munmap(it->second.map, it->second.map_length);
    it->second = entry;
  } else {
    entries_.emplace(key, entry);
  }
  bytes_ += length;
  return uint64_t{length};
}

const PackedGemvW* GemvPackedStore::find(const uint16_t* w, int64_t rows, int64_t k, int64_t splits) const {
  const auto it = entries_.find(std::make_tuple(w, k, splits));
  if (it == entries_.end() || it->second.w.rows < rows) return nullptr;
  return &it->second.w;
}

}  // namespace kern::cpu
