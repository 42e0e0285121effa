// `kern-run serve`'s command line (serve_options.h).
#include "kern-run/serve/serve_options.h"

#include <cstdlib>
#include <filesystem>

#include "CLI/CLI.hpp"
#include "kern-run/cli_checks.h"
#include "kern-run/cli_errors.h"
#include "kern-run/cli_options.h"

namespace kern::run::serve {
namespace {

/// A test hook from the environment, a count of `unit`: unset or empty is 0.
/// Errors (kUsage) name the variable.
Result<uint64_t> env_count(const char* name, const char* unit) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return uint64_t{0};
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || errno != 0 || v[0] == '-')
    return make_error(ErrorKind::kUsage, std::string("$") + name + ": '" + printable(v) +
                                             "' is not a number of " + unit);
  return static_cast<uint64_t>(n);
}

}  // namespace

ParsedServe parse_serve_command_line(int argc, char** argv) {
  ServeOptions o;
  CLI::App app{"kern-run serve: an OpenAI-compatible HTTP server (docs/serving.md)", "kern-run serve"};
  app.add_option("plan", o.plan_path, "the .kplan written by kern-verify, or a model folder (examples/convert_hf.py)")
      ->required();
  LoadOptionsParser load(app, o.load);
  app.add_option("--tokenizer", o.tokenizer_path, "HF tokenizer.json (default: the model folder's)");
  app.add_option("--host", o.host, "address to listen on")->capture_default_str();
  add_number_option(app, "--port", o.port, "TCP port (0: any free port, named in the log)", {.min = 0, .max = 65535})
      ->capture_default_str();
  add_number_option(app, "--max-batch", o.max_batch,
                    "sequences decoded at once: requests join and leave the running batch (default: the plan's "
                    "max_batch; 1 for a plan without the batched program decode_batch, e.g. a speculative plan)",
                    {.min = 1, .max = 4096});
  bool no_prefix_cache = false;
  app.add_flag("--no-prefix-cache", no_prefix_cache,
               "prefill every prompt whole instead of mapping the KV pages cached for its prefix (docs/serving.md, "
               "\"Prefix caching\")");
  add_number_option(app, "--max-queue", o.max_queue, "requests that may wait for the engine; more get 429",
                    {.min = 1, .max = 65536})
      ->capture_default_str();
  app.add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on /v1/* (default: $KERN_API_KEY)");
  app.add_option("--served-model-name", o.served_model_name, "the model id clients name (default: the plan's name)");
  add_number_option(app, "--default-max-tokens", o.default_max_tokens, "max_tokens of a request that gives none",
                    {.min = 1})
      ->capture_default_str();
  add_number_option(app, "--capacity", o.capacity, "KV capacity in tokens per sequence (prompt + generated)",
                    {.min = 1});
  add_number_option(app, "--chunk", o.chunk, "prefill chunk in tokens", {.min = 1})->capture_default_str();
  add_number_option(app, "--max-body-bytes", o.max_body_bytes, "larger request bodies get 413", {.min = 1})
      ->capture_default_str();
  // Durations become std::chrono nanoseconds added to a steady_clock time:
  // bounded so that neither overflows (and so that NaN, which passes a
  // "> 0" test, is refused).
  add_number_option(app, "--request-timeout", o.request_timeout_s, "seconds before a request is cancelled (504)",
                    {.min = kMinDurationS, .max = kMaxDurationS})
      ->capture_default_str();
  add_number_option(app, "--sse-keepalive", o.keepalive_s, "seconds without data before an SSE keep-alive comment",
                    {.min = kMinDurationS, .max = kMaxDurationS})
      ->capture_default_str();
  add_number_option(app, "--shutdown-grace", o.shutdown_grace_s, "seconds running requests may finish after SIGTERM",
                    {.min = 0, .max = kMaxDurationS})
      ->capture_default_str();
  // Limits on clients (docs/serving.md "Limits and hostile clients").
  add_number_option(app, "--max-header-bytes", o.max_header_bytes,
                    "bytes of a request's line and headers; more get 431", {.min = 1024, .max = 1u << 24})
      ->capture_default_str();
  add_number_option(app, "--max-headers", o.max_headers, "header fields in one request; more get 431",
                    {.min = 1, .max = 10000})
      ->capture_default_str();
  add_number_option(app, "--header-timeout", o.header_timeout_s,
                    "seconds for a whole request head to arrive; later: 408 and the connection closed",
                    {.min = kMinDurationS, .max = kMaxDurationS})
      ->capture_default_str();
  add_number_option(app, "--body-timeout", o.body_timeout_s,
                    "seconds for a whole request body to arrive after its head; later: 408 and the connection closed",
                    {.min = kMinDurationS, .max = kMaxDurationS})
      ->capture_default_str();
  add_number_option(app, "--max-connections", o.max_connections, "open connections; more get 503 and are closed",
                    {.min = 1, .max = 1u << 20})
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, parse_error_exit(app, e)};
  }
  o.prefix_cache = !no_prefix_cache;
  if (Status s = load.finish(o.plan_path, &o.tokenizer_path); !s.ok()) return {std::nullopt, fail(s.error())};
  if (o.tokenizer_path.empty())
    return {std::nullopt, fail(make_error(ErrorKind::kUsage, "serve needs --tokenizer (or a model folder with "
                                                             "tokenizer.json): requests are text"))};
  if (o.api_key.empty())
    if (const char* k = std::getenv("KERN_API_KEY")) o.api_key = k;
  if (o.served_model_name.empty()) {
    std::filesystem::path p(o.plan_path);
    // A model folder's plan is DIR/model.kplan: name it after DIR.
    if (p.filename() == kModelPlanFile && p.has_parent_path()) p = p.parent_path();
    o.served_model_name = p.filename().replace_extension().string();
  }
  auto load_ms = env_count("KERN_SERVE_TEST_LOAD_DELAY_MS", "milliseconds");
  if (!load_ms.ok()) return {std::nullopt, fail(load_ms.error())};
  auto step_ms = env_count("KERN_SERVE_TEST_STEP_DELAY_MS", "milliseconds");
  if (!step_ms.ok()) return {std::nullopt, fail(step_ms.error())};
  auto gather = env_count("KERN_SERVE_TEST_GATHER", "requests");
  if (!gather.ok()) return {std::nullopt, fail(gather.error())};
  if (*gather > o.max_queue)
    return {std::nullopt, fail(make_error(ErrorKind::kUsage, "$KERN_SERVE_TEST_GATHER " + std::to_string(*gather) +
                                                                 " exceeds --max-queue " +
                                                                 std::to_string(o.max_queue) + ": it would never start"))};
  o.test_load_delay_ms = *load_ms;
  o.test_step_delay_ms = *step_ms;
  o.test_gather = *gather;
  return {o, 0};
}

}  // namespace kern::run::serve
