// `kern-run tokenize` and `kern-run detokenize`: the tokenizer alone, for
// debugging and scripting. tokenize prints the ids of a text as one JSON
// array line; detokenize prints the text of ids (a JSON array or "1,2,3")
// exactly, without a trailing newline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-run/tokenizer/tokenizer.h"

namespace kern::run {

/// `ids` as int32 when each one has a token in `tokenizer` (HF's decode
/// would skip the others silently). Errors (kUsage) start with `option` and
/// name the id, its index and the valid range: "--ids: id 151700 at index 0
/// is outside the tokenizer's ids [0, 151669)", or "... has no token (a gap
/// in the tokenizer's ids [0, N))".
Result<std::vector<int32_t>> check_decodable(const tok::Tokenizer& tokenizer, const std::vector<int64_t>& ids,
                                             const std::string& option);

/// `kern-run tokenize --tokenizer T (--prompt TEXT | --prompt-file F)`:
/// argv[0] is "tokenize". --chat (with --system, --no-think) templates the
/// text first. Exit codes: 0; 1 tokenizer.json content error; 2 usage or
/// I/O error (cli_errors.h).
int run_tokenize(int argc, char** argv);

/// `kern-run detokenize --tokenizer T (--ids 1,2,3 | --ids-file F)`: F
/// holds a JSON array of ids or a comma-separated list (parse_id_list; "-"
/// or neither option: stdin). Every id must have a token (check_decodable).
/// --skip-special drops special tokens. Exit codes as run_tokenize.
int run_detokenize(int argc, char** argv);

}  // namespace kern::run
