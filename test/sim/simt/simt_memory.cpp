// The SIMT emulator's memory checks. The kernel code is compiled with
// clang's ThreadSanitizer instrumentation but without its runtime: every
// load and store the compiler keeps calls one of the __tsan_read/write hooks
// defined here (memcpy/memset/memmove are renamed to kern_sim_* when the
// objects are built), which classify the address (the thread's own fiber
// stack, the parameter block, shared memory, a device allocation, or
// nothing) and check it:
//   shared memory  - a read of a byte not written in this block, and two
//                    threads' accesses to a byte (one a write) with no
//                    __syncthreads() between them (__syncwarp() orders lanes
//                    of one warp);
//   global memory  - an access outside every live allocation or running
//                    past the end of one, a read of a byte no copy, memset
//                    or launch has written, the PDL contract
//                    (kern_cuda_common.cuh), atomically updated counters
//                    back at zero when the launch ends;
//   every access   - natural alignment (a misaligned 16-byte vector access
//                    faults on a GPU, not on x86).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <unordered_map>
#include <utility>

#include <sys/mman.h>

#include "test/sim/simt/simt_state.h"

// The static shared memory section (simt_shim.h's __shared__); the linker
// defines these for every section named like a C identifier.
extern "C" unsigned char __start_kern_sim_shared[] __attribute__((weak));
extern "C" unsigned char __stop_kern_sim_shared[] __attribute__((weak));

