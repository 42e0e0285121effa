// Fatbin and cubin parsing for the simulated driver's module load (cubin_image.h).
#include "test/sim/driver/cubin_image.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace kern::sim {

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr uint16_t kKindElf = 2;
constexpr uint64_t kFlagCompressed = 0x2000;
constexpr uint8_t kStoCudaEntry = 0x10;
constexpr uint8_t kEifmtSval = 0x04;
constexpr uint8_t kEiattrKparamInfo = 0x17;
constexpr uint8_t kEiattrCbankParamSize = 0x19;
constexpr uint8_t kEiattrRegcount = 0x2F;

template <typename T>
T rd(const uint8_t* p, size_t at) {
  T v{};
  std::memcpy(&v, p + at, sizeof(T));
  return v;
}

struct Section {
  uint32_t name = 0, type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0;
  uint64_t entsize = 0;
};

}  // namespace

std::string parse_cubin(const uint8_t* elf, size_t size, CubinImage& out) {
  if (size < 0x40 || std::memcmp(elf, "\x7f" "ELF", 4) != 0 || elf[4] != 2) return "not a 64-bit ELF cubin";
  const uint32_t e_flags = rd<uint32_t>(elf, 0x30);
  const uint64_t shoff = rd<uint64_t>(elf, 0x28);
  const uint16_t shentsize = rd<uint16_t>(elf, 0x3A), shnum = rd<uint16_t>(elf, 0x3C), shstrndx = rd<uint16_t>(elf, 0x3E);
  if (shentsize < 64 || shoff > size || uint64_t(shnum) * shentsize > size - shoff || shstrndx >= shnum)
    return "cubin section headers run past the image";
  std::vector<Section> secs(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* h = elf + shoff + uint64_t(i) * shentsize;
    Section& s = secs[i];
    s.name = rd<uint32_t>(h, 0), s.type = rd<uint32_t>(h, 4), s.offset = rd<uint64_t>(h, 0x18);
    s.size = rd<uint64_t>(h, 0x20), s.link = rd<uint32_t>(h, 0x28), s.entsize = rd<uint64_t>(h, 0x38);
    if (s.type != 8 /* SHT_NOBITS */ && (s.offset > size || s.size > size - s.offset))
      return "cubin section " + std::to_string(i) + " runs past the image";
  }
  auto cstr = [&](const Section& table, uint32_t idx) -> std::string {
    if (idx >= table.size) return "";
    const char* b = reinterpret_cast<const char*>(elf + table.offset + idx);
    return std::string(b, strnlen(b, table.size - idx));
  };
  std::map<std::string, const Section*> named;
  for (const Section& s : secs) named[cstr(secs[shstrndx], s.name)] = &s;
  auto symtab = named.find(".symtab");
  if (symtab == named.end() || symtab->second->entsize < 24 || symtab->second->link >= shnum)
    return "cubin has no .symtab";
  const Section& sym = *symtab->second;
  const Section& strtab = secs[sym.link];
  out.arch = static_cast<int>(elf[8] >= 8 ? (e_flags >> 8) & 0xFF : e_flags & 0xFF);
  out.entries.clear();
  // .nv.info's EIATTR_REGCOUNT records: (function symbol index, registers per thread).
  std::map<uint64_t, uint32_t> regs;
  if (auto info = named.find(".nv.info"); info != named.end())
    for (uint64_t pos = info->second->offset, end = pos + info->second->size; pos + 4 <= end;) {
      const uint8_t fmt = elf[pos], attr = elf[pos + 1];
      const uint16_t value = rd<uint16_t>(elf, pos + 2);
      pos += 4;
      if (fmt != kEifmtSval) continue;
      if (pos + value > end) return ".nv.info record runs past its section";
      if (attr == kEiattrRegcount && value >= 8) regs[rd<uint32_t>(elf, pos)] = rd<uint32_t>(elf, pos + 4);
      pos += value;
    }
  for (uint64_t k = 0; k < sym.size / sym.entsize; ++k) {
    const uint8_t* e = elf + sym.offset + k * sym.entsize;
    const uint8_t info = e[4], other = e[5];
    if ((info & 0xF) != 2 || (other & kStoCudaEntry) == 0) continue;  // STT_FUNC with the CUDA entry flag
    CubinEntry entry;
    entry.name = cstr(strtab, rd<uint32_t>(e, 0));
    auto nv = named.find(".nv.info." + entry.name);
    if (nv == named.end()) return "entry " + entry.name + " has no .nv.info." + entry.name + " section";
    std::vector<std::pair<uint16_t, CubinParam>> params;
    for (uint64_t pos = nv->second->offset, end = pos + nv->second->size; pos + 4 <= end;) {
      const uint8_t fmt = elf[pos], attr = elf[pos + 1];
      const uint16_t value = rd<uint16_t>(elf, pos + 2);
      pos += 4;
      if (fmt == kEifmtSval) {
        if (pos + value > end) return ".nv.info." + entry.name + " record runs past its section";
        if (attr == kEiattrKparamInfo && value >= 12) {
          const uint16_t ordinal = rd<uint16_t>(elf, pos + 4), offset = rd<uint16_t>(elf, pos + 6);
          const uint32_t bits = rd<uint32_t>(elf, pos + 8);
          params.push_back({ordinal, CubinParam{offset, (bits >> 18) & 0x3FFF}});
        }
        pos += value;
      } else if (attr == kEiattrCbankParamSize) {
        entry.param_block_bytes = value;
      }
    }
    std::sort(params.begin(), params.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].first != i) return ".nv.info." + entry.name + ": parameter ordinals are not 0..n-1";
      entry.params.push_back(params[i].second);
    }
    auto shared = named.find(".nv.shared." + entry.name);
    if (shared != named.end()) entry.static_shared_bytes = static_cast<uint32_t>(shared->second->size);
    if (auto r = regs.find(k); r != regs.end()) entry.num_regs = r->second;
    out.entries.push_back(std::move(entry));
  }
  return "";
}

