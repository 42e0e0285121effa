// Token embedding lookup (docs/kernels.md §1). A pure gather: no arithmetic,
// so the output is bit-identical to the cpu reference.
//
// Launch: grid [T, 1, 1], block [128, 1, 1]; block t copies row
// token_ids[t] of the table into out[t].
// Bytes moved: 8 T (ids) + 2 T E (table rows read) + 2 T E (out written).
// For E = 2560 one row is 5 KB: 320 16-byte vectors over 128 threads.
#include "kern_cuda_common.cuh"

using kern_cuda::aligned_to;

/// kern_embedding_bf16(in i64 token_ids[T], in bf16 table[V,E], out bf16 out[T,E],
///                     i32 num_tokens, i32 hidden, i32 vocab)
/// An id outside [0, vocab) writes a zero row and reads nothing.
extern "C" __global__ void __launch_bounds__(128) kern_embedding_bf16(
    const int64_t* __restrict__ token_ids, const __nv_bfloat16* __restrict__ table,
    __nv_bfloat16* __restrict__ out, int num_tokens, int hidden, int vocab) {
  const int t = blockIdx.x;
  if (t >= num_tokens || hidden <= 0) return;
  const int64_t id = token_ids[t];
  const bool valid = id >= 0 && id < vocab;
  const __nv_bfloat16* src = table + (valid ? id : 0) * static_cast<int64_t>(hidden);
  __nv_bfloat16* dst = out + static_cast<int64_t>(t) * hidden;

  if ((hidden & 7) == 0 && aligned_to(src, 16) && aligned_to(dst, 16)) {
    const int nvec = hidden >> 3;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) d[i] = valid ? __ldg(s + i) : zero;
  } else {
    const __nv_bfloat16 zero = __float2bfloat16_rn(0.0f);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = valid ? src[i] : zero;
  }
}
