// Reading tokenizer.json (see tokenizer_json.h): the JSON text, the BPE model
// (vocab, merges), the added tokens and the per-id decode tables.
#include "kern-run/tokenizer/tokenizer_json.h"

#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "common/json_depth.h"
#include "kern-run/tokenizer/byte_level.h"

namespace kern::tok {
namespace {

using rapidjson::Value;

/// Ids above this are rejected rather than sized into tables (a typo such as
/// 4000000000 must not become a 16 GB allocation).
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

std::string_view view(const Value& s) { return {s.GetString(), s.GetStringLength()}; }

/// "line:column" (1-based, column in bytes) of byte `offset` of `text`.
std::string line_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return std::to_string(line) + ":" + std::to_string(offset - line_start + 1);
}

/// Byte offset of the first lone low surrogate escape (\udc00-\udfff not
/// after a \ud800-\udbff one) in JSON text RapidJSON parsed, or npos.
/// RapidJSON rejects a lone high surrogate but turns a lone low one into
/// CESU-8 bytes (ED B0..BF xx), which are not UTF-8; serde_json, which HF
/// tokenizers parse with, refuses both. Backslashes occur only inside
/// strings in valid JSON, so a scan of the escapes is enough.
size_t lone_low_surrogate_at(std::string_view json) {
  auto hex4 = [&json](size_t at) -> long {
    if (at + 4 > json.size()) return -1;
    char buf[5] = {json[at], json[at + 1], json[at + 2], json[at + 3], 0};
    char* end = nullptr;
    const long v = std::strtol(buf, &end, 16);
    return end == buf + 4 ? v : -1;
  };
  for (size_t i = 0; i + 1 < json.size(); ++i) {
    if (json[i] != '\\') continue;
    if (json[i + 1] != 'u') {
      ++i;  // a one-character escape, \\ included
      continue;
    }
    const long cp = hex4(i + 2);
    if (cp >= 0xDC00 && cp <= 0xDFFF) return i;
    i += (cp >= 0xD800 && cp <= 0xDBFF) ? 11 : 5;  // a pair (RapidJSON checked its low half), else one escape
  }
  return std::string_view::npos;
}

Result<int32_t> read_id(const JsonContext& ctx, const Value& v, const std::string& pointer) {
  if (!v.IsInt64() || v.GetInt64() < 0 || v.GetInt64() > kMaxTokenId) {
    return ctx.expected(pointer, "a token id (an integer in 0.." + std::to_string(kMaxTokenId) + ")", v);
  }
  return static_cast<int32_t>(v.GetInt64());
}

Status check_model_options(const JsonContext& ctx, const Value& model) {
  const Value* type = JsonContext::member(model, "type");
  if (type == nullptr) return ctx.error("/model", "missing member \"type\"");
  if (!type->IsString() || view(*type) != "BPE") {
    return ctx.expected("/model/type", "\"BPE\" (the only supported model)", *type);
  }
  KERN_RETURN_IF_ERROR(ctx.require_default(model, "/model", "dropout", "BPE dropout"));
  KERN_RETURN_IF_ERROR(ctx.require_default(model, "/model", "unk_token", "an unknown token"));
  KERN_RETURN_IF_ERROR(ctx.require_default(model, "/model", "continuing_subword_prefix",
                                           "a continuing-subword prefix"));
  KERN_RETURN_IF_ERROR(ctx.require_default(model, "/model", "end_of_word_suffix", "an end-of-word suffix"));
  KERN_RETURN_IF_ERROR(ctx.require_default(model, "/model", "byte_fallback", "byte_fallback"));
  KERN_RETURN_IF_ERROR(ctx.require_default(model, "/model", "ignore_merges", "ignore_merges"));
  return Status::ok_status();
}

/// Fills model.vocab / vocab_text from /model/vocab; returns the vocab
/// entries by id (views into model.vocab_text; empty for gaps).
Result<std::vector<std::string_view>> parse_vocab(const JsonContext& ctx, const Value& model_json,
                                                  TokenizerModel& model) {
  const Value* vocab = JsonContext::member(model_json, "vocab");
  if (vocab == nullptr) return ctx.error("/model", "missing member \"vocab\"");
  if (!vocab->IsObject()) return ctx.expected("/model/vocab", "an object of token -> id", *vocab);
  size_t total = 0;
  int32_t max_id = -1;
  for (auto it = vocab->MemberBegin(); it != vocab->MemberEnd(); ++it) {
    KERN_ASSIGN_OR_RETURN(auto id, read_id(ctx, it->value, JsonContext::child("/model/vocab", view(it->name))));
    total += it->name.GetStringLength();
    max_id = std::max(max_id, id);
  }
  model.vocab_text.reserve(total);  // views below must not move
  model.vocab.reserve(vocab->MemberCount());
  std::vector<std::string_view> by_id(static_cast<size_t>(max_id + 1));
  std::vector<uint8_t> taken(by_id.size(), 0);
  for (auto it = vocab->MemberBegin(); it != vocab->MemberEnd(); ++it) {
    const std::string_view token = view(it->name);
    const int32_t id = it->value.GetInt();
    const std::string pointer = JsonContext::child("/model/vocab", token);
    const size_t at = model.vocab_text.size();
    model.vocab_text.append(token);
    const std::string_view stored(model.vocab_text.data() + at, token.size());
    if (!model.vocab.insert(stored, id)) return ctx.error(pointer, "duplicate vocabulary entry");
    if (taken[id]) {
      return ctx.error(pointer, "id " + std::to_string(id) + " is already used by \"" +
                                    std::string(by_id[id]) + "\"");
    }
    taken[id] = 1;
    by_id[id] = stored;
  }
  return by_id;
}

Result<std::array<int32_t, 256>> byte_ids_of(const JsonContext& ctx, const TokenizerModel& model) {
  std::array<int32_t, 256> ids{};
  for (int b = 0; b < 256; ++b) {
    const std::string symbol = bytes_to_byte_level(std::string(1, static_cast<char>(b)));
    const auto id = model.vocab.find(symbol);
    if (!id) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      return ctx.error("/model/vocab", "byte-level symbol \"" + symbol + "\" for byte " + hex +
                                           " is missing (byte-level BPE needs all 256)");
    }
    ids[b] = *id;
  }
  return ids;
}

