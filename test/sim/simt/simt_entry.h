// Turns an emulated kernel function into a KernelEntry (sim_api.h): its
// parameter layout from the C++ signature (CUDA's: each parameter at its
// natural alignment, in order), and a launch that copies the parameters
// (cuLaunchKernel's kernelParams) into a parameter block and runs the grid.
// Used by each family's translation unit (kernels/*.cpp).
#pragma once

#include <array>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "test/sim/simt/simt_runtime.h"

namespace kern::sim::entry {

template <auto F>
struct Kernel;

template <typename... A, void (*F)(A...)>
struct Kernel<F> {
  static constexpr size_t kCount = sizeof...(A);
  static constexpr std::array<size_t, kCount> kSizes{sizeof(A)...};
  static constexpr std::array<size_t, kCount> kAligns{alignof(A)...};
  static constexpr std::array<size_t, kCount> offsets() {
    std::array<size_t, kCount> o{};
    size_t at = 0;
    for (size_t i = 0; i < kCount; ++i) {
      at = (at + kAligns[i] - 1) / kAligns[i] * kAligns[i];
      o[i] = at;
      at += kSizes[i];
    }
    return o;
  }
  static constexpr std::array<size_t, kCount> kOffsets = offsets();
  static constexpr size_t kBytes = kCount ? kOffsets[kCount - 1] + kSizes[kCount - 1] : 0;

  template <size_t... I>
  static void call(const unsigned char* block, std::index_sequence<I...>) {
    F(*reinterpret_cast<const std::remove_cv_t<A>*>(block + kOffsets[I])...);
  }
  static void body(const unsigned char* block) { call(block, std::index_sequence_for<A...>{}); }

  static inline std::string_view name;
  static std::string launch(const LaunchParams& lp, void** params) {
    alignas(16) unsigned char block[kBytes ? kBytes : 1];
    for (size_t i = 0; i < kCount; ++i) std::memcpy(block + kOffsets[i], params[i], kSizes[i]);
    return rt::run_grid(name, lp, &body, block, kBytes);
  }
  static const KernelEntry* entry(std::string_view kernel, std::string_view family) {
    static const KernelEntry e = [&] {
      name = kernel;
      KernelEntry k;
      k.name = kernel;
      k.family = family;
      k.param_sizes.assign(kSizes.begin(), kSizes.end());
      k.param_offsets.assign(kOffsets.begin(), kOffsets.end());
      k.launch = &launch;
      return k;
    }();
    return &e;
  }
};

}  // namespace kern::sim::entry

/// Registers kernel `fn` of family `family` (inside a family's registration function).
#define KERN_SIM_KERNEL(family, fn) ::kern::sim::rt::register_kernel(::kern::sim::entry::Kernel<&fn>::entry(#fn, #family))

/// Opens the registration function of `family` (called by the registry, sim_registry.cpp).
#define KERN_SIM_FAMILY(family) void kern_sim_register_##family()
