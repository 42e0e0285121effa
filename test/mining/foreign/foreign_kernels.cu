// A foreign CUDA program's kernels for the mining test (test/mining/
// foreign_capture_test.py): nothing here follows kern's conventions beyond
// extern "C" entry symbols. Three launches per request of length n:
//   foreign_scale    grid ceil(n / 128): a struct-by-value parameter (two
//                    pointers, a float, a length) scales the input;
//   foreign_partial  grid ceil(n / 256): per-block sums into a scratch buffer;
//   foreign_reduce   grid 1: sums the scratch buffer's `blocks` partials.
// foreign_partial and foreign_reduce share the scratch buffer.

struct ForeignScaleArgs {
  const float* src;
  float* dst;
  float scale;
  int n;
};

extern "C" __global__ void foreign_scale(ForeignScaleArgs a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) a.dst[i] = a.src[i] * a.scale;
}

// One thread per block adds its 256 elements (a plain loop: the order is
// fixed, so the host's double-precision check is exact for small integers).
extern "C" __global__ void foreign_partial(const float* x, float* scratch, int n) {
  if (threadIdx.x != 0) return;
  const int begin = blockIdx.x * 256;
  float s = 0.0f;
  for (int i = begin; i < begin + 256 && i < n; ++i) s += x[i];
  scratch[blockIdx.x] = s;
}

extern "C" __global__ void foreign_reduce(const float* scratch, float* out, int blocks) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  float s = 0.0f;
  for (int b = 0; b < blocks; ++b) s += scratch[b];
  out[0] = s;
}
