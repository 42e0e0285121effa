// Selecting the kernel source (kernel_source.h): KERN_SIM_KERNELS=simt|twins,
// simt by default when the SIMT emulator is built in.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "test/sim/driver/kernel_source_impl.h"

namespace kern::sim {

namespace {

bool use_twins() {
  static const bool twins = [] {
    const char* v = std::getenv("KERN_SIM_KERNELS");
#if KERN_SIM_HAVE_SIMT
    if (v == nullptr || *v == 0 || std::strcmp(v, "simt") == 0) return false;
#else
    if (v == nullptr || *v == 0 || std::strcmp(v, "twins") == 0) return true;
    if (std::strcmp(v, "simt") == 0) {
      std::fprintf(stderr, "kern sim: KERN_SIM_KERNELS=simt, but the SIMT emulator is not built in; using the cpu twins\n");
      return true;
    }
#endif
    if (std::strcmp(v, "twins") == 0) return true;
    std::fprintf(stderr, "kern sim: KERN_SIM_KERNELS=%s is neither simt nor twins; using the default\n", v);
    return !KERN_SIM_HAVE_SIMT;
  }();
  return twins;
}

}  // namespace

std::string_view kernel_source_name() { return use_twins() ? "twins" : "simt"; }

const EmulatedKernel* find_emulated_kernel(std::string_view symbol) {
#if KERN_SIM_HAVE_SIMT
  if (!use_twins()) return find_simt_kernel(symbol);
#endif
  return find_twin_kernel(symbol);
}

void shadow_alloc([[maybe_unused]] uint64_t addr, [[maybe_unused]] uint64_t bytes) {
#if KERN_SIM_HAVE_SIMT
  if (!use_twins()) simt_shadow_alloc(addr, bytes);
#endif
}

void shadow_free([[maybe_unused]] uint64_t addr) {
#if KERN_SIM_HAVE_SIMT
  if (!use_twins()) simt_shadow_free(addr);
#endif
}

void shadow_write([[maybe_unused]] uint64_t addr, [[maybe_unused]] uint64_t bytes) {
#if KERN_SIM_HAVE_SIMT
  if (!use_twins()) simt_shadow_write(addr, bytes);
#endif
}

void shadow_launch_write([[maybe_unused]] uint64_t addr, [[maybe_unused]] uint64_t bytes) {
#if KERN_SIM_HAVE_SIMT
  if (!use_twins()) simt_shadow_launch_write(addr, bytes);
#endif
}

}  // namespace kern::sim