namespace kern::sim {
namespace detail {
namespace {

constexpr uint32_t kNever = 0;  // shadow writer: never written
constexpr uint32_t kHost = 1;   // shadow writer/reader: a copy or memset

/// Per byte of shared memory: who last wrote it and who read it since, with
/// the block generation that makes stale entries read as "never written".
struct SharedByte {
  uint32_t gen = 0;  ///< block generation of the last write (0: never)
  uint32_t w_phase = 0, r_phase = 0, r_gen = 0;
  uint32_t w_warp_phase = 0, r_warp_phase = 0;
  uint16_t w_tid = 0, r_tid = 0;
  bool r_multi = false, w_atomic = false;
};

/// A zero-filled array of launch ids (kNever) from an anonymous mapping:
/// its pages cost nothing until first touched. A std::vector was memset at
/// every cuMemAlloc: 8 bytes of shadow per byte, so kern-load's 32 MB
/// cublasLt workspace, which the simulated cublasLt never touches, cost
/// 256 MB of memset and page faults, half a second of every kern-run
/// process on the simulated GPU. Arrays of 2 MB and more ask for
/// transparent huge pages (far fewer page faults where they are touched
/// whole: the lm_head cases' 6 GB of shadow in kern-sim-compare).
class Shadow {
 public:
  Shadow() = default;
  explicit Shadow(size_t n) : bytes_(n * sizeof(uint32_t)) {
    if (bytes_ == 0) return;
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    if (bytes_ >= (size_t{2} << 20)) ::madvise(p, bytes_, MADV_HUGEPAGE);  // a hint: ignored where THP is off
    ids_ = static_cast<uint32_t*>(p);
  }
  ~Shadow() {
    if (ids_) ::munmap(ids_, bytes_);
  }
  Shadow(Shadow&& o) noexcept : ids_(std::exchange(o.ids_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Shadow& operator=(Shadow&& o) noexcept {
    std::swap(ids_, o.ids_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  uint32_t& operator[](size_t i) { return ids_[i]; }
  uint32_t operator[](size_t i) const { return ids_[i]; }
  uint32_t* begin() { return ids_; }

 private:
  uint32_t* ids_ = nullptr;  ///< owned mapping of bytes_ bytes; nullptr when empty
  size_t bytes_ = 0;
};

/// The writer launch id of each byte of an allocation: one id for all of
/// them while they share it (a host copy, memset or launch stand-in that
/// wrote the allocation whole), a Shadow once one byte differs. A weight is
/// written whole once and then only read: the lm_head comparison case's
/// 778 MB weight (151936 x 2560 bf16) kept 3.1 GB of writer shadow, every
/// page of it zeroed by the kernel and then filled (docs/test-suite.md,
/// session 7).
class WriterIds {
 public:
  explicit WriterIds(size_t n = 0) : n_(n) {}
  uint32_t get(size_t i) const { return per_byte_ ? ids_[i] : all_; }
  void set(size_t i, uint32_t id) {
    if (!per_byte_ && id == all_) return;
    materialize();
    ids_[i] = id;
  }
  /// Bytes [lo, hi) written by `id`.
  void fill(size_t lo, size_t hi, uint32_t id) {
    if (lo == 0 && hi == n_) {  // the whole allocation: one id again
      ids_ = Shadow();
      per_byte_ = false;
      all_ = id;
      return;
    }
    if (!per_byte_ && id == all_) return;
    materialize();
    std::fill(ids_.begin() + lo, ids_.begin() + hi, id);
  }

 private:
  void materialize() {
    if (per_byte_) return;
    ids_ = Shadow(n_);  // zero: kNever
    if (all_ != kNever) std::fill(ids_.begin(), ids_.begin() + n_, all_);
    per_byte_ = true;
  }
  size_t n_ = 0;
  bool per_byte_ = false;
  uint32_t all_ = kNever;
  Shadow ids_;
};

/// One device allocation and its per-byte writer / reader launch ids.
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  WriterIds writer;
  Shadow reader;
};

std::map<uintptr_t, Allocation> g_allocs;  // by base
Allocation* g_last = nullptr;              // lookup cache
std::vector<SharedByte> g_shared_shadow;
uint32_t g_block_gen = 0;
std::unordered_map<uint32_t, std::string> g_launch_names;

uintptr_t shared_lo() { return reinterpret_cast<uintptr_t>(__start_kern_sim_shared); }
uintptr_t shared_hi() { return reinterpret_cast<uintptr_t>(__stop_kern_sim_shared); }

Allocation* find_alloc(uintptr_t a) {
  if (g_last && a >= g_last->base && a < g_last->base + g_last->size) return g_last;
  auto it = g_allocs.upper_bound(a);
  if (it == g_allocs.begin()) return nullptr;
  --it;
  if (a >= it->second.base + it->second.size) return nullptr;
  return g_last = &it->second;
}

std::string hexaddr(uintptr_t a) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(a));
  return b;
}

const char* verb(unsigned access) {
  return access & kAtomic ? "atomic" : access & kWrite ? "write" : "read";
}

/// "allocation 0x1000 (+24 of 64 bytes)".
std::string in_alloc(const Allocation& al, uintptr_t a) {
  return "allocation " + hexaddr(al.base) + " (byte " + std::to_string(a - al.base) + " of " +
         std::to_string(al.size) + ")";
}

[[noreturn]] void out_of_bounds(uintptr_t a, size_t n, unsigned access) {
  std::string near;
  auto it = g_allocs.upper_bound(a);
  if (it != g_allocs.begin()) {
    const Allocation& p = std::prev(it)->second;
    near = "; " + std::to_string(a - (p.base + p.size)) + " bytes past the end of allocation " + hexaddr(p.base) +
           " of " + std::to_string(p.size) + " bytes";
  }
  if (it != g_allocs.end() && near.empty())
    near = "; " + std::to_string(it->second.base - a) + " bytes before allocation " + hexaddr(it->second.base);
  fail("out-of-bounds " + std::to_string(n) + "-byte " + verb(access) + " at " + hexaddr(a) +
       ", outside every live allocation" + near);
}

void check_global(uintptr_t a, size_t n, unsigned access) {
  Launch& l = *g_launch;
  Allocation* al = find_alloc(a);
  if (!al) {
    if (g_options.global_bounds) out_of_bounds(a, n, access);
    return;
  }
  const uintptr_t end = al->base + al->size;
  if (a + n > end) {  // starts inside, runs past the end (simt_test.cpp tests each width)
    if (g_options.global_bounds)
      fail("out-of-bounds " + std::to_string(n) + "-byte " + verb(access) + " at " + hexaddr(a) + " (" +
           in_alloc(*al, a) + ") runs " + std::to_string(a + n - end) + " bytes past its end");
    return;
  }
  const Thread& t = *l.cur;
  const bool pre_wait = l.params.pdl && !t.pdl_waited && g_options.pdl;
  const size_t off = a - al->base;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = al->writer.get(off + i);
    uint32_t& r = al->reader[off + i];
    if (access & kRead) {
      if (w == kNever && g_options.global_uninit)
        fail(std::string(verb(access)) + " of " + std::to_string(n) + " bytes at " + hexaddr(a) + " (" +
             in_alloc(*al, a + i) + ") reads memory no copy, memset or launch has written");
      if (pre_wait && w > kHost && w != l.id)
        fail("PDL: before pdl_wait() " + std::string(verb(access)) + "s " + hexaddr(a + i) + " (" +
             in_alloc(*al, a + i) + "), which " + launch_name(w) + " wrote");
      r = l.id;
    }
    if (access & kWrite) {
      if (pre_wait && ((w > kHost && w != l.id) || (r > kHost && r != l.id)))
        fail("PDL: before pdl_wait() writes " + hexaddr(a + i) + " (" + in_alloc(*al, a + i) + "), which " +
             launch_name(w > kHost && w != l.id ? w : r) + (w > kHost && w != l.id ? " wrote" : " read"));
      al->writer.set(off + i, l.id);
    }
  }
  if (access & kAtomic) l.atomic_words.insert(a);
}

/// True when the earlier access (thread `tid`, barrier phase, warp phase)
/// is ordered before the running thread's access.
bool ordered(const Launch& l, const Thread& t, uint16_t tid, uint32_t phase, uint32_t warp_phase) {
  if (tid == t.linear || phase != l.barrier_phase) return true;
  return tid / 32 == t.warp && warp_phase != l.warp_phase[t.warp];
}

void check_shared(size_t index, uintptr_t a, size_t n, unsigned access) {
  Launch& l = *g_launch;
  const Thread& t = *l.cur;
  const uint32_t wp = l.warp_phase[t.warp];
  for (size_t i = 0; i < n; ++i) {
    SharedByte& s = g_shared_shadow[index + i];
    const bool written = s.gen == l.block_gen;
    if (access & kRead) {
      if (!written && g_options.shared_uninit)
        fail(std::string(verb(access)) + " of shared memory at " + hexaddr(a + i) +
             " that no thread of this block has written");
      if (written && g_options.shared_races && !ordered(l, t, s.w_tid, s.w_phase, s.w_warp_phase) &&
          !((access & kAtomic) && s.w_atomic))
        fail("shared-memory race: " + std::string(verb(access)) + " of " + hexaddr(a + i) + " written by thread " +
             std::to_string(s.w_tid) + " with no __syncthreads() between");
      if (s.r_gen != l.block_gen || ordered(l, t, s.r_tid, s.r_phase, s.r_warp_phase)) {
        s.r_gen = l.block_gen, s.r_tid = static_cast<uint16_t>(t.linear), s.r_phase = l.barrier_phase;
        s.r_warp_phase = wp, s.r_multi = false;
      } else if (s.r_tid != t.linear) {
        s.r_multi = true;
      }
    }
    if (access & kWrite) {
      if (g_options.shared_races && !(access & kAtomic)) {
        if (written && !ordered(l, t, s.w_tid, s.w_phase, s.w_warp_phase))
          fail("shared-memory race: write of " + hexaddr(a + i) + " also written by thread " +
               std::to_string(s.w_tid) + " with no __syncthreads() between");
        const bool reader_live = s.r_gen == l.block_gen;
        if (reader_live && !(access & kRead) &&
            (s.r_multi || !ordered(l, t, s.r_tid, s.r_phase, s.r_warp_phase)) &&
            s.r_phase == l.barrier_phase)
          fail("shared-memory race: write of " + hexaddr(a + i) + " read by thread " + std::to_string(s.r_tid) +
               (s.r_multi ? " and others" : "") + " with no __syncthreads() between");
      }
      s.gen = l.block_gen, s.w_tid = static_cast<uint16_t>(t.linear), s.w_phase = l.barrier_phase;
      s.w_warp_phase = wp, s.w_atomic = (access & kAtomic) != 0;
      s.r_gen = 0;
    }
  }
}

}  // namespace

size_t static_shared_bytes() { return shared_hi() - shared_lo(); }

void begin_block_memory(Launch& l) {
  const size_t st = static_shared_bytes(), dyn = l.params.dynamic_shared_bytes;
  if (st) std::memset(__start_kern_sim_shared, 0xff, st);  // poison: NaN as bf16 / f32, -1 as int
  if (dyn) std::memset(l.dynamic_shared, 0xff, dyn);
  if (g_shared_shadow.size() < st + dyn) g_shared_shadow.resize(st + dyn);
  l.block_gen = ++g_block_gen;
  if (g_block_gen == 0) {  // wrapped: clear the shadow once
    std::fill(g_shared_shadow.begin(), g_shared_shadow.end(), SharedByte{});
    l.block_gen = g_block_gen = 1;
  }
}

std::string end_launch_memory(Launch& l) {
  if (!g_options.counters) return "";
  for (uintptr_t a : l.atomic_words) {
    int v;
    std::memcpy(&v, reinterpret_cast<const void*>(a), sizeof v);
    if (v != 0)
      return std::string(l.kernel) + ": the inter-block counter at " + hexaddr(a) + " is " + std::to_string(v) +
             " after the launch (the last block must reset it to 0 for the next launch or graph replay)";
  }
  return "";
}

uint32_t next_launch_id() {
  static uint32_t next = 2;
  return next++;
}

void note_launch(uint32_t id, std::string_view kernel) { g_launch_names[id] = std::string(kernel); }

std::string launch_name(uint32_t id) {
  auto it = g_launch_names.find(id);
  return "launch #" + std::to_string(id) + (it == g_launch_names.end() ? "" : " (" + it->second + ")");
}

void check_aligned(const void* p, size_t bytes, const char* what) {
  if (!g_launch || !g_launch->cur || !g_options.alignment) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a & (bytes - 1))
    fail(std::string("misaligned ") + what + " at " + hexaddr(a) + ", which needs " + std::to_string(bytes) +
         "-byte alignment (a GPU faults: misaligned address)");
}

void check_access(const void* p, size_t n, unsigned access, bool aligned) {
  Launch* l = g_launch;
  if (!l || !l->cur) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const Thread& t = *l->cur;
  if (a >= t.stack_lo && a < t.stack_hi) return;  // the thread's locals
  const uintptr_t pb = reinterpret_cast<uintptr_t>(l->param_block);
  if (a >= pb && a < pb + l->param_bytes) {
    if (access & kWrite) fail("writes its parameter buffer at " + hexaddr(a));
    return;
  }
  if (aligned && g_options.alignment && n > 1 && (a & (n - 1)))
    fail("misaligned " + std::to_string(n) + "-byte " + verb(access) + " at " + hexaddr(a) +
         " (a GPU faults: misaligned address)");
  const uintptr_t slo = shared_lo(), shi = shared_hi();
  const uintptr_t dlo = reinterpret_cast<uintptr_t>(l->dynamic_shared), dhi = dlo + l->params.dynamic_shared_bytes;
  if (a >= slo && a < shi) {
    if (a + n > shi) fail("shared-memory access at " + hexaddr(a) + " runs past the static shared memory");
    check_shared(a - slo, a, n, access);
  } else if (a >= dlo && a < dhi) {
    if (a + n > dhi)
      fail("out-of-bounds " + std::string(verb(access)) + " of dynamic shared memory at byte " +
           std::to_string(a - dlo) + " of " + std::to_string(dhi - dlo));
    check_shared(shi - slo + (a - dlo), a, n, access);
  } else if (a >= dhi && a < dlo + ((l->params.dynamic_shared_bytes + 15) & ~size_t(15)) + 16) {
    fail("out-of-bounds " + std::string(verb(access)) + " of dynamic shared memory at byte " +
         std::to_string(a - dlo) + " of " + std::to_string(dhi - dlo));
  } else {
    check_global(a, n, access);
  }
}

}  // namespace detail

