// dump_plan(): see plan_dump.h. Indices are printed as `[i]` with the name
// they point at, so a reader can follow the wiring without the manifest.
#include "kern-verify/plan_dump.h"
#include "kern-verify/plan_view.h"

#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>

#include "common/dtype.h"
#include "common/plan_checksum.h"
#include "common/plan_enums.h"
#include "common/plan_format.h"
#include "common/plan_memory.h"
#include "common/sha256.h"
#include "common/terminal_text.h"

namespace kern::verify {
namespace {

namespace fb = flatbuffers;

/// A name from the plan as printed: the plan holds whatever the manifest
/// said, control bytes and ANSI escapes included (terminal_text.h).
std::string name_of(const fb::String* s) { return terminal_safe(plan_name(s)); }

std::string dtype_str(plan::DType d) { return plan_dtype_text(d); }

class Dumper {
 public:
  Dumper(const plan::Plan& p, std::optional<uint64_t> capacity) : p_(p), capacity_(capacity) {}

  std::string run() {
    header();
    symbols();
    states();
    buffers();
    cubins();
    kernels();
    scratch();
    programs();
    memory();
    summary();
    return out_.str();
  }

 private:
  /// "ceil_div(mul(tokens, 32), 4)"
  std::string expr(const plan::Expr* e) const { return plan_expr_text(p_, e); }

  std::string shape(const fb::Vector<fb::Offset<plan::Expr>>* dims) const {
    std::string s = "[";
    for (fb::uoffset_t i = 0; dims && i < dims->size(); ++i) s += (i ? ", " : "") + expr(dims->Get(i));
    return s + "]";
  }

  std::string params(const fb::Vector<const plan::Param*>* ps) const {
    std::string s = "(";
    for (fb::uoffset_t i = 0; ps && i < ps->size(); ++i) {
      s += (i ? ", " : "") + param_type_name(from_plan(*ps->Get(i)));
    }
    return s + ")";
  }

  template <typename Vec>
  std::string indexed(const Vec* v, uint64_t i, const char* what) const {
    if (v == nullptr || i >= v->size()) return std::string(what) + " #" + std::to_string(i) + " (out of range)";
    return std::string(what) + " [" + std::to_string(i) + "] " + name_of(v->Get(static_cast<fb::uoffset_t>(i))->name());
  }

  void header() {
    const auto* sha = p_.manifest_sha256();
    out_ << "plan: format " << p_.format_version() << ", model \"" << (p_.model() ? terminal_safe(p_.model()->string_view()) : "")
         << "\"\n";
    if (const auto* spec = p_.spec())
      out_ << "speculative: block " << spec->block() << ", mask token " << spec->mask_token() << "\n";
    if (p_.world() > 1) out_ << "tensor parallel: world " << p_.world() << " ranks\n";  // docs/parallel.md
    out_ << "manifest sha256: " << hex_encode(std::span<const uint8_t>(sha->data(), sha->size())) << "\n";
  }

  void symbols() {
    out_ << "\nsymbols (" << p_.symbols()->size() << "):\n";
    for (fb::uoffset_t i = 0; i < p_.symbols()->size(); ++i) {
      const auto* s = p_.symbols()->Get(i);
      out_ << "  [" << i << "] " << name_of(s->name()) << " " << s->min() << ".." << s->max() << "\n";
    }
  }

  void states() {
    out_ << "\nstates (" << p_.states()->size() << "):\n";
    for (fb::uoffset_t i = 0; i < p_.states()->size(); ++i) {
      const auto* s = p_.states()->Get(i);
      out_ << "  [" << i << "] " << name_of(s->name());
      if (s->bytes_per_token() != 0) out_ << " bytes_per_token " << s->bytes_per_token();
      if (s->bytes_fixed() != 0) out_ << " bytes_fixed " << s->bytes_fixed();
      out_ << " align " << s->align() << "\n";
    }
  }

  void buffers() {
    std::array<size_t, 5> per_class{};
    for (fb::uoffset_t i = 0; i < p_.buffers()->size(); ++i) {
      const auto c = static_cast<size_t>(p_.buffers()->Get(i)->class_());
      if (c < per_class.size()) ++per_class[c];
    }
    out_ << "\nbuffers (" << p_.buffers()->size() << "): input " << per_class[0] << ", output " << per_class[1]
         << ", weight " << per_class[2] << ", workspace " << per_class[3] << ", carry " << per_class[4] << "\n";
    for (fb::uoffset_t i = 0; i < p_.buffers()->size(); ++i) {
      const auto* b = p_.buffers()->Get(i);
      out_ << "  [" << i << "] " << name_of(b->name()) << " " << plan::EnumNameBufferClass(b->class_()) << " "
           << dtype_str(b->dtype()) << " " << shape(b->shape()) << " " << b->max_size_bytes() << " B";
      if (b->class_() == plan::BufferClass::workspace) out_ << " @arena+" << b->arena_offset();
      out_ << "\n";
    }
  }

