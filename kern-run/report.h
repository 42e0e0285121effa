// kern-run's output: the generated ids and speeds, as text or as exactly one
// JSON object (--json) on stdout.
#pragma once

#include <string>

#include "kern-run/generate.h"

namespace kern::run {

/// What is reported besides the generation result.
struct ReportContext {
  const std::vector<int64_t>* prompt_ids = nullptr;  ///< borrowed
  std::string device;
  uint64_t capacity = 0;
};

/// Human-readable lines: generated ids, prefill tok/s, decode ms/token.
std::string render_text(const GenerateResult& r, const ReportContext& ctx);

/// One JSON object (no trailing newline) with `generated_ids`, `prompt_ids`,
/// `prefill_ms`, `prefill_tokens_per_s`, `decode_ms_per_token`,
/// `decode_tokens_per_s`, `decode_steps`, `chunk`, `capacity`, `device`.
/// Speeds are 0 when nothing was timed.
std::string render_json(const GenerateResult& r, const ReportContext& ctx);

}  // namespace kern::run
