// The precheck of a plan against a device before any launch (SPEC §6): the
// kernel files' architectures against the compute capability, each step's
// block size, grid and dynamic shared memory (at the symbols' maxima)
// against the device limits, and the driver version. Every mismatch is one
// line "<subject>: plan needs X, device has Y"; all are reported together.
//
// Pure functions over plain data: the cuda device fills DeviceLimits from
// cuDeviceGetAttribute / cuDriverGetVersion; tests fabricate them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/plan_format.h"
#include "common/result.h"

namespace kern::load {

/// The device properties the precheck compares with.
struct DeviceLimits {
  int cc_major = 0;        ///< CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  int cc_minor = 0;        ///< CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
  int driver_version = 0;  ///< cuDriverGetVersion, e.g. 13000 for 13.0
  uint64_t max_threads_per_block = 0;          ///< CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  uint64_t max_block[3] = {0, 0, 0};           ///< CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X/Y/Z
  uint64_t max_grid[3] = {0, 0, 0};            ///< CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X/Y/Z
  uint64_t max_shared_mem_per_block = 0;       ///< bytes, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
};

/// The oldest driver kern runs on: 12.4 (cuFuncGetParamInfo).
inline constexpr int kMinDriverVersion = 12040;

/// One code image in a kernel file: SASS for sm_<arch> or PTX for compute_<arch>
/// (arch = 10 x major + minor, e.g. 90).
struct KernelImage {
  bool ptx = false;
  int arch = 0;
  bool operator==(const KernelImage&) const = default;
};

/// The images of a kernel file: a fatbin container's entries (magic
/// 0xBA55ED50; entry kind 1 = PTX, 2 = ELF; arch at entry offset 0x1C), or a
/// plain ELF cubin's arch (e_flags, SM number in bits 8..15 for CUDA 12+
/// cubins, bits 0..7 before). Errors (kKernel) naming `path`: neither format,
/// a truncated container.
Result<std::vector<KernelImage>> kernel_file_images(const std::string& path, std::span<const uint8_t> bytes);

/// Whether compute capability major.minor can run one of `images`: SASS of
/// the same major and a minor <= the device's, or PTX of an arch <= the
/// device's (JIT).
bool images_run_on(std::span<const KernelImage> images, int cc_major, int cc_minor);

/// A kernel file the plan will load, with its images.
struct KernelFileImages {
  std::string file;  ///< name for messages
  std::vector<KernelImage> images;
};

/// Every mismatch between `p` (its non-extern steps' launch geometry at the
/// symbols' maxima) plus `files` and `device`, one line each, e.g.
/// "rope.fatbin: plan needs compute capability 8.0+ (sm_80, sm_90, compute_100), device has 7.5"
/// (with PTX: its lowest arch and up), "rope.fatbin: plan needs compute
/// capability 9.x (sm_90), device has 10.0" (SASS only: those majors),
/// "steps[2] kern_x: plan needs 2048 threads per block, device has 1024",
/// "steps[2] kern_x: plan needs 300000 B of shared memory per block, device has 232448 B",
/// "steps[2] kern_x: plan needs grid y 70000, device has 65535",
/// "plan needs CUDA driver 12.4 or newer, device has 12.2". Empty: fits.
std::vector<std::string> precheck_plan(const plan::Plan& p, std::span<const KernelFileImages> files,
                                       const DeviceLimits& device);

/// The check that needs the loaded kernels: each non-extern step's dynamic
/// shared memory (at the symbols' maxima) against what its function may
/// opt into, `optin_bytes` (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
/// less the function's static shared memory `static_bytes[i]`
/// (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES; cuFuncSetAttribute refuses a larger
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cuda.h). One line per
/// step that does not fit, e.g. "steps[2] kern_x: plan needs 200000 B of
/// dynamic shared memory per block, device has 232448 B less the kernel's
/// 40960 B of static shared memory = 191488 B". `static_bytes` has one entry
/// per step (missing entries count as 0). Empty: fits.
std::vector<std::string> precheck_shared_memory(const plan::Plan& p, std::span<const uint64_t> static_bytes,
                                                uint64_t optin_bytes);

/// precheck_plan as a Status: OK when it fits, else one error (kDevice)
/// "the plan does not fit <device_name>:\n  <line>\n  <line>...".
Status check_plan_fits(const plan::Plan& p, std::span<const KernelFileImages> files, const DeviceLimits& device,
                       const std::string& device_name);

}  // namespace kern::load
