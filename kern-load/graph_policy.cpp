// When a program run is captured, replayed from a graph or run eagerly (graph_policy.h).
#include "kern-load/graph_policy.h"

#include <algorithm>

namespace kern::load {

namespace {

std::string values_to_string(std::span<const uint64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

bool same(std::span<const uint64_t> a, std::span<const uint64_t> b) { return std::ranges::equal(a, b); }

}  // namespace

Status check_replay(const CapturedGraph& graph, uint32_t program, std::span<const uint64_t> symbols) {
  if (graph.program != program)
    return make_error(ErrorKind::kUsage, "graph of program " + std::to_string(graph.program) +
                                             " cannot replay program " + std::to_string(program));
  if (!same(graph.symbols, symbols))
    return make_error(ErrorKind::kUsage, "graph of program " + std::to_string(program) +
                                             " was captured at symbol values " + values_to_string(graph.symbols) +
                                             ", this run has " + values_to_string(symbols) +
                                             "; refusing to replay it");
  return Status::ok_status();
}

GraphPolicy::GraphPolicy(GraphPolicyOptions options) : options_(options) {}

GraphDecision GraphPolicy::decide(uint32_t program, std::span<const uint64_t> symbols) {
  if (!active()) return {};
  for (const CapturedGraph& g : graphs_)
    if (g.program == program && same(g.symbols, symbols)) return {GraphAction::kReplay, &g};
  auto it = std::ranges::find_if(seen_, [&](const Seen& s) { return s.program == program && same(s.symbols, symbols); });
  if (it == seen_.end()) {
    if (seen_.size() >= options_.max_tracked_keys) return {};
    seen_.push_back(Seen{program, {symbols.begin(), symbols.end()}, 0});
    it = seen_.end() - 1;
  }
  if (it->runs >= options_.capture_after && graphs_.size() < options_.max_graphs) return {GraphAction::kCapture};
  ++it->runs;
  return {};
}

void GraphPolicy::add(uint32_t program, std::span<const uint64_t> symbols, GraphHandle handle) {
  graphs_.push_back(CapturedGraph{program, {symbols.begin(), symbols.end()}, handle});
  std::erase_if(seen_, [&](const Seen& s) { return s.program == program && same(s.symbols, symbols); });
}

std::string GraphPolicy::fail(const std::string& program_name, const std::string& what, const Error& error) {
  if (!active()) return "";
  failed_ = true;
  return "CUDA graphs disabled: " + what + " program '" + program_name + "' failed: " + error.message +
         "; running eagerly from now on";
}

std::vector<CapturedGraph> GraphPolicy::take_graphs() {
  std::vector<CapturedGraph> out;
  out.swap(graphs_);
  return out;
}

}  // namespace kern::load
