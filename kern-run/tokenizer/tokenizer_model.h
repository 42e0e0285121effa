// The loaded form of a tokenizer.json (internal to kern-run/tokenizer): what
// tokenizer_json.cpp builds and tokenizer.cpp runs. Owns all its strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kern-run/tokenizer/added_tokens.h"
#include "kern-run/tokenizer/bpe.h"
#include "kern-run/tokenizer/normalizer.h"
#include "kern-run/tokenizer/split_regex.h"
#include "kern-run/tokenizer/string_id_map.h"

namespace kern::tok {

struct TokenizerModel {
  NormalizerKind normalizer = NormalizerKind::kNone;
  std::vector<SplitRegex> splits;  ///< pre-tokenizer Split steps, in order
  BpeModel bpe;

  std::vector<AddedToken> added_tokens;  ///< file order
  AddedTokenMatcher raw_matcher;         ///< normalized == false tokens, on raw text
  AddedTokenMatcher normalized_matcher;  ///< normalized == true tokens, on normalized text

  /// Model vocabulary (byte-level spelling) -> id; keys view `vocab_text`.
  std::string vocab_text;
  StringIdMap vocab;
  /// Added-token content -> id; keys view `added_tokens` contents.
  std::unordered_map<std::string_view, int32_t> added_ids;

  /// Per id: the bytes it decodes to, as [offset, offset + length) into
  /// `id_bytes`; `id_offsets` has vocab_size + 1 entries.
  std::string id_bytes;
  std::vector<uint32_t> id_offsets;
  std::vector<uint8_t> id_flags;  ///< kHasToken | kSpecial per id

  static constexpr uint8_t kHasToken = 1;
  static constexpr uint8_t kSpecial = 2;

  /// String comparisons the load made to find duplicate added tokens: about
  /// one per token (a hash set), where comparing each with every earlier one
  /// made 200k added tokens take 35 s. Tests bound it instead of timing.
  uint64_t load_comparisons = 0;
};

}  // namespace kern::tok
