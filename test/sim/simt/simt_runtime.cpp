// The SIMT emulator's scheduler: runs a grid block after block (in an order
// shuffled by a seed), each CUDA thread a Boost.Context fiber; resolves warp
// collectives once every lane of the mask has arrived and __syncthreads()
// once every thread of the block has, with CUDA's rules (Programming Guide,
// "Synchronization Functions" and "Warp Shuffle Functions"): a lane or thread
// that exited while others wait for it is a violation, and so is a state in
// which no thread can move (deadlock).
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>

#include "test/sim/simt/simt_state.h"

namespace kern::sim {
namespace detail {

Launch* g_launch = nullptr;
std::mutex g_mutex;
CheckOptions g_options;

namespace {

constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStackBytes = 64 * 1024;  // deepest kernel use seen: a few KB
constexpr size_t kGuardBytes = 4096;

/// One mapping holding a stack per possible thread, each below a guard page
/// (mapped once, reused by every block).
unsigned char* stacks() {
  static unsigned char* base = [] {
    const size_t per = kStackBytes + kGuardBytes;
    void* p = mmap(nullptr, per * kMaxThreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "kern simt: cannot map %zu bytes of fiber stacks\n", per * kMaxThreads);
      std::abort();
    }
    for (unsigned i = 0; i < kMaxThreads; ++i) mprotect(static_cast<unsigned char*>(p) + i * per, kGuardBytes, PROT_NONE);
    return static_cast<unsigned char*>(p);
  }();
  return base;
}

/// Stack "allocator" for preallocated stacks: the stacks outlive the fibers.
struct NoDeallocate {
  boost::context::stack_context allocate() { return {}; }
  void deallocate(boost::context::stack_context&) noexcept {}
};

std::string idx3(rt::Idx3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

/// Suspends the running thread until the scheduler resumes it.
void yield() {
  Thread* t = g_launch->cur;
  t->sched = std::move(t->sched).resume();
  g_launch->cur = t;
}

/// "threads (0,0,0) (1,0,0) ... (+N more)" for messages.
std::string list_threads(const std::vector<const Thread*>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size() && i < 4; ++i) s += (i ? " " : "") + idx3(ts[i]->idx);
  if (ts.size() > 4) s += " (+" + std::to_string(ts.size() - 4) + " more)";
  return s;
}

const char* op_name(const Thread& t) {
  if (t.op == WarpOp::kSyncwarp) return "__syncwarp";
  if (t.op == WarpOp::kBallot) return "a warp vote";
  switch (t.shfl) {
    case rt::Shfl::kIdx: return "__shfl_sync";
    case rt::Shfl::kUp: return "__shfl_up_sync";
    case rt::Shfl::kDown: return "__shfl_down_sync";
    case rt::Shfl::kXor: return "__shfl_xor_sync";
  }
  return "a shuffle";
}

std::string hex(unsigned m) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", m);
  return b;
}

/// The source lane of a shuffle by `lane` (CUDA's rules for width), or -1 for "own value".
int shfl_source(const Thread& t) {
  const int w = t.width, lane = static_cast<int>(t.lane);
  const int group = lane & ~(w - 1);
  switch (t.shfl) {
    case rt::Shfl::kIdx: return group + (t.arg & (w - 1));
    case rt::Shfl::kUp: return (lane - group) >= t.arg ? lane - t.arg : lane;
    case rt::Shfl::kDown: return (lane - group) + t.arg < w ? lane + t.arg : lane;
    case rt::Shfl::kXor: {
      const int src = lane ^ t.arg;
      return src < group + w ? src : lane;
    }
  }
  return lane;
}

/// Resolves every warp collective whose mask has fully arrived. Returns true
/// when some thread became ready; sets l.error on a violation.
bool resolve_warps(Launch& l) {
  bool progress = false;
  const unsigned n = static_cast<unsigned>(l.threads.size());
  for (unsigned base = 0; base < n; base += 32) {
    const unsigned count = std::min(32u, n - base);
    unsigned handled = 0;
    for (unsigned i = 0; i < count; ++i) {
      Thread& first = l.threads[base + i];
      if (first.state != State::kWarp || (handled >> i & 1)) continue;
      const unsigned mask = first.mask;
      bool complete = true;
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (!(mask >> lane & 1)) continue;
        if (lane >= count) {
          l.error = where(first) + ": " + op_name(first) + " with mask " + hex(mask) + " names lane " +
                    std::to_string(lane) + ", which this block of " + std::to_string(n) + " threads does not have";
          return false;
        }
        const Thread& o = l.threads[base + lane];
        if (o.state == State::kDone) {
          l.error = where(o) + ": exited while lanes of its warp wait for it at " + op_name(first) + " (mask " +
                    hex(mask) + ")";
          return false;
        }
        if (o.state != State::kWarp) {
          complete = false;  // at __syncthreads: a deadlock unless something else moves
          continue;
        }
        if (o.op != first.op || o.mask != mask || (o.op == WarpOp::kShfl && (o.shfl != first.shfl || o.width != first.width))) {
          l.error = where(o) + ": waits at " + op_name(o) + " (mask " + std::string(hex(o.mask)) +
                    ") while lane " + std::to_string(first.lane) + " waits at " + op_name(first) + " (mask " +
                    hex(mask) + ")";
          return false;
        }
      }
      if (!(mask >> first.lane & 1)) {
        l.error = where(first) + ": " + op_name(first) + " with mask " + hex(mask) + " that omits the calling lane";
        return false;
      }
      if (!complete) continue;
      handled |= mask;
      unsigned ballot = 0;
      for (unsigned lane = 0; lane < 32; ++lane)
        if (mask >> lane & 1 && l.threads[base + lane].value) ballot |= 1u << lane;
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (!(mask >> lane & 1)) continue;
        Thread& t = l.threads[base + lane];
        if (t.op == WarpOp::kShfl) {
          const int src = shfl_source(t);
          if (src < 0 || src >= 32 || !(mask >> src & 1)) {
            l.error = where(t) + ": " + op_name(t) + " reads lane " + std::to_string(src) +
                      ", which is not in the mask " + hex(mask);
            return false;
          }
          t.result = l.threads[base + src].value;
        } else if (t.op == WarpOp::kBallot) {
          t.result = ballot;
        }
        t.state = State::kReady;
      }
      if (first.op == WarpOp::kSyncwarp) ++l.warp_phase[base / 32];
      progress = true;
    }
  }
  return progress;
}

