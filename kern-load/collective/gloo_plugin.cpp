// kern's Gloo plugin (gloo_plugin_abi.h): rendezvous and an all-gather on
// Gloo's TCP transport, behind a C interface that catches every Gloo
// exception. The all-gather is Gloo's point-to-point unbound buffers (one
// send to and one receive from each peer), not gloo::allgather, so that a
// timeout or a dropped connection can be pinned on the ranks whose data
// never came. Built only when libgloo-dev is installed (meson).
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "kern-load/collective/gloo_plugin_abi.h"

namespace {

struct Ctx {
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::chrono::milliseconds timeout{0};
};

void set_error(char* err, size_t err_size, const std::string& message) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = std::min(err_size - 1, message.size());
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}

/// "rank 1" or "ranks 1, 3".
std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) uint32_t kern_gloo_abi_version() { return kKernGlooAbiVersion; }

__attribute__((visibility("default"))) int kern_gloo_connect(const char* rendezvous_dir, int rank, int world,
                                                             int timeout_ms, void** out, char* err,
                                                             size_t err_size) {
  try {
    gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_unique<Ctx>();
    ctx->timeout = std::chrono::milliseconds(timeout_ms);
    ctx->context = std::make_shared<gloo::rendezvous::Context>(rank, world);
    ctx->context->setTimeout(ctx->timeout);
    gloo::rendezvous::FileStore store(rendezvous_dir);
    ctx->context->connectFullMesh(store, device);
    *out = ctx.release();
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_size, std::string("gloo rendezvous in ") + rendezvous_dir + ": " + e.what());
  } catch (...) {
    set_error(err, err_size, "gloo rendezvous: unknown exception");
  }
  return -1;
}

__attribute__((visibility("default"))) int kern_gloo_all_gather(void* handle, const void* in, void* out,
                                                                size_t size_bytes, int timeout_ms, char* err,
                                                                size_t err_size) {
  auto* ctx = static_cast<Ctx*>(handle);
  const std::chrono::milliseconds timeout = timeout_ms > 0 ? std::chrono::milliseconds(timeout_ms) : ctx->timeout;
  gloo::rendezvous::Context& c = *ctx->context;
  const int me = c.rank;
  std::vector<int> pending;
  for (int r = 0; r < c.size; ++r)
    if (r != me) pending.push_back(r);
  try {
    std::memcpy(static_cast<char*>(out) + static_cast<size_t>(me) * size_bytes, in, size_bytes);
    if (pending.empty() || size_bytes == 0) return 0;
    // One buffer per peer and direction: a buffer's completions do not say
    // which peer completed, so each wait is on one known peer.
    const uint64_t slot = static_cast<uint64_t>(c.nextSlot());
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> recv_bufs, send_bufs;
    for (int r : pending) {
      recv_bufs.push_back(c.createUnboundBuffer(static_cast<char*>(out) + static_cast<size_t>(r) * size_bytes,
                                                size_bytes));
      recv_bufs.back()->recv(r, slot);
      send_bufs.push_back(c.createUnboundBuffer(const_cast<void*>(in), size_bytes));
      send_bufs.back()->send(r, slot);
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (size_t i = 0; i < recv_bufs.size(); ++i) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !recv_bufs[i]->waitRecv(left)) {
        set_error(err, err_size, rank_list({pending.front()}) + " did not answer within " +
                                     std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s");
        return -1;
      }
      pending.erase(pending.begin());  // pending[0] is the peer of recv_bufs[i]
    }
    for (auto& b : send_bufs) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      b->waitSend(std::max(left, std::chrono::milliseconds(1)));
    }
    return 0;
  } catch (const std::exception& e) {
    set_error(err, err_size, (pending.empty() ? std::string("a rank") : rank_list(pending)) +
                                 " did not answer (or left the world): " + e.what());
  } catch (...) {
    set_error(err, err_size, "gloo all-gather: unknown exception");
  }
  return -1;
}

__attribute__((visibility("default"))) void kern_gloo_close(void* handle) {
  delete static_cast<Ctx*>(handle);
}
}
