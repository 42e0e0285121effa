// Each rank's memory and collectives (rank_figures.h).
#include "kern-run/rank_figures.h"

#include "kern-run/all_gather_bytes.h"
#include "kern-run/number_text.h"
#include "kern-run/report.h"
#include "kern-run/wire_bytes.h"

namespace kern::run {

RankFigures rank_figures_of(engine::Model& model, uint32_t rank) {
  RankFigures f;
  f.rank = rank;
  f.device = model.device_name();
  const PlanMemoryBytes& m = model.executable().memory().bytes;
  f.weights = m.weights;
  f.states = m.states.value_or(0);
  f.arena = m.arena;
  f.io = m.io;
  f.total = m.total.value_or(0);
  f.peak_rss = peak_rss_bytes();
  f.collective = model.executable().device().collective_stats();
  return f;
}

std::vector<uint8_t> encode_rank_figures(const RankFigures& f) {
  WireWriter w;
  w.put(f.rank);
  w.put_string(f.device);
  w.put(f.weights);
  w.put(f.states);
  w.put(f.arena);
  w.put(f.io);
  w.put(f.total);
  w.put(f.peak_rss);
  w.put<uint8_t>(f.collective.has_value());
  if (f.collective) {
    w.put(f.collective->calls);
    w.put(f.collective->bytes_sent);
    w.put(f.collective->wait_ms);
  }
  return w.take();
}

Result<RankFigures> decode_rank_figures(std::span<const uint8_t> bytes) {
  WireReader in(bytes, "rank figures");
  RankFigures f;
  KERN_RETURN_IF_ERROR(in.get(f.rank, "rank"));
  KERN_RETURN_IF_ERROR(in.get_string(f.device, "device"));
  KERN_RETURN_IF_ERROR(in.get(f.weights, "weights"));
  KERN_RETURN_IF_ERROR(in.get(f.states, "states"));
  KERN_RETURN_IF_ERROR(in.get(f.arena, "arena"));
  KERN_RETURN_IF_ERROR(in.get(f.io, "io"));
  KERN_RETURN_IF_ERROR(in.get(f.total, "total"));
  KERN_RETURN_IF_ERROR(in.get(f.peak_rss, "peak_rss"));
  uint8_t has_collective = 0;
  KERN_RETURN_IF_ERROR(in.get(has_collective, "collective"));
  if (has_collective > 1)
    return make_error(ErrorKind::kDevice, "rank figures: collective flag " + std::to_string(has_collective));
  if (has_collective) {
    cpu::CollectiveStats c;
    KERN_RETURN_IF_ERROR(in.get(c.calls, "collective calls"));
    KERN_RETURN_IF_ERROR(in.get(c.bytes_sent, "collective bytes_sent"));
    KERN_RETURN_IF_ERROR(in.get(c.wait_ms, "collective wait_ms"));
    f.collective = c;
  }
  KERN_RETURN_IF_ERROR(in.expect_done());
  return f;
}

Result<std::vector<RankFigures>> decode_gathered_figures(const std::vector<std::vector<uint8_t>>& bytes,
                                                         std::optional<uint32_t> skip) {
  std::vector<RankFigures> out(bytes.size());
  for (uint32_t r = 0; r < bytes.size(); ++r) {
    if (skip && *skip == r) continue;
    KERN_ASSIGN_OR_RETURN(out[r], decode_rank_figures(bytes[r]), "rank " + std::to_string(r));
    if (out[r].rank != r)
      return make_error(ErrorKind::kDevice, "rank " + std::to_string(r) + " sent the figures of rank " +
                                                std::to_string(out[r].rank));
  }
  return out;
}

Result<std::vector<RankFigures>> gather_rank_figures(cpu::Collective& collective, const RankFigures& mine) {
  const std::vector<uint8_t> bytes = encode_rank_figures(mine);
  KERN_ASSIGN_OR_RETURN(auto all, all_gather_bytes(collective, bytes, kMaxRankFiguresBytes, "rank figures"));
  return decode_gathered_figures(all, std::nullopt);
}

std::string render_rank_lines(const std::vector<RankFigures>& ranks) {
  auto mb = [](double b) { return format_double("%.1f", b / 1e6); };
  std::string out;
  for (const RankFigures& f : ranks) {
    out += "rank " + std::to_string(f.rank) + " (" + f.device + "): weights " + mb(f.weights) + " MB, states " +
           mb(f.states) + " MB, arena " + mb(f.arena) + " MB, io " + mb(f.io) + " MB, total " + mb(f.total) + " MB";
    if (f.peak_rss > 0) out += "; peak resident " + mb(f.peak_rss) + " MB";
    if (f.collective)
      out += "; collectives " + std::to_string(f.collective->calls) + " calls, " +
             mb(static_cast<double>(f.collective->bytes_sent)) + " MB sent, " +
             format_double("%.1f", f.collective->wait_ms) + " ms";
    out += "\n";
  }
  return out;
}

void write_ranks_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::vector<RankFigures>& ranks) {
  w.Key("ranks");
  w.StartArray();
  for (const RankFigures& f : ranks) {
    w.StartObject();
    w.Key("rank");
    w.Uint(f.rank);
    w.Key("device");
    w.String(f.device.c_str(), static_cast<rapidjson::SizeType>(f.device.size()));
    w.Key("memory");
    w.StartObject();
    const std::pair<const char*, uint64_t> memory[] = {{"weights", f.weights}, {"states", f.states},
                                                       {"arena", f.arena},     {"io", f.io},
                                                       {"total", f.total},     {"peak_rss", f.peak_rss}};
    for (const auto& [key, v] : memory) {
      w.Key(key);
      w.Uint64(v);
    }
    w.EndObject();
    w.Key("collective");
    if (f.collective) {
      w.StartObject();
      w.Key("calls");
      w.Uint64(f.collective->calls);
      w.Key("bytes_sent");
      w.Uint64(f.collective->bytes_sent);
      w.Key("wait_ms");
      w.Double(f.collective->wait_ms);
      w.EndObject();
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace kern::run
