// `kern-run tokenize` and `kern-run detokenize`: the tokenizer alone, for
// debugging and scripting. tokenize prints the ids of a text as one JSON
// array line; detokenize prints the text of ids (a JSON array or "1,2,3")
// exactly, without a trailing newline.
#pragma once

namespace kern::run {

/// `kern-run tokenize --tokenizer T (--prompt TEXT | --prompt-file F)`:
/// argv[0] is "tokenize". --chat (with --system, --no-think) templates the
/// text first. Exit codes: 0; 1 tokenizer or I/O error; 2 usage.
int run_tokenize(int argc, char** argv);

/// `kern-run detokenize --tokenizer T (--ids 1,2,3 | --ids-file F)`: F
/// holds a JSON array of ids or a comma/space-separated list ("-": stdin).
/// --skip-special drops special tokens. Exit codes as run_tokenize.
int run_detokenize(int argc, char** argv);

}  // namespace kern::run