void on_alloc(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  detail::Allocation al;
  al.base = reinterpret_cast<uintptr_t>(p);
  al.size = bytes;
  al.writer = detail::WriterIds(bytes);  // all kNever
  al.reader = detail::Shadow(bytes);
  detail::g_last = nullptr;
  detail::g_allocs[al.base] = std::move(al);
}

void on_free(const void* p) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  detail::g_last = nullptr;
  detail::g_allocs.erase(reinterpret_cast<uintptr_t>(p));
}

namespace {
/// Marks the allocated bytes of [p, p + bytes) as written by `writer`.
void mark_written(const void* p, size_t bytes, uint32_t writer) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = a + bytes;
  while (a < end) {
    detail::Allocation* al = detail::find_alloc(a);
    if (!al) {
      auto it = detail::g_allocs.upper_bound(a);
      if (it == detail::g_allocs.end()) return;
      a = it->second.base;
      continue;
    }
    const uintptr_t stop = std::min(end, al->base + al->size);
    al->writer.fill(a - al->base, stop - al->base, writer);
    a = stop;
  }
}
}  // namespace

void on_write(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  mark_written(p, bytes, detail::kHost);
}

void on_launch_write(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  static const uint32_t stand_in = [] {
    const uint32_t id = detail::next_launch_id();
    detail::note_launch(id, "an earlier launch the emulator did not run");
    return id;
  }();
  mark_written(p, bytes, stand_in);
}

