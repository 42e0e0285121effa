#include "kern-run/cli_options.h"

#include <charconv>
#include <iostream>

#include "CLI/CLI.hpp"

namespace kern::run {

Result<std::vector<int64_t>> parse_id_list(const std::string& text) {
  std::vector<int64_t> ids;
  if (text.empty()) return ids;  // an empty prompt is reported by check_request
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(begin, end - begin);
    int64_t v = 0;
    const char* first = item.data();
    const char* last = item.data() + item.size();
    if (!item.empty() && item[0] == '+') ++first;
    auto [p, ec] = std::from_chars(first, last, v);
    if (item.empty() || ec != std::errc() || p != last)
      return make_error(ErrorKind::kUsage, "--prompt-ids: '" + item + "' is not an integer token id");
    ids.push_back(v);
    begin = end + 1;
  }
  return ids;
}

Result<DumpRequest> parse_dump_request(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return make_error(ErrorKind::kUsage, "--dump-buffer '" + text + "': expected NAME=FILE");
  return DumpRequest{text.substr(0, eq), text.substr(eq + 1)};
}

ParsedCommandLine parse_command_line(int argc, char** argv) {
  RunOptions o;
  std::string ids_text;
  std::vector<std::string> dumps;
  uint64_t capacity = 0;
  CLI::App app{"kern-run: replay a .kplan; greedy Qwen3 generation (SPEC §7)", "kern-run"};
  app.add_option("plan", o.plan_path, "the .kplan written by kern-verify")->required();
  app.add_option("--weights", o.weights_path, "safetensors file with the plan's weights")->required();
  app.add_option("--prompt-ids", ids_text, "comma-separated prompt token ids, e.g. 1,2,3")->required();
  app.add_option("--steps", o.steps, "number of ids to generate (>= 1)")->required();
  app.add_option("--chunk", o.chunk, "prefill chunk in tokens (clamped to the tokens bound)")->capture_default_str();
  auto* cap = app.add_option("--capacity", capacity, "KV capacity in tokens (default min(4096, 16 x block table pages))");
  app.add_option("--device", o.device, "auto | cpu | cuda")->capture_default_str();
  app.add_option("--kernels", o.kernels_dir, "directory of the plan's cubins (default: the plan's directory)");
  app.add_flag("--json", o.json, "print exactly one JSON object on stdout");
  app.add_flag("-v,--verbose", o.verbose, "log load notes (unused weights ...) to stderr");
  app.add_option("--dump-buffer", dumps, "write buffer NAME's bytes to FILE after the run (repeatable)")
      ->allow_extra_args(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return {std::nullopt, rc == 0 ? 0 : 2};
  }
  auto ids = parse_id_list(ids_text);
  if (!ids.ok()) {
    std::cerr << "kern-run: error: " << ids.error().message << "\n";
    return {std::nullopt, 2};
  }
  o.prompt_ids = std::move(ids.value());
  if (cap->count() > 0) o.capacity = capacity;
  for (const auto& d : dumps) {
    auto r = parse_dump_request(d);
    if (!r.ok()) {
      std::cerr << "kern-run: error: " << r.error().message << "\n";
      return {std::nullopt, 2};
    }
    o.dumps.push_back(std::move(r.value()));
  }
  return {std::move(o), 0};
}

}  // namespace kern::run