  void cubins() {
    out_ << "\ncubins (" << p_.cubins()->size() << "):\n";
    for (fb::uoffset_t i = 0; i < p_.cubins()->size(); ++i) {
      const auto* c = p_.cubins()->Get(i);
      out_ << "  [" << i << "] " << name_of(c->path());
      if (c->sha256()) out_ << " sha256 " << hex_encode(std::span<const uint8_t>(c->sha256()->data(), c->sha256()->size()));
      out_ << "\n";
    }
  }

  void step(fb::uoffset_t si, const char* indent) {
    if (si >= p_.steps()->size()) {
      out_ << indent << "step #" << si << " (out of range)\n";
      return;
    }
    const auto* s = p_.steps()->Get(si);
    out_ << indent << "step [" << si << "] " << name_of(s->symbol());
    if (s->cubin() >= 0) out_ << " cubin [" << s->cubin() << "]";
    out_ << " " << params(s->params()) << "\n"
         << indent << "  block [" << s->block_x() << ", " << s->block_y() << ", " << s->block_z() << "] grid ["
         << expr(s->grid_x()) << ", " << expr(s->grid_y()) << ", " << expr(s->grid_z()) << "]";
    if (s->shared_mem()) out_ << " shared_mem " << expr(s->shared_mem());
    if (s->pdl()) out_ << " pdl";
    out_ << "\n";
  }

  void kernels() {
    out_ << "\nkernels (" << p_.kernels()->size() << "):\n";
    for (fb::uoffset_t i = 0; i < p_.kernels()->size(); ++i) {
      const auto* k = p_.kernels()->Get(i);
      out_ << "  [" << i << "] " << name_of(k->name()) << " " << params(k->params()) << "\n";
      for (fb::uoffset_t j = 0; j < k->steps()->size(); ++j) step(k->steps()->Get(j), "      ");
    }
  }

  void scratch() {
    out_ << "\nscratch (" << p_.scratch()->size() << "):\n";
    for (fb::uoffset_t i = 0; i < p_.scratch()->size(); ++i) {
      const auto* s = p_.scratch()->Get(i);
      out_ << "  [" << i << "] " << indexed(p_.kernels(), s->kernel(), "kernel") << " . " << name_of(s->name()) << " "
           << dtype_str(s->dtype()) << " " << shape(s->shape()) << " " << s->max_size_bytes() << " B @arena+"
           << s->arena_offset() << "\n";
    }
  }

  /// "209715200 B (200.0 MiB)"
  static std::string bytes(uint64_t b) {
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f", static_cast<double>(b) / (1024.0 * 1024.0));
    return std::to_string(b) + " B (" + mib + " MiB)";
  }

  /// Device memory by class (docs/memory-plan.md): what a load allocates.
  void memory() {
    const PlanMemoryBytes m = plan_memory_bytes(p_, capacity_);
    out_ << "\nmemory:\n";
    out_ << "  weights    " << bytes(m.weights) << "\n";
    out_ << "  states     " << m.state_bytes_per_token << " B per token";
    if (m.state_bytes_fixed != 0) out_ << " + " << m.state_bytes_fixed << " B";
    if (m.states) out_ << "; " << bytes(*m.states) << " at capacity " << *capacity_;
    out_ << "\n";
    out_ << "  io         " << bytes(m.io) << " (input, output, carry)\n";
    out_ << "  workspace  " << bytes(m.workspace) << " (buffers at the symbols' maxima)\n";
    out_ << "  scratch    " << bytes(m.scratch) << "\n";
    const plan::Arena* a = p_.arena();
    out_ << "  arena      " << bytes(m.arena) << (m.arena_planned ? ", planned by liveness" : ", not planned")
         << "; before planning " << bytes(m.arena_unplanned) << "; peak live " << bytes(m.arena_peak_live)
         << "; align " << (a ? a->align() : 0) << "\n";
    if (m.total) out_ << "  total      " << bytes(*m.total) << " at capacity " << *capacity_ << "\n";
  }

