// Ranks 1 .. N-1 of `kern-run serve --tp N` (docs/parallel.md "serve"):
// no HTTP server, only the engine, driven by rank 0's step orders.
#pragma once

#include "kern-run/serve/serve_options.h"

namespace kern::run::serve {

/// Loads this rank's shard, then makes the engine calls and steps rank 0
/// broadcasts (tp_orders.h) until rank 0 orders the end: exit 0. A failed
/// load, a failed broadcast (rank 0 gone or hung) or engine calls that fail
/// here but not on rank 0: the error on stderr, exit 1 (rank 0's watcher
/// then ends every rank, tp_ranks.h). SIGINT is ignored: a terminal's Ctrl-C
/// reaches every rank, and rank 0 alone decides how the server stops.
int run_serve_rank(const ServeOptions& o);

}  // namespace kern::run::serve
