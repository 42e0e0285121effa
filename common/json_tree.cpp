// SAX parse with source spans (see json_tree.h). RapidJSON's iterative
// parser reports scalars and keys after consuming them (the end of the
// value is Tell() at the callback) and brackets before consuming them (the
// bracket is at Tell()). A scalar's beginning is found by skipping
// whitespace and the single ',' or ':' that follows the previous event.
#include "common/json_tree.h"

#include "common/json_depth.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include "common/reader_codes.h"

namespace kern {
namespace {

// Deepest nesting of arrays/objects accepted (kern's one bound for JSON,
// json_depth.h). A manifest needs about ten levels plus nested expressions;
// the limit keeps the recursive tree walk and destructor far from the stack
// limit on hostile input.
constexpr size_t kMaxDepth = kMaxJsonDepth;

std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

SourceSpan make_span(size_t begin, size_t end, std::string pointer) {
  SourceSpan s;
  s.begin = static_cast<uint32_t>(begin);
  s.end = static_cast<uint32_t>(end);
  s.pointer = std::move(pointer);
  return s;
}

constexpr size_t kNoMember = static_cast<size_t>(-1);

class TreeBuilder {
 public:
  TreeBuilder(const SourceFile& file, rapidjson::MemoryStream& stream, DiagnosticEngine& diags)
      : text_(file.text()), stream_(stream), diags_(diags) {}

  std::optional<JsonValue>& root() { return root_; }
  /// True when a handler stopped the parse and reported why (kMaxDepth, a
  /// lone low surrogate).
  bool stopped() const { return stopped_; }

  // RapidJSON handler interface.
  bool Null() { return scalar(JsonValue{}); }
  bool Bool(bool b) {
    JsonValue v;
    v.type = JsonValue::Type::kBool;
    v.bool_value = b;
    return scalar(std::move(v));
  }
  bool Int(int i) { return Int64(i); }
  bool Uint(unsigned u) { return Uint64(u); }
  bool Int64(int64_t i) {
    if (i >= 0) return Uint64(static_cast<uint64_t>(i));
    JsonValue v;
    v.type = JsonValue::Type::kInt;
    v.int_value = i;
    v.double_value = static_cast<double>(i);
    return scalar(std::move(v));
  }
  bool Uint64(uint64_t u) {
    JsonValue v;
    v.type = JsonValue::Type::kUint;
    v.uint_value = u;
    v.double_value = static_cast<double>(u);
    return scalar(std::move(v));
  }
  bool Double(double d) {
    JsonValue v;
    v.type = JsonValue::Type::kDouble;
    v.double_value = d;
    size_t begin = value_begin();
    v.integral_text = text_.find_first_of(".eE", begin) >= stream_.Tell();
    return scalar(std::move(v));
  }
  bool RawNumber(const char*, rapidjson::SizeType, bool) { return false; }  // not requested
  bool String(const char* s, rapidjson::SizeType len, bool) {
    if (!check_surrogates(s, len)) return false;
    JsonValue v;
    v.type = JsonValue::Type::kString;
    v.string_value.assign(s, len);
    return scalar(std::move(v));
  }
  bool StartObject() { return open(JsonValue::Type::kObject); }
  bool StartArray() { return open(JsonValue::Type::kArray); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool EndArray(rapidjson::SizeType) { return close(); }
  bool Key(const char* s, rapidjson::SizeType len, bool) {
    if (!check_surrogates(s, len)) return false;
    Frame& f = stack_.back();
    f.key.assign(s, len);
    f.key_span = make_span(value_begin(), stream_.Tell(), "");
    f.key_duplicate = false;
    // Hashed: objects such as `buffers` have hundreds of members (a hostile
    // file millions), and comparing every earlier key is quadratic.
    const size_t hash = std::hash<std::string>{}(f.key);
    const size_t first_dup = f.find_key(hash, [&](size_t i) {
      const JsonMember& m = f.value->members[i];
      return m.key == f.key && !m.duplicate;
    });
    if (first_dup != kNoMember) {
      const JsonMember& m = f.value->members[first_dup];
      f.key_duplicate = true;
      std::string subject = container_subject();
      Diagnostic& d = diags_.error(reader_code::kDuplicateKey,
                                   (subject.empty() ? "manifest" : subject) + ": duplicate key `" + f.key + "`",
                                   f.key_span);
      d.label = "duplicate key";
      d.notes.push_back(DiagnosticNote{"the first `" + f.key + "` is here", m.key_span, true});
      d.help = "remove one of the two entries; json readers disagree on which one wins";
    }
    f.add_key(hash);  // the member place() appends next
    if (f.key.find('\0') != std::string::npos) {
      std::string subject = container_subject();
      report_nul(subject.empty() ? f.key : subject + "." + f.key, f.key_span);
    }
    last_end_ = stream_.Tell();
    return true;
  }

 private:
  struct Frame {
    JsonValue* value = nullptr;
    std::string key;
    SourceSpan key_span;
    bool key_duplicate = false;
    std::vector<size_t> key_hashes;  ///< hash of each member's key, by member index
    /// key hash -> member index, built once an object grows past kIndexFrom
    /// members (most objects are small: a vector scan is cheaper there).
    std::unordered_multimap<size_t, size_t> key_index;

    static constexpr size_t kIndexFrom = 32;

    /// The first member index whose hash is `hash` and for which `same` holds.
    template <typename Same>
    size_t find_key(size_t hash, Same same) const {
      if (key_hashes.size() < kIndexFrom) {
        for (size_t i = 0; i < key_hashes.size(); ++i) {
          if (key_hashes[i] == hash && same(i)) return i;
        }
        return kNoMember;
      }
      size_t best = kNoMember;
      auto [first, last] = key_index.equal_range(hash);
      for (auto it = first; it != last; ++it) {
        if (same(it->second)) best = std::min(best, it->second);
      }
      return best;
    }
    void add_key(size_t hash) {
      key_hashes.push_back(hash);
      if (key_hashes.size() == kIndexFrom) {
        for (size_t i = 0; i < key_hashes.size(); ++i) key_index.emplace(key_hashes[i], i);
      } else if (key_hashes.size() > kIndexFrom) {
        key_index.emplace(hash, key_hashes.size() - 1);
      }
    }
  };

  size_t value_begin() const {
    size_t i = last_end_;
    while (i < text_.size()) {
      const char c = text_[i];
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != ',' && c != ':') break;
      ++i;
    }
    return i;
  }

