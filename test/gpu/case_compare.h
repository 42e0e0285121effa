// Comparing a comparison case's outputs with the cpu reference
// (kernel_cases.h): the tolerance rules and the cpu run, shared by the GPU
// harness (gpu_compare.cpp) and the simulated GPU's (test/sim/simt/sim_compare.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/result.h"
#include "test/gpu/kernel_cases.h"

namespace kern::gpu_test {

/// The outcome of comparing one buffer.
struct Mismatch {
  size_t checked = 0, bad = 0, first_bad = 0;
  double max_err = 0;
  bool bit_exact = true;  ///< every byte equal
  std::string detail;     ///< the first bad element, "name[i]: gpu X cpu Y"
};

/// Compares `got` (the device's bytes) with the cpu reference's `cpu.bytes`
/// by cpu.compare's rule (kernel_cases.h); `exact`: every element must
/// be bit-identical instead.
Mismatch compare(const CaseBuffer& cpu, const std::vector<uint8_t>& got, bool exact = false);

/// Runs the case's launches on the cpu reference kernels, in place on c.buffers.
Status run_cpu(Case& c);

}  // namespace kern::gpu_test
