// Classifying a file by its first bytes for "not a plan" messages (file_kind.h).
#include "common/file_kind.h"

namespace kern {

namespace {

bool is_blank(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// `path` with a final ".json" replaced by ".kplan" (else ".kplan" appended).
std::string plan_name_for(std::string_view path) {
  std::string name(path);
  constexpr std::string_view kJsonSuffix = ".json";
  if (name.size() > kJsonSuffix.size() && name.ends_with(kJsonSuffix)) name.resize(name.size() - kJsonSuffix.size());
  return name + ".kplan";
}

}  // namespace

FileKind sniff_file_kind(std::span<const uint8_t> bytes) {
  if (bytes.size() >= 9 && bytes[8] == '{') {
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = header_len << 8 | bytes[static_cast<size_t>(i)];
    // safetensors: the JSON header follows its length and fits in the file.
    if (header_len >= 2 && header_len <= bytes.size() - 8) return FileKind::kSafetensors;
  }
  size_t i = 0;
  if (bytes.size() >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF) i = 3;  // UTF-8 BOM
  while (i < bytes.size() && is_blank(bytes[i])) ++i;
  if (i < bytes.size() && (bytes[i] == '{' || bytes[i] == '[')) return FileKind::kJson;
  return FileKind::kOther;
}

std::string not_a_plan_next_step(FileKind kind, std::string_view path) {
  switch (kind) {
    case FileKind::kJson:
      return "the file is JSON (a manifest?): compile it into a plan first: kern-verify " + std::string(path) +
             " -o " + plan_name_for(path);
    case FileKind::kSafetensors:
      return "the file is a safetensors file (weights): give the plan (kern-verify -o) first and this file with "
             "--weights";
    case FileKind::kOther:
      break;
  }
  return "";
}

}  // namespace kern