std::string parse_kernel_image(const void* data, int sm_arch, CubinImage& out) {
  if (data == nullptr) return "null image";
  const auto* b = static_cast<const uint8_t*>(data);
  if (rd<uint32_t>(b, 0) == kFatbinMagic) {
    const uint64_t header = rd<uint16_t>(b, 6), body = rd<uint64_t>(b, 8);
    if (header < 16 || body > (uint64_t(1) << 32)) return "fatbin header is malformed";
    std::string seen;
    for (uint64_t pos = header, end = header + body; pos < end;) {
      if (end - pos < 0x40) return "truncated fatbin entry header";
      const uint16_t kind = rd<uint16_t>(b, pos);
      const uint64_t ehdr = rd<uint32_t>(b, pos + 4), payload = rd<uint64_t>(b, pos + 8);
      const uint32_t arch = rd<uint32_t>(b, pos + 0x1C);
      const uint64_t flags = rd<uint64_t>(b, pos + 0x28);
      if (ehdr < 0x40 || ehdr > end - pos || payload > end - pos - ehdr) return "fatbin entry runs past the container";
      seen += (seen.empty() ? "" : ", ") + std::string(kind == kKindElf ? "sm_" : "compute_") + std::to_string(arch);
      if (kind == kKindElf && int(arch) == sm_arch) {
        if (flags & kFlagCompressed) return "the sm_" + std::to_string(arch) + " cubin is compressed";
        return parse_cubin(b + pos + ehdr, payload, out);
      }
      pos += ehdr + payload;
    }
    return "no sm_" + std::to_string(sm_arch) + " SASS in the fatbin (has " + seen + ")";
  }
  if (std::memcmp(b, "\x7f" "ELF", 4) == 0 && b[4] == 2) {
    // A bare cubin: its extent is the end of its section header table.
    const uint64_t shoff = rd<uint64_t>(b, 0x28);
    const uint64_t size = shoff + uint64_t(rd<uint16_t>(b, 0x3C)) * rd<uint16_t>(b, 0x3A);
    std::string err = parse_cubin(b, size, out);
    if (err.empty() && out.arch != sm_arch)
      return "cubin is for sm_" + std::to_string(out.arch) + ", the simulated GPU is sm_" + std::to_string(sm_arch);
    return err;
  }
  return "neither a fatbin nor an ELF cubin";
}

}  // namespace kern::sim