/// Releases __syncthreads() when every thread of the block is there.
bool resolve_barrier(Launch& l) {
  std::vector<const Thread*> at, done, warp;
  for (const Thread& t : l.threads) {
    if (t.state == State::kBarrier) at.push_back(&t);
    else if (t.state == State::kDone) done.push_back(&t);
    else if (t.state == State::kWarp) warp.push_back(&t);
  }
  if (at.empty()) {
    if (!warp.empty())
      l.error = where(*warp[0]) + ": deadlock: threads " + list_threads(warp) +
                " wait at warp collectives that can never complete";
    return false;
  }
  if (!done.empty()) {
    l.error = where(*done[0]) + ": exited while threads " + list_threads(at) + " wait for it at __syncthreads()";
    return false;
  }
  if (!warp.empty()) {
    l.error = where(*warp[0]) + ": deadlock: threads " + list_threads(warp) + " wait at " + op_name(*warp[0]) +
              " while threads " + list_threads(at) + " wait at __syncthreads()";
    return false;
  }
  for (Thread& t : l.threads) t.state = State::kReady;
  ++l.barrier_phase;
  return true;
}

/// Runs one block to completion (or its first violation).
void run_block(Launch& l) {
  const rt::Idx3 bd{l.params.block.x, l.params.block.y, l.params.block.z};
  const unsigned n = bd.x * bd.y * bd.z;
  l.threads.clear();
  l.threads.resize(n);
  l.warp_phase.assign((n + 31) / 32, 0);
  l.barrier_phase = 0;
  begin_block_memory(l);
  unsigned char* st = stacks();
  for (unsigned i = 0; i < n; ++i) {
    Thread& t = l.threads[i];
    t.linear = i;
    t.idx = {i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
    t.lane = i % 32;
    t.warp = i / 32;
    unsigned char* top = st + (i + 1) * (kStackBytes + kGuardBytes);
    t.stack_lo = reinterpret_cast<uintptr_t>(top - kStackBytes);
    t.stack_hi = reinterpret_cast<uintptr_t>(top);
    boost::context::stack_context sctx;
    sctx.size = kStackBytes;
    sctx.sp = top;
    Thread* tp = &t;
    t.fiber = boost::context::fiber(std::allocator_arg, boost::context::preallocated(top, kStackBytes, sctx),
                                    NoDeallocate{}, [tp](boost::context::fiber&& sched) {
                                      tp->sched = std::move(sched);
                                      g_launch->cur = tp;
                                      g_launch->body(g_launch->param_block);
                                      tp->state = State::kDone;
                                      return std::move(tp->sched);
                                    });
  }
  while (l.error.empty()) {
    bool all_done = true;
    for (Thread& t : l.threads) {
      if (t.state == State::kReady) {
        l.cur = &t;
        t.fiber = std::move(t.fiber).resume();
        l.cur = nullptr;
        if (!l.error.empty()) break;
      }
      all_done = all_done && t.state == State::kDone;
    }
    if (!l.error.empty() || all_done) break;
    if (resolve_warps(l)) continue;
    if (!l.error.empty()) break;
    resolve_barrier(l);
  }
  l.threads.clear();  // unwinds any fiber a violation left suspended
}

}  // namespace

std::string where(const Thread& t) {
  return std::string(g_launch->kernel) + " block " + idx3(g_launch->block) + " thread " + idx3(t.idx);
}

