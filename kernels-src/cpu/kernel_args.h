// Argument validation shared by the cpu reference kernels (private to
// kernels-src/cpu). Every kernel first checks the parameter count, each
// scalar param (sizes must be >= 0, strides large enough, floats finite), the
// pointers it will dereference and the launch geometry its CUDA twin relies
// on; only then does it touch memory. Errors name the kernel symbol and the
// param ("kern_rmsnorm_bf16: param 3 (rows) is -1; must be >= 0").
//
// Buffer extents are not checked here: each kernel declares, from its
// scalar params, the bytes it touches through each pointer (its CpuExtentFn,
// built with the saturating helpers below) and the cpu device checks them
// against the buffers before the launch; accesses chosen by data (a slot, a
// page, a position) are checked by the kernel with check_data_extent.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <string>

#include "kernels-src/cpu/cpu_kernel.h"

namespace kern::cpu::detail {

/// An error about a launch's parameters or geometry (the plan wired it).
inline Error launch_error(const char* kernel, const std::string& message) {
  return make_error(ErrorKind::kManifest, std::string(kernel) + ": " + message);
}

/// An error about the contents of an input buffer (the caller wrote it).
inline Error data_error(const char* kernel, const std::string& message) {
  return make_error(ErrorKind::kUsage, std::string(kernel) + ": " + message);
}

/// Checks that the launch carries exactly `expected` params and that none of
/// the kernelParams slots is null.
inline Status check_num_args(const CpuLaunch& l, const char* kernel, size_t expected) {
  if (l.num_args != expected) {
    return launch_error(kernel, "got " + std::to_string(l.num_args) + " params; the abi has " +
                                    std::to_string(expected));
  }
  if (expected > 0 && l.args == nullptr) return launch_error(kernel, "kernelParams is null");
  for (size_t i = 0; i < expected; ++i) {
    if (l.args[i] == nullptr) {
      return launch_error(kernel, "kernelParams[" + std::to_string(i) + "] is null");
    }
  }
  return Status::ok_status();
}

/// Reads integer param `index` named `name`, stored as `T` (the ABI's i32 or
/// i64), into `out`; fails when it is below `min`.
template <typename T>
inline Status read_int(const CpuLaunch& l, const char* kernel, size_t index, const char* name, T min,
                       int64_t& out) {
  const T v = l.arg<T>(index);
  if (v < min) {
    return launch_error(kernel, "param " + std::to_string(index) + " (" + name + ") is " +
                                    std::to_string(v) + "; must be >= " + std::to_string(min));
  }
  out = v;
  return Status::ok_status();
}

/// Reads i32 param `index` named `name` into `out`; fails when it is below `min`.
inline Status read_i32(const CpuLaunch& l, const char* kernel, size_t index, const char* name,
                       int32_t min, int64_t& out) {
  return read_int<int32_t>(l, kernel, index, name, min, out);
}

/// Reads i64 param `index` named `name` into `out`; fails when it is below `min`.
inline Status read_i64(const CpuLaunch& l, const char* kernel, size_t index, const char* name,
                       int64_t min, int64_t& out) {
  return read_int<int64_t>(l, kernel, index, name, min, out);
}

/// Reads f32 param `index` named `name` into `out`; fails when it is NaN or
/// infinite, or negative while `non_negative` is set.
inline Status read_f32(const CpuLaunch& l, const char* kernel, size_t index, const char* name,
                       bool non_negative, float& out) {
  const float v = l.arg<float>(index);
  if (!std::isfinite(v) || (non_negative && v < 0.0f)) {
    return launch_error(kernel, "param " + std::to_string(index) + " (" + name + ") is " +
                                    std::to_string(v) + "; must be finite" +
                                    (non_negative ? " and >= 0" : ""));
  }
  out = v;
  return Status::ok_status();
}

/// Reads pointer param `index` named `name` into `out`; fails when it is null
/// although the launch will dereference it (`used`).
template <typename T>
Status read_ptr(const CpuLaunch& l, const char* kernel, size_t index, const char* name, bool used,
                T*& out) {
  out = l.arg<T*>(index);
  if (used && out == nullptr) {
    return launch_error(kernel, "param " + std::to_string(index) + " (" + name +
                                    ") is a null pointer");
  }
  return Status::ok_status();
}

/// Fails when `value` (param `index` named `name`) is below `min`, for
/// consistency rules between params (e.g. a stride smaller than a row).
inline Status check_at_least(const char* kernel, size_t index, const char* name, int64_t value,
                             int64_t min, const char* why) {
  if (value < min) {
    return launch_error(kernel, "param " + std::to_string(index) + " (" + name + ") is " +
                                    std::to_string(value) + "; must be >= " + std::to_string(min) +
                                    " (" + why + ")");
  }
  return Status::ok_status();
}

/// Fails when grid axis `axis` (0 = x) is smaller than `needed`: the CUDA
/// twin maps one block to one unit of work on that axis, so a smaller grid
/// would leave part of the output unwritten.
inline Status check_grid_covers(const CpuLaunch& l, const char* kernel, int axis, int64_t needed,
                                const char* what) {
  if (static_cast<int64_t>(l.grid[axis]) < needed) {
    return launch_error(kernel, std::string("grid.") + "xyz"[axis] + " is " +
                                    std::to_string(l.grid[axis]) + "; must be >= " +
                                    std::to_string(needed) + " (" + what + ")");
  }
  return Status::ok_status();
}

/// Fails when grid axis `axis` differs from `count` (param `index` named
/// `name`): split / chunk counts index private scratch, so the grid and the
/// param must agree exactly.
inline Status check_grid_equals(const CpuLaunch& l, const char* kernel, int axis, size_t index,
                                const char* name, int64_t count) {
  if (static_cast<int64_t>(l.grid[axis]) != count) {
    return launch_error(kernel, std::string("grid.") + "xyz"[axis] + " is " +
                                    std::to_string(l.grid[axis]) + "; must equal param " +
                                    std::to_string(index) + " (" + name + ") = " +
                                    std::to_string(count));
  }
  return Status::ok_status();
}

/// a * b, saturating at UINT64_MAX (an extent that large is always rejected).
constexpr uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}

