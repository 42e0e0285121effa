// What the simulated driver reads from a kernel image handed to
// cuModuleLoadData: a fatbin container (or a bare ELF cubin), its SASS for
// the simulated GPU's architecture, and per entry symbol the parameter
// records of `.nv.info.<symbol>` (EIATTR_KPARAM_INFO: ordinal, offset, size,
// as test/gpu/check_kernel_abi.py reads them) and the static shared memory
// size (the size of the `.nv.shared.<symbol>` section).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kern::sim {

/// One parameter's place in the launch parameter block (bytes).
struct CubinParam {
  uint32_t offset = 0;
  uint32_t size = 0;
};

/// One `STO_CUDA_ENTRY` function of a cubin.
struct CubinEntry {
  std::string name;
  std::vector<CubinParam> params;  ///< ordinal order
  uint32_t param_block_bytes = 0;   ///< EIATTR_CBANK_PARAM_SIZE (0 if absent)
  uint32_t static_shared_bytes = 0; ///< size of .nv.shared.<name> (0 if absent)
  uint32_t num_regs = 0;            ///< registers per thread: EIATTR_REGCOUNT of .nv.info (by symbol index)
};

/// The entries of the image's cubin for `sm_arch`.
struct CubinImage {
  int arch = 0;  ///< SASS architecture of the chosen cubin (e.g. 90)
  std::vector<CubinEntry> entries;
};

/// Parses the image at `data` (a fatbin, magic 0xBA55ED50, or an ELF cubin;
/// the size comes from the headers, as cuModuleLoadData gets no size) and
/// picks the uncompressed SASS for `sm_arch`. Returns "" and fills `out`, or
/// the reason the image cannot be loaded (not a fatbin or cubin, truncated
/// headers, compressed, no SASS for this architecture: CUDA's
/// CUDA_ERROR_NO_BINARY_FOR_GPU; the simulated GPU runs no PTX).
std::string parse_kernel_image(const void* data, int sm_arch, CubinImage& out);

/// Parses one ELF cubin of `size` bytes (same rules).
std::string parse_cubin(const uint8_t* elf, size_t size, CubinImage& out);

}  // namespace kern::sim