void fail(const std::string& what) {
  Launch& l = *g_launch;
  Thread* t = l.cur;
  if (l.error.empty()) l.error = where(*t) + ": " + what;
  t->state = State::kAborted;
  yield();
  std::abort();  // an aborted thread is never resumed
}

}  // namespace detail

using detail::g_launch;
using detail::State;
using detail::Thread;
using detail::WarpOp;

namespace rt {

Idx3 thread_idx() { return g_launch->cur->idx; }
Idx3 block_idx() { return g_launch->block; }
Idx3 block_dim() { return {g_launch->params.block.x, g_launch->params.block.y, g_launch->params.block.z}; }
Idx3 grid_dim() { return {g_launch->params.grid.x, g_launch->params.grid.y, g_launch->params.grid.z}; }

void syncthreads() {
  g_launch->cur->state = State::kBarrier;
  detail::yield();
}

namespace {
uint32_t warp_op(WarpOp op, unsigned mask, uint32_t value) {
  Thread* t = g_launch->cur;
  t->op = op;
  t->mask = mask;
  t->value = value;
  t->state = State::kWarp;
  detail::yield();
  return t->result;
}
}  // namespace

void syncwarp(unsigned mask) { warp_op(WarpOp::kSyncwarp, mask, 0); }

uint32_t shfl(Shfl kind, unsigned mask, uint32_t value, int arg, int width) {
  if (width < 1 || width > 32 || (width & (width - 1)))
    detail::fail("shuffle width " + std::to_string(width) + " is not a power of two in [1, 32]");
  Thread* t = g_launch->cur;
  t->shfl = kind;
  t->arg = arg;
  t->width = width;
  return warp_op(WarpOp::kShfl, mask, value);
}

unsigned ballot(unsigned mask, bool pred) { return warp_op(WarpOp::kBallot, mask, pred ? 1 : 0); }

void threadfence() {}

void pdl_wait() {
  g_launch->cur->pdl_waited = true;
  g_launch->any_pdl_wait = true;
}
void pdl_launch_dependents() {}

void trap() {
  detail::fail("__trap()");
}

void* dynamic_shared() { return g_launch->dynamic_shared; }

unsigned dynamic_shared_bytes() { return g_launch->params.dynamic_shared_bytes; }

std::string run_grid(std::string_view kernel, const LaunchParams& lp, Body body, const unsigned char* param_block,
                     size_t param_bytes) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  const uint64_t threads = uint64_t(lp.block.x) * lp.block.y * lp.block.z;
  const std::string name(kernel);
  if (lp.grid.x == 0 || lp.grid.y == 0 || lp.grid.z == 0 || threads == 0)
    return name + ": empty grid or block (CUDA_ERROR_INVALID_VALUE)";
  if (threads > 1024 || lp.block.z > 64 || lp.grid.y > 65535 || lp.grid.z > 65535)
    return name + ": block of " + std::to_string(threads) + " threads or grid beyond CUDA's limits";
  if (lp.dynamic_shared_bytes > 227 * 1024)
    return name + ": " + std::to_string(lp.dynamic_shared_bytes) + " bytes of dynamic shared memory (sm_90 allows 227 KB)";
  detail::Launch l;
  l.kernel = kernel;
  l.params = lp;
  l.id = detail::next_launch_id();
  l.body = body;
  l.param_block = param_block;
  l.param_bytes = param_bytes;
  detail::note_launch(l.id, kernel);
  static std::vector<unsigned char> dyn;
  dyn.resize(std::max<size_t>(lp.dynamic_shared_bytes, 16) + 16);
  l.dynamic_shared = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(dyn.data()) + 15) & ~uintptr_t(15));

  const uint64_t blocks = uint64_t(lp.grid.x) * lp.grid.y * lp.grid.z;
  std::vector<uint64_t> order(blocks);
  std::iota(order.begin(), order.end(), 0);
  if (lp.block_order_seed) std::shuffle(order.begin(), order.end(), std::mt19937_64(lp.block_order_seed));
  g_launch = &l;
  for (uint64_t b : order) {
    l.block = {static_cast<unsigned>(b % lp.grid.x), static_cast<unsigned>((b / lp.grid.x) % lp.grid.y),
               static_cast<unsigned>(b / (uint64_t(lp.grid.x) * lp.grid.y))};
    detail::run_block(l);
    if (!l.error.empty()) break;
  }
  if (l.error.empty() && lp.pdl && !l.any_pdl_wait && detail::g_options.pdl)
    l.error = name + ": launched with programmatic dependent launch (pdl) but no thread called pdl_wait()";
  if (l.error.empty()) l.error = detail::end_launch_memory(l);
  g_launch = nullptr;
  return l.error;
}

}  // namespace rt

void set_check_options(const CheckOptions& options) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  detail::g_options = options;
}
CheckOptions check_options() {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  return detail::g_options;
}

}  // namespace kern::sim
