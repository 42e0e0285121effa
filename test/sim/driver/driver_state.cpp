// The simulated driver's queues, execution and checks (driver_state.h).
#include "test/sim/driver/driver_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>

namespace kern::sim {

DriverState& state() {
  static DriverState* s = new DriverState();  // never destroyed: exit handlers may still call in
  return *s;
}

Context*& current_context() {
  thread_local Context* ctx = nullptr;
  return ctx;
}

uint64_t this_thread_id() { return std::hash<std::thread::id>{}(std::this_thread::get_id()); }

void report(const std::string& what) {
  std::fprintf(stderr, "kern sim: %s\n", what.c_str());
  if (const char* path = std::getenv("KERN_SIM_REPORT"); path && *path) {
    std::ofstream out(path, std::ios::app);
    out << what << "\n";
  }
}

namespace {

bool inside(const std::map<uint64_t, uint64_t>& allocs, uint64_t p, uint64_t n) {
  auto it = allocs.upper_bound(p);
  if (it == allocs.begin()) return false;
  --it;
  return p - it->first <= it->second && n <= it->second - (p - it->first);
}

uint64_t hash_bytes(uint64_t p, uint64_t n) {
  return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(p), n));
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

bool overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn) { return a < b + bn && b < a + an; }

/// Which calls of each injectable failure fail (parsed once from KERN_SIM_FAIL).
struct Injection {
  std::map<std::string, uint64_t> at;     ///< name -> 1-based call number
  std::map<std::string, uint64_t> calls;  ///< name -> calls so far
  Injection() {
    const char* v = std::getenv("KERN_SIM_FAIL");
    std::string spec = v ? v : "";
    size_t pos = 0;
    while (pos < spec.size()) {
      size_t end = spec.find(',', pos);
      if (end == std::string::npos) end = spec.size();
      std::string item = spec.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      uint64_t n = 1;
      if (size_t at_sign = item.find('@'); at_sign != std::string::npos) {
        n = std::strtoull(item.c_str() + at_sign + 1, nullptr, 10);
        item.resize(at_sign);
      }
      static const char* known[] = {"launch", "capture", "end_capture", "instantiate", "graph_launch",
                                    "kernel_fault", "alloc"};
      bool ok = false;
      for (const char* k : known) ok = ok || item == k;
      if (!ok || n == 0) {
        report("KERN_SIM_FAIL: unknown failure '" + item +
               "' (launch, capture, end_capture, instantiate, graph_launch, kernel_fault, alloc; name@N for the Nth call)");
        continue;
      }
      at[item] = n;
    }
  }
};

/// Executes one queued entry of `s`; returns "" or the violation.
std::string execute(Stream* s, const Pending& p) {
  DriverState& st = state();
  if (p.work == nullptr) {  // an event record (its event may have been destroyed since)
    if (p.event == nullptr) return "";
    if (p.event->stream == s && p.event->seq == p.seq) {  // the event's latest record
      p.event->done = true;
      p.event->time_us = st.clock_us;
    }
    return "";
  }
  const Work& w = *p.work;
  switch (w.kind) {
    case Work::Kind::kKernel: {
      Function* fn = w.fn;
      if (fn->module->unloaded) return w.what + ": its module was unloaded before the launch executed";
      if (fn->kernel == nullptr)
        return w.what + ": the simulation has no emulation of this kernel (kernel source: " +
               std::string(kernel_source_name()) + ")";
      std::vector<void*> ptrs(fn->entry.params.size());
      std::vector<uint8_t> bytes = w.param_bytes;  // the kernel may not change the graph's copy
      for (size_t i = 0; i < ptrs.size(); ++i) ptrs[i] = bytes.data() + fn->entry.params[i].offset;
      KernelLaunch l = w.launch;
      l.seed = st.seed * 0x9E3779B97F4A7C15ull + st.launches++;
      if (inject("kernel_fault")) {
        s->ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
        return w.what + ": injected fault (KERN_SIM_FAIL=kernel_fault)";
      }
      std::string v = fn->kernel->launch(l, ptrs.empty() ? nullptr : ptrs.data());
      st.clock_us += 2.0 + 1e-6 * double(l.grid[0]) * l.grid[1] * l.grid[2] * l.block[0] * l.block[1] * l.block[2];
      return v.empty() ? "" : w.what + ": " + v;
    }
    case Work::Kind::kCopyHtoD:
      if (!w.staged.empty()) {
        std::memcpy(reinterpret_cast<void*>(w.dst), w.staged.data(), w.bytes);
      } else {
        if (p.check_src && hash_bytes(w.src, w.bytes) != p.src_hash)
          return w.what + ": the host wrote the pinned source [" + hex(w.src) + ", +" +
                 std::to_string(w.bytes) + " B) after the copy was queued and before it completed "
                 "(on a GPU the copy reads whatever is there when the DMA runs)";
        std::memcpy(reinterpret_cast<void*>(w.dst), reinterpret_cast<const void*>(w.src), w.bytes);
      }
      shadow_write(w.dst, w.bytes);
      break;
    case Work::Kind::kCopyDtoH:
      std::memcpy(reinterpret_cast<void*>(w.dst), reinterpret_cast<const void*>(w.src), w.bytes);
      break;
    case Work::Kind::kCopyDtoD:
      std::memmove(reinterpret_cast<void*>(w.dst), reinterpret_cast<const void*>(w.src), w.bytes);
      shadow_write(w.dst, w.bytes);
      break;
    case Work::Kind::kMemset:
      std::memset(reinterpret_cast<void*>(w.dst), w.value, w.bytes);
      shadow_write(w.dst, w.bytes);
      break;
    case Work::Kind::kHost: {
      std::string v = w.host();
      st.clock_us += 5.0;
      return v.empty() ? "" : w.what + ": " + v;
    }
  }
  st.clock_us += 1.0 + double(w.bytes) / 20000.0;  // 20 GB/s
  return "";
}

}  // namespace

