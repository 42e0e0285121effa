// Parameter layout checks, instance selection and kernel file reading (cuda_abi.h).
#include "kern-load/cuda/cuda_abi.h"

#include <algorithm>

#include "common/file_util.h"
#include "common/sha256.h"

namespace kern::load::cuda {

std::vector<ParamSlot> declared_param_layout(std::span<const ParamType> params) {
  std::vector<ParamSlot> out;
  out.reserve(params.size());
  uint64_t offset = 0;
  for (const ParamType& p : params) {
    const uint64_t size = param_size_bytes(p);
    offset = (offset + size - 1) / size * size;
    out.push_back(ParamSlot{offset, size});
    offset += size;
  }
  return out;
}

Status check_param_layout(std::string_view where, std::span<const ParamType> declared,
                          std::span<const ParamSlot> actual) {
  const std::string at(where);
  if (declared.size() != actual.size())
    return make_error(ErrorKind::kKernel, at + ": the kernel has " + std::to_string(actual.size()) +
                                              " params, the step declares " + std::to_string(declared.size()));
  const std::vector<ParamSlot> want = declared_param_layout(declared);
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == actual[i]) continue;
    return make_error(ErrorKind::kKernel,
                      at + ": param " + std::to_string(i) + " (" + param_type_name(declared[i]) + "): kernel has " +
                          std::to_string(actual[i].size) + " B at offset " + std::to_string(actual[i].offset) +
                          ", declared " + std::to_string(want[i].size) + " B at offset " +
                          std::to_string(want[i].offset));
  }
  return Status::ok_status();
}

Result<size_t> select_instance(std::string_view symbol, std::span<const ParamType> declared,
                               std::span<const Instance> instances) {
  const std::string sym(symbol);
  if (instances.empty()) return make_error(ErrorKind::kKernel, sym + ": symbol not found in any kernel file");
  std::vector<size_t> matching;
  std::string why;
  for (size_t i = 0; i < instances.size(); ++i) {
    const Status st = check_param_layout(sym + " in " + instances[i].module, declared, instances[i].layout);
    if (st.ok()) matching.push_back(i);
    else why += "; " + st.error().message;
  }
  if (matching.size() == 1) return matching[0];
  if (matching.empty())
    return make_error(ErrorKind::kKernel, sym + ": no instance matches the declared params" + why);
  std::string files;
  for (size_t i : matching) files += (files.empty() ? "" : ", ") + instances[i].module;
  return make_error(ErrorKind::kKernel, sym + ": ambiguous: " + std::to_string(matching.size()) +
                                            " instances match the declared params (" + files +
                                            "); pin the step to one file with `cubin`");
}

Result<std::string> read_kernel_file(const std::string& path) {
  auto bytes = read_file(path, kMaxKernelFileBytes);
  if (!bytes.ok())
    return make_error(ErrorKind::kKernel, bytes.error().message + " (pass the directory of the built fatbins with "
                                                                  "--kernels DIR, e.g. <build>/kernels)");
  return bytes;
}

Status check_kernel_file_sha256(const std::string& path, std::span<const uint8_t> bytes,
                                std::span<const uint8_t* const> pins) {
  if (pins.empty()) return Status::ok_status();
  KERN_ASSIGN_OR_RETURN(auto digest, sha256_bytes(bytes), path);
  for (const uint8_t* pin : pins) {
    if (std::equal(digest.begin(), digest.end(), pin)) continue;
    return make_error(ErrorKind::kKernel, path + ": sha256 mismatch: expected " +
                                              hex_encode(std::span<const uint8_t>(pin, 32)) + ", actual " +
                                              hex_encode(digest));
  }
  return Status::ok_status();
}

}  // namespace kern::load::cuda
