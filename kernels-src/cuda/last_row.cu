// The last row of a row-major buffer moved to row 0 in place (docs/kernels.md
// §14a): how `prefill_last` (docs/causal-lm-manifest.md) computes the final
// norm, lm_head and sampling on the chunk's last row only — the row the next
// token follows (llama.cpp's and vLLM's "logits of the last token"), with the
// one-row decode kernels, since a dispatch's buffer offset is a literal and
// cannot name row tokens - 1. A byte copy: bit-identical to the cpu twin.
//
// Launch: grid [1, 1, 1], block [256, 1, 1]. Bytes moved: 2 row_bytes.
#include <cstdint>

/// kern_last_row(inout x[rows, row_bytes], i32 rows, i32 row_bytes)
/// row 0 = row rows - 1 (bytes); nothing for rows <= 1 or row_bytes <= 0.
/// Rows are disjoint for rows > 1, so the copy never reads what it wrote.
extern "C" __global__ void __launch_bounds__(256) kern_last_row(uint8_t* __restrict__ x, int rows, int row_bytes) {
  if (blockIdx.x != 0 || rows <= 1 || row_bytes <= 0) return;
  const int64_t from = static_cast<int64_t>(rows - 1) * row_bytes;
  if (row_bytes % 4 == 0) {  // every buffer is 256-byte aligned, so the rows are 4-byte aligned
    uint32_t* dst = reinterpret_cast<uint32_t*>(x);
    const uint32_t* src = reinterpret_cast<const uint32_t*>(x + from);
    for (int i = threadIdx.x; i < row_bytes / 4; i += blockDim.x) dst[i] = src[i];
  } else {
    for (int i = threadIdx.x; i < row_bytes; i += blockDim.x) x[i] = x[from + i];
  }
}
