// Tokenizer and StreamDecoder (see tokenizer.h): the encode pipeline of HF
// tokenizers for byte-level BPE, and decoding.
#include "kern-run/tokenizer/tokenizer.h"

#include <cstring>
#include <limits>

#include "common/file_util.h"
#include "kern-run/tokenizer/tokenizer_json.h"
#include "kern-run/tokenizer/tokenizer_model.h"

namespace kern::tok {

Result<Tokenizer> Tokenizer::load(const std::string& path) {
  // read_file refuses FIFOs and devices (/dev/zero) before reading and caps the size.
  KERN_ASSIGN_OR_RETURN(auto read, read_file(path));
  return from_json(std::move(read), path);
}

Result<Tokenizer> Tokenizer::from_json(std::string json, std::string_view name) {
  KERN_ASSIGN_OR_RETURN(auto model, parse_tokenizer_json(json, name));
  return Tokenizer(std::move(model));
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text) const {
  if (text.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return make_error(ErrorKind::kUsage, "encode: text of " + std::to_string(text.size()) +
                                             " B exceeds the limit of 2147483647 B");
  }
  if (const size_t bad = find_invalid_utf8(text); bad != text.size()) {
    return make_error(ErrorKind::kUsage, "encode: text is not valid UTF-8 at byte " + std::to_string(bad));
  }
  const TokenizerModel& m = *model_;
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  BpeWorkspace workspace;
  std::vector<TextSplit> raw_splits, normalized_splits;
  std::string normalized;
  std::vector<std::string_view> pieces, next_pieces;

  // 1. Added tokens matched on the raw text (normalized == false).
  m.raw_matcher.find_matches(text, raw_splits);
  for (const TextSplit& raw : raw_splits) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    // 2. The rest is normalized, then searched for normalized added tokens.
    normalized.clear();
    KERN_RETURN_IF_ERROR(normalize(m.normalizer, text.substr(raw.begin, raw.end - raw.begin), normalized));
    normalized_splits.clear();
    m.normalized_matcher.find_matches(normalized, normalized_splits);
    for (const TextSplit& split : normalized_splits) {
      if (split.id >= 0) {
        ids.push_back(split.id);
        continue;
      }
      // 3. Pre-tokenizer splits, then BPE on each piece's bytes.
      pieces.assign(1, std::string_view(normalized).substr(split.begin, split.end - split.begin));
      for (const SplitRegex& regex : m.splits) {
        next_pieces.clear();
        for (std::string_view piece : pieces) KERN_RETURN_IF_ERROR(regex.split(piece, next_pieces));
        pieces.swap(next_pieces);
      }
      for (std::string_view piece : pieces) m.bpe.encode_word(piece, ids, workspace);
    }
  }
  return ids;
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  const TokenizerModel& m = *model_;
  if (id < 0 || id >= vocab_size()) return {};
  const uint32_t begin = m.id_offsets[id];
  return std::string_view(m.id_bytes).substr(begin, m.id_offsets[id + 1] - begin);
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && (model_->id_flags[id] & TokenizerModel::kSpecial) != 0;
}

bool Tokenizer::has_token(int64_t id) const {
  return id >= 0 && id < vocab_size() && (model_->id_flags[id] & TokenizerModel::kHasToken) != 0;
}

size_t Tokenizer::max_token_bytes() const {
  size_t most = 0;
  for (int32_t id = 0; id < vocab_size(); ++id) most = std::max(most, token_bytes(id).size());
  for (const AddedToken& t : added_tokens()) {
    if (t.lstrip || t.rstrip) return 0;
    most = std::max(most, t.content.size());
  }
  return most;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(model_->id_flags.size()); }

const std::vector<AddedToken>& Tokenizer::added_tokens() const { return model_->added_tokens; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = model_->added_ids.find(token); it != model_->added_ids.end()) return it->second;
  return model_->vocab.find(token);
}

namespace {

/// Whether decode emits token `id`: it has a token and is not a skipped special.
bool decodes(const TokenizerModel& m, int32_t id, bool skip_special) {
  if (id < 0 || static_cast<size_t>(id) >= m.id_flags.size()) return false;
  const uint8_t flags = m.id_flags[id];
  return (flags & TokenizerModel::kHasToken) && !(skip_special && (flags & TokenizerModel::kSpecial));
}

}  // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (decodes(*model_, id, skip_special_tokens)) bytes.append(token_bytes(id));
  }
  std::string text;
  text.reserve(bytes.size());
  append_utf8_lossy(bytes, text);
  return text;
}

std::string StreamDecoder::push(int32_t id) {
  std::string out;
  if (!decodes(*tokenizer_.model_, id, skip_special_)) return out;
  utf8_.push(tokenizer_.token_bytes(id), out);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  utf8_.finish(out);
  return out;
}

}  // namespace kern::tok
