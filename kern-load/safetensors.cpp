// The read-only safetensors reader (safetensors.h).
#include "kern-load/safetensors.h"

#include <algorithm>

#include "common/expr.h"
#include "common/json_depth.h"
#include "common/terminal_text.h"
#include "rapidjson/document.h"
#include "rapidjson/error/en.h"

namespace kern::load {

namespace {

/// Byte range of one tensor in the data section, for the overlap check.
struct Extent {
  uint64_t begin;
  uint64_t end;
  size_t tensor;
};

Result<SafetensorsTensor> parse_tensor(const std::string& name, const rapidjson::Value& v,
                                       std::span<const uint8_t> data_section, uint64_t* begin_out,
                                       uint64_t* end_out) {
  auto bad = [&](const std::string& what) {
    return make_error(ErrorKind::kWeight, "tensor '" + terminal_safe(name) + "': " + what);
  };
  if (!v.IsObject()) return bad("entry is not an object");
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    std::string key(it->name.GetString(), it->name.GetStringLength());
    if (key != "dtype" && key != "shape" && key != "data_offsets") return bad("unknown field '" + terminal_safe(key) + "'");
  }
  auto dtype_it = v.FindMember("dtype");
  auto shape_it = v.FindMember("shape");
  auto offsets_it = v.FindMember("data_offsets");
  if (dtype_it == v.MemberEnd() || !dtype_it->value.IsString()) return bad("missing or non-string 'dtype'");
  if (shape_it == v.MemberEnd() || !shape_it->value.IsArray()) return bad("missing or non-array 'shape'");
  if (offsets_it == v.MemberEnd() || !offsets_it->value.IsArray() || offsets_it->value.Size() != 2 ||
      !offsets_it->value[0].IsUint64() || !offsets_it->value[1].IsUint64())
    return bad("'data_offsets' must be two non-negative integers [begin, end]");

  SafetensorsTensor t;
  t.name = name;
  std::string dtype_name(dtype_it->value.GetString(), dtype_it->value.GetStringLength());
  auto dtype = parse_safetensors_dtype(dtype_name);
  if (!dtype) return bad("unsupported dtype '" + terminal_safe(dtype_name) + "'");
  t.dtype = *dtype;
  uint64_t numel = 1;
  for (const auto& d : shape_it->value.GetArray()) {
    if (!d.IsUint64()) return bad("shape has a dimension that is not a non-negative integer");
    auto n = checked_mul(numel, d.GetUint64());
    if (!n) return bad("element count overflows u64");
    numel = *n;
    t.shape.push_back(d.GetUint64());
  }
  uint64_t begin = offsets_it->value[0].GetUint64();
  uint64_t end = offsets_it->value[1].GetUint64();
  if (begin > end)
    return bad("data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end));
  if (end > data_section.size())
    return bad("data_offsets end " + std::to_string(end) + " B beyond the data section (" +
               std::to_string(data_section.size()) + " B)");
  auto expect = checked_mul(numel, dtype_size_bytes(t.dtype));
  if (!expect) return bad("byte size overflows u64");
  if (end - begin != *expect)
    return bad("data is " + std::to_string(end - begin) + " B but " + dtype_name + " x " + std::to_string(numel) +
               " elements needs " + std::to_string(*expect) + " B");
  t.data = data_section.subspan(begin, end - begin);
  *begin_out = begin;
  *end_out = end;
  return t;
}

}  // namespace

Result<Safetensors> Safetensors::open(const std::string& path) {
  KERN_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  return parse(std::move(file));
}

const SafetensorsTensor* Safetensors::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Result<Safetensors> Safetensors::parse(MappedFile file) {
  Safetensors st;
  st.file_ = std::move(file);
  const std::string& path = st.file_.path();
  std::span<const uint8_t> bytes = st.file_.bytes();
  auto bad = [&](const std::string& what) { return make_error(ErrorKind::kWeight, path + ": " + what); };
  if (bytes.size() < 8)
    return bad("not a safetensors file: " + std::to_string(bytes.size()) + " B is shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[static_cast<size_t>(i)];
  if (header_len > kSafetensorsMaxHeaderBytes)
    return bad("header length " + std::to_string(header_len) + " B exceeds the limit " +
               std::to_string(kSafetensorsMaxHeaderBytes) + " B");
  if (header_len > bytes.size() - 8)
    return bad("header length " + std::to_string(header_len) + " B exceeds the file (" +
               std::to_string(bytes.size() - 8) + " B after the length)");
  std::string header(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  std::span<const uint8_t> data_section = bytes.subspan(8 + header_len);

  if (header.find('\0') != std::string::npos) return bad("header contains a NUL byte");
  rapidjson::Document doc;
  // Parse the exact header bytes; an embedded NUL or trailing junk is an
  // error, and so is text that is not UTF-8 (the format says UTF-8 JSON).
  if (auto e = parse_json_bounded<rapidjson::kParseFullPrecisionFlag | rapidjson::kParseValidateEncodingFlag>(header,
                                                                                                              doc)) {
    if (e->too_deep)
      return bad("header nests arrays/objects deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                 std::to_string(e->offset) + "); a safetensors header is a flat object of tensors");
    return bad("header is not valid JSON at byte " + std::to_string(e->offset) + ": " + e->message);
  }
  if (!doc.IsObject()) return bad("header is not a JSON object");

  std::vector<Extent> extents;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string name(it->name.GetString(), it->name.GetStringLength());
    if (name == "__metadata__") {
      if (!it->value.IsObject()) return bad("'__metadata__' is not an object");
      for (auto m = it->value.MemberBegin(); m != it->value.MemberEnd(); ++m) {
        if (!m->value.IsString()) return bad("'__metadata__' value of '" + terminal_safe(m->name.GetString()) + "' is not a string");
        st.metadata_[std::string(m->name.GetString(), m->name.GetStringLength())] =
            std::string(m->value.GetString(), m->value.GetStringLength());
      }
      continue;
    }
    if (st.by_name_.count(name) != 0) return bad("tensor '" + terminal_safe(name) + "' is listed twice");
    uint64_t begin = 0, end = 0;
    KERN_ASSIGN_OR_RETURN(auto t, parse_tensor(name, it->value, data_section, &begin, &end), path);
    st.by_name_[name] = st.tensors_.size();
    extents.push_back({begin, end, st.tensors_.size()});
    st.tensors_.push_back(std::move(t));
  }
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Zero-size tensors occupy no bytes and cannot overlap anything; compare
  // each tensor with the furthest-reaching one before it.
  const Extent* reach = nullptr;
  for (const Extent& cur : extents) {
    if (cur.begin == cur.end) continue;
    if (reach != nullptr && cur.begin < reach->end)
      return bad("tensor '" + terminal_safe(st.tensors_[cur.tensor].name) + "' [" + std::to_string(cur.begin) + ", " +
                 std::to_string(cur.end) + ") overlaps tensor '" + terminal_safe(st.tensors_[reach->tensor].name) + "' [" +
                 std::to_string(reach->begin) + ", " + std::to_string(reach->end) + ")");
    if (reach == nullptr || cur.end > reach->end) reach = &cur;
  }
  return st;
}

}  // namespace kern::load
