// Reads the end ids of a model folder's generation_config.json (generation_config.h).
#include "kern-run/generation_config.h"

#include <rapidjson/document.h>

#include "common/file_util.h"
#include "common/json_depth.h"
#include "common/source.h"

namespace kern::run {
namespace {

constexpr uint64_t kMaxGenerationConfigBytes = 1 << 20;
constexpr int64_t kMaxId = (int64_t{1} << 31) - 1;

}  // namespace

Result<std::vector<int64_t>> read_generation_end_ids(const std::string& path) {
  auto text = read_file(path, kMaxGenerationConfigBytes);
  if (!text.ok()) return text.error();
  const SourceFile source(path, *text);
  auto at = [&](size_t offset, const std::string& what) {
    const LineColumn lc = source.line_column(static_cast<uint32_t>(offset));
    return make_error(ErrorKind::kManifest,
                      path + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column) + ": " + what);
  };
  rapidjson::Document doc;
  if (auto err = parse_json_bounded(*text, doc)) return at(err->offset, "not valid JSON: " + err->message);
  if (!doc.IsObject()) return at(0, "expected a JSON object (Hugging Face's generation_config.json)");
  std::vector<int64_t> ids;
  auto it = doc.FindMember("eos_token_id");
  if (it == doc.MemberEnd() || it->value.IsNull()) return ids;
  // RapidJSON keeps no offsets per value: name the field, and its position by a search for its key.
  const size_t key = text->find("\"eos_token_id\"");
  const size_t where = key == std::string::npos ? 0 : key;
  auto one = [&](const rapidjson::Value& v, const std::string& field) -> Status {
    if (!v.IsInt64() || v.GetInt64() < 0 || v.GetInt64() > kMaxId) {
      const char* found = v.IsInt64() || v.IsUint64() ? "an integer out of range"
                          : v.IsNumber()              ? "a number that is not an integer"
                          : v.IsString()              ? "a string"
                          : v.IsArray()               ? "an array"
                          : v.IsObject()              ? "an object"
                          : v.IsBool()                ? "a boolean"
                                                      : "null";
      return at(where, field + ": expected a token id (an integer in [0, 2^31)), found " + found);
    }
    ids.push_back(v.GetInt64());
    return Status::ok_status();
  };
  if (it->value.IsArray()) {
    const auto& a = it->value.GetArray();
    for (rapidjson::SizeType i = 0; i < a.Size(); ++i)
      KERN_RETURN_IF_ERROR(one(a[i], "eos_token_id[" + std::to_string(i) + "]"));
  } else {
    KERN_RETURN_IF_ERROR(one(it->value, "eos_token_id"));
  }
  return ids;
}

}  // namespace kern::run
