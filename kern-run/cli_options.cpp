// kern-run's command line parsed into plain options (cli_options.h).
#include "kern-run/cli_options.h"

#include <charconv>
#include <filesystem>

#include "CLI/CLI.hpp"
#include "common/version.h"
#include "kern-run/cli_checks.h"
#include "kern-run/cli_errors.h"
#include "kern-run/generation_config.h"

namespace kern::run {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::vector<int64_t>> parse_id_list(std::string_view text, const std::string& option, const std::string& noun) {
  auto bad = [&](const std::string& what) { return make_error(ErrorKind::kUsage, option + ": " + what); };
  std::vector<int64_t> ids;
  std::string_view list = trim(text);
  // One optional pair of brackets around the whole list (a JSON array).
  if (!list.empty() && list.front() == '[') {
    if (list.size() < 2 || list.back() != ']') return bad("'[' without a closing ']'");
    list = trim(list.substr(1, list.size() - 2));
  }
  size_t bracket = list.find_first_of("[]");
  if (bracket != std::string_view::npos)
    return bad(std::string("unexpected '") + list[bracket] + "': give ids as 1,2,3 or [1,2,3]");
  if (list.empty()) return ids;  // an empty prompt is reported by check_request
  size_t begin = 0;
  size_t index = 0;
  while (true) {
    size_t end = list.find(',', begin);
    std::string_view item = trim(list.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (item.empty()) return bad("empty item at index " + std::to_string(index) + " (two commas, or a comma at an end)");
    const char* first = item.data();
    const char* last = item.data() + item.size();
    if (item[0] == '+' && ++first != last && *first == '-') first = last;  // "+-1"
    int64_t v = 0;
    auto [p, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range && p == last)
      return bad(std::string(item) + " is out of range for a " + noun + " (at index " + std::to_string(index) + ")");
    if (first == last || ec != std::errc() || p != last)
      return bad("'" + printable(item) + "' is not an integer " + noun);
    ids.push_back(v);
    if (end == std::string_view::npos) break;
    begin = end + 1;
    ++index;
  }
  return ids;
}

Result<DumpRequest> parse_dump_request(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return make_error(ErrorKind::kUsage, "--dump-buffer '" + text + "': expected NAME=FILE");
  return DumpRequest{text.substr(0, eq), text.substr(eq + 1)};
}

LoadOptionsParser::LoadOptionsParser(CLI::App& app, LoadSettings& settings) : settings_(settings) {
  weights_ = app.add_option("--weights", settings.weights_path, "safetensors file with the plan's weights");
  random_ = add_number_option(app, "--random-weights", random_seed_,
                              "fill the weights with deterministic random values of this seed (no file; benchmarks)");
  random_->excludes(weights_);
  app.add_flag("--eager", settings.eager, "launch every step eagerly (no CUDA graphs)");
  app.add_flag("--no-pdl", settings.no_pdl,
               "launch the steps marked \"pdl\" plainly, without programmatic dependent launch (cuda)");
  app.add_flag("--no-gemv-pack", settings.no_gemv_pack,
               "cpu: the decode GEMVs read the weights as stored, without the copy packed at load (same results; "
               "less load time and memory, slower decode)");
  app.add_option("--device", settings.device, "auto | cpu | cuda")->capture_default_str();
  app.add_option("--kernels", settings.kernels_dir, "directory of the plan's cubins (default: the plan's directory)");
  add_number_option(app, "--tp", settings.tp,
                    "tensor-parallel ranks: the plan's meta.world; kern-run starts ranks 1..N-1 as its children "
                    "(cpu device over Gloo, cuda device over NCCL; docs/parallel.md)",
                    CountRange{1, 64});
  app.add_option("--gpus", settings.gpus,
                 "CUDA ordinals of the ranks, comma-separated (rank 0's first; default: the first --tp visible, "
                 "after CUDA_VISIBLE_DEVICES)");
  // Set by rank 0 on the ranks it starts (tp_ranks.h); not for users.
  tp_rank_ = app.add_option("--tp-rank", tp_rank_value_)->group("");
  app.add_option("--tp-rendezvous", settings.tp_rendezvous)->group("");
}

Status LoadOptionsParser::finish(std::string& plan_path, std::string* tokenizer_path) {
  if (random_->count() > 0) settings_.random_weights_seed = random_seed_;
  if (tp_rank_->count() > 0) {
    if (tp_rank_value_ == 0 || tp_rank_value_ >= settings_.tp || settings_.tp_rendezvous.empty())
      return make_error(ErrorKind::kUsage, "--tp-rank is set by kern-run --tp N for the ranks it starts");
    settings_.tp_rank = tp_rank_value_;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(plan_path, ec)) {  // a model folder (examples/convert_hf.py)
    const std::filesystem::path dir(plan_path);
    if (!std::filesystem::is_regular_file(dir / kModelPlanFile, ec))
      return make_error(ErrorKind::kUsage, plan_path + ": a directory without " + kModelPlanFile +
                                               ": give a .kplan, or a model folder written by examples/convert_hf.py");
    plan_path = (dir / kModelPlanFile).string();
    if (weights_->count() == 0 && random_->count() == 0 &&
        std::filesystem::is_regular_file(dir / kModelWeightsFile, ec))
      settings_.weights_path = (dir / kModelWeightsFile).string();
    // A tensor-parallel folder: each rank binds its own shard (the plan's
    // meta.world is checked against --tp when the model loads).
    if (weights_->count() == 0 && random_->count() == 0 &&
        std::filesystem::is_regular_file(dir / kModelRank0WeightsFile, ec))
      settings_.weights_path = (dir / model_rank_weights_file(settings_.tp_rank.value_or(0))).string();
    if (tokenizer_path != nullptr && tokenizer_path->empty() &&
        std::filesystem::is_regular_file(dir / kModelTokenizerFile, ec))
      *tokenizer_path = (dir / kModelTokenizerFile).string();
    if (std::filesystem::is_regular_file(dir / kModelGenerationConfigFile, ec)) {
      KERN_ASSIGN_OR_RETURN(settings_.end_ids, read_generation_end_ids((dir / kModelGenerationConfigFile).string()));
    }
  }
  if (settings_.weights_path.empty() && random_->count() == 0)
    return make_error(ErrorKind::kUsage, "--weights is required (or --random-weights SEED)");
  return {};
}

ParsedCommandLine parse_command_line(int argc, char** argv) {
  RunOptions o;
  std::string ids_text, prompt_text, system;
  std::vector<std::string> dumps;
  uint64_t capacity = 0;
  CLI::App app{"kern-run: replay a .kplan; Qwen3 generation, greedy or sampled (SPEC §7).\n"
               "Subcommands (first argument): tokenize, detokenize, bench, compare, serve (see kern-run SUBCOMMAND --help).",
               "kern-run"};
  app.set_version_flag("--version", [] {
    std::string line = version_text("kern-run");
    line.pop_back();  // CLI11 adds the newline
    return line;
  }(), "print the version, commit, plan format and build type, and exit");
  app.add_option("plan", o.plan_path, "the .kplan written by kern-verify, or a model folder (examples/convert_hf.py)")
      ->required();
  LoadOptionsParser load(app, o.load);
  auto* ids = app.add_option("--prompt-ids", ids_text, "comma-separated prompt token ids, e.g. 1,2,3");
  auto* text = app.add_option("--prompt", prompt_text, "prompt text (needs --tokenizer)");
  auto* file = app.add_option("--prompt-file", o.prompt_file, "read the prompt text from a file ('-': stdin)");
  ids->excludes(text)->excludes(file);
  text->excludes(file);
  app.add_option("--tokenizer", o.tokenizer_path, "HF tokenizer.json: text prompts and streamed text output");
  auto* chat = app.add_flag("--chat", o.chat, "wrap the prompt in Qwen3's chat template (user turn, assistant prompt)");
  auto* sys = app.add_option("--system", system, "with --chat: a system turn");
  auto* think = app.add_flag("--no-think", o.no_think, "with --chat: append an empty think block (enable_thinking=False)");
  sys->needs(chat);
  think->needs(chat);
  app.add_flag("--ignore-eos", o.ignore_eos, "keep generating past <|im_end|> and <|endoftext|>");
  add_number_option(app, "--steps", o.steps, "most ids to generate (>= 1)", {.min = 1})->capture_default_str();
  add_number_option(app, "--chunk", o.chunk, "prefill chunk in tokens (clamped to the tokens bound)", {.min = 1})
      ->capture_default_str();
  auto* cap = add_number_option(
      app, "--capacity", capacity,
      "KV capacity in tokens (default min(4096, 16 x block table pages, the RoPE table's rows))", {.min = 1});
  app.add_flag("--json", o.json, "print exactly one JSON object on stdout (ids, text, timings)");
  app.add_flag("-v,--verbose", o.load.verbose, "log load notes (unused weights ...) to stderr");
  app.add_option("--dump-buffer", dumps, "write buffer NAME's bytes to FILE after the run (repeatable)")
      ->allow_extra_args(false);
  app.add_flag("--sync", o.sync, "synchronous decode: write each step's inputs from the host and wait for its "
                                 "token before the next step (the reference loop; same ids)");
  app.add_flag("--poison-workspace", o.load.poison_workspace,
               "debug: fill the workspace arena with NaN bytes (0xFF) before every program (cpu device only)");
  std::string stop_text;
  auto* stops = app.add_option("--stop-ids", stop_text, "comma-separated ids that end generation (kept in the output), "
                                                         "besides the tokenizer's end tokens");
  app.add_flag("-i,--interactive", o.interactive, "with --chat: a conversation on stdin, one message per line, "
                                                 "the replies streamed; /exit or end of input ends it");
  app.add_flag("--spec", o.spec, "speculative decoding with the plan's DSpark draft (a manifest from "
                                 "examples/gen_qwen3_dspark_manifest.py; same ids as plain greedy decoding)");
  uint64_t seed = 0;
  add_number_option(app, "--temperature", o.temperature, "sample with this temperature (0: greedy argmax, the default)",
                    RealRange{})
      ->capture_default_str();
  add_number_option(app, "--top-k", o.top_k, "with --temperature: keep the k most likely ids (0: all)")
      ->capture_default_str();
  add_number_option(app, "--top-p", o.top_p,
                    "with --temperature: keep the most likely ids up to this probability (1: all)",
                    {.min = 0, .max = 1, .above_min = true})
      ->capture_default_str();
  add_number_option(app, "--min-p", o.min_p,
                    "with --temperature: drop ids below this fraction of the top probability (0: off)",
                    {.min = 0, .max = 1})
      ->capture_default_str();
  auto* seed_opt = add_number_option(app, "--seed", seed,
                                     "with --temperature: the sampling seed (default: a random one, "
                                     "reported on stderr and in --json)");
  uint64_t max_batch = 0;
  auto* requests = app.add_option("--requests", o.requests_path,
                                  "JSON Lines file of requests ('-': stdin), one object per line: prompt_ids or "
                                  "prompt, max_tokens, temperature, top_k, top_p, min_p, seed, stop_ids, stop, "
                                  "ignore_eos; prints one JSON result per line in request order (docs/batching.md)");
  auto* batch = add_number_option(app, "--max-batch", max_batch,
                                  "with --requests: sequences decoded at once (default: the plan's max_batch)",
                                  {.min = 1});
  batch->needs(requests);
  bool no_prefix_cache = false;
  auto* no_cache = app.add_flag("--no-prefix-cache", no_prefix_cache,
                                "with --requests or --chat -i: prefill every prompt whole instead of mapping the "
                                "KV pages cached for its prefix (docs/serving.md, \"Prefix caching\")");
  requests->excludes(ids)->excludes(text)->excludes(file)->excludes(chat);
  for (const char* name : {"--spec", "--sync", "--json", "--dump-buffer", "--stop-ids", "--temperature", "--top-k",
                           "--top-p", "--min-p", "--seed"})
    requests->excludes(app.get_option(name));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, parse_error_exit(app, e)};
  }
  if (batch->count() > 0) o.max_batch = max_batch;
  o.prefix_cache = !no_prefix_cache;
  auto usage = [](const std::string& message) {
    print_error(message);
    return ParsedCommandLine{std::nullopt, 2};
  };
  if (no_cache->count() > 0 && requests->count() == 0 && !o.interactive)
    return usage("--no-prefix-cache applies to --requests and --chat -i (a single prompt never hits the cache)");
  if (Status s = load.finish(o.plan_path, &o.tokenizer_path); !s.ok()) return {std::nullopt, fail(s.error())};
  // Every rank reads the same inputs (tp_ranks.h): stdin is rank 0's alone.
  const bool from_stdin = o.interactive || o.requests_path == "-" || o.prompt_file == "-" ||
                          (requests->count() == 0 && ids->count() == 0 && text->count() == 0 && file->count() == 0);
  if (o.load.tp > 1 && from_stdin)
    return usage("--tp " + std::to_string(o.load.tp) + " reads no stdin (every rank runs the same inputs): give "
                 "--prompt, --prompt-ids, --prompt-file FILE or --requests FILE");
  if (requests->count() > 0) {
    if (cap->count() > 0) o.capacity = capacity;
    return {std::move(o), 0};  // the requests carry their prompts (run_requests.h)
  }
  if (ids->count() > 0) {
    auto parsed = parse_id_list(ids_text);
    if (!parsed.ok()) return usage(parsed.error().message);
    o.prompt_ids = std::move(parsed.value());
    if (o.chat) return usage("--chat needs a text prompt (--prompt, --prompt-file or stdin), not --prompt-ids");
  } else if (o.interactive) {
    // Messages come from stdin: the checks are the chat command's (chat_command.cpp).
  } else if (o.tokenizer_path.empty()) {
    if (text->count() == 0 && file->count() == 0)  // nothing given; stdin alone needs a tokenizer too
      return usage("no prompt: give token ids (--prompt-ids 1,2,3) or text (--prompt TEXT, --prompt-file FILE "
                   "or stdin) with the model's --tokenizer tokenizer.json");
    return usage(std::string(text->count() > 0 ? "--prompt" : "--prompt-file") +
                 " needs --tokenizer tokenizer.json (the model's Hugging Face tokenizer) to turn text into ids; "
                 "or give ids with --prompt-ids");
  }
  if (text->count() > 0) o.prompt_text = std::move(prompt_text);
  if (sys->count() > 0) o.system = std::move(system);
  if (cap->count() > 0) o.capacity = capacity;
  if (seed_opt->count() > 0) o.seed = seed;
  if (stops->count() > 0) {
    auto parsed = parse_id_list(stop_text, "--stop-ids");
    if (!parsed.ok()) return usage(parsed.error().message);
    o.stop_ids = std::move(parsed.value());
  }
  for (const auto& d : dumps) {
    auto r = parse_dump_request(d);
    if (!r.ok()) return usage(r.error().message);
    o.dumps.push_back(std::move(r.value()));
  }
  return {std::move(o), 0};
}

}  // namespace kern::run
