// A plan checked against a device before any launch (device_precheck.h).
#include "kern-load/device_precheck.h"

#include <cstring>
#include <set>

#include "common/extern_ops.h"
#include "kern-load/plan_expr.h"

namespace kern::load {

namespace {

template <typename T>
T read_le(std::span<const uint8_t> b, size_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

std::string image_name(const KernelImage& i) {
  return (i.ptx ? "compute_" : "sm_") + std::to_string(i.arch);
}

std::string cc(int arch) { return std::to_string(arch / 10) + "." + std::to_string(arch % 10); }

/// "12.4" for a cuDriverGetVersion value (1000 x major + 10 x minor).
std::string driver(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

Result<std::vector<KernelImage>> kernel_file_images(const std::string& path, std::span<const uint8_t> bytes) {
  std::vector<KernelImage> out;
  if (bytes.size() >= 4 && read_le<uint32_t>(bytes, 0) == 0xBA55ED50u) {
    if (bytes.size() < 16) return make_error(ErrorKind::kKernel, path + ": truncated fatbin header");
    const uint64_t header = read_le<uint16_t>(bytes, 6);
    const uint64_t body = read_le<uint64_t>(bytes, 8);
    if (header > bytes.size() || body > bytes.size() - header)
      return make_error(ErrorKind::kKernel, path + ": fatbin body runs past the file");
    for (uint64_t pos = header, end = header + body; pos < end;) {
      if (end - pos < 0x40) return make_error(ErrorKind::kKernel, path + ": truncated fatbin entry header");
      const uint16_t kind = read_le<uint16_t>(bytes, pos);
      const uint64_t ehdr = read_le<uint32_t>(bytes, pos + 4);
      const uint64_t payload = read_le<uint64_t>(bytes, pos + 8);
      const uint32_t arch = read_le<uint32_t>(bytes, pos + 0x1C);
      if (ehdr < 0x40 || ehdr > end - pos || payload > end - pos - ehdr)
        return make_error(ErrorKind::kKernel, path + ": fatbin entry runs past the container");
      if (kind == 1 || kind == 2) out.push_back(KernelImage{kind == 1, static_cast<int>(arch)});
      pos += ehdr + payload;
    }
    return out;
  }
  if (bytes.size() >= 0x40 && std::memcmp(bytes.data(), "\x7f" "ELF", 4) == 0 && bytes[4] == 2) {
    const uint32_t flags = read_le<uint32_t>(bytes, 0x30);
    // CUDA 12.9+ cubins (ELF ABI version >= 8) keep the SM in bits 8..15; older ones in bits 0..7.
    const int arch = (flags >> 8) & 0xFF ? static_cast<int>((flags >> 8) & 0xFF) : static_cast<int>(flags & 0xFF);
    out.push_back(KernelImage{false, arch});
    return out;
  }
  return make_error(ErrorKind::kKernel, path + ": neither a fatbin nor an ELF cubin");
}

bool images_run_on(std::span<const KernelImage> images, int cc_major, int cc_minor) {
  const int device = cc_major * 10 + cc_minor;
  for (const KernelImage& i : images) {
    if (i.ptx && i.arch <= device) return true;
    if (!i.ptx && i.arch / 10 == cc_major && i.arch % 10 <= cc_minor) return true;
  }
  return false;
}

std::vector<std::string> precheck_plan(const plan::Plan& p, std::span<const KernelFileImages> files,
                                       const DeviceLimits& d) {
  std::vector<std::string> out;
  if (d.driver_version < kMinDriverVersion)
    out.push_back("plan needs CUDA driver " + driver(kMinDriverVersion) + " or newer, device has " +
                  driver(d.driver_version));
  for (const KernelFileImages& f : files) {
    if (images_run_on(f.images, d.cc_major, d.cc_minor)) continue;
    std::string list;
    std::set<int> sass_majors;
    int lowest = 0;
    bool has_ptx = false;
    for (const KernelImage& i : f.images) {
      list += (list.empty() ? "" : ", ") + image_name(i);
      if (lowest == 0 || i.arch < lowest) lowest = i.arch;
      if (i.ptx) has_ptx = true;
      else sass_majors.insert(i.arch / 10);
    }
    std::string majors;
    for (int m : sass_majors) majors += (majors.empty() ? "" : " or ") + std::to_string(m) + ".x";
    // SASS runs only on its own major (sm_90-only fatbins: "9.x", never a
    // 10.0 device); only PTX reaches every newer device ("8.0+").
    const std::string need = lowest == 0 ? std::string("?") : has_ptx ? cc(lowest) + "+" : majors;
    out.push_back(f.file + ": plan needs compute capability " + need + " (" +
                  (list.empty() ? "no code images" : list) + "), device has " + std::to_string(d.cc_major) + "." +
                  std::to_string(d.cc_minor));
  }
  static const char* kAxis[3] = {"x", "y", "z"};
  for (flatbuffers::uoffset_t i = 0; i < p.steps()->size(); ++i) {
    const plan::Step& s = *p.steps()->Get(i);
    if (is_extern_symbol(s.symbol()->string_view())) continue;
    const std::string where = "steps[" + std::to_string(i) + "] " + s.symbol()->str();
    const uint64_t block[3] = {s.block_x(), s.block_y(), s.block_z()};
    const uint64_t threads = block[0] * block[1] * block[2];
    if (threads > d.max_threads_per_block)
      out.push_back(where + ": plan needs " + std::to_string(threads) + " threads per block, device has " +
                    std::to_string(d.max_threads_per_block));
    for (int a = 0; a < 3; ++a)
      if (block[a] > d.max_block[a])
        out.push_back(where + ": plan needs block " + kAxis[a] + " " + std::to_string(block[a]) + ", device has " +
                      std::to_string(d.max_block[a]));
    const plan::Expr* grid[3] = {s.grid_x(), s.grid_y(), s.grid_z()};
    for (int a = 0; a < 3; ++a) {
      const auto g = evaluate_chain_at_max(*grid[a], p);
      if (g && *g > d.max_grid[a])
        out.push_back(where + ": plan needs grid " + kAxis[a] + " " + std::to_string(*g) + ", device has " +
                      std::to_string(d.max_grid[a]));
    }
    if (s.shared_mem() != nullptr) {
      const auto smem = evaluate_chain_at_max(*s.shared_mem(), p);
      if (smem && *smem > d.max_shared_mem_per_block)
        out.push_back(where + ": plan needs " + std::to_string(*smem) + " B of shared memory per block, device has " +
                      std::to_string(d.max_shared_mem_per_block) + " B");
    }
  }
  return out;
}

std::vector<std::string> precheck_shared_memory(const plan::Plan& p, std::span<const uint64_t> static_bytes,
                                                uint64_t optin_bytes) {
  std::vector<std::string> out;
  for (flatbuffers::uoffset_t i = 0; i < p.steps()->size(); ++i) {
    const plan::Step& s = *p.steps()->Get(i);
    if (is_extern_symbol(s.symbol()->string_view()) || s.shared_mem() == nullptr) continue;
    const auto smem = evaluate_chain_at_max(*s.shared_mem(), p);
    const uint64_t fixed = i < static_bytes.size() ? static_bytes[i] : 0;
    const uint64_t room = fixed < optin_bytes ? optin_bytes - fixed : 0;
    if (smem && *smem > room)
      out.push_back("steps[" + std::to_string(i) + "] " + s.symbol()->str() + ": plan needs " + std::to_string(*smem) +
                    " B of dynamic shared memory per block, device has " + std::to_string(optin_bytes) +
                    " B less the kernel's " + std::to_string(fixed) + " B of static shared memory = " +
                    std::to_string(room) + " B");
  }
  return out;
}

Status check_plan_fits(const plan::Plan& p, std::span<const KernelFileImages> files, const DeviceLimits& device,
                       const std::string& device_name) {
  const std::vector<std::string> lines = precheck_plan(p, files, device);
  if (lines.empty()) return Status::ok_status();
  std::string msg = "the plan does not fit " + device_name + ":";
  for (const std::string& l : lines) msg += "\n  " + l;
  return make_error(ErrorKind::kDevice, msg);
}

}  // namespace kern::load