/// a + b, saturating at UINT64_MAX.
constexpr uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}

/// The product of `factors`, saturating (extent arithmetic).
constexpr uint64_t sat_product(std::initializer_list<uint64_t> factors) {
  uint64_t r = 1;
  for (uint64_t f : factors) r = sat_mul(r, f);
  return r;
}

/// Signed scalar param `index` (i32) as an extent factor: a negative value
/// counts as 0 (the kernel rejects it before touching memory).
inline uint64_t size_i32(const CpuLaunch& l, size_t index) {
  const int32_t v = l.arg<int32_t>(index);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

/// Signed scalar param `index` (i64) as an extent factor; negative counts as 0.
inline uint64_t size_i64(const CpuLaunch& l, size_t index) {
  const int64_t v = l.arg<int64_t>(index);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

/// Bytes spanned by `rows` rows of `row` elements, consecutive rows `stride`
/// elements apart, `elem` bytes each: ((rows - 1) * stride + row) * elem;
/// 0 when rows or row is 0. Saturating.
constexpr uint64_t strided_bytes(uint64_t rows, uint64_t stride, uint64_t row, uint64_t elem) {
  if (rows == 0 || row == 0) return 0;
  return sat_mul(sat_add(sat_mul(rows - 1, stride), row), elem);
}

/// Fails when an access chosen by data (a slot, page or position read from
/// an input buffer) would touch `needed` bytes through pointer param `index`
/// (named `name`) while its buffer holds fewer from the pointer
/// (CpuLaunch::avail). Passes when the launch carries no avail (a direct
/// kernel test). `what` names the data ("slot_mapping[3] = 900").
inline Status check_data_extent(const CpuLaunch& l, const char* kernel, size_t index,
                                const char* name, uint64_t needed, const std::string& what) {
  if (l.avail == nullptr || needed <= l.avail[index]) return Status::ok_status();
  return data_error(kernel, "param " + std::to_string(index) + " (" + name + "): " + what +
                                " needs " + std::to_string(needed) + " B from the pointer; its buffer holds " +
                                std::to_string(l.avail[index]) + " B from there");
}

/// Runs kernel F and turns an escaping exception (std::bad_alloc from a
/// kernel's row buffers, the only kind they can throw) into an error Status,
/// so that no exception crosses the kern-load API (style.md §3). The
/// registry hands out guarded<F>, never F itself.
template <CpuKernelFn F>
Status guarded(const CpuLaunch& l) noexcept {
  try {
    return F(l);
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kDevice,
                      std::string("cpu reference kernel failed: ") + e.what());
  }
}

}  // namespace kern::cpu::detail