Result<MergeTable> parse_merges(const JsonContext& ctx, const Value& model_json, const TokenizerModel& model) {
  const Value* merges = JsonContext::member(model_json, "merges");
  if (merges == nullptr) return ctx.error("/model", "missing member \"merges\"");
  if (!merges->IsArray()) return ctx.expected("/model/merges", "an array", *merges);
  MergeTable table;
  table.reserve(merges->Size());
  std::string joined;
  for (rapidjson::SizeType i = 0; i < merges->Size(); ++i) {
    const Value& m = (*merges)[i];
    const std::string pointer = JsonContext::child("/model/merges", i);
    std::string_view left, right;
    if (m.IsString()) {  // legacy form "left right": exactly one space
      const std::string_view s = view(m);
      const size_t space = s.find(' ');
      if (space == std::string_view::npos || s.find(' ', space + 1) != std::string_view::npos) {
        return ctx.expected(pointer, "\"left right\" (two tokens separated by one space)", m);
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.IsArray() && m.Size() == 2 && m[0].IsString() && m[1].IsString()) {
      left = view(m[0]);
      right = view(m[1]);
    } else {
      return ctx.expected(pointer, "\"left right\" or [\"left\", \"right\"]", m);
    }
    const auto l = model.vocab.find(left);
    const auto r = model.vocab.find(right);
    joined.assign(left).append(right);
    const auto n = model.vocab.find(joined);
    for (const auto& [id, text] : {std::pair{l, left}, std::pair{r, right}, std::pair{n, std::string_view(joined)}}) {
      if (!id) return ctx.error(pointer, "token \"" + std::string(text) + "\" is not in the vocabulary");
    }
    table.insert(*l, *r, static_cast<int32_t>(i), *n);
  }
  return table;
}

Status parse_added_tokens(const JsonContext& ctx, const Value& root, TokenizerModel& model) {
  const Value* list = JsonContext::member(root, "added_tokens");
  if (list == nullptr || list->IsNull()) return Status::ok_status();
  if (!list->IsArray()) return ctx.expected("/added_tokens", "an array", *list);
  const int32_t model_vocab_size = static_cast<int32_t>(model.vocab.size());
  int32_t max_added = -1;
  // Contents seen so far (views of the document's strings, which outlive the
  // set), compared through a counting predicate (load_comparisons).
  auto equal = [&model](std::string_view a, std::string_view b) {
    ++model.load_comparisons;
    return a == b;
  };
  std::unordered_set<std::string_view, std::hash<std::string_view>, decltype(equal)> seen(
      list->Size(), std::hash<std::string_view>{}, equal);
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    const Value& t = (*list)[i];
    const std::string pointer = JsonContext::child("/added_tokens", i);
    if (!t.IsObject()) return ctx.expected(pointer, "an object", t);
    AddedToken token;
    const Value* id = JsonContext::member(t, "id");
    const Value* content = JsonContext::member(t, "content");
    if (id == nullptr) return ctx.error(pointer, "missing member \"id\"");
    if (content == nullptr) return ctx.error(pointer, "missing member \"content\"");
    KERN_ASSIGN_OR_RETURN(auto parsed_id, read_id(ctx, *id, JsonContext::child(pointer, "id")));
    if (!content->IsString() || content->GetStringLength() == 0) {
      return ctx.expected(JsonContext::child(pointer, "content"), "a non-empty string", *content);
    }
    token.id = parsed_id;
    token.content.assign(view(*content));
    for (auto [key, field] : {std::pair{"single_word", &token.single_word}, std::pair{"lstrip", &token.lstrip},
                              std::pair{"rstrip", &token.rstrip}, std::pair{"normalized", &token.normalized},
                              std::pair{"special", &token.special}}) {
      KERN_RETURN_IF_ERROR(ctx.read_bool(t, pointer, key, *field));
    }
    if (!seen.insert(view(*content)).second) {
      return ctx.error(pointer, "duplicate added token \"" + token.content + "\"");
    }
    // The id HF tokenizers gives it (AddedVocabulary::add_tokens): the vocab
    // id if the content is in the vocabulary, else the next free id.
    int32_t expected_id;
    if (const auto vocab_id = model.vocab.find(token.content)) {
      expected_id = *vocab_id;
    } else if (max_added < 0) {
      expected_id = model_vocab_size;
    } else {
      expected_id = (max_added >= model_vocab_size || model_vocab_size == 0) ? max_added + 1 : model_vocab_size;
    }
    if (token.id != expected_id) {
      return ctx.error(JsonContext::child(pointer, "id"),
                       "expected " + std::to_string(expected_id) + " (the id HF tokenizers assigns to \"" +
                           token.content + "\"), found " + std::to_string(token.id));
    }
    max_added = std::max(max_added, token.id);
    model.added_tokens.push_back(std::move(token));
  }
  return Status::ok_status();
}

