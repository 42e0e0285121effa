// The SIMT kernel source (kernel_source.h, the default): each cubin symbol
// runs the SIMT emulator's build of the real kernels-src/cuda/*.cu entry
// (test/sim/simt/sim_api.h), and the driver's allocations and host-side
// writes feed the emulator's global-memory shadow.
#include <map>
#include <memory>
#include <mutex>

#include "test/sim/driver/kernel_source_impl.h"
#include "test/sim/simt/sim_api.h"

namespace kern::sim {

namespace {

class SimtKernel final : public EmulatedKernel {
 public:
  explicit SimtKernel(const KernelEntry* e) : e_(e) {}
  std::string launch(const KernelLaunch& l, void** params) const override {
    LaunchParams p;
    p.grid = Dim3{l.grid[0], l.grid[1], l.grid[2]};
    p.block = Dim3{l.block[0], l.block[1], l.block[2]};
    p.dynamic_shared_bytes = l.dynamic_shared_bytes;
    p.pdl = l.pdl;
    p.block_order_seed = l.seed;
    return e_->launch(p, params);
  }
  std::vector<uint32_t> param_sizes() const override {
    return std::vector<uint32_t>(e_->param_sizes.begin(), e_->param_sizes.end());
  }

 private:
  const KernelEntry* e_;
};

}  // namespace

const EmulatedKernel* find_simt_kernel(std::string_view symbol) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<SimtKernel>, std::less<>> made;
  std::lock_guard<std::mutex> lock(mu);
  auto it = made.find(symbol);
  if (it != made.end()) return it->second.get();
  const KernelEntry* e = find_kernel(symbol);
  if (e == nullptr || e->launch == nullptr) return nullptr;
  auto [ins, ok] = made.emplace(std::string(symbol), std::make_unique<SimtKernel>(e));
  return ins->second.get();
}

void simt_shadow_alloc(uint64_t addr, uint64_t bytes) { on_alloc(reinterpret_cast<const void*>(addr), bytes); }
void simt_shadow_free(uint64_t addr) { on_free(reinterpret_cast<const void*>(addr)); }
void simt_shadow_write(uint64_t addr, uint64_t bytes) { on_write(reinterpret_cast<const void*>(addr), bytes); }
void simt_shadow_launch_write(uint64_t addr, uint64_t bytes) {
  on_launch_write(reinterpret_cast<const void*>(addr), bytes);
}

}  // namespace kern::sim
