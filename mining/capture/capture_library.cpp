// The recorder's library calls (capture_recorder.h, docs/mining.md "Library
// calls"): cublasLt's layouts and matmul descriptors by handle, and one
// `library_call` record per cublasLtMatmul with its operands' addresses,
// allocations, element types and shapes, transposes and scale factors, so
// kern-mine can map the call back to an extern GEMM (the library's own
// kernels, launched inside the call, are marked `in_library`).
#include <cublasLt.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "mining/capture/capture_json.h"
#include "mining/capture/capture_recorder.h"

namespace kern::capture {

void Recorder::on_blas_layout(const void* layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  blas_layouts_[layout] = BlasLayout{type, rows, cols, ld};  // a handle reused after destroy is overwritten
}

void Recorder::on_blas_desc(const void* desc, int compute_type, int scale_type) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  BlasDesc d;
  d.compute_type = compute_type, d.scale_type = scale_type;
  blas_descs_[desc] = d;
}

void Recorder::on_blas_desc_attribute(const void* desc, int attribute, const void* buf, size_t size) {
  if (!enabled() || buf == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  BlasDesc& d = blas_descs_[desc];
  int32_t v = 0;
  if ((attribute == CUBLASLT_MATMUL_DESC_TRANSA || attribute == CUBLASLT_MATMUL_DESC_TRANSB) && size == sizeof v) {
    std::memcpy(&v, buf, sizeof v);
    (attribute == CUBLASLT_MATMUL_DESC_TRANSA ? d.transa : d.transb) = v;
    return;
  }
  d.other[attribute] = hex_bytes(buf, size < 64 ? size : 64);
}

void Recorder::before_blas_matmul(const BlasMatmulView& m) {
  if (!enabled() || !snapshot_weights_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked() || capturing_.count(m.stream)) return;
  for (int i = 0; i < 3; ++i) {  // A, B, C are read; D is only written
    auto it = allocs_.upper_bound(m.operand[i]);
    if (it == allocs_.begin()) continue;
    Alloc& a = std::prev(it)->second;
    if (!a.host && m.operand[i] < a.base + a.bytes && a.snapshot == 0) snapshot_locked(a, m.stream);
  }
}

namespace {

/// The scale factor at host pointer `p` of cudaDataType `type`, as JSON
/// (null for a type other than f32 / f64 or no pointer).
std::string scale_json(const void* p, int type) {
  char buf[64];
  if (p == nullptr) return "null";
  if (type == CUDA_R_32F) {
    float f;
    std::memcpy(&f, p, sizeof f);
    std::snprintf(buf, sizeof buf, "%.9g", double(f));
  } else if (type == CUDA_R_64F) {
    double d;
    std::memcpy(&d, p, sizeof d);
    std::snprintf(buf, sizeof buf, "%.17g", d);
  } else {
    return "null";
  }
  return buf;
}

}  // namespace

void Recorder::on_blas_matmul(const BlasMatmulView& m, int status) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_locked()) return;
  const bool in_capture = capturing_.count(m.stream) != 0;
  auto d = blas_descs_.find(m.desc);
  const BlasDesc desc = d != blas_descs_.end() ? d->second : BlasDesc{};
  std::string rec = "{\"event\":\"library_call\",\"seq\":" + std::to_string(library_calls_++) +
                    ",\"t_ns\":" + std::to_string(monotonic_ns()) +
                    ",\"library\":\"cublasLt\",\"function\":\"cublasLtMatmul\",\"stream\":" +
                    json_address(reinterpret_cast<uint64_t>(m.stream)) +
                    ",\"in_capture\":" + (in_capture ? "true" : "false") + ",\"result\":" + std::to_string(status) +
                    ",\"desc_known\":" + (d != blas_descs_.end() ? "true" : "false") +
                    ",\"compute_type\":" + std::to_string(desc.compute_type) +
                    ",\"scale_type\":" + std::to_string(desc.scale_type) + ",\"transa\":" + std::to_string(desc.transa) +
                    ",\"transb\":" + std::to_string(desc.transb) + ",\"attributes\":[";
  bool first = true;
  for (const auto& [id, value] : desc.other) {
    rec += (first ? "" : ",") + std::string("{\"id\":") + std::to_string(id) + ",\"value\":\"" + value + "\"}";
    first = false;
  }
  rec += "],\"alpha\":" + scale_json(m.alpha, desc.scale_type) + ",\"beta\":" + scale_json(m.beta, desc.scale_type) +
         ",\"operands\":[";
  const char* names[4] = {"A", "B", "C", "D"};
  for (int i = 0; i < 4; ++i) {
    auto l = blas_layouts_.find(m.layout[i]);
    rec += (i ? ",{" : "{") + std::string("\"name\":\"") + names[i] + "\",\"address\":" + json_address(m.operand[i]) +
           ",\"pointer\":" + pointer_json_locked(m.operand[i]);
    if (l == blas_layouts_.end()) {
      rec += ",\"layout\":null}";
    } else {
      rec += ",\"layout\":{\"type\":" + std::to_string(l->second.type) + ",\"rows\":" +
             std::to_string(l->second.rows) + ",\"cols\":" + std::to_string(l->second.cols) +
             ",\"ld\":" + std::to_string(l->second.ld) + "}}";
    }
  }
  write_line_locked(rec + "]}");
}

}  // namespace kern::capture