  /// A literal printed as the param it fills ("i32 2560", "f32 1e-06"); raw
  /// hex when the param is unknown.
  static std::string literal(uint64_t bits, const plan::Param* p) {
    std::ostringstream s;
    if (p == nullptr) {
      s << "lit 0x" << std::hex << bits;
      return s.str();
    }
    switch (p->kind()) {
      case plan::ParamKind::i32: s << "i32 " << static_cast<int32_t>(static_cast<uint32_t>(bits)); break;
      case plan::ParamKind::u32: s << "u32 " << static_cast<uint32_t>(bits); break;
      case plan::ParamKind::i64: s << "i64 " << static_cast<int64_t>(bits); break;
      case plan::ParamKind::u8: s << "u8 " << static_cast<unsigned>(static_cast<uint8_t>(bits)); break;
      case plan::ParamKind::f32: s << "f32 " << std::bit_cast<float>(static_cast<uint32_t>(bits)); break;
      default: s << "lit 0x" << std::hex << bits; break;
    }
    return s.str();
  }

  std::string arg(const plan::LaunchArg* a, const plan::Param* param) const {
    std::string off = a->offset() ? " +" + std::to_string(a->offset()) : "";
    switch (a->kind()) {
      case plan::ArgKind::buffer: return indexed(p_.buffers(), a->index(), "buf") + off;
      case plan::ArgKind::state: return indexed(p_.states(), a->index(), "state") + off;
      case plan::ArgKind::scratch: return indexed(p_.scratch(), a->index(), "scratch") + off;
      case plan::ArgKind::literal: return literal(a->literal(), param);
      case plan::ArgKind::expr: return "expr " + expr(a->expr());
    }
    return "arg kind " + std::to_string(static_cast<int>(a->kind()));
  }

  void programs() {
    for (fb::uoffset_t i = 0; i < p_.programs()->size(); ++i) {
      const auto* prog = p_.programs()->Get(i);
      out_ << "\nprogram " << name_of(prog->name()) << ": " << prog->dispatch_count() << " dispatches, "
           << prog->launches()->size() << " launches\n";
      for (fb::uoffset_t j = 0; j < prog->launches()->size(); ++j) {
        const auto* l = prog->launches()->Get(j);
        std::string label;
        if (prog->dispatch_labels() && l->dispatch() < prog->dispatch_labels()->size()) {
          label = " " + name_of(prog->dispatch_labels()->Get(l->dispatch()));
        }
        const plan::Step* step = l->step() < p_.steps()->size() ? p_.steps()->Get(l->step()) : nullptr;
        std::string kernel = "?";
        if (step && step->kernel() < p_.kernels()->size()) kernel = name_of(p_.kernels()->Get(step->kernel())->name());
        out_ << "  #" << l->dispatch() << label << ": " << kernel << " step [" << l->step() << "] "
             << (step ? name_of(step->symbol()) : "?") << "\n";
        for (fb::uoffset_t a = 0; a < l->args()->size(); ++a) {
          const plan::Param* param = step && a < step->params()->size() ? step->params()->Get(a) : nullptr;
          out_ << "      " << a << ": " << arg(l->args()->Get(a), param) << "\n";
        }
      }
    }
  }

  void summary() {
    out_ << "\nsummary: " << p_.buffers()->size() << " buffers";
    for (fb::uoffset_t i = 0; i < p_.programs()->size(); ++i) {
      const auto* prog = p_.programs()->Get(i);
      std::set<uint32_t> used;
      for (fb::uoffset_t j = 0; j < prog->launches()->size(); ++j) {
        const auto* args = prog->launches()->Get(j)->args();
        for (fb::uoffset_t a = 0; a < args->size(); ++a) {
          if (args->Get(a)->kind() == plan::ArgKind::buffer) used.insert(args->Get(a)->index());
        }
      }
      out_ << "; " << name_of(prog->name()) << ": " << prog->dispatch_count() << " dispatches, "
           << prog->launches()->size() << " launches, " << used.size() << " buffers";
    }
    out_ << "\n";
  }

  const plan::Plan& p_;
  std::optional<uint64_t> capacity_;
  std::ostringstream out_;
};

}  // namespace

Result<std::string> dump_plan(std::span<const uint8_t> bytes, std::optional<uint64_t> capacity) {
  KERN_ASSIGN_OR_RETURN(const plan::Plan* p, checked_plan(bytes));
  return Dumper(*p, capacity).run();
}

}  // namespace kern::verify
