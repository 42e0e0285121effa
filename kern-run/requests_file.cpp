// Reading a --requests JSON Lines file (requests_file.h).
#include "kern-run/requests_file.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include "common/file_util.h"
#include "common/json_depth.h"
#include "common/json_tree.h"
#include "common/source.h"

namespace kern::run {

namespace {

/// Collects the problems of one line, each at a column.
struct LineErrors {
  const std::string& path;
  uint32_t line;
  std::vector<std::string>& out;
  bool failed = false;

  void add(uint32_t column, const std::string& message) {
    out.push_back(path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
    failed = true;
  }
  void add(const JsonValue& v, const std::string& message) { add(v.span.begin + 1, message); }
};

bool as_u64(const JsonValue& v, uint64_t& out) {
  if (v.type != JsonValue::Type::kUint) return false;
  out = v.uint_value;
  return true;
}

bool as_i64(const JsonValue& v, int64_t& out) {
  if (v.type == JsonValue::Type::kInt) {
    out = v.int_value;
    return true;
  }
  if (v.type == JsonValue::Type::kUint && v.uint_value <= static_cast<uint64_t>(INT64_MAX)) {
    out = static_cast<int64_t>(v.uint_value);
    return true;
  }
  return false;
}

void read_ids(const JsonValue& v, const std::string& field, std::vector<int64_t>& out, LineErrors& e) {
  if (v.type != JsonValue::Type::kArray) return e.add(v, "'" + field + "' must be an array of token ids, found " +
                                                             std::string(json_type_name(v)));
  for (const JsonValue& item : v.items) {
    int64_t id = 0;
    if (!as_i64(item, id) || id < 0)
      return e.add(item, "'" + field + "[" + std::to_string(item.index) + "]' must be a token id (an integer >= 0)");
    out.push_back(id);
  }
}

/// A number field into `out` within [lo, hi] (lo excluded when `open_lo`).
void read_float(const JsonValue& v, const std::string& field, double lo, double hi, bool open_lo, float& out,
                LineErrors& e) {
  const bool ok = v.is_number() && std::isfinite(v.double_value) &&
                  (open_lo ? v.double_value > lo : v.double_value >= lo) && v.double_value <= hi;
  if (!ok) {
    const std::string range = std::isinf(hi) ? (open_lo ? "> " : ">= ") + std::to_string(static_cast<int>(lo))
                                             : std::string(open_lo ? "in (" : "in [") +
                                                   std::to_string(static_cast<int>(lo)) + ", " +
                                                   std::to_string(static_cast<int>(hi)) + "]";
    return e.add(v, "'" + field + "' must be a number " + range);
  }
  out = static_cast<float>(v.double_value);
}

/// A SAX pass over one line, before its tree is built, that stops at the
/// first item past `max_ids` of the root object's "prompt_ids" array: such
/// a line costs the ids read so far, not a tree of every id (a JsonValue is
/// about 200 B, 100 times the text "1,"). It also stops, leaving the
/// report to the tree parse, at nesting past kMaxJsonDepth (RapidJSON's
/// iterative stack would grow with it) and at a syntax error.
class PromptIdsScan : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, PromptIdsScan> {
 public:
  PromptIdsScan(const rapidjson::MemoryStream& stream, uint64_t max_ids) : stream_(stream), max_ids_(max_ids) {}

  /// The byte offset of the '[' of a "prompt_ids" array holding more than
  /// `max_ids` items, or nullopt.
  std::optional<size_t> over_at() const { return over_at_; }

  bool Default() { return item(); }  // every scalar
  bool StartObject() { return open(false); }
  bool StartArray() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }
  bool Key(const char* s, rapidjson::SizeType len, bool) {
    if (depth_ == 1) key_is_ids_ = std::string_view(s, len) == "prompt_ids";
    return true;
  }

 private:
  bool item() {
    if (depth_ != 2 || !in_ids_ || ++ids_ <= max_ids_) return true;
    over_at_ = array_at_;
    return false;
  }
  bool open(bool array) {
    if (!item()) return false;
    if (++depth_ > kMaxJsonDepth) return false;
    if (depth_ == 2 && array && key_is_ids_) {
      in_ids_ = true;
      ids_ = 0;
      array_at_ = stream_.Tell();  // iterative mode: called before the '[' is taken
    }
    return true;
  }
  bool close() {
    if (--depth_ == 1) in_ids_ = false;
    return true;
  }