/// Builds the matchers, added_ids and the per-id decode tables.
Status build_tables(TokenizerModel& model, const std::vector<std::string_view>& vocab_by_id) {
  std::vector<AddedTokenMatcher::Pattern> raw, normalized;
  for (const AddedToken& t : model.added_tokens) {
    if (!t.normalized) {
      raw.push_back({t.content, t});
      continue;
    }
    std::string text;
    KERN_RETURN_IF_ERROR(normalize(model.normalizer, t.content, text));
    normalized.push_back({std::move(text), t});
  }
  model.raw_matcher = AddedTokenMatcher(std::move(raw));
  model.normalized_matcher = AddedTokenMatcher(std::move(normalized));

  int32_t size = static_cast<int32_t>(vocab_by_id.size());
  for (const AddedToken& t : model.added_tokens) {
    model.added_ids.emplace(t.content, t.id);
    size = std::max(size, t.id + 1);
  }
  std::vector<std::string_view> token_of(static_cast<size_t>(size));
  model.id_flags.assign(static_cast<size_t>(size), 0);
  for (size_t id = 0; id < vocab_by_id.size(); ++id) {
    token_of[id] = vocab_by_id[id];
    if (!vocab_by_id[id].empty()) model.id_flags[id] = TokenizerModel::kHasToken;
  }
  for (const AddedToken& t : model.added_tokens) {  // HF looks up added tokens first
    token_of[t.id] = t.content;
    model.id_flags[t.id] = TokenizerModel::kHasToken | (t.special ? TokenizerModel::kSpecial : 0);
  }
  model.id_offsets.assign(static_cast<size_t>(size) + 1, 0);
  for (size_t id = 0; id < token_of.size(); ++id) {
    model.id_offsets[id] = static_cast<uint32_t>(model.id_bytes.size());
    // HF's ByteLevel decoder: a token made only of byte-level characters
    // stands for their bytes; any other token for its own UTF-8.
    if (auto bytes = byte_level_to_bytes(token_of[id])) {
      model.id_bytes += *bytes;
    } else {
      model.id_bytes += token_of[id];
    }
  }
  model.id_offsets[token_of.size()] = static_cast<uint32_t>(model.id_bytes.size());
  return Status::ok_status();
}

}  // namespace