  /// Dotted subject of the innermost open container, from the parse stack
  /// (parent links are set only after the parse). Error paths only.
  std::string container_subject() const {
    std::string out;
    for (size_t i = 1; i < stack_.size(); ++i) {
      if (stack_[i - 1].value->type == JsonValue::Type::kArray) {
        out += "[" + std::to_string(stack_[i].value->index) + "]";
      } else {
        // An open container is the last member of its parent (Frame::key was moved there).
        out += (out.empty() ? "" : ".") + stack_[i - 1].value->members.back().key;
      }
    }
    return out;
  }

  /// RapidJSON rejects a high surrogate escape without its low half but
  /// encodes a lone low one (\\udc00-\\udfff) as 3 bytes ED B0..BF xx, which
  /// is not UTF-8 (CESU-8) and would reach the plan, JSON and SARIF output.
  /// When the decoded string holds such bytes, finds the escape in the
  /// string's text, reports E0001 there like RapidJSON's own surrogate error,
  /// and returns false to stop the parse.
  bool check_surrogates(const char* s, rapidjson::SizeType len) {
    bool cesu = false;
    for (rapidjson::SizeType i = 0; i + 1 < len && !cesu; ++i) {
      cesu = static_cast<unsigned char>(s[i]) == 0xED && static_cast<unsigned char>(s[i + 1]) >= 0xA0;
    }
    if (!cesu) return true;
    const size_t end = std::min<size_t>(stream_.Tell(), text_.size());
    size_t at = value_begin();
    for (size_t i = at + 1; i + 1 < end; ++i) {
      if (text_[i] != '\\') continue;
      if (text_[i + 1] != 'u' || i + 6 > end) {
        ++i;  // a one-character escape: skip its second character
        continue;
      }
      const unsigned long cp = std::strtoul(text_.substr(i + 2, 4).c_str(), nullptr, 16);
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        i += 11;  // a valid pair (RapidJSON checked it): skip both escapes
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        at = i;
        break;
      } else {
        i += 5;
      }
    }
    Diagnostic& d = diags_.error(reader_code::kJsonSyntax,
                                 "json syntax error: the surrogate pair in string is invalid (a lone low surrogate)",
                                 make_span(at, at + 1, ""));
    d.label = "here";
    d.help = "a \\udc00-\\udfff escape must follow a \\ud800-\\udbff one; write the character itself or its pair";
    stopped_ = true;
    return false;
  }

