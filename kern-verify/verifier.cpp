// verify(): runs the rule groups in SPEC §4 order over one Context and, when
// none reported an error, builds the VerifiedManifest with the facts lowering
// needs (indices, sizes at the maxima).
#include "kern-verify/verifier.h"

#include <cassert>

#include "kern-verify/verify_context.h"
#include "kern-verify/verify_rules.h"

namespace kern::verify {
namespace {

template <typename Entry>
void index_names(const std::vector<Entry>& entries, std::map<std::string, uint32_t, std::less<>>& out) {
  for (size_t i = 0; i < entries.size(); ++i) out.emplace(entries[i].name, static_cast<uint32_t>(i));
}

uint32_t lookup(const std::map<std::string, uint32_t, std::less<>>& table, std::string_view name) {
  auto it = table.find(name);
  assert(it != table.end() && "verified manifests resolve every name");
  return it == table.end() ? 0 : it->second;
}

}  // namespace

NameTables NameTables::build(const Manifest& m) {
  NameTables t;
  index_names(m.symbols, t.symbols);
  index_names(m.states, t.states);
  index_names(m.buffers, t.buffers);
  index_names(m.kernels, t.kernels);
  return t;
}

uint32_t VerifiedManifest::symbol_index(std::string_view name) const { return lookup(names_.symbols, name); }
uint32_t VerifiedManifest::state_index(std::string_view name) const { return lookup(names_.states, name); }
uint32_t VerifiedManifest::buffer_index(std::string_view name) const { return lookup(names_.buffers, name); }
uint32_t VerifiedManifest::kernel_index(std::string_view name) const { return lookup(names_.kernels, name); }

uint32_t VerifiedManifest::scratch_local_index(uint32_t kernel, std::string_view name) const {
  const auto& scratch = manifest_.kernels[kernel].scratch;
  for (size_t s = 0; s < scratch.size(); ++s) {
    if (scratch[s].name == name) return static_cast<uint32_t>(s);
  }
  assert(false && "verified manifests resolve every scratch");
  return 0;
}

std::optional<VerifiedManifest> verify(const Manifest& manifest, DiagnosticEngine& diag,
                                       const VerifyOptions& options) {
  const size_t errors_before = diag.error_count();
  Context ctx(manifest, diag, options);
  check_symbols(ctx);
  check_states(ctx);
  check_shapes(ctx);
  check_steps(ctx);
  check_impl_dataflow(ctx);
  check_dispatches(ctx);
  check_program_dataflow(ctx);
  check_unused(ctx);
  check_todos(ctx);
  if (diag.error_count() != errors_before) return std::nullopt;

  VerifiedManifest v;
  v.manifest_ = manifest;
  v.names_ = std::move(ctx.names);
  v.buffer_max_bytes_.reserve(manifest.buffers.size());
  for (const auto& bytes : ctx.buffer_bytes) v.buffer_max_bytes_.push_back(bytes->max);
  for (const KernelFacts& k : ctx.kernels) {
    v.scratch_base_.push_back(static_cast<uint32_t>(v.scratch_max_bytes_.size()));
    for (const auto& bytes : k.scratch_bytes) v.scratch_max_bytes_.push_back(bytes->max);
  }
  return v;
}

}  // namespace kern::verify
