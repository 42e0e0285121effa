// The cpu-twin kernel source (kernel_source.h, KERN_SIM_KERNELS=twins): each
// cubin symbol runs its kernels-src/cpu reference kernel, which has the same
// parameter ABI and computes the whole launch at once. No shadow.
#include <map>
#include <memory>
#include <mutex>

#include "kernels-src/cpu/cpu_kernel.h"
#include "test/sim/driver/kernel_source_impl.h"

namespace kern::sim {

namespace {

class TwinKernel final : public EmulatedKernel {
 public:
  explicit TwinKernel(const cpu::CpuKernel* k, std::string name) : k_(k), name_(std::move(name)) {}
  std::string launch(const KernelLaunch& l, void** params) const override {
    cpu::CpuLaunch c;
    for (int i = 0; i < 3; ++i) c.grid[i] = l.grid[i], c.block[i] = l.block[i];
    c.shared_mem_bytes = l.dynamic_shared_bytes;
    c.args = params;
    c.num_args = l.num_params;
    const Status s = k_->run(c);
    return s.ok() ? "" : name_ + ": " + s.error().message;
  }
  std::vector<uint32_t> param_sizes() const override { return {}; }

 private:
  const cpu::CpuKernel* k_;
  std::string name_;
};

}  // namespace

const EmulatedKernel* find_twin_kernel(std::string_view symbol) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<TwinKernel>, std::less<>> made;
  std::lock_guard<std::mutex> lock(mu);
  auto it = made.find(symbol);
  if (it != made.end()) return it->second.get();
  const cpu::CpuKernel* k = cpu::find_cpu_kernel(symbol);
  if (k == nullptr || symbol.starts_with("extern:")) return nullptr;
  auto [ins, ok] = made.emplace(std::string(symbol), std::make_unique<TwinKernel>(k, std::string(symbol)));
  return ins->second.get();
}

}  // namespace kern::sim