void reset_memory() {
  std::lock_guard<std::mutex> lock(detail::g_mutex);
  detail::g_last = nullptr;
  detail::g_allocs.clear();
}

}  // namespace kern::sim

// The instrumentation's entry points (the ThreadSanitizer ABI, without its runtime).
using kern::sim::detail::check_access;
using kern::sim::detail::kRead;
using kern::sim::detail::kWrite;

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
#define KERN_SIM_HOOKS(N)                                                                  \
  void __tsan_read##N(void* p) { check_access(p, N, kRead, true); }                        \
  void __tsan_write##N(void* p) { check_access(p, N, kWrite, true); }                      \
  void __tsan_unaligned_read##N(void* p) { check_access(p, N, kRead, false); }             \
  void __tsan_unaligned_write##N(void* p) { check_access(p, N, kWrite, false); }
KERN_SIM_HOOKS(1)
KERN_SIM_HOOKS(2)
KERN_SIM_HOOKS(4)
KERN_SIM_HOOKS(8)
KERN_SIM_HOOKS(16)
#undef KERN_SIM_HOOKS
void __tsan_read_range(void* p, unsigned long n) { check_access(p, n, kRead, false); }
void __tsan_write_range(void* p, unsigned long n) { check_access(p, n, kWrite, false); }
// Function-local static guards (the kernel registration's entries).
unsigned char __tsan_atomic8_load(const volatile unsigned char* a, int mo) { return __atomic_load_n(a, mo); }

