// What the capture library records (docs/mining.md "The capture format"):
// the allocation table, module images, functions and their parameter
// layouts, and one JSON line per event in DIR/launches.jsonl. The hooks
// (capture_hooks.cpp) call it around each real driver call; it calls the
// driver back only through the `DriverCalls` it is given.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kern::capture {

/// Driver entry points the recorder itself calls (resolved through the real
/// cuGetProcAddress): parameter layouts and, for --snapshot-weights, reading
/// device memory back. Any may be null (then that part is skipped and said so).
struct DriverCalls {
  CUresult (*func_get_param_info)(CUfunction, size_t, size_t*, size_t*) = nullptr;  // 12040
  CUresult (*memcpy_dtoh_async)(void*, CUdeviceptr, size_t, CUstream) = nullptr;   // _v2, 3020
  CUresult (*stream_synchronize)(CUstream) = nullptr;                               // 2000
  CUresult (*ctx_synchronize)() = nullptr;                                          // 2000
};

/// One launch as the hooks saw it, before the driver got it.
struct LaunchView {
  const char* via = "";  ///< "cuLaunchKernel" or "cuLaunchKernelEx"
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  void** params = nullptr;  ///< kernelParams
  void** extra = nullptr;   ///< extra (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END)
  const CUlaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
  /// The library call this launch is made inside (e.g. "cublasLtMatmul"),
  /// null for the program's own launches: a library's internal kernels.
  const char* in_library = nullptr;
};

/// One cublasLtMatmul call as the hooks saw it (cublasLt.h: D = alpha
/// op(A) op(B) + beta C, column-major). Operands are device addresses,
/// layouts and the descriptor the opaque handles the program created.
struct BlasMatmulView {
  const void* desc = nullptr;
  const void* alpha = nullptr;  ///< host pointer to the scale type (CUBLASLT_POINTER_MODE_HOST)
  const void* beta = nullptr;
  uint64_t operand[4] = {};          ///< A, B, C, D
  const void* layout[4] = {};        ///< Adesc, Bdesc, Cdesc, Ddesc
  CUstream stream = nullptr;
};

/// The process-wide recorder. Every method is thread-safe (one lock) and a
/// no-op when KERN_CAPTURE_DIR is unset. Output is opened at the first
/// event: DIR/launches.jsonl, or DIR/pid<N>/ when another process of the
/// same capture already claimed DIR.
class Recorder {
 public:
  static Recorder& get();

  bool enabled() const { return !dir_.empty(); }
  void set_driver_calls(const DriverCalls& calls);

  /// A module or library loaded from `image` (returned handle `handle`).
  void on_module(const void* handle, const void* image, const char* via);
  /// A module or library loaded from the file at `path` (cuModuleLoad,
  /// cuLibraryLoadFromFile): the file's bytes are the image.
  void on_module_file(const void* handle, const char* path, const char* via);
  /// `function` is `symbol` of the module/library `owner` (a CUmodule,
  /// CUlibrary or CUkernel handle recorded before).
  void on_function(const void* function, const void* owner, const char* symbol);
  /// `bytes` of device (`host` false) or pinned host memory at `base`.
  void on_alloc(uint64_t base, uint64_t bytes, bool host, const char* via);
  void on_free(uint64_t base, const char* via);
  /// A host-to-device copy of `bytes` to `dst`.
  void on_htod(uint64_t dst, uint64_t bytes, CUstream stream, const char* via);
  /// A device-to-host copy of `bytes` from `src` (what the host reads back).
  void on_dtoh(uint64_t src, uint64_t bytes, CUstream stream, const char* via);
  /// Any other write to device memory by a copy or memset (for the snapshot).
  void on_device_write(uint64_t dst, uint64_t bytes);
  void on_capture_begin(CUstream stream);
  void on_capture_end(CUstream stream);
  void on_graph_launch(CUstream stream);
  /// Called before the real launch (snapshots the allocations it reads
  /// first) and after it with the driver's result.
  void before_launch(const LaunchView& launch);
  void after_launch(const LaunchView& launch, CUresult result);
  /// cublasLt's handles, remembered so a matmul record can give its
  /// operands' element type, rows, columns and leading dimension
  /// (cublasLtMatrixLayoutCreate), the compute and scale types
  /// (cublasLtMatmulDescCreate) and the descriptor's attributes
  /// (cublasLtMatmulDescSetAttribute: transposes by name, others by id).
  void on_blas_layout(const void* layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
  void on_blas_desc(const void* desc, int compute_type, int scale_type);
  void on_blas_desc_attribute(const void* desc, int attribute, const void* buf, size_t size);
  /// Before a cublasLtMatmul: the allocations its operands point into are
  /// snapshotted at their first read, as a launch's are (--snapshot-weights).
  void before_blas_matmul(const BlasMatmulView& m);
  /// A `library_call` record for a cublasLtMatmul that returned `status`.
  void on_blas_matmul(const BlasMatmulView& m, int status);
  /// At exit: verifies pending snapshots, writes the closing record.
  void finish();

 private:
  Recorder();
  struct Alloc {
    uint64_t id = 0, base = 0, bytes = 0;
    bool host = false;
    int snapshot = 0;  ///< 0 none, 1 taken (file written, unverified), 2 discarded (written after)
    std::string snapshot_sha256;
  };
  struct Function {
    std::string symbol;
    int64_t module = -1;
    bool layout_known = false;
    std::string layout_error;
    std::vector<std::pair<size_t, size_t>> layout;  ///< (offset, size) per parameter
  };
  bool open_locked();
  void write_line_locked(const std::string& line);
  const Alloc* find_locked(uint64_t address) const;
  Function& function_locked(CUfunction f);
  std::string pointer_json_locked(uint64_t value) const;
  std::string candidates_json_locked(const uint8_t* bytes, size_t size) const;
  void snapshot_locked(Alloc& a, CUstream stream);
  /// Waits for the device work that may still write memory: the whole
  /// context where the driver has cuCtxSynchronize, else `stream`.
  bool synchronize_locked(CUstream stream);
  void verify_snapshot_locked(Alloc& a, const char* when);

  std::mutex mu_;
  std::string dir_, out_dir_;
  bool snapshot_weights_ = false;
  int fd_ = -1;
  bool open_failed_ = false;
  DriverCalls calls_;
  std::map<uint64_t, Alloc> allocs_;  ///< live, by base
  uint64_t next_alloc_ = 0, next_module_ = 0, launches_ = 0, graph_launches_ = 0, captured_launches_ = 0;
  std::map<const void*, int64_t> modules_;  ///< CUmodule / CUlibrary / CUkernel -> module id
  std::map<const void*, Function> functions_;
  std::map<const void*, int> capturing_;  ///< streams inside cuStreamBeginCapture..End
  struct BlasLayout {
    int type = -1;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0;
  };
  struct BlasDesc {
    int compute_type = -1, scale_type = -1;
    int transa = 0, transb = 0;
    std::map<int, std::string> other;  ///< attribute id -> value bytes (hex)
  };
  std::map<const void*, BlasLayout> blas_layouts_;
  std::map<const void*, BlasDesc> blas_descs_;
  uint64_t library_calls_ = 0;
};

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t monotonic_ns();

}  // namespace kern::capture
