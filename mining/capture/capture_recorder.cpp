// The capture's recorder (capture_recorder.h): allocation table, module
// images, parameter layouts and the launches.jsonl event stream.
#include "mining/capture/capture_recorder.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "mining/capture/capture_image.h"
#include "mining/capture/capture_json.h"

namespace kern::capture {

namespace {

constexpr size_t kMaxParams = 4096;           // a bound on the cuFuncGetParamInfo walk
constexpr size_t kSnapshotChunk = 64u << 20;  // bytes read back per DtoH copy

/// Streaming sha256 (OpenSSL EVP), lower-case hex at the end.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
  void update(const void* p, size_t n) { EVP_DigestUpdate(ctx_.get(), p, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &len);
    return hex_bytes(md, len);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

/// Writes `n` bytes to `path` through a temporary file and a rename.
bool write_file(const std::string& path, const void* data, size_t n) {
  const std::string tmp = path + ".part";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = write_all(fd, data, n);
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

/// A value that could be a user-space address (canonical, above the zero
/// page, 4-byte aligned) though it lies in no allocation the capture saw.
bool looks_like_address(uint64_t v) { return v >= 0x10000 && v < (uint64_t(1) << 48) && v % 4 == 0; }

std::string dims_json(const unsigned d[3]) {
  return "[" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + "]";
}

/// A launch attribute (CUlaunchAttribute) as JSON: id, CUDA's name, and the
/// value decoded where its meaning is known, else its 64 raw bytes.
std::string attribute_json(const CUlaunchAttribute& at) {
  std::string name, value;
  switch (at.id) {
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      name = "programmatic_stream_serialization";
      value = std::to_string(at.value.programmaticStreamSerializationAllowed);
      break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      name = "priority";
      value = std::to_string(at.value.priority);
      break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      name = "cluster_dimension";
      value = "[" + std::to_string(at.value.clusterDim.x) + "," + std::to_string(at.value.clusterDim.y) + "," +
              std::to_string(at.value.clusterDim.z) + "]";
      break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      name = "cooperative";
      value = std::to_string(at.value.cooperative);
      break;
    default:
      value = "\"" + hex_bytes(&at.value, sizeof at.value) + "\"";
  }
  return "{\"id\":" + std::to_string(int(at.id)) + ",\"name\":" + (name.empty() ? "null" : json_string(name)) +
         ",\"value\":" + value + "}";
}

void finish_at_exit() { Recorder::get().finish(); }

}  // namespace

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

Recorder& Recorder::get() {
  static Recorder* r = new Recorder();  // never destroyed: hooks may run during exit
  return *r;
}

Recorder::Recorder() {
  if (const char* d = std::getenv("KERN_CAPTURE_DIR"); d != nullptr && *d != '\0') dir_ = d;
  if (const char* s = std::getenv("KERN_CAPTURE_SNAPSHOT_WEIGHTS"); s != nullptr && std::strcmp(s, "1") == 0)
    snapshot_weights_ = true;
}

void Recorder::set_driver_calls(const DriverCalls& calls) {
  std::lock_guard<std::mutex> lock(mu_);
  if (calls.func_get_param_info) calls_.func_get_param_info = calls.func_get_param_info;
  if (calls.memcpy_dtoh_async) calls_.memcpy_dtoh_async = calls.memcpy_dtoh_async;
  if (calls.stream_synchronize) calls_.stream_synchronize = calls.stream_synchronize;
  if (calls.ctx_synchronize) calls_.ctx_synchronize = calls.ctx_synchronize;
}

bool Recorder::synchronize_locked(CUstream stream) {
  if (calls_.ctx_synchronize != nullptr) return calls_.ctx_synchronize() == CUDA_SUCCESS;
  return calls_.stream_synchronize != nullptr && calls_.stream_synchronize(stream) == CUDA_SUCCESS;
}

bool Recorder::open_locked() {
  if (fd_ >= 0) return true;
  if (dir_.empty() || open_failed_) return false;
  // The first CUDA process of a capture owns DIR; any other (a child, a
  // second run in a script) writes DIR/pid<N>/ so nothing is interleaved.
  out_dir_ = dir_;
  fd_ = ::open((out_dir_ + "/launches.jsonl").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == EEXIST) {
    out_dir_ = dir_ + "/pid" + std::to_string(::getpid());
    ::mkdir(out_dir_.c_str(), 0755);
    fd_ = ::open((out_dir_ + "/launches.jsonl").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  }
  if (fd_ < 0) {
    open_failed_ = true;
    std::fprintf(stderr, "kern-capture: cannot create %s/launches.jsonl: %s; nothing is recorded\n",
                 out_dir_.c_str(), std::strerror(errno));
    return false;
  }
  std::atexit(finish_at_exit);
  char exe[4096] = {0};
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  write_line_locked("{\"event\":\"capture\",\"format\":1,\"pid\":" + std::to_string(::getpid()) +
                    ",\"exe\":" + json_string(n > 0 ? std::string(exe, size_t(n)) : std::string()) +
                    ",\"snapshot_weights\":" + (snapshot_weights_ ? "true" : "false") +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
  return true;
}

void Recorder::write_line_locked(const std::string& line) {
  std::string l = line + "\n";  // one write per record: a crash leaves whole lines, or a visibly cut last one
  if (!write_all(fd_, l.data(), l.size()) && !open_failed_) {
    open_failed_ = true;
    std::fprintf(stderr, "kern-capture: writing %s/launches.jsonl failed: %s\n", out_dir_.c_str(),
                 std::strerror(errno));
  }
}

const Recorder::Alloc* Recorder::find_locked(uint64_t address) const {
  auto it = allocs_.upper_bound(address);
  if (it == allocs_.begin()) return nullptr;
  --it;
  return address < it->second.base + it->second.bytes ? &it->second : nullptr;
}

std::string Recorder::pointer_json_locked(uint64_t value) const {
  if (const Alloc* a = find_locked(value))
    return std::string("{\"class\":\"") + (a->host ? "host" : "device") + "\",\"alloc\":" + std::to_string(a->id) +
           ",\"offset\":" + std::to_string(value - a->base) + "}";
  if (looks_like_address(value)) return "{\"class\":\"unknown\"}";
  return "null";
}

std::string Recorder::candidates_json_locked(const uint8_t* bytes, size_t size) const {
  std::string out = "[";
  for (size_t at = 0; at + 8 <= size; at += 8) {  // pointers in a struct sit at 8-byte alignment
    uint64_t v;
    std::memcpy(&v, bytes + at, 8);
    const Alloc* a = find_locked(v);
    if (a == nullptr) continue;
    if (out.size() > 1) out += ",";
    out += "{\"at\":" + std::to_string(at) + ",\"class\":\"" + (a->host ? "host" : "device") +
           "\",\"alloc\":" + std::to_string(a->id) + ",\"offset\":" + std::to_string(v - a->base) + "}";
  }
  return out + "]";
}

void Recorder::on_module(const void* handle, const void* image, const char* via) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  const int64_t id = int64_t(next_module_++);
  modules_[handle] = id;
  const ImageExtent ext = image == nullptr ? ImageExtent{} : image_extent(image);
  std::string rec = "{\"event\":\"module\",\"id\":" + std::to_string(id) + ",\"via\":" + json_string(via) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns());
  if (ext.kind.empty()) {
    rec += ",\"kind\":null,\"file\":null,\"error\":\"unknown image format: neither fatbin, ELF cubin nor PTX\"}";
  } else {
    const std::string file = "module_" + std::to_string(id) + "." + ext.kind;
    Sha256 h;
    h.update(ext.data, ext.bytes);
    const bool ok = write_file(out_dir_ + "/" + file, ext.data, ext.bytes);
    rec += ",\"kind\":\"" + ext.kind + "\",\"bytes\":" + std::to_string(ext.bytes) + ",\"sha256\":\"" + h.hex() +
           "\",\"file\":" + (ok ? json_string(file) : "null") + (ok ? "" : ",\"error\":\"writing the image failed\"") +
           "}";
  }
  write_line_locked(rec);
}

void Recorder::on_module_file(const void* handle, const char* path, const char* via) {
  if (!enabled() || path == nullptr) return;
  std::vector<uint8_t> bytes;
  if (const int fd = ::open(path, O_RDONLY | O_CLOEXEC); fd >= 0) {
    uint8_t chunk[1 << 16];
    ssize_t n;
    while ((n = ::read(fd, chunk, sizeof chunk)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
    ::close(fd);
  }
  bytes.push_back(0);  // a PTX file is text: the image must be NUL-terminated as in memory
  on_module(handle, bytes.size() > 1 ? bytes.data() : nullptr, via);
}

void Recorder::on_function(const void* function, const void* owner, const char* symbol) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  Function f;
  f.symbol = symbol ? symbol : "";
  auto m = modules_.find(owner);
  if (m != modules_.end()) f.module = m->second;
  else if (auto k = functions_.find(owner); k != functions_.end()) f.module = k->second.module;  // a CUkernel
  functions_[function] = f;
}

Recorder::Function& Recorder::function_locked(CUfunction fn) {
  Function& f = functions_[fn];  // unseen (obtained before the hooks): symbol unknown
  if (!f.layout_known && f.layout_error.empty()) {
    if (calls_.func_get_param_info == nullptr) {
      f.layout_error = "the driver has no cuFuncGetParamInfo (CUDA 12.4+)";
    } else {
      for (size_t i = 0; i < kMaxParams; ++i) {
        size_t offset = 0, size = 0;
        const CUresult r = calls_.func_get_param_info(fn, i, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
        if (r != CUDA_SUCCESS) {
          f.layout_error = "cuFuncGetParamInfo(" + std::to_string(i) + "): CUresult " + std::to_string(int(r));
          f.layout.clear();
          break;
        }
        f.layout.emplace_back(offset, size);
      }
      f.layout_known = f.layout_error.empty();
    }
  }
  return f;
}

void Recorder::on_alloc(uint64_t base, uint64_t bytes, bool host, const char* via) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  Alloc a;
  a.id = next_alloc_++;
  a.base = base, a.bytes = bytes, a.host = host;
  allocs_[base] = a;
  write_line_locked("{\"event\":\"alloc\",\"id\":" + std::to_string(a.id) + ",\"base\":" + json_address(base) +
                    ",\"bytes\":" + std::to_string(bytes) + ",\"host\":" + (host ? "true" : "false") +
                    ",\"via\":" + json_string(via) + ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
}

void Recorder::on_free(uint64_t base, const char* via) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  auto it = allocs_.find(base);
  if (it == allocs_.end()) {
    write_line_locked("{\"event\":\"free\",\"alloc\":null,\"base\":" + json_address(base) + ",\"via\":" +
                      json_string(via) + ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
    return;
  }
  if (it->second.snapshot == 1) verify_snapshot_locked(it->second, "free");
  write_line_locked("{\"event\":\"free\",\"alloc\":" + std::to_string(it->second.id) + ",\"via\":" +
                    json_string(via) + ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
  allocs_.erase(it);
}

void Recorder::on_htod(uint64_t dst, uint64_t bytes, CUstream stream, const char* via) {
  if (!enabled()) return;
  on_device_write(dst, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  const Alloc* a = find_locked(dst);
  write_line_locked("{\"event\":\"htod\",\"alloc\":" + (a ? std::to_string(a->id) : std::string("null")) +
                    ",\"offset\":" + (a ? std::to_string(dst - a->base) : std::string("null")) +
                    ",\"dst\":" + json_address(dst) + ",\"bytes\":" + std::to_string(bytes) + ",\"stream\":" +
                    json_address(reinterpret_cast<uint64_t>(stream)) + ",\"via\":" + json_string(via) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
}

void Recorder::on_dtoh(uint64_t src, uint64_t bytes, CUstream stream, const char* via) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  const Alloc* a = find_locked(src);
  write_line_locked("{\"event\":\"dtoh\",\"alloc\":" + (a ? std::to_string(a->id) : std::string("null")) +
                    ",\"offset\":" + (a ? std::to_string(src - a->base) : std::string("null")) +
                    ",\"src\":" + json_address(src) + ",\"bytes\":" + std::to_string(bytes) + ",\"stream\":" +
                    json_address(reinterpret_cast<uint64_t>(stream)) + ",\"via\":" + json_string(via) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
}

void Recorder::on_device_write(uint64_t dst, uint64_t bytes) {
  if (!enabled() || !snapshot_weights_) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [base, a] : allocs_) {
    if (a.snapshot != 1 || dst >= a.base + a.bytes || dst + bytes <= a.base) continue;
    a.snapshot = 2;  // written after its first read: not a weight
    ::unlink((out_dir_ + "/alloc_" + std::to_string(a.id) + ".bin.part").c_str());
    write_line_locked("{\"event\":\"snapshot\",\"alloc\":" + std::to_string(a.id) +
                      ",\"kept\":false,\"why\":\"written by a copy or memset after its first read\"}");
  }
}

void Recorder::on_capture_begin(CUstream stream) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  capturing_[stream] = 1;
}

void Recorder::on_capture_end(CUstream stream) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  capturing_.erase(stream);
}

void Recorder::on_graph_launch(CUstream stream) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  ++graph_launches_;
  write_line_locked("{\"event\":\"graph_launch\",\"stream\":" + json_address(reinterpret_cast<uint64_t>(stream)) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
}

void Recorder::snapshot_locked(Alloc& a, CUstream stream) {
  a.snapshot = 2;  // unless every step below succeeds
  if (calls_.memcpy_dtoh_async == nullptr || calls_.stream_synchronize == nullptr) return;
  if (!synchronize_locked(stream)) return;
  const std::string part = out_dir_ + "/alloc_" + std::to_string(a.id) + ".bin.part";
  const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::vector<uint8_t> buf(std::min<uint64_t>(a.bytes, kSnapshotChunk));
  Sha256 h;
  bool ok = true;
  for (uint64_t at = 0; ok && at < a.bytes; at += buf.size()) {
    const size_t n = size_t(std::min<uint64_t>(buf.size(), a.bytes - at));
    ok = calls_.memcpy_dtoh_async(buf.data(), a.base + at, n, stream) == CUDA_SUCCESS &&
         calls_.stream_synchronize(stream) == CUDA_SUCCESS && write_all(fd, buf.data(), n);
    h.update(buf.data(), n);
  }
  ::close(fd);
  if (!ok) {
    ::unlink(part.c_str());
    return;
  }
  a.snapshot = 1;
  a.snapshot_sha256 = h.hex();
}

void Recorder::verify_snapshot_locked(Alloc& a, const char* when) {
  const std::string part = out_dir_ + "/alloc_" + std::to_string(a.id) + ".bin.part";
  std::string why;
  std::vector<uint8_t> buf(std::min<uint64_t>(a.bytes, kSnapshotChunk));
  Sha256 h;
  if (!synchronize_locked(nullptr)) why = "could not wait for the device at " + std::string(when);
  for (uint64_t at = 0; why.empty() && at < a.bytes; at += buf.size()) {
    const size_t n = size_t(std::min<uint64_t>(buf.size(), a.bytes - at));
    const CUresult r = calls_.memcpy_dtoh_async(buf.data(), a.base + at, n, nullptr);
    if (r != CUDA_SUCCESS || calls_.stream_synchronize(nullptr) != CUDA_SUCCESS)
      why = "could not be read back at " + std::string(when) + " (CUresult " + std::to_string(int(r)) + ")";
    h.update(buf.data(), n);
  }
  if (why.empty() && h.hex() != a.snapshot_sha256) why = "its bytes changed between its first read and its " + std::string(when);
  std::string rec = "{\"event\":\"snapshot\",\"alloc\":" + std::to_string(a.id);
  const std::string file = "alloc_" + std::to_string(a.id) + ".bin";
  if (why.empty() && ::rename(part.c_str(), (out_dir_ + "/" + file).c_str()) == 0) {
    rec += ",\"kept\":true,\"file\":\"" + file + "\",\"bytes\":" + std::to_string(a.bytes) + ",\"sha256\":\"" +
           a.snapshot_sha256 + "\",\"verified_at\":\"" + when + "\"}";
  } else {
    ::unlink(part.c_str());
    rec += ",\"kept\":false,\"why\":" + json_string(why.empty() ? "renaming the snapshot failed" : why) + "}";
  }
  a.snapshot = 2;
  write_line_locked(rec);
}

void Recorder::before_launch(const LaunchView& l) {
  if (!enabled() || !snapshot_weights_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked() || capturing_.count(l.stream)) return;  // a captured launch reads nothing now
  Function& f = function_locked(l.function);
  std::vector<uint64_t> words;  // every 8-byte-aligned word of the parameters
  auto scan = [&](const uint8_t* p, size_t n) {
    for (size_t at = 0; at + 8 <= n; at += 8) {
      uint64_t v;
      std::memcpy(&v, p + at, 8);
      words.push_back(v);
    }
  };
  if (l.params != nullptr && f.layout_known)
    for (size_t i = 0; i < f.layout.size(); ++i) scan(static_cast<const uint8_t*>(l.params[i]), f.layout[i].second);
  for (size_t i = 0; l.params == nullptr && l.extra != nullptr && i < 64 && l.extra[i] != CU_LAUNCH_PARAM_END; i += 2)
    if (l.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER && l.extra[i + 2] == CU_LAUNCH_PARAM_BUFFER_SIZE &&
        l.extra[i + 3] != nullptr)  // the packed buffer, in the order CUDA's documentation shows
      scan(static_cast<const uint8_t*>(l.extra[i + 1]), *static_cast<const size_t*>(l.extra[i + 3]));
  for (uint64_t v : words) {
    auto it = allocs_.upper_bound(v);
    if (it == allocs_.begin()) continue;
    Alloc& a = std::prev(it)->second;
    if (!a.host && v < a.base + a.bytes && a.snapshot == 0) snapshot_locked(a, l.stream);
  }
}

void Recorder::after_launch(const LaunchView& l, CUresult result) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  Function& f = function_locked(l.function);
  const bool in_capture = capturing_.count(l.stream) != 0;
  if (in_capture) ++captured_launches_;
  std::string rec = "{\"event\":\"launch\",\"seq\":" + std::to_string(launches_++) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) + ",\"via\":" + json_string(l.via) +
                    ",\"symbol\":" + (f.symbol.empty() ? "null" : json_string(f.symbol)) +
                    ",\"module\":" + (f.module >= 0 ? std::to_string(f.module) : "null") +
                    ",\"grid\":" + dims_json(l.grid) + ",\"block\":" + dims_json(l.block) +
                    ",\"shared_bytes\":" + std::to_string(l.shared_bytes) +
                    ",\"stream\":" + json_address(reinterpret_cast<uint64_t>(l.stream)) + ",\"attributes\":[";
  for (unsigned i = 0; i < l.num_attrs; ++i) rec += (i ? "," : "") + attribute_json(l.attrs[i]);
  rec += "],\"in_capture\":" + std::string(in_capture ? "true" : "false") + ",\"result\":" + std::to_string(int(result));
  if (l.in_library != nullptr) rec += ",\"in_library\":" + json_string(l.in_library);

  // Where the parameter bytes are: kernelParams (one pointer per parameter)
  // or one packed buffer in `extra`.
  const uint8_t* extra_buf = nullptr;
  size_t extra_size = 0;
  bool extra_ok = l.extra == nullptr;
  for (size_t i = 0; l.extra != nullptr && i < 64 && l.extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (l.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) extra_buf = static_cast<const uint8_t*>(l.extra[i + 1]);
    if (l.extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && l.extra[i + 1] != nullptr)
      extra_size = *static_cast<const size_t*>(l.extra[i + 1]);
    extra_ok = extra_buf != nullptr;
  }
  const bool via_extra = l.params == nullptr && l.extra != nullptr;
  rec += std::string(",\"params_source\":") + (via_extra ? "\"extra\"" : l.params ? "\"kernelParams\"" : "null");
  if (f.layout_known) {
    rec += ",\"layout\":[";
    for (size_t i = 0; i < f.layout.size(); ++i)
      rec += (i ? ",[" : "[") + std::to_string(f.layout[i].first) + "," + std::to_string(f.layout[i].second) + "]";
    rec += "]";
  } else {
    rec += ",\"layout\":null,\"layout_error\":" + json_string(f.layout_error);
  }
  if (via_extra) {
    if (extra_ok && extra_buf != nullptr) {
      rec += ",\"extra_bytes\":\"" + hex_bytes(extra_buf, extra_size) + "\",\"extra_candidates\":" +
             candidates_json_locked(extra_buf, extra_size);
    } else {
      rec += ",\"extra_bytes\":null,\"extra_error\":\"no CU_LAUNCH_PARAM_BUFFER_POINTER in extra\"";
    }
  }
  // One entry per parameter, in the layout's order, from wherever they travel.
  if (f.layout_known && (l.params != nullptr || (via_extra && extra_buf != nullptr))) {
    rec += ",\"params\":[";
    for (size_t i = 0; i < f.layout.size(); ++i) {
      const auto [offset, size] = f.layout[i];
      const uint8_t* p = nullptr;
      if (!via_extra) p = static_cast<const uint8_t*>(l.params[i]);
      else if (offset + size <= extra_size) p = extra_buf + offset;
      rec += i ? ",{" : "{";
      rec += "\"offset\":" + std::to_string(offset) + ",\"size\":" + std::to_string(size);
      if (p == nullptr) {
        rec += ",\"bytes\":null}";  // past the end of the extra buffer
        continue;
      }
      rec += ",\"bytes\":\"" + hex_bytes(p, size) + "\"";
      const bool scalar_size = size == 1 || size == 2 || size == 4 || size == 8;
      if (size == 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        rec += ",\"pointer\":" + pointer_json_locked(v);
      }
      if (!scalar_size) rec += ",\"struct\":true,\"candidates\":" + candidates_json_locked(p, size);
      rec += "}";
    }
    rec += "]";
  } else {
    rec += ",\"params\":null";
  }
  write_line_locked(rec + "}");
}

void Recorder::finish() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) return;
  for (auto& [base, a] : allocs_)
    if (a.snapshot == 1) verify_snapshot_locked(a, "exit");
  write_line_locked("{\"event\":\"end\",\"launches\":" + std::to_string(launches_) +
                    ",\"captured_launches\":" + std::to_string(captured_launches_) +
                    ",\"graph_launches\":" + std::to_string(graph_launches_) +
                    ",\"library_calls\":" + std::to_string(library_calls_) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) + "}");
  ::close(fd_);
  fd_ = -1;
  open_failed_ = true;  // nothing after the closing record
}

}  // namespace kern::capture
