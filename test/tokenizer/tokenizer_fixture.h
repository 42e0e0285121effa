// A small valid tokenizer.json built in memory for unit tests (fakes over
// files): the 256 byte-level symbols as ids 0..255 in byte order, a few
// merges, two added tokens, Qwen3's pipeline. Tests mutate the document to
// make one thing wrong at a time.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <functional>
#include <string>

#include "kern-run/tokenizer/byte_level.h"

namespace kern::tok::testing {

/// Merges of the fixture, in rank order; merged tokens get ids 256, 257, ...
/// ("Ġ" is the byte-level space): "h"+"e" -> 256 "he", "l"+"l" -> 257 "ll",
/// "he"+"ll" -> 258 "hell", "hell"+"o" -> 259 "hello", "Ġ"+"hello" -> 260.
inline const char* const kFixtureMerges[] = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 hello"};

/// Ids of the added tokens: "<|im_start|>" (special) and "<tool>" (not special).
inline constexpr int kImStartId = 261;
inline constexpr int kToolId = 262;

inline std::string fixture_json(const std::function<void(rapidjson::Document&)>& mutate = {}) {
  std::string vocab;
  for (int b = 0; b < 256; ++b) {
    rapidjson::StringBuffer key;
    rapidjson::Writer<rapidjson::StringBuffer> w(key);
    w.String(bytes_to_byte_level(std::string(1, static_cast<char>(b))).c_str());
    vocab += std::string(key.GetString()) + ": " + std::to_string(b) + ", ";
  }
  vocab += "\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\xC4\xA0hello\": 260";
  std::string merges;
  for (const char* m : kFixtureMerges) merges += std::string(merges.empty() ? "" : ", ") + "\"" + m + "\"";
  const std::string json = R"({
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [
    {"id": 261, "content": "<|im_start|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 262, "content": "<tool>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}
  ],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
            "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": {)" + vocab + R"(},
            "merges": [)" + merges + R"(]}
})";
  if (!mutate) return json;
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  mutate(doc);
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  doc.Accept(w);
  return out.GetString();
}

}  // namespace kern::tok::testing
