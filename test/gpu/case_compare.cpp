// The comparison rules and the cpu run of a comparison case (case_compare.h).
#include "test/gpu/case_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "common/bf16.h"
#include "kernels-src/cpu/cpu_kernel.h"

namespace kern::gpu_test {
namespace {

/// bf16 element `i` of `b` as f32.
float bf16_at(const std::vector<uint8_t>& b, size_t i) {
  uint16_t x;
  std::memcpy(&x, &b[2 * i], 2);
  return bf16_to_f32(x);
}

/// The element rotated together with element `i` of `b`, or -1 (kernel_cases.h CaseBuffer::pair_row).
long partner(const CaseBuffer& b, size_t i) {
  if (b.pair_row == 0 || b.pair_dim < 2) return -1;
  const size_t j = i % b.pair_row, heads = b.pair_row / b.pair_dim;
  if (j >= heads * b.pair_dim) return -1;
  const size_t d = j % b.pair_dim, half = b.pair_dim / 2;
  size_t p;
  if (b.pair_neox) {
    if (b.pair_dim % 2) return -1;
    p = d < half ? d + half : d - half;
  } else {
    p = d ^ 1;
    if (p >= b.pair_dim) return -1;
  }
  return static_cast<long>(i - d + p);
}

/// `scale`: the magnitude the bf16 tolerance is relative to (|cpu| unless rotated).
bool close(Compare cmp, const uint8_t* g, const uint8_t* c, double scale, double& err) {
  float a = 0, b = 0;
  if (cmp == Compare::kBf16) {
    uint16_t x, y;
    std::memcpy(&x, g, 2);
    std::memcpy(&y, c, 2);
    a = bf16_to_f32(x), b = bf16_to_f32(y);
  } else {
    std::memcpy(&a, g, 4);
    std::memcpy(&b, c, 4);
  }
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return err = 0, true;  // covers equal infinities
  err = std::fabs(double(a) - double(b));
  const double tol = cmp == Compare::kBf16 ? 1e-3 + std::ldexp(1.0, -6) * scale : 1e-5 + 1e-4 * std::fabs(b);
  return err <= tol;
}

}  // namespace

Mismatch compare(const CaseBuffer& cpu, const std::vector<uint8_t>& gpu, bool exact) {
  Mismatch m;
  const size_t es = cpu.compare == Compare::kBf16 ? 2 : cpu.compare == Compare::kF32 ? 4 : 1;
  for (size_t i = 0; i + es <= cpu.bytes.size(); i += es) {
    ++m.checked;
    double err = 0;
    const bool same = std::memcmp(&gpu[i], &cpu.bytes[i], es) == 0;
    m.bit_exact = m.bit_exact && same;
    double scale = 0;
    if (cpu.compare == Compare::kBf16) {
      scale = std::fabs(bf16_at(cpu.bytes, i / es));
      const long p = partner(cpu, i / es);
      if (p >= 0 && size_t(p) * 2 + 2 <= cpu.bytes.size()) scale = std::hypot(scale, double(bf16_at(cpu.bytes, p)));
    }
    const bool ok = same || (!exact && cpu.compare != Compare::kExact &&
                             close(cpu.compare, &gpu[i], &cpu.bytes[i], scale, err));
    if (same) err = 0;
    m.max_err = std::max(m.max_err, err);
    if (!ok && m.bad++ == 0) {
      m.first_bad = i / es;
      char buf[160];
      if (cpu.compare == Compare::kBf16) {
        uint16_t x, y;
        std::memcpy(&x, &gpu[i], 2);
        std::memcpy(&y, &cpu.bytes[i], 2);
        std::snprintf(buf, sizeof buf, "%s[%zu]: gpu %g cpu %g", cpu.name.c_str(), i / es, bf16_to_f32(x), bf16_to_f32(y));
      } else if (cpu.compare == Compare::kF32) {
        float x, y;
        std::memcpy(&x, &gpu[i], 4);
        std::memcpy(&y, &cpu.bytes[i], 4);
        std::snprintf(buf, sizeof buf, "%s[%zu]: gpu %g cpu %g", cpu.name.c_str(), i / es, x, y);
      } else {
        std::snprintf(buf, sizeof buf, "%s byte %zu: gpu 0x%02x cpu 0x%02x", cpu.name.c_str(), i, gpu[i], cpu.bytes[i]);
      }
      m.detail = buf;
    }
  }
  return m;
}

Status run_cpu(Case& c) {
  for (const CaseLaunch& l : c.launches) {
    const cpu::CpuKernel* fn = cpu::find_cpu_kernel(l.symbol);
    if (!fn) return make_error(ErrorKind::kKernel, l.symbol + ": no cpu reference kernel");
    std::vector<uint64_t> values(l.args.size());
    std::vector<void*> ptrs(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i) {
      const CaseArg& a = l.args[i];
      values[i] = a.buffer >= 0 ? reinterpret_cast<uint64_t>(c.buffers[a.buffer].bytes.data() + a.offset) : a.bits;
      ptrs[i] = &values[i];  // little-endian: a 4- or 1-byte scalar is the low bytes
    }
    cpu::CpuLaunch launch;
    std::copy(l.grid, l.grid + 3, launch.grid);
    std::copy(l.block, l.block + 3, launch.block);
    launch.shared_mem_bytes = l.shared_mem;
    launch.args = ptrs.data();
    launch.num_args = ptrs.size();
    const Status st = fn->run(launch);
    if (!st.ok()) return st.error().with_context("cpu reference");
  }
  return Status::ok_status();
}

}  // namespace kern::gpu_test
