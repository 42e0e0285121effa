// `kern-run serve`'s command line (docs/serving.md), parsed with CLI11; the
// load options (--weights, --device, ...) are kern-run's own
// (LoadOptionsParser), and a model folder is accepted like a plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kern-run/load_settings.h"

namespace kern::run::serve {

/// The range of the duration options (--request-timeout and --sse-keepalive
/// from kMinDurationS, --shutdown-grace from 0), in seconds: a millisecond
/// to 10^6 s (about 11.6 days; "never" in practice). The largest fits
/// std::chrono nanoseconds (int64, about 292 years) many times over, also
/// when added to a steady_clock time.
inline constexpr double kMinDurationS = 1e-3;
inline constexpr double kMaxDurationS = 1e6;

/// Everything `kern-run serve` is told.
struct ServeOptions {
  std::string plan_path;
  LoadSettings load;
  std::string tokenizer_path;  ///< required (a model folder's tokenizer.json by default)
  std::string host = "127.0.0.1";
  int port = 8000;  ///< 0: any free port (the "listening on" log line names it)
  /// Sequences decoded at once (continuous batching over the plan's
  /// decode_batch); none: the plan's max_batch, 1 without decode_batch.
  std::optional<size_t> max_batch;
  size_t max_queue = 64;  ///< requests waiting before the engine; more get 429
  std::string api_key;    ///< --api-key or $KERN_API_KEY; empty: no authentication
  std::string served_model_name;  ///< empty: the plan's (or model folder's) file name
  uint64_t default_max_tokens = 256;  ///< max_tokens when a request has none (clamped to the capacity)
  std::optional<uint64_t> capacity;   ///< tokens per sequence; default engine::default_capacity
  uint64_t chunk = 512;               ///< prefill chunk in tokens
  size_t max_body_bytes = 8u << 20;   ///< larger request bodies get 413
  double request_timeout_s = 600;     ///< a request running longer is cancelled (504)
  double keepalive_s = 5;             ///< an SSE comment after this long without data
  double shutdown_grace_s = 30;       ///< SIGTERM: running requests may finish for this long
  // Limits on clients (http_server.h HttpLimits; docs/serving.md "Limits and hostile clients").
  uint32_t max_header_bytes = 32u << 10;  ///< request line + headers; more get 431
  size_t max_headers = 100;               ///< header fields; more get 431
  double header_timeout_s = 10;           ///< the whole request head; later: 408
  double body_timeout_s = 30;             ///< the whole body after the head; later: 408
  size_t max_connections = 512;           ///< open connections; more get 503
  // Test hooks (environment, docs/serving.md): slow loading, slow steps, a
  // first batch gathered before it starts.
  uint64_t test_load_delay_ms = 0;  ///< $KERN_SERVE_TEST_LOAD_DELAY_MS
  uint64_t test_step_delay_ms = 0;  ///< $KERN_SERVE_TEST_STEP_DELAY_MS
  bool prefix_cache = true;         ///< false: --no-prefix-cache (docs/serving.md "Prefix caching")
  uint64_t test_gather = 0;         ///< $KERN_SERVE_TEST_GATHER (requests)
};

/// Outcome of parsing: options, or an exit code to return (0 after --help, 2 on an error printed).
struct ParsedServe {
  std::optional<ServeOptions> options;
  int exit_code = 0;
};

/// Parses `kern-run serve` argv (argv[0] is "serve"). Errors (exit 2, one
/// line printed): CLI11's, numbers included (add_number_option: a port
/// outside [0, 65535], --max-batch or --max-queue 0, a duration that is NaN,
/// infinite or outside [kMinDurationS, kMaxDurationS]);
/// LoadOptionsParser::finish's; no tokenizer; a test hook variable that is
/// not a number.
ParsedServe parse_serve_command_line(int argc, char** argv);

}  // namespace kern::run::serve
