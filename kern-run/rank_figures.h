// Each rank's memory and collectives in a tensor-parallel world
// (docs/parallel.md "Per-rank figures"). Every rank holds its own shard of
// the weights, its own states and arena, on its own device, in its own
// process; rank 0 reports them all: kern-run's memory report (text and
// --json `ranks`) and serve's /metrics (`rank` labels). The figures travel
// as bytes over the ranks' collective endpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "kern-engine/model.h"
#include "kernels-src/cpu/collective.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::run {

/// One rank's figures. Memory in bytes by the memory plan's classes of
/// allocation (docs/memory-plan.md: the weights, the states at the loaded
/// capacity, the workspace arena, the input/output/carry buffers, and their
/// sum), on the rank's device.
struct RankFigures {
  uint32_t rank = 0;
  std::string device;  ///< the rank's Device::name() ("cpu", "cuda:1 (...)")
  uint64_t weights = 0;
  uint64_t states = 0;
  uint64_t arena = 0;
  uint64_t io = 0;
  uint64_t total = 0;
  uint64_t peak_rss = 0;  ///< the rank process's peak resident memory (bytes; 0 = unknown)
  /// What the rank's collectives cost so far; empty where its device has
  /// no collective statistics (the cuda device's NCCL calls are not timed).
  std::optional<cpu::CollectiveStats> collective;
};

/// The figures of the model loaded in this process, as rank `rank`; the
/// peak resident memory is read now (getrusage).
RankFigures rank_figures_of(engine::Model& model, uint32_t rank);

/// The figures as bytes (wire_bytes.h).
std::vector<uint8_t> encode_rank_figures(const RankFigures& f);

/// Reads encode_rank_figures' bytes. Errors (kDevice): truncated or
/// trailing bytes, a device name longer than the bytes (they come from
/// another process: untrusted).
Result<RankFigures> decode_rank_figures(std::span<const uint8_t> bytes);

/// Every rank's figures, indexed by rank; every rank calls it at the same
/// point (an all-gather). Errors (kDevice): the all-gather's, a rank's
/// unreadable bytes, or figures whose rank is not the sender's.
Result<std::vector<RankFigures>> gather_rank_figures(cpu::Collective& collective, const RankFigures& mine);

/// Checks and decodes every rank's bytes from a variable-size all-gather
/// (`bytes[r]` from rank r) except `skip`'s; the result has `bytes.size()`
/// entries and `skip`'s is left default. Errors as gather_rank_figures.
Result<std::vector<RankFigures>> decode_gathered_figures(const std::vector<std::vector<uint8_t>>& bytes,
                                                         std::optional<uint32_t> skip);

/// The memory report's per-rank lines, one a rank: "rank R (DEVICE):
/// weights X MB, states X MB, arena X MB, io X MB, total X MB; peak
/// resident X MB; collectives N calls, X MB sent, X ms" (MB = 1e6 bytes).
std::string render_rank_lines(const std::vector<RankFigures>& ranks);

/// --json's `ranks`: an array of {rank, device, memory {weights, states,
/// arena, io, total, peak_rss}, collective {calls, bytes_sent, wait_ms} or
/// null}, in bytes and milliseconds.
void write_ranks_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::vector<RankFigures>& ranks);

/// The largest figures message (bytes): a bound on what a rank allocates
/// for a peer's size (a device name is far shorter).
inline constexpr uint64_t kMaxRankFiguresBytes = 64 * 1024;

}  // namespace kern::run
