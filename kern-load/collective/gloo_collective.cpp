// connect_gloo (gloo_collective.h): dlopen the Gloo plugin, check its ABI
// version, join the world, and wrap the context as a cpu::Collective.
#include "kern-load/collective/gloo_collective.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "kern-load/collective/gloo_plugin_abi.h"

namespace kern::load {

namespace {

constexpr const char* kPluginName = "kern-gloo.so";

/// The plugin's entry points; the handle stays open for the process (a
/// dlclose under live Gloo threads is not safe).
struct GlooApi {
  KernGlooConnectFn connect = nullptr;
  KernGlooAllGatherFn all_gather = nullptr;
  KernGlooCloseFn close = nullptr;
};

class GlooCollective final : public cpu::Collective {
 public:
  GlooCollective(GlooApi api, void* ctx, uint32_t rank, uint32_t world)
      : api_(api), ctx_(ctx), rank_(rank), world_(world) {}
  ~GlooCollective() override { api_.close(ctx_); }
  uint32_t rank() const override { return rank_; }
  uint32_t world() const override { return world_; }
  Status all_gather(const void* in, void* out, size_t size_bytes) override {
    const auto t0 = std::chrono::steady_clock::now();
    Status s = gather(in, out, size_bytes, 0, "all-gather");
    stats_.calls += 1;
    stats_.bytes_sent += static_cast<uint64_t>(size_bytes) * (world_ - 1);
    stats_.wait_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return s;
  }
  cpu::CollectiveStats stats() const override { return stats_; }
  Status barrier(uint32_t timeout_ms) override {
    const uint8_t mine = 1;
    std::vector<uint8_t> all(world_);
    return gather(&mine, all.data(), 1, timeout_ms, "waiting for every rank to load");
  }

 private:
  Status gather(const void* in, void* out, size_t size_bytes, uint32_t timeout_ms, const char* what) {
    char err[512] = {};
    if (api_.all_gather(ctx_, in, out, size_bytes, static_cast<int>(timeout_ms), err, sizeof err) != 0)
      return make_error(ErrorKind::kDevice, "rank " + std::to_string(rank_) + ": " + what + ": " + err);
    return Status::ok_status();
  }

  GlooApi api_;
  void* ctx_;  ///< owned: closed in the destructor
  uint32_t rank_, world_;
  cpu::CollectiveStats stats_;
};

Result<GlooApi> open_plugin(const std::string& explicit_path) {
  std::vector<std::string> tried = explicit_path.empty() ? gloo_plugin_candidates() : std::vector{explicit_path};
  std::string path;
  for (const std::string& p : tried) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) {
      path = p;
      break;
    }
  }
  if (path.empty()) {
    std::string list;
    for (const std::string& p : tried) list += (list.empty() ? "" : ", ") + p;
    return make_error(ErrorKind::kDevice,
                      "kern's Gloo plugin (" + std::string(kPluginName) + "), which the cpu device's collectives need, "
                          "was not found (tried " + list +
                          "): install Debian's libgloo-dev (scripts/setup.sh) and rebuild kern");
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const std::string why = dlerror();
    if (why.find("libgloo") != std::string::npos)
      return make_error(ErrorKind::kDevice, "the Gloo library is missing: install Debian's libgloo0 package "
                                            "(apt-get install libgloo0); dlopen " + path + ": " + why);
    return make_error(ErrorKind::kDevice, "dlopen " + path + ": " + why);
  }
  auto version = reinterpret_cast<KernGlooAbiVersionFn>(dlsym(h, "kern_gloo_abi_version"));
  GlooApi api;
  api.connect = reinterpret_cast<KernGlooConnectFn>(dlsym(h, "kern_gloo_connect"));
  api.all_gather = reinterpret_cast<KernGlooAllGatherFn>(dlsym(h, "kern_gloo_all_gather"));
  api.close = reinterpret_cast<KernGlooCloseFn>(dlsym(h, "kern_gloo_close"));
  if (version == nullptr || api.connect == nullptr || api.all_gather == nullptr || api.close == nullptr)
    return make_error(ErrorKind::kDevice, path + " is not kern's Gloo plugin (an entry point is missing)");
  if (version() != kKernGlooAbiVersion)
    return make_error(ErrorKind::kDevice, path + " has plugin ABI " + std::to_string(version()) + "; this kern needs " +
                                              std::to_string(kKernGlooAbiVersion) + " (rebuild kern)");
  return api;
}

}  // namespace

std::vector<std::string> gloo_plugin_candidates() {
  if (const char* env = std::getenv("KERN_GLOO_PLUGIN"); env != nullptr && *env != '\0') return {env};
  std::vector<std::string> out;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back((exe.parent_path() / kPluginName).string());
#ifdef KERN_GLOO_PLUGIN_BUILD_PATH
  out.push_back(KERN_GLOO_PLUGIN_BUILD_PATH);
#endif
  return out;
}

Status check_same_plan(cpu::Collective& c, std::span<const uint8_t> sha) {
  std::vector<uint8_t> all(sha.size() * c.world());
  KERN_RETURN_IF_ERROR(c.all_gather(sha.data(), all.data(), sha.size()), "comparing the ranks' plans");
  for (uint32_t r = 1; r < c.world(); ++r)
    if (!std::equal(all.begin(), all.begin() + sha.size(), all.begin() + r * sha.size()))
      return make_error(ErrorKind::kUsage, "rank " + std::to_string(r) +
                                               " loaded a different plan from rank 0's (manifest sha256 differs): "
                                               "every rank runs the same manifest");
  return Status::ok_status();
}

Result<std::unique_ptr<cpu::Collective>> connect_gloo(const GlooOptions& o) {
  if (o.world < 1 || o.rank >= o.world)
    return make_error(ErrorKind::kUsage, "rank " + std::to_string(o.rank) + " is outside a world of " +
                                             std::to_string(o.world));
  KERN_ASSIGN_OR_RETURN(GlooApi api, open_plugin(o.plugin_path));
  void* ctx = nullptr;
  char err[512] = {};
  if (api.connect(o.rendezvous_dir.c_str(), static_cast<int>(o.rank), static_cast<int>(o.world),
                  static_cast<int>(o.timeout_ms), &ctx, err, sizeof err) != 0)
    return make_error(ErrorKind::kDevice, "rank " + std::to_string(o.rank) + " of " + std::to_string(o.world) + ": " + err);
  return std::unique_ptr<cpu::Collective>(new GlooCollective(api, ctx, o.rank, o.world));
}

}  // namespace kern::load
