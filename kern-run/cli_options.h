// kern-run's command line (SPEC §7): parsed with CLI11 into plain options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kern-run/load_settings.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kern::run {

/// One `--dump-buffer NAME=FILE`.
struct DumpRequest {
  std::string buffer;
  std::string path;
};

/// Everything the command line of a generation run says. Exactly one prompt
/// source: --prompt-ids, --prompt, --prompt-file, or stdin when none is given.
struct RunOptions {
  std::string plan_path;
  LoadSettings load;  ///< --weights, --random-weights, --eager, --device, --kernels, -v, --poison-workspace
  std::optional<std::vector<int64_t>> prompt_ids;  ///< --prompt-ids (no tokenizer needed)
  std::optional<std::string> prompt_text;  ///< --prompt TEXT
  std::string prompt_file;                 ///< --prompt-file F ("-": stdin); empty: none
  std::string tokenizer_path;              ///< --tokenizer: HF tokenizer.json; empty: ids only
  bool chat = false;                       ///< wrap the prompt in Qwen3's chat template
  std::optional<std::string> system;       ///< --system: the chat's system turn
  bool no_think = false;                   ///< --no-think: the chat's empty think block
  bool ignore_eos = false;                 ///< --ignore-eos: do not stop at end tokens
  uint64_t steps = 128;
  uint64_t chunk = 512;
  std::optional<uint64_t> capacity;  ///< tokens; default min(4096, 16 x block table pages, RoPE rows) (engine::default_capacity)
  bool json = false;
  std::vector<DumpRequest> dumps;
  bool sync = false;  ///< --sync: the synchronous decode loop (model_runner.h)
  std::vector<int64_t> stop_ids;  ///< --stop-ids: more ids that end generation (besides the tokenizer's end tokens)
  bool spec = false;  ///< --spec: speculative decoding with the plan's DSpark draft (engine.h)
  // Sampling (engine::SamplingParams; docs/running.md "Sampling"): --temperature 0 is greedy.
  float temperature = 0.0f;     ///< --temperature
  uint32_t top_k = 0;           ///< --top-k (0: off)
  float top_p = 1.0f;           ///< --top-p (1: off)
  float min_p = 0.0f;           ///< --min-p (0: off)
  std::optional<uint64_t> seed; ///< --seed; none: kern-run picks one (std::random_device) and reports it
  bool interactive = false;  ///< -i/--interactive with --chat: a conversation on stdin (chat_command.h)
  std::string requests_path;  ///< --requests FILE.jsonl ("-": stdin): many requests, batched (run_requests.h)
  std::optional<uint64_t> max_batch;  ///< --max-batch: sequences at once (default: the plan's max_batch)
  /// false (--no-prefix-cache): with --requests and --chat -i, prefill every
  /// prompt whole instead of mapping its cached prefix (docs/serving.md).
  bool prefix_cache = true;
};

/// The files of a model folder written by examples/convert_hf.py.
inline constexpr const char* kModelPlanFile = "model.kplan";
inline constexpr const char* kModelWeightsFile = "weights.safetensors";
/// Rank 0's weights in a tensor-parallel model folder (convert_hf.py --tp N);
/// rank r's are weights.rank<r>.safetensors (model_rank_weights_file).
inline constexpr const char* kModelRank0WeightsFile = "weights.rank0.safetensors";
/// "weights.rank<r>.safetensors".
inline std::string model_rank_weights_file(uint32_t rank) {
  return "weights.rank" + std::to_string(rank) + ".safetensors";
}
inline constexpr const char* kModelTokenizerFile = "tokenizer.json";

/// The load options `kern-run` and `kern-run bench` share: --weights,
/// --random-weights SEED (instead of --weights), --eager, --device and
/// --kernels, registered on a CLI11 app and written into `settings`.
class LoadOptionsParser {
 public:
  /// Registers the options; `settings` must outlive this object.
  LoadOptionsParser(CLI::App& app, LoadSettings& settings);
  /// After the app parsed: records the --random-weights seed and resolves a
  /// model folder (examples/convert_hf.py's output) given as the plan:
  /// `plan_path` DIR becomes DIR/model.kplan, the weights default to
  /// DIR/weights.safetensors and, when `tokenizer_path` is given and empty,
  /// the tokenizer to DIR/tokenizer.json if present (the kernels already
  /// default to the plan's directory). Errors (kUsage): neither --weights nor
  /// --random-weights given (nor a model folder's weights); a folder without
  /// model.kplan.
  Status finish(std::string& plan_path, std::string* tokenizer_path = nullptr);

 private:
  LoadSettings& settings_;
  CLI::Option* weights_ = nullptr;
  CLI::Option* random_ = nullptr;
  uint64_t random_seed_ = 0;
  CLI::Option* tp_rank_ = nullptr;
  uint32_t tp_rank_value_ = 0;
};

/// Parses a list of integer ids: "1,2,3" or the JSON array "[1,2,3]";
/// whitespace may surround items and the list (a trailing newline from a
/// file); "" and "[]" are empty lists. Items are decimal with an optional
/// sign. Errors (kUsage) start with `option`: an item that is not an
/// integer (quoted, non-printable bytes escaped: "'abc' is not an integer
/// token id", `noun` naming what the ids are), one beyond int64 ("... is
/// out of range for a token id"), an empty item ("1,,3", "1,2,"), or an
/// unbalanced or inner bracket ("[1,2", "1,2]", "[1,2]]"). Shared by
/// --prompt-ids, detokenize --ids and bench -p/-n.
Result<std::vector<int64_t>> parse_id_list(std::string_view text, const std::string& option = "--prompt-ids",
                                           const std::string& noun = "token id");

/// Parses "NAME=FILE" (both non-empty). Errors (kUsage) quote the text.
Result<DumpRequest> parse_dump_request(const std::string& text);

/// Outcome of parsing argv: options, or an exit code to return right away
/// (--help printed: 0; a CLI error printed to stderr: 2).
struct ParsedCommandLine {
  std::optional<RunOptions> options;
  int exit_code = 0;
};

/// Parses argv (the generation run, not a subcommand) with CLI11; prints
/// help or errors itself. Option combinations that cannot work (two prompt
/// sources, text without --tokenizer, --chat with --prompt-ids) are usage
/// errors (exit code 2).
ParsedCommandLine parse_command_line(int argc, char** argv);

}  // namespace kern::run
