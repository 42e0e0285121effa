// Error builders for tokenizer.json reading (see json_context.h).
#include "kern-run/tokenizer/json_context.h"

#include "common/source.h"

namespace kern::tok {

std::string JsonContext::child(const std::string& parent, std::string_view key) {
  return parent + "/" + json_pointer_escape(std::string(key));
}

std::string JsonContext::child(const std::string& parent, size_t index) {
  return parent + "/" + std::to_string(index);
}

Error JsonContext::error(const std::string& pointer, const std::string& message) const {
  return make_error(ErrorKind::kWeight,
                    name_ + ": " + (pointer.empty() ? std::string("(root)") : pointer) + ": " + message);
}

std::string JsonContext::describe(const rapidjson::Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsNumber()) return "number";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  std::string s(v.GetString(), v.GetStringLength());
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return "string \"" + s + "\"";
}

Error JsonContext::expected(const std::string& pointer, std::string_view what,
                            const rapidjson::Value& v) const {
  return error(pointer, "expected " + std::string(what) + ", found " + describe(v));
}

const rapidjson::Value* JsonContext::member(const rapidjson::Value& obj, const char* key) {
  const auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

Status JsonContext::read_bool(const rapidjson::Value& obj, const std::string& pointer,
                              const char* key, bool& out) const {
  const rapidjson::Value* v = member(obj, key);
  if (v == nullptr) return Status::ok_status();
  if (!v->IsBool()) return expected(child(pointer, key), "true or false", *v);
  out = v->GetBool();
  return Status::ok_status();
}

Status JsonContext::require_default(const rapidjson::Value& obj, const std::string& pointer,
                                    const char* key, std::string_view feature) const {
  const rapidjson::Value* v = member(obj, key);
  if (v == nullptr || v->IsNull() || (v->IsBool() && !v->GetBool()) ||
      (v->IsString() && v->GetStringLength() == 0)) {
    return Status::ok_status();
  }
  return error(child(pointer, key),
               std::string(feature) + " is not supported: expected null, false or \"\", found " +
                   describe(*v));
}

}  // namespace kern::tok