  void report_nul(const std::string& subject, const SourceSpan& span) {
    Diagnostic& d = diags_.error(reader_code::kEmbeddedNul,
                                 (subject.empty() ? std::string("manifest") : subject) +
                                     ": string contains a nul character (\\u0000)",
                                 span);
    d.label = "nul character";
    d.help = "names and labels are C strings at run time; remove the \\u0000 escape";
  }

  /// Places `v` in its parent (or as the root), recording its index there.
  JsonValue* place(JsonValue&& v, size_t begin) {
    v.span.begin = static_cast<uint32_t>(begin);
    if (stack_.empty()) {
      root_ = std::move(v);
      return &*root_;
    }
    Frame& f = stack_.back();
    JsonValue& parent = *f.value;
    if (parent.type == JsonValue::Type::kArray) {
      v.index = static_cast<uint32_t>(parent.items.size());
      parent.items.push_back(std::move(v));
      return &parent.items.back();
    }
    v.index = static_cast<uint32_t>(parent.members.size());
    JsonMember& m = parent.members.emplace_back();
    m.key = std::move(f.key);
    m.key_span = f.key_span;
    m.duplicate = f.key_duplicate;
    m.value = std::move(v);
    return &m.value;
  }

  bool scalar(JsonValue&& v) {
    size_t begin = value_begin();
    v.span.end = static_cast<uint32_t>(stream_.Tell());
    JsonValue* placed = place(std::move(v), begin);
    if (placed->type == JsonValue::Type::kString && placed->string_value.find('\0') != std::string::npos) {
      std::string subject = container_subject();
      const bool in_array = !stack_.empty() && stack_.back().value->type == JsonValue::Type::kArray;
      if (in_array) {
        subject += "[" + std::to_string(placed->index) + "]";
      } else if (!stack_.empty()) {
        const std::string& key = stack_.back().value->members.back().key;
        subject = subject.empty() ? key : subject + "." + key;
      }
      report_nul(subject, placed->span);
    }
    last_end_ = stream_.Tell();
    return true;
  }

  bool open(JsonValue::Type type) {
    if (stack_.size() >= kMaxDepth) {
      size_t at = stream_.Tell();
      Diagnostic& d = diags_.error(reader_code::kJsonSyntax,
                                   "json syntax error: nesting is deeper than " + std::to_string(kMaxDepth) + " levels",
                                   make_span(at, at + 1, ""));
      d.label = "too deep";
      stopped_ = true;
      return false;  // stops the parse
    }
    JsonValue v;
    v.type = type;
    // Iterative mode calls StartObject/StartArray before taking the bracket.
    JsonValue* placed = place(std::move(v), stream_.Tell());
    stack_.emplace_back().value = placed;
    last_end_ = stream_.Tell() + 1;
    return true;
  }

  bool close() {
    // Iterative mode calls EndObject/EndArray before taking the bracket.
    stack_.back().value->span.end = static_cast<uint32_t>(stream_.Tell() + 1);
    stack_.pop_back();
    last_end_ = stream_.Tell() + 1;
    return true;
  }

