// The SIMT emulator's internal state, shared by the scheduler
// (simt_runtime.cpp) and the memory checks (simt_memory.cpp): the launch in
// progress, its block, and each CUDA thread (a Boost.Context fiber).
#pragma once

#include <boost/context/fiber.hpp>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "test/sim/simt/simt_runtime.h"

namespace kern::sim::detail {

/// Where a CUDA thread stands.
enum class State : uint8_t {
  kReady,    ///< runnable
  kBarrier,  ///< waits at __syncthreads()
  kWarp,     ///< waits at a warp collective (shuffle, vote, __syncwarp)
  kDone,     ///< returned from the kernel
  kAborted,  ///< stopped at a violation; never resumed
};

/// The warp collective a thread waits at.
enum class WarpOp : uint8_t { kShfl, kBallot, kSyncwarp };

/// One CUDA thread.
struct Thread {
  boost::context::fiber fiber;  ///< the thread while it is suspended
  boost::context::fiber sched;  ///< the scheduler while the thread runs
  rt::Idx3 idx{0, 0, 0};
  unsigned linear = 0, lane = 0, warp = 0;
  State state = State::kReady;
  WarpOp op = WarpOp::kSyncwarp;
  rt::Shfl shfl = rt::Shfl::kIdx;
  unsigned mask = 0;
  uint32_t value = 0, result = 0;
  int arg = 0, width = 32;
  bool pdl_waited = false;
  uintptr_t stack_lo = 0, stack_hi = 0;  ///< its fiber stack: accesses there are not checked
};

/// The launch in progress (one at a time: g_mutex).
struct Launch {
  std::string_view kernel;
  LaunchParams params;
  uint32_t id = 0;  ///< launch number (>= 2; the memory shadow's writer/reader ids)
  rt::Body body = nullptr;
  const unsigned char* param_block = nullptr;
  size_t param_bytes = 0;
  rt::Idx3 block{0, 0, 0};
  std::vector<Thread> threads;
  Thread* cur = nullptr;  ///< the thread running now
  uint32_t barrier_phase = 0;          ///< __syncthreads() released so far in this block
  std::vector<uint32_t> warp_phase;    ///< __syncwarp() released so far, per warp
  uint32_t block_gen = 0;              ///< this block's generation (shared-memory shadow validity)
  bool any_pdl_wait = false;
  unsigned char* dynamic_shared = nullptr;
  std::set<uintptr_t> atomic_words;  ///< global words updated by atomics (int-sized)
  std::string error;                 ///< the first violation
};

/// Non-null while a launch runs (kernel code runs only then).
extern Launch* g_launch;
/// Serialises launches and the memory shadow.
extern std::mutex g_mutex;
extern CheckOptions g_options;

/// Records violation `what` for the running thread (kernel, block, thread
/// prefixed) and stops it: never returns.
[[noreturn]] void fail(const std::string& what);
/// "kern_x block (1,0,0) thread (5,0,0)" of the running thread.
std::string where(const Thread& t);

/// Memory checks (simt_memory.cpp).
enum Access : unsigned { kRead = 1, kWrite = 2, kAtomic = 4 };
/// Checks an access of `bytes` at `p` by the running thread; `aligned`: the
/// compiler emitted it as a naturally aligned access of that size.
void check_access(const void* p, size_t bytes, unsigned access, bool aligned);
/// Fails the running thread when `p` is not `bytes`-aligned (`what` names the access).
void check_aligned(const void* p, size_t bytes, const char* what);
/// Called at each block start: poisons and invalidates shared memory.
void begin_block_memory(Launch& l);
/// The static shared memory section and the dynamic buffer's capacity.
size_t static_shared_bytes();
/// Called after the grid ran: the counters check. Returns "" or the violation.
std::string end_launch_memory(Launch& l);
/// Name of launch `id` for messages ("launch #7 (kern_rmsnorm_bf16)").
std::string launch_name(uint32_t id);
/// The next launch id (>= 2; ids 0 and 1 are "never written" and "the host").
uint32_t next_launch_id();
/// Records that launch `id` ran `kernel`.
void note_launch(uint32_t id, std::string_view kernel);

}  // namespace kern::sim::detail
