// Kernel parameter ABI checks for the cuda device (SPEC §6): the layout a
// step's declared params must have in the cuLaunchKernel parameter block
// (each value aligned to its own size: i32/u32/f32 4 B, i64 and pointers
// 8 B, u8 1 B) compared with what cuFuncGetParamInfo reports for the loaded
// function; and instance selection when several loaded modules define the
// same symbol (Triton specialisations): the one whose layout matches wins;
// and the reading and sha256 check of the kernel files themselves.
//
// Pure functions over plain data, so they are unit-tested without a GPU
// against fabricated cuFuncGetParamInfo results.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "common/result.h"

namespace kern::load::cuda {

/// One parameter's place in the parameter block (bytes), as
/// cuFuncGetParamInfo(func, index, &offset, &size) reports it.
struct ParamSlot {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const ParamSlot&) const = default;
};

/// The layout `params` must have: sizes from param_size_bytes (common/dtype.h),
/// each offset rounded up to a multiple of its size (C struct rules).
std::vector<ParamSlot> declared_param_layout(std::span<const ParamType> params);

/// OK when `actual` (one slot per kernel param, index order) equals the
/// declared layout. Errors (kKernel), prefixed with `where` (e.g.
/// "steps[3] kern_rope_bf16 in rope.fatbin"): a count mismatch ("the kernel
/// has 10 params, the step declares 11") or the first differing param
/// ("param 10 (u8): kernel has 4 B at offset 60, declared 1 B at offset 60").
Status check_param_layout(std::string_view where, std::span<const ParamType> declared,
                          std::span<const ParamSlot> actual);

/// One loaded definition of a symbol: where it lives and its layout.
struct Instance {
  std::string module;             ///< kernel file name, for messages
  std::vector<ParamSlot> layout;  ///< from cuFuncGetParamInfo
};

/// Index of the single instance whose layout matches `declared`. Errors
/// (kKernel): no instance ("symbol not found in any kernel file"), none
/// matching (each instance's mismatch listed), or several matching
/// ("ambiguous: pin the step to one file with `cubin`").
Result<size_t> select_instance(std::string_view symbol, std::span<const ParamType> declared,
                               std::span<const Instance> instances);

/// OK when the sha256 of `bytes` (a kernel file's contents) equals every
/// 32-byte digest in `pins` (none: unpinned, always OK). Error (kKernel):
/// "<path>: sha256 mismatch: expected <hex>, actual <hex>" (SPEC §6).
Status check_kernel_file_sha256(const std::string& path, std::span<const uint8_t> bytes,
                                std::span<const uint8_t* const> pins);

/// The largest kernel file (.cubin / .fatbin) the cuda device reads, in bytes.
inline constexpr uint64_t kMaxKernelFileBytes = uint64_t{256} << 20;

/// Reads the kernel file at `path` whole, through common's read_file: opened
/// O_NONBLOCK and fstat'ed before anything is read, so a FIFO or a device
/// under the kernels dir (or pinned by a plan) is refused at once instead of
/// blocking the load, and a file over kMaxKernelFileBytes is refused unread.
/// Errors (kKernel): read_file's message (naming the path and the reason)
/// plus where the fatbins come from (--kernels DIR).
Result<std::string> read_kernel_file(const std::string& path);

}  // namespace kern::load::cuda