  const std::string& text_;
  rapidjson::MemoryStream& stream_;
  DiagnosticEngine& diags_;
  std::optional<JsonValue> root_;
  std::vector<Frame> stack_;
  size_t last_end_ = 0;
  bool stopped_ = false;
};

/// Sets the parent links once the tree no longer moves.
void link(JsonValue& v) {
  for (JsonValue& item : v.items) {
    item.parent = &v;
    link(item);
  }
  for (JsonMember& m : v.members) {
    m.value.parent = &v;
    link(m.value);
  }
}

/// Key of `v` in its parent object, or nullptr when the parent is an array.
const std::string* key_in_parent(const JsonValue& v) {
  if (v.parent == nullptr || v.parent->type != JsonValue::Type::kObject) return nullptr;
  return &v.parent->members[v.index].key;
}

}  // namespace

std::string json_pointer(const JsonValue& v) {
  if (v.parent == nullptr) return "";
  const std::string* key = key_in_parent(v);
  return json_pointer(*v.parent) + "/" + (key ? json_pointer_escape(*key) : std::to_string(v.index));
}

std::string json_subject(const JsonValue& v) {
  if (v.parent == nullptr) return "";
  std::string parent = json_subject(*v.parent);
  if (const std::string* key = key_in_parent(v)) return parent.empty() ? *key : parent + "." + *key;
  return parent + "[" + std::to_string(v.index) + "]";
}

std::optional<std::string> json_pointer_at(const JsonValue& root, uint32_t offset) {
  const JsonValue* v = &root;
  while (v != nullptr) {
    if (v->span.begin == offset) return json_pointer(*v);
    const JsonValue* next = nullptr;
    // Children are in file order: binary-search the last one starting at or
    // before `offset` (a member starts at its key), then check it holds it.
    if (!v->members.empty()) {
      auto it = std::upper_bound(v->members.begin(), v->members.end(), offset,
                                 [](uint32_t off, const JsonMember& m) { return off < m.key_span.begin; });
      if (it != v->members.begin()) {
        const JsonMember& m = *std::prev(it);
        if (m.key_span.begin == offset) return json_pointer(m.value);
        if (offset < m.value.span.end) next = &m.value;
      }
    } else if (!v->items.empty()) {
      auto it = std::upper_bound(v->items.begin(), v->items.end(), offset,
                                 [](uint32_t off, const JsonValue& item) { return off < item.span.begin; });
      if (it != v->items.begin() && offset < std::prev(it)->span.end) next = &*std::prev(it);
    }
    v = next;
  }
  return std::nullopt;
}

void resolve_pointers(std::vector<Diagnostic>& diags, const JsonValue& root) {
  auto fill = [&root](SourceSpan& span) {
    if (!span.pointer.empty()) return;
    if (auto p = json_pointer_at(root, span.begin)) span.pointer = std::move(*p);
  };
  for (Diagnostic& d : diags) {
    fill(d.span);
    for (DiagnosticNote& n : d.notes) {
      if (n.has_span) fill(n.span);
    }
  }
}

namespace {
bool pointer_missing(const std::vector<Diagnostic>& diags) {
  for (const Diagnostic& d : diags) {
    if (d.span.pointer.empty()) return true;
    for (const DiagnosticNote& n : d.notes)
      if (n.has_span && n.span.pointer.empty()) return true;
  }
  return false;
}

void fill_pointers(std::vector<Diagnostic>& diags, const SourceFile& file) {
  if (!pointer_missing(diags)) return;
  DiagnosticEngine scratch;
  if (auto root = parse_json_tree(file, scratch)) resolve_pointers(diags, *root);
}
}  // namespace

void resolve_pointers(DiagnosticEngine& diags, const SourceFile& file) {
  fill_pointers(diags.mutable_diagnostics(), file);
}

std::vector<Diagnostic> with_pointers(const std::vector<Diagnostic>& diags, const SourceFile& file) {
  std::vector<Diagnostic> out = diags;
  fill_pointers(out, file);
  return out;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const JsonMember& m : members) {
    if (!m.duplicate && m.key == key) return &m.value;
  }
  return nullptr;
}

