// Joining a tensor-parallel world on the cpu device through Gloo
// (docs/parallel.md). Gloo lives in a plugin (kern-gloo.so, built when
// Debian's libgloo-dev is installed) that this opens with dlopen, so kern's
// binaries run without libgloo until a run asks for --tp N > 1, and then a
// missing library is an error naming the package.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>
#include <string>

#include "common/result.h"
#include "kernels-src/cpu/collective.h"

namespace kern::load {

/// Where a rank joins and how long it waits.
struct GlooOptions {
  uint32_t rank = 0;
  uint32_t world = 1;
  /// A directory private to this run (kern-run makes one per run), where
  /// Gloo's FileStore exchanges the ranks' TCP addresses (127.0.0.1,
  /// ephemeral ports), so concurrent runs never meet.
  std::string rendezvous_dir;
  /// Bounds the rendezvous and every later wait for a peer, in ms.
  uint32_t timeout_ms = 8000;
  /// The plugin to open; empty: $KERN_GLOO_PLUGIN, else kern-gloo.so beside
  /// the executable, else the build tree's (gloo_plugin_candidates).
  std::string plugin_path;
};

/// The plugin files tried, in order, for an empty GlooOptions::plugin_path.
std::vector<std::string> gloo_plugin_candidates();

/// Opens the plugin and joins the world. Errors (kDevice): the plugin was
/// not built ("install libgloo-dev and rebuild"), libgloo.so.0 is missing
/// ("install Debian's libgloo0"), an ABI mismatch, or the rendezvous
/// failed or timed out.
Result<std::unique_ptr<cpu::Collective>> connect_gloo(const GlooOptions& options);

/// Checks that every rank loaded the same plan ("every rank's plan the same
/// shape"): all-gathers `manifest_sha256` (32 bytes). Errors (kUsage): the
/// first rank whose plan differs from rank 0's; the all-gather's errors.
Status check_same_plan(cpu::Collective& collective, std::span<const uint8_t> manifest_sha256);

}  // namespace kern::load
