// Helpers for reading tokenizer.json with errors that name the file, the
// JSON pointer (RFC 6901) of the offending value, what was expected and what
// was found. Internal to kern-run/tokenizer.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "common/result.h"

namespace kern::tok {

/// The file name plus error builders for one tokenizer.json being read.
class JsonContext {
 public:
  explicit JsonContext(std::string_view name) : name_(name) {}

  /// `parent` + "/" + `key`, with '~' and '/' escaped per RFC 6901.
  static std::string child(const std::string& parent, std::string_view key);
  static std::string child(const std::string& parent, size_t index);

  /// "name: pointer: message" (the root is shown as "(root)").
  Error error(const std::string& pointer, const std::string& message) const;
  /// "expected <what>, found <kind of v>" at `pointer`.
  Error expected(const std::string& pointer, std::string_view what, const rapidjson::Value& v) const;

  /// "null", "boolean", "number", "string", "array" or "object" (with the
  /// string's value quoted for strings: `string "abc"`).
  static std::string describe(const rapidjson::Value& v);

  /// Member `key` of object `obj`, or nullptr when absent.
  static const rapidjson::Value* member(const rapidjson::Value& obj, const char* key);

  /// Reads optional boolean member `key` of `obj` into `out`; absent keeps
  /// `out`; any other type is an error.
  Status read_bool(const rapidjson::Value& obj, const std::string& pointer, const char* key,
                   bool& out) const;

  /// Requires member `key` to be absent, null, false or "" (HF's "off" for a
  /// feature this library does not implement, named by `feature`).
  Status require_default(const rapidjson::Value& obj, const std::string& pointer, const char* key,
                         std::string_view feature) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

}  // namespace kern::tok