bool inject(const char* name) {
  static Injection* inj = new Injection();
  auto it = inj->at.find(name);
  if (it == inj->at.end()) return false;
  return ++inj->calls[name] == it->second;
}

bool is_pinned(uint64_t p, uint64_t n) { return inside(state().host_allocs, p, n); }
bool is_device(uint64_t p, uint64_t n) { return inside(state().device_allocs, p, n); }

bool unsafe_call_in_capture() {
  Context* ctx = current_context();
  if (ctx == nullptr) return false;
  bool unsafe = false;
  for (Stream* s : ctx->streams) {
    if (!s->capturing || s->capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
    if (s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL || s->capture_thread == this_thread_id()) {
      s->capture_invalid = true;
      unsafe = true;
    }
  }
  return unsafe;
}

CUresult enqueue(Stream* s, std::shared_ptr<const Work> work) {
  if (s->ctx->sticky != CUDA_SUCCESS) return s->ctx->sticky;
  if (s->capturing) {
    if (s->capture_invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    s->capture->nodes.push_back(std::move(work));
    return CUDA_SUCCESS;
  }
  Pending p;
  p.seq = s->next_seq++;
  if (work->kind == Work::Kind::kCopyHtoD && work->host_pinned) {
    // Race check unless an earlier queued copy writes that host memory itself.
    p.check_src = true;
    for (const Pending& q : s->queue)
      if (q.work && q.work->kind == Work::Kind::kCopyDtoH && overlaps(q.work->dst, q.work->bytes, work->src, work->bytes))
        p.check_src = false;
    if (p.check_src) p.src_hash = hash_bytes(work->src, work->bytes);
  }
  p.work = std::move(work);
  s->queue.push_back(std::move(p));
  return CUDA_SUCCESS;
}

CUresult enqueue_record(Stream* s, Event* e) {
  if (s->ctx->sticky != CUDA_SUCCESS) return s->ctx->sticky;
  e->recorded = true;
  if (s->capturing) {  // a dependency marker inside the capture, not a node that fires on replay
    if (s->capture_invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    e->captured = true;
    e->stream = s;
    e->done = false;
    return CUDA_SUCCESS;
  }
  Pending p;
  p.seq = s->next_seq++;
  p.event = e;
  e->stream = s;
  e->seq = p.seq;
  e->captured = false;
  e->done = false;
  s->queue.push_back(std::move(p));
  return CUDA_SUCCESS;
}

CUresult run_stream(Stream* s, uint64_t seq) {
  Context* ctx = s->ctx;
  while (!s->queue.empty() && s->queue.front().seq <= seq) {
    Pending p = std::move(s->queue.front());
    s->queue.pop_front();
    s->done_seq = p.seq;
    if (ctx->sticky != CUDA_SUCCESS) {  // a faulted context runs nothing more
      if (p.event) p.event->done = true;
      continue;
    }
    const std::string v = execute(s, p);
    if (!v.empty()) {
      report(v);
      if (ctx->sticky == CUDA_SUCCESS) ctx->sticky = CUDA_ERROR_LAUNCH_FAILED;
    }
  }
  return ctx->sticky;
}

CUresult run_all(Context* ctx) {
  for (Stream* s : ctx->streams) run_stream(s, UINT64_MAX);
  return ctx->sticky;
}

}  // namespace kern::sim