  const rapidjson::MemoryStream& stream_;
  uint64_t max_ids_;
  size_t depth_ = 0;
  bool key_is_ids_ = false;
  bool in_ids_ = false;
  uint64_t ids_ = 0;
  size_t array_at_ = 0;
  std::optional<size_t> over_at_;
};

/// PromptIdsScan over `line`.
std::optional<size_t> prompt_ids_over(std::string_view line, uint64_t max_ids) {
  if (max_ids == kNoIdLimit) return std::nullopt;
  rapidjson::MemoryStream stream(line.data(), line.size());
  PromptIdsScan scan(stream, max_ids);
  rapidjson::Reader reader;
  reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseStopWhenDoneFlag>(stream, scan);
  return scan.over_at();
}

void read_object(const JsonValue& root, RequestLine& r, LineErrors& e) {
  bool has_ids = false;
  for (const JsonMember& m : root.members) {
    const JsonValue& v = m.value;
    const uint32_t key_col = m.key_span.begin + 1;
    if (m.duplicate) {
      e.add(key_col, "duplicate field '" + m.key + "'");
      continue;
    }
    if (m.key == "prompt_ids") {
      has_ids = true;
      read_ids(v, m.key, r.prompt_ids, e);
      if (!e.failed && r.prompt_ids.empty()) e.add(v, "'prompt_ids' is empty: a prompt needs at least one token");
    } else if (m.key == "prompt") {
      if (v.type != JsonValue::Type::kString) e.add(v, "'prompt' must be a string");
      else r.prompt = v.string_value;
    } else if (m.key == "max_tokens") {
      uint64_t n = 0;
      if (!as_u64(v, n) || n == 0) e.add(v, "'max_tokens' must be an integer >= 1");
      else r.max_tokens = n;
    } else if (m.key == "temperature") {
      read_float(v, m.key, 0, std::numeric_limits<double>::infinity(), false, r.sampling.temperature, e);
    } else if (m.key == "top_k") {
      uint64_t k = 0;
      if (!as_u64(v, k) || k > UINT32_MAX) e.add(v, "'top_k' must be an integer in [0, 4294967295] (0: off)");
      else r.sampling.top_k = static_cast<uint32_t>(k);
    } else if (m.key == "top_p") {
      read_float(v, m.key, 0, 1, true, r.sampling.top_p, e);
    } else if (m.key == "min_p") {
      read_float(v, m.key, 0, 1, false, r.sampling.min_p, e);
    } else if (m.key == "seed") {
      if (!as_u64(v, r.sampling.seed)) e.add(v, "'seed' must be an integer in [0, 2^64)");
      else r.has_seed = true;
    } else if (m.key == "stop_ids") {
      read_ids(v, m.key, r.stop_ids, e);
    } else if (m.key == "stop") {
      if (v.type == JsonValue::Type::kString) {
        r.stop.push_back(v.string_value);
      } else if (v.type == JsonValue::Type::kArray) {
        for (const JsonValue& item : v.items) {
          if (item.type != JsonValue::Type::kString) {
            e.add(item, "'stop[" + std::to_string(item.index) + "]' must be a string");
            break;
          }
          r.stop.push_back(item.string_value);
        }
      } else {
        e.add(v, "'stop' must be a string or an array of strings");
      }
      for (const std::string& s : r.stop)
        if (s.empty()) e.add(v, "'stop' strings must not be empty");
    } else if (m.key == "ignore_eos") {
      if (v.type != JsonValue::Type::kBool) e.add(v, "'ignore_eos' must be true or false");
      else r.ignore_eos = v.bool_value;
    } else {
      e.add(key_col, "unknown field '" + m.key +
                         "' (expected prompt_ids, prompt, max_tokens, temperature, top_k, top_p, min_p, seed, "
                         "stop_ids, stop, ignore_eos)");
    }
  }
  if (has_ids && r.prompt) e.add(1, "give either 'prompt_ids' or 'prompt', not both");
  if (!has_ids && !r.prompt) e.add(1, "a request needs 'prompt_ids' (token ids) or 'prompt' (text)");
}

}  // namespace

Result<std::vector<RequestLine>> parse_requests(const std::string& path, const std::string& text, uint64_t capacity) {
  std::vector<RequestLine> out;
  std::vector<std::string> errors;
  uint32_t line = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string_view view = std::string_view(text).substr(begin, end - begin);
    begin = end + 1;
    if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
    if (view.find_first_not_of(" \t") == std::string::npos) continue;
    LineErrors e{path, line, errors};
    if (auto at = prompt_ids_over(view, capacity)) {
      e.add(static_cast<uint32_t>(*at + 1), "'prompt_ids' holds more than the capacity of " + std::to_string(capacity) +
                                                " tokens (the prompt and at least one generated token must fit)");
      continue;
    }
    std::string body(view);
    SourceFile file(path, body);
    DiagnosticEngine diags;
    auto root = parse_json_tree(file, diags);
    // Duplicate keys (E0004) still give a tree: read_object names them.
    const Diagnostic* syntax = nullptr;
    for (const Diagnostic& d : diags.diagnostics())
      if (d.severity == Severity::kError && d.code != "E0004" && syntax == nullptr) syntax = &d;
    if (syntax != nullptr || root == nullptr) {
      if (syntax != nullptr) e.add(file.line_column(syntax->span.begin).column, syntax->message);
      else e.add(1, "not a JSON value");
      continue;
    }
    if (root->type != JsonValue::Type::kObject) {
      e.add(*root, "a request must be a JSON object, found " + std::string(json_type_name(*root)));
      continue;
    }
    RequestLine r;
    r.line = line;
    read_object(*root, r, e);
    if (!e.failed) out.push_back(std::move(r));
  }
  if (!errors.empty()) {
    std::string message;
    for (size_t i = 0; i < errors.size() && i < kMaxRequestErrors; ++i) message += (i ? "\n" : "") + errors[i];
    if (errors.size() > kMaxRequestErrors)
      message += "\nand " + std::to_string(errors.size() - kMaxRequestErrors) + " more";
    return make_error(ErrorKind::kUsage, message);
  }
  if (out.empty()) return make_error(ErrorKind::kUsage, path + ": no request (one JSON object per line)");
  return out;
}

Result<std::vector<RequestLine>> read_requests_file(const std::string& path, uint64_t capacity) {
  std::string text;
  if (path == "-") {
    KERN_ASSIGN_OR_RETURN(text, read_stdin(), "--requests");
  } else {
    KERN_ASSIGN_OR_RETURN(text, read_file(path), "--requests");
  }
  return parse_requests(path == "-" ? "<stdin>" : path, text, capacity);
}

}  // namespace kern::run
