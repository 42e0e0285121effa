// Deliberately broken CUDA kernels (and their correct twins) for the SIMT
// emulator's checks (simt_test.cpp): each breaks one rule the emulator must
// catch. Written like kernels-src/cuda/*.cu, against kern_cuda_common.cuh.
#include "kernels-src/cuda/kern_cuda_common.cuh"

using namespace kern_cuda;

/// Every thread writes s[t]; thread t > 0 then reads s[t - 1], with
/// (sync = 1) or without (sync = 0) a __syncthreads() between.
extern "C" __global__ void sim_shared_race(float* out, int sync) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = static_cast<float>(t);
  if (sync) __syncthreads();
  if (t > 0) out[t] = s[t - 1];
}

/// Thread t reads s[t - 1] and then every thread overwrites s[t]: a
/// write-after-read race without (sync = 0) a barrier between.
extern "C" __global__ void sim_shared_war(float* out, int sync) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = 1.0f;
  __syncthreads();
  out[t] = s[(t + 1) % 64];
  if (sync) __syncthreads();
  s[t] = 2.0f;
}

/// Only the first `written` threads write shared memory; every thread reads its own slot.
extern "C" __global__ void sim_shared_uninit(float* out, int written) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  if (t < written) s[t] = 1.0f;
  __syncthreads();
  out[t] = s[t];
}

/// out[t] = in[t + shift]: out of bounds for shift > 0 at the last threads.
extern "C" __global__ void sim_copy_shift(const float* in, float* out, int shift) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = in[t + shift];
}

/// 8 bf16 through one 16-byte vector access at in + offset (elements).
extern "C" __global__ void sim_vector_load(const __nv_bfloat16* in, float* out, int offset) {
  float v[8];
  load8(in + offset, v);
  for (int j = 0; j < 8; ++j) out[8 * threadIdx.x + j] = v[j];
}

/// out[t] = in[t] + 1, reading in before (wait_first = 0) or after pdl_wait().
extern "C" __global__ void sim_pdl_consumer(const float* in, float* out, int wait_first) {
  const int t = threadIdx.x;
  pdl_launch_dependents();
  if (wait_first) pdl_wait();
  const float v = in[t];
  if (!wait_first) pdl_wait();
  out[t] = v + 1.0f;
}

/// Writes out[t] before (wait_first = 0) or after pdl_wait().
extern "C" __global__ void sim_pdl_writer(float* out, int wait_first) {
  const int t = threadIdx.x;
  if (wait_first) pdl_wait();
  out[t] = 3.0f;
  if (!wait_first) pdl_wait();
}

/// out[t] = 2: never calls pdl_wait().
extern "C" __global__ void sim_no_pdl_wait(float* out) { out[threadIdx.x] = 2.0f; }

/// The last-block-done pattern over gridDim.x blocks: the last block sums
/// the partials, and resets the counter (reset = 1) or forgets to.
extern "C" __global__ void sim_last_block(float* partial, int* counter, float* out, int reset) {
  __shared__ int last;
  if (threadIdx.x == 0) partial[blockIdx.x] = static_cast<float>(blockIdx.x);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1) == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  if (!last) return;
  if (threadIdx.x == 0) {
    float s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += partial[b];
    *out = s;
    if (reset) *counter = 0;
  }
}

/// One access of `width` bytes at byte `offset` of `p`, through each memory
/// hook the real kernels' emulated code calls (`nm -u` of their objects):
/// mode 0 an aligned read, 1 an aligned write (width 2, 4, 8 or 16: uint16_t
/// to unsigned __int128, one load or store each), 2 an atomic (width 4),
/// 3 an unaligned read (width 4 or 8: a memcpy of that constant size, which
/// the compiler turns into one load of alignment 1), 4 and 5 a memcpy of
/// `width` bytes from and to `p` (kern_sim_memcpy's range check). A value
/// read goes to out[0].
extern "C" __global__ void sim_access_width(unsigned char* p, float* out, int offset, int width, int mode) {
  unsigned char* a = p + offset;
  if (mode == 2) {
    atomicExch(reinterpret_cast<int*>(a), 0);  // leaves 0: counters must end at zero
    return;
  }
  if (mode == 3) {
    uint64_t v = 0;
    if (width == 4) {
      uint32_t w;
      memcpy(&w, a, 4);
      v = w;
    } else {
      memcpy(&v, a, 8);
    }
    out[0] = static_cast<float>(v);
    return;
  }
  if (mode == 4 || mode == 5) {
    if (mode == 4) memcpy(out, a, width);
    else memcpy(a, out, width);
    return;
  }
  switch (width) {
    case 2:
      if (mode == 1) *reinterpret_cast<uint16_t*>(a) = 1;
      else out[0] = *reinterpret_cast<const uint16_t*>(a);
      break;
    case 4:
      if (mode == 1) *reinterpret_cast<uint32_t*>(a) = 1;
      else out[0] = static_cast<float>(*reinterpret_cast<const uint32_t*>(a));
      break;
    case 8:
      if (mode == 1) *reinterpret_cast<uint64_t*>(a) = 1;
      else out[0] = static_cast<float>(*reinterpret_cast<const uint64_t*>(a));
      break;
    case 16:
      if (mode == 1) *reinterpret_cast<unsigned __int128*>(a) = 1;
      else out[0] = static_cast<float>(static_cast<uint64_t>(*reinterpret_cast<const unsigned __int128*>(a)));
      break;
  }
}

/// Thread `quit` returns before the __syncthreads() the others reach.
extern "C" __global__ void sim_barrier_exit(float* out, int quit) {
  if (static_cast<int>(threadIdx.x) == quit) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

/// Lane `quit` returns before the full-mask warp_sum the others call.
extern "C" __global__ void sim_shuffle_exit(float* out, int quit) {
  if (static_cast<int>(threadIdx.x) == quit) return;
  out[threadIdx.x] = warp_sum(1.0f);
}

/// Half of warp 0 shuffles with the full mask, the other half waits at __syncthreads().
extern "C" __global__ void sim_deadlock(float* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = warp_sum(1.0f);
  else __syncthreads();
}

/// Shuffle and vote semantics: out[4 * t + k] for the xor / down / up / idx
/// shuffles of t, and ballot[w] of (t odd) per warp.
extern "C" __global__ void sim_collectives(int* out, unsigned* ballot) {
  const int t = threadIdx.x;
  out[4 * t + 0] = __shfl_xor_sync(0xffffffffu, t, 5);
  out[4 * t + 1] = __shfl_down_sync(0xffffffffu, t, 3);
  out[4 * t + 2] = __shfl_up_sync(0xffffffffu, t, 2, 16);
  out[4 * t + 3] = __shfl_sync(0xffffffffu, t, 7, 8);
  const unsigned b = __ballot_sync(0xffffffffu, t & 1);
  if ((t & 31) == 0) ballot[t / 32] = b;
}

/// Block b writes its visit number (an atomic ticket) to order[b]; the last
/// block resets the ticket.
extern "C" __global__ void sim_block_order(int* order, int* ticket) {
  const int n = gridDim.x * gridDim.y;
  const int v = atomicAdd(ticket, 1);
  order[blockIdx.y * gridDim.x + blockIdx.x] = v;
  if (v == n - 1) *ticket = 0;
}

/// Reads dynamic shared memory element `at` after thread 0 wrote element 0.
extern "C" __global__ void sim_dynamic_shared(float* out, int at) {
  KERN_DYNAMIC_SHARED(float, dyn);
  if (threadIdx.x == 0) dyn[0] = 5.0f;
  __syncthreads();
  out[threadIdx.x] = dyn[at];
}