Result<std::shared_ptr<TokenizerModel>> parse_tokenizer_json(std::string_view json, std::string_view name) {
  const JsonContext ctx(name);
  const std::string prefix = std::string(name) + ":";
  if (const void* nul = std::memchr(json.data(), 0, json.size())) {
    const size_t at = static_cast<const char*>(nul) - json.data();
    return make_error(ErrorKind::kWeight, prefix + line_column(json, at) + ": invalid JSON: NUL byte");
  }
  rapidjson::Document doc;
  if (auto e = parse_json_bounded<rapidjson::kParseValidateEncodingFlag>(json, doc))
    return make_error(ErrorKind::kWeight,
                      prefix + line_column(json, e->offset) + (e->too_deep ? ": " : ": invalid JSON: ") + e->message);
  if (const size_t at = lone_low_surrogate_at(json); at != std::string_view::npos) {
    return make_error(ErrorKind::kWeight, prefix + line_column(json, at) + ": invalid JSON: lone low surrogate " +
                                              std::string(json.substr(at, 6)) +
                                              " (a \\udc00-\\udfff escape must follow a \\ud800-\\udbff one)");
  }
  if (!doc.IsObject()) return ctx.expected("", "an object", doc);
  auto model = std::make_shared<TokenizerModel>();
  KERN_RETURN_IF_ERROR(parse_normalizer(ctx, doc, *model));
  KERN_RETURN_IF_ERROR(parse_pre_tokenizer(ctx, doc, *model));
  KERN_RETURN_IF_ERROR(check_post_and_decoder(ctx, doc));
  const Value* model_json = JsonContext::member(doc, "model");
  if (model_json == nullptr) return ctx.error("", "missing member \"model\"");
  if (!model_json->IsObject()) return ctx.expected("/model", "an object", *model_json);
  KERN_RETURN_IF_ERROR(check_model_options(ctx, *model_json));
  KERN_ASSIGN_OR_RETURN(auto vocab_by_id, parse_vocab(ctx, *model_json, *model));
  KERN_ASSIGN_OR_RETURN(auto byte_ids, byte_ids_of(ctx, *model));
  KERN_ASSIGN_OR_RETURN(auto merges, parse_merges(ctx, *model_json, *model));
  model->bpe = BpeModel(byte_ids, std::move(merges));
  KERN_RETURN_IF_ERROR(parse_added_tokens(ctx, doc, *model));
  KERN_RETURN_IF_ERROR(build_tables(*model, vocab_by_id));
  return model;
}

}  // namespace kern::tok
