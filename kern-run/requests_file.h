// `kern-run PLAN --requests FILE.jsonl` (docs/batching.md): one request per
// line, a JSON object with the OpenAI / vLLM field names:
//   prompt_ids [ids] | prompt "text" (needs --tokenizer), max_tokens (>= 1;
//   default --steps), temperature (>= 0), top_k (>= 0), top_p (0, 1],
//   min_p [0, 1], seed (u64), stop_ids [ids], stop "s" | ["s", ...] (needs
//   --tokenizer), ignore_eos (bool).
// Blank lines are skipped. Every bad line is reported as FILE:LINE:COLUMN:
// what was expected (all of them, at most kMaxRequestErrors), so nothing
// runs on a file with any bad line. Values are checked for their JSON type
// and range here; ids against the vocabulary and the capacity later
// (engine::check_request, with the same FILE:LINE context).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/request.h"

namespace kern::run {

/// At most this many bad lines are listed (then "and N more").
inline constexpr size_t kMaxRequestErrors = 20;

/// One parsed line.
struct RequestLine {
  uint32_t line = 0;                       ///< 1-based line of the file
  std::vector<int64_t> prompt_ids;         ///< prompt_ids (empty with `prompt`)
  std::optional<std::string> prompt;       ///< prompt text
  std::optional<uint64_t> max_tokens;      ///< absent: the caller's default
  engine::SamplingParams sampling;         ///< temperature, top_k, top_p, min_p, seed
  bool has_seed = false;                   ///< seed given
  std::vector<int64_t> stop_ids;
  std::vector<std::string> stop;           ///< stop strings (need a tokenizer)
  bool ignore_eos = false;
};

/// No capacity given: prompt_ids of any length are read.
inline constexpr uint64_t kNoIdLimit = UINT64_MAX;

/// Parses the text of a requests file named `path` (for messages). Errors
/// (kUsage): one "PATH:LINE:COL: message" line per bad line (a JSON syntax
/// error, a non-object, an unknown or duplicate field, a wrong type or a
/// value out of range, neither or both of prompt_ids and prompt); a file
/// without any request. A line whose prompt_ids hold more than `capacity`
/// ids (the KV capacity in tokens) is refused when id capacity + 1 is read,
/// at the array's column: the rest of the line is not parsed, so such a
/// line costs time and memory in proportion to the capacity, not to its
/// length (the file's text itself is held whole, up to read_file's limit).
Result<std::vector<RequestLine>> parse_requests(const std::string& path, const std::string& text,
                                                uint64_t capacity = kNoIdLimit);

/// Reads `path` ("-": stdin; both up to kDefaultMaxReadBytes) and parses it
/// (parse_requests with `capacity`). Errors: the read's (kIo; stdin closed or
/// too long: kUsage), parse_requests'.
Result<std::vector<RequestLine>> read_requests_file(const std::string& path, uint64_t capacity = kNoIdLimit);

}  // namespace kern::run
