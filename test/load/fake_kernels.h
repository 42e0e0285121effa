// Test helper: fake reference kernels for the tiny plan (plan_builder.h) and
// a resolver for CpuDevice. Each checks its launch geometry and arguments
// the way a real kernel's bounds checks would, so a wrong grid or a wrong
// scalar fails the test instead of passing silently.
#pragma once

#include <string_view>

#include "kernels-src/cpu/cpu_kernel.h"

namespace kern::test {

/// Resolves test_add_bias / test_double / test_finish (with their extent
/// declarations); nullptr otherwise.
const cpu::CpuKernel* fake_kernel(std::string_view symbol);

}  // namespace kern::test