std::string_view json_type_name(const JsonValue& v) {
  switch (v.type) {
    case JsonValue::Type::kNull: return "null";
    case JsonValue::Type::kBool: return "a boolean";
    case JsonValue::Type::kInt: return "a negative integer";
    case JsonValue::Type::kUint: return "an integer";
    case JsonValue::Type::kDouble: return v.integral_text ? "an integer" : "a number with a fraction or exponent";
    case JsonValue::Type::kString: return "a string";
    case JsonValue::Type::kArray: return "an array";
    case JsonValue::Type::kObject: return "an object";
  }
  return "a value";
}

std::unique_ptr<JsonValue> parse_json_tree(const SourceFile& file, DiagnosticEngine& diags) {
  const std::string& text = file.text();
  // Spans are 32-bit byte offsets; a manifest is a few megabytes at most.
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    Diagnostic& d = diags.error(reader_code::kJsonSyntax,
                                "the file is " + std::to_string(text.size()) + " B, over the 4 GiB manifest limit",
                                make_span(0, 0, ""));
    d.label = "file too large";
    return nullptr;
  }
  // RFC 8259 §8.1: JSON text must not begin with a byte order mark. RapidJSON
  // would report "invalid value" at 1:1, which does not say what is wrong.
  if (text.starts_with("\xEF\xBB\xBF")) {
    Diagnostic& d = diags.error(reader_code::kJsonSyntax,
                                "the file starts with a UTF-8 byte order mark (EF BB BF); JSON manifests must not",
                                make_span(0, 3, ""));
    d.label = "byte order mark";
    d.help = "save the file as UTF-8 without a BOM (\"UTF-8\", not \"UTF-8 with BOM\")";
    return nullptr;
  }
  // RapidJSON treats NUL as the end of input: a NUL would silently cut the
  // document short, so it is an error wherever it appears.
  size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    Diagnostic& d = diags.error(reader_code::kEmbeddedNul, "the file contains a nul byte at offset " +
                                                               std::to_string(nul),
                                make_span(nul, nul + 1, ""));
    d.label = "nul byte";
    d.help = "a manifest is UTF-8 JSON text; a nul byte usually means a truncated or binary file";
    return nullptr;
  }

  rapidjson::MemoryStream stream(text.data(), text.size());
  TreeBuilder builder(file, stream, diags);
  rapidjson::Reader reader;
  // Iterative parsing: RapidJSON's recursive parser would overflow the
  // stack on deep input before our depth check runs.
  constexpr unsigned kFlags = rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag;
  rapidjson::ParseResult result = reader.Parse<kFlags>(stream, builder);
  if (result.IsError() && builder.stopped()) return nullptr;
  if (result.IsError()) {
    size_t offset = std::min(result.Offset(), text.size());
    if (result.Code() == rapidjson::kParseErrorDocumentRootNotSingular) {
      size_t end = text.find_last_not_of(" \t\r\n");
      end = (end == std::string::npos || end < offset) ? offset + 1 : end + 1;
      Diagnostic& d = diags.error(reader_code::kTrailingCharacters,
                                  "unexpected characters after the end of the json document",
                                  make_span(offset, std::min(end, text.size()), ""));
      d.label = "trailing characters";
      d.help = "a manifest holds exactly one json object; remove the text after its closing `}`";
    } else {
      std::string message = lower_first(rapidjson::GetParseError_En(result.Code()));
      if (!message.empty() && message.back() == '.') message.pop_back();
      Diagnostic& d = diags.error(reader_code::kJsonSyntax, "json syntax error: " + message,
                                  make_span(offset, std::min(offset + 1, text.size()), ""));
      d.label = "here";
    }
    return nullptr;
  }
  // Parse stops at the end of the root value only when the rest is
  // whitespace; make sure nothing was left unread.
  if (stream.Tell() != text.size()) {
    size_t offset = stream.Tell();
    diags.error(reader_code::kTrailingCharacters, "unexpected characters after the end of the json document",
                make_span(offset, text.size(), ""));
    return nullptr;
  }
  if (!builder.root()) return nullptr;
  auto root = std::make_unique<JsonValue>(std::move(*builder.root()));
  link(*root);
  resolve_pointers(diags.mutable_diagnostics(), *root);
  return root;
}

}  // namespace kern