// -fsanitize=alignment's handler (the UBSan ABI, without its runtime): a
// typed access at an address not aligned to its type's alignment (uint4:
// 16), with the kernel source location.
struct KernSimSourceLocation {
  const char* file;
  unsigned line, column;
};
struct KernSimTypeDescriptor {
  unsigned short kind, info;
  char name[1];
};
struct KernSimTypeMismatch {
  KernSimSourceLocation loc;
  const KernSimTypeDescriptor* type;
  unsigned char log_alignment, check_kind;
};
void __ubsan_handle_type_mismatch_v1(KernSimTypeMismatch* d, uintptr_t p) {
  using kern::sim::detail::g_launch;
  if (!g_launch || !g_launch->cur || !kern::sim::detail::g_options.alignment) return;
  const unsigned long align = 1ul << d->log_alignment;
  char where[512];
  std::snprintf(where, sizeof where, "%s:%u:%u", d->loc.file, d->loc.line, d->loc.column);
  if (p == 0) kern::sim::detail::fail(std::string("null pointer access at ") + where);
  if (p & (align - 1)) {
    char b[160];
    std::snprintf(b, sizeof b, "misaligned access at 0x%lx to a %s, which needs %lu-byte alignment (a GPU faults: misaligned address), at ",
                  static_cast<unsigned long>(p), d->type->name, align);
    kern::sim::detail::fail(b + std::string(where));
  }
}

// memcpy / memset / memmove of the kernel objects (renamed by objcopy).
void* kern_sim_memcpy(void* d, const void* s, size_t n) {
  if (n) check_access(s, n, kRead, false), check_access(d, n, kWrite, false);
  return std::memcpy(d, s, n);
}
void* kern_sim_memmove(void* d, const void* s, size_t n) {
  if (n) check_access(s, n, kRead, false), check_access(d, n, kWrite, false);
  return std::memmove(d, s, n);
}
void* kern_sim_memset(void* d, int c, size_t n) {
  if (n) check_access(d, n, kWrite, false);
  return std::memset(d, c, n);
}
}

namespace kern::sim::rt {
void expect_aligned(const void* p, size_t bytes) { detail::check_aligned(p, bytes, "vector access"); }
}  // namespace kern::sim::rt

// Atomics: checked as a read and a write of the word (no race between two
// atomics); blocks run one after another, so plain updates are atomic here.
namespace kern::sim::rt {
namespace {
template <typename T, typename F>
T atomic_update(T* p, F f) {
  detail::check_access(p, sizeof(T), detail::kRead | detail::kWrite | detail::kAtomic, true);
  const T old = *p;
  *p = f(old);
  return old;
}
}  // namespace
int atomic_add(int* p, int v) {
  return atomic_update(p, [v](int o) { return static_cast<int>(static_cast<unsigned>(o) + static_cast<unsigned>(v)); });
}
unsigned atomic_add(unsigned* p, unsigned v) { return atomic_update(p, [v](unsigned o) { return o + v; }); }
float atomic_add(float* p, float v) { return atomic_update(p, [v](float o) { return o + v; }); }
int atomic_exch(int* p, int v) { return atomic_update(p, [v](int) { return v; }); }
int atomic_cas(int* p, int c, int v) { return atomic_update(p, [c, v](int o) { return o == c ? v : o; }); }
unsigned atomic_cas(unsigned* p, unsigned c, unsigned v) {
  return atomic_update(p, [c, v](unsigned o) { return o == c ? v : o; });
}
}  // namespace kern::sim::rt
