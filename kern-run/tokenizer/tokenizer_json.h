// Reading tokenizer.json into a TokenizerModel (internal). The entry point
// is parse_tokenizer_json; the pipeline sections (normalizer, pre_tokenizer,
// post_processor, decoder, truncation, padding) are read by
// pipeline_json.cpp, the model and added tokens by tokenizer_json.cpp.
#pragma once

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "kern-run/tokenizer/json_context.h"
#include "kern-run/tokenizer/tokenizer_model.h"

namespace kern::tok {

/// Parses `json` into a model; `name` stands for the file in messages.
/// Errors as documented on Tokenizer::load.
Result<std::shared_ptr<TokenizerModel>> parse_tokenizer_json(std::string_view json, std::string_view name);

/// Reads `normalizer` of the root object into model.normalizer.
Status parse_normalizer(const JsonContext& ctx, const rapidjson::Value& root, TokenizerModel& model);

/// Reads `pre_tokenizer` into model.splits (and checks the ByteLevel step).
Status parse_pre_tokenizer(const JsonContext& ctx, const rapidjson::Value& root, TokenizerModel& model);

/// Checks `post_processor`, `decoder`, `truncation` and `padding`: only the
/// settings that leave ids unchanged and decode byte-level are accepted.
Status check_post_and_decoder(const JsonContext& ctx, const rapidjson::Value& root);

}  // namespace kern::tok
