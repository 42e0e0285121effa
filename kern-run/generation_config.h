// A model folder's generation_config.json (Hugging Face's file of generation
// defaults; examples/convert_hf.py writes it): the ids that end generation.
// The plan names no model, so a family whose end token is not one the
// tokenizer names (end_tokens.h) reaches kern-run through this file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace kern::run {

/// The model folder's file of end ids (beside model.kplan).
inline constexpr const char* kModelGenerationConfigFile = "generation_config.json";

/// Reads `path`'s `eos_token_id`: one id or an array of ids (Llama 3 lists
/// three), each a non-negative integer below 2^31; absent or null gives an
/// empty list. Other members are ignored. Errors (kManifest, naming the file,
/// line:column and field): not JSON, nesting past kMaxJsonDepth, not an
/// object, an `eos_token_id` of another type or out of range. kIo: the file
/// cannot be read (or is over 1 MiB: real ones are a few hundred bytes).
/// The ids are checked against the plan's vocabulary where they are used.
Result<std::vector<int64_t>> read_generation_end_ids(const std::string& path);

/// The context of an error about those ids once the plan is known (an id
/// outside the plan's vocabulary, engine::check_token_ids).
inline constexpr const char* kGenerationEndIdsContext = "the model folder's generation_config.json eos_token_id";

}  // namespace kern::run
