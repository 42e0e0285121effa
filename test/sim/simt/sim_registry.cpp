// The emulated kernels by name (sim_api.h find_kernel): each family's
// translation unit (kernels/*.cpp) registers its entry points once, on first use.
#include <mutex>
#include <unordered_map>

#include "test/sim/simt/simt_runtime.h"

#define KERN_SIM_FAMILIES(X) \
  X(argmax) X(attention_decode_batch) X(bias_add) X(decode_advance) X(decode_advance_batch) X(embedding) X(gemv) \
  X(paged_attention) X(qk_norm_rope_cache) X(reshape_and_cache) X(rmsnorm) X(rope) X(sample) X(silu_and_mul) \
  X(mining_foreign) X(moe) X(last_row)

#define KERN_SIM_DECLARE(f) void kern_sim_register_##f();
KERN_SIM_FAMILIES(KERN_SIM_DECLARE)
#undef KERN_SIM_DECLARE

namespace kern::sim {
namespace {

struct Table {
  std::vector<const KernelEntry*> all;
  std::unordered_map<std::string_view, const KernelEntry*> by_name;
};
Table* g_table = nullptr;

const Table& table() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_table = new Table;
#define KERN_SIM_CALL(f) kern_sim_register_##f();
    KERN_SIM_FAMILIES(KERN_SIM_CALL)
#undef KERN_SIM_CALL
  });
  return *g_table;
}

}  // namespace

namespace rt {
void register_kernel(const KernelEntry* entry) {
  g_table->all.push_back(entry);
  g_table->by_name[entry->name] = entry;
}
}  // namespace rt

const KernelEntry* find_kernel(std::string_view name) {
  const Table& t = table();
  auto it = t.by_name.find(name);
  return it == t.by_name.end() ? nullptr : it->second;
}

const std::vector<const KernelEntry*>& all_kernels() { return table().all; }

}  // namespace kern::sim
