// SPEC §4 rule 4: every buffer and scratch shape resolves and its byte size
// fits u64 at the symbols' maxima (what the runtime allocates). The sizes at
// the minima and maxima are recorded for offset checks (rules 6 and 7).
#include "kern-verify/verify_rules.h"

namespace kern::verify {

void check_shapes(Context& ctx) {
  const Manifest& m = ctx.m;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const Buffer& b = m.buffers[i];
    ctx.buffer_bytes[i] = ctx.shape_bytes(b.dtype, b.shape, b.span, "buffers." + b.name);
  }
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const Kernel& kernel = m.kernels[k];
    for (size_t s = 0; s < kernel.scratch.size(); ++s) {
      const Scratch& sc = kernel.scratch[s];
      ctx.kernels[k].scratch_bytes[s] =
          ctx.shape_bytes(sc.dtype, sc.shape, sc.span, kernel_subject(kernel) + ".impl.scratch." + sc.name);
    }
  }
}

}  // namespace kern::verify
