// `kern-verify --dump PLAN --message-format json`: the whole plan as one JSON
// object (plan_dump.h; the shape is documented in docs/plan-format.md). The
// same checks as the text dump run first (plan_view.h).
#include <bit>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>

#include "common/dtype.h"
#include "common/plan_enums.h"
#include "common/plan_memory.h"
#include "common/sha256.h"
#include "common/version.h"
#include "kern-verify/plan_dump.h"
#include "kern-verify/plan_view.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern::verify {
namespace {

namespace fb = flatbuffers;
using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

class JsonDumper {
 public:
  JsonDumper(const plan::Plan& p, std::optional<uint64_t> capacity) : p_(p), capacity_(capacity), w_(buf_) {}

  std::string run() {
    w_.StartObject();
    w_.Key("format_version");
    w_.Uint(p_.format_version());
    str("model", p_.model() ? p_.model()->str() : "");
    const auto* sha = p_.manifest_sha256();
    str("manifest_sha256", hex_encode(std::span<const uint8_t>(sha->data(), sha->size())));
    if (p_.world() > 1) {  // only for tensor-parallel plans (docs/parallel.md): one-device dumps stay as they were
      w_.Key("world");
      w_.Uint(p_.world());
    }
    w_.Key("spec");
    if (const auto* spec = p_.spec()) {
      w_.StartObject();
      u64("block", spec->block());
      w_.Key("mask_token");
      w_.Int64(spec->mask_token());
      w_.EndObject();
    } else {
      w_.Null();
    }
    symbols();
    states();
    buffers();
    cubins();
    kernels();
    steps();
    scratch();
    programs();
    memory();
    w_.Key("kern");
    const std::string version = version_json();
    w_.RawValue(version.data(), version.size(), rapidjson::kObjectType);
    w_.EndObject();
    return std::string(buf_.GetString(), buf_.GetSize()) + "\n";
  }

 private:
  void str(const char* key, const std::string& v) {
    w_.Key(key);
    w_.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
  }
  void u64(const char* key, uint64_t v) {
    w_.Key(key);
    w_.Uint64(v);
  }
  void opt_u64(const char* key, std::optional<uint64_t> v) {
    w_.Key(key);
    if (v) w_.Uint64(*v);
    else w_.Null();
  }
  void expr(const char* key, const plan::Expr* e) { str(key, plan_expr_text(p_, e)); }
  void shape(const fb::Vector<fb::Offset<plan::Expr>>* dims) {
    w_.Key("shape");
    w_.StartArray();
    for (fb::uoffset_t i = 0; dims && i < dims->size(); ++i) {
      const std::string e = plan_expr_text(p_, dims->Get(i));
      w_.String(e.data(), static_cast<rapidjson::SizeType>(e.size()));
    }
    w_.EndArray();
  }
  void params(const fb::Vector<const plan::Param*>* ps) {
    w_.Key("params");
    w_.StartArray();
    for (fb::uoffset_t i = 0; ps && i < ps->size(); ++i) {
      const std::string t = param_type_name(from_plan(*ps->Get(i)));
      w_.String(t.data(), static_cast<rapidjson::SizeType>(t.size()));
    }
    w_.EndArray();
  }

  void symbols() {
    w_.Key("symbols");
    w_.StartArray();
    for (const auto* s : *p_.symbols()) {
      w_.StartObject();
      str("name", plan_name(s->name()));
      u64("min", s->min());
      u64("max", s->max());
      w_.EndObject();
    }
    w_.EndArray();
  }

  void states() {
    w_.Key("states");
    w_.StartArray();
    for (const auto* s : *p_.states()) {
      w_.StartObject();
      str("name", plan_name(s->name()));
      u64("bytes_per_token", s->bytes_per_token());
      u64("bytes_fixed", s->bytes_fixed());
      u64("align", s->align());
      w_.EndObject();
    }
    w_.EndArray();
  }

  void buffers() {
    w_.Key("buffers");
    w_.StartArray();
    for (const auto* b : *p_.buffers()) {
      w_.StartObject();
      str("name", plan_name(b->name()));
      str("class", plan::EnumNameBufferClass(b->class_()));
      str("dtype", plan_dtype_text(b->dtype()));
      shape(b->shape());
      u64("max_size_bytes", b->max_size_bytes());
      // Only workspace buffers live in the arena (docs/memory-plan.md).
      opt_u64("arena_offset", b->class_() == plan::BufferClass::workspace ? std::optional<uint64_t>(b->arena_offset())
                                                                          : std::nullopt);
      w_.EndObject();
    }
    w_.EndArray();
  }

  void cubins() {
    w_.Key("cubins");
    w_.StartArray();
    for (const auto* c : *p_.cubins()) {
      w_.StartObject();
      str("path", plan_name(c->path()));
      w_.Key("sha256");
      if (c->sha256()) {
        const std::string hex = hex_encode(std::span<const uint8_t>(c->sha256()->data(), c->sha256()->size()));
        w_.String(hex.data(), static_cast<rapidjson::SizeType>(hex.size()));
      } else {
        w_.Null();
      }
      w_.EndObject();
    }
    w_.EndArray();
  }

  void kernels() {
    w_.Key("kernels");
    w_.StartArray();
    for (const auto* k : *p_.kernels()) {
      w_.StartObject();
      str("name", plan_name(k->name()));
      params(k->params());
      w_.Key("steps");  // indices into the top-level "steps"
      w_.StartArray();
      for (uint32_t si : *k->steps()) w_.Uint(si);
      w_.EndArray();
      w_.EndObject();
    }
    w_.EndArray();
  }

  void steps() {
    w_.Key("steps");
    w_.StartArray();
    for (const auto* s : *p_.steps()) {
      w_.StartObject();
      u64("kernel", s->kernel());
      str("symbol", plan_name(s->symbol()));
      w_.Key("cubin");  // index into "cubins", null when unpinned
      if (s->cubin() >= 0) w_.Int(s->cubin());
      else w_.Null();
      params(s->params());
      w_.Key("block");
      w_.StartArray();
      w_.Uint(s->block_x());
      w_.Uint(s->block_y());
      w_.Uint(s->block_z());
      w_.EndArray();
      w_.Key("grid");
      w_.StartArray();
      for (const plan::Expr* e : {s->grid_x(), s->grid_y(), s->grid_z()}) {
        const std::string t = plan_expr_text(p_, e);
        w_.String(t.data(), static_cast<rapidjson::SizeType>(t.size()));
      }
      w_.EndArray();
      w_.Key("shared_mem");
      if (s->shared_mem()) {
        const std::string t = plan_expr_text(p_, s->shared_mem());
        w_.String(t.data(), static_cast<rapidjson::SizeType>(t.size()));
      } else {
        w_.Null();
      }
      w_.Key("pdl");
      w_.Bool(s->pdl());
      w_.EndObject();
    }
    w_.EndArray();
  }

  void scratch() {
    w_.Key("scratch");
    w_.StartArray();
    for (const auto* s : *p_.scratch()) {
      w_.StartObject();
      u64("kernel", s->kernel());
      str("name", plan_name(s->name()));
      str("dtype", plan_dtype_text(s->dtype()));
      shape(s->shape());
      u64("max_size_bytes", s->max_size_bytes());
      u64("arena_offset", s->arena_offset());
      w_.EndObject();
    }
    w_.EndArray();
  }

  /// A literal as the param it fills: {"type": "i32", "value": 2560, "bits": "0xa00"}.
  void literal(uint64_t bits, const plan::Param* param) {
    const plan::ParamKind kind = param ? param->kind() : plan::ParamKind::ptr;
    const bool known = param != nullptr && kind != plan::ParamKind::ptr;
    str("type", known ? plan::EnumNameParamKind(kind) : "unknown");
    w_.Key("value");
    switch (known ? kind : plan::ParamKind::ptr) {
      case plan::ParamKind::i32: w_.Int(static_cast<int32_t>(static_cast<uint32_t>(bits))); break;
      case plan::ParamKind::u32: w_.Uint(static_cast<uint32_t>(bits)); break;
      case plan::ParamKind::i64: w_.Int64(static_cast<int64_t>(bits)); break;
      case plan::ParamKind::u8: w_.Uint(static_cast<uint8_t>(bits)); break;
      case plan::ParamKind::f32: {
        const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
        if (std::isfinite(f)) w_.Double(f);
        else w_.Null();  // JSON has no NaN or infinity: "bits" holds it
        break;
      }
      default: w_.Null(); break;
    }
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(bits));
    str("bits", hex);
  }

  template <typename Vec>
  void indexed(const Vec* v, uint32_t i) {
    u64("index", i);
    str("name", v != nullptr && i < v->size() ? plan_name(v->Get(i)->name()) : "?");
  }

  void arg(const plan::LaunchArg* a, const plan::Param* param) {
    w_.StartObject();
    str("kind", plan::EnumNameArgKind(a->kind()));
    switch (a->kind()) {
      case plan::ArgKind::buffer: indexed(p_.buffers(), a->index()); break;
      case plan::ArgKind::state: indexed(p_.states(), a->index()); break;
      case plan::ArgKind::scratch: indexed(p_.scratch(), a->index()); break;
      case plan::ArgKind::literal: literal(a->literal(), param); break;
      case plan::ArgKind::expr: expr("expr", a->expr()); break;
    }
    if (a->kind() == plan::ArgKind::buffer || a->kind() == plan::ArgKind::state ||
        a->kind() == plan::ArgKind::scratch)
      u64("offset", a->offset());
    w_.EndObject();
  }

  void programs() {
    w_.Key("programs");
    w_.StartArray();
    for (const auto* prog : *p_.programs()) {
      w_.StartObject();
      str("name", plan_name(prog->name()));
      u64("dispatch_count", prog->dispatch_count());
      std::set<uint32_t> used;
      w_.Key("launches");
      w_.StartArray();
      for (const auto* l : *prog->launches()) {
        w_.StartObject();
        u64("dispatch", l->dispatch());
        const auto* labels = prog->dispatch_labels();
        str("label", labels && l->dispatch() < labels->size() ? plan_name(labels->Get(l->dispatch())) : "");
        const plan::Step* step = l->step() < p_.steps()->size() ? p_.steps()->Get(l->step()) : nullptr;
        str("kernel", step && step->kernel() < p_.kernels()->size()
                          ? plan_name(p_.kernels()->Get(step->kernel())->name())
                          : "?");
        u64("step", l->step());
        str("symbol", step ? plan_name(step->symbol()) : "?");
        w_.Key("args");
        w_.StartArray();
        for (fb::uoffset_t a = 0; a < l->args()->size(); ++a) {
          const plan::Param* param = step && a < step->params()->size() ? step->params()->Get(a) : nullptr;
          arg(l->args()->Get(a), param);
          if (l->args()->Get(a)->kind() == plan::ArgKind::buffer) used.insert(l->args()->Get(a)->index());
        }
        w_.EndArray();
        w_.EndObject();
      }
      w_.EndArray();
      u64("buffers_used", used.size());  // distinct buffers its launches bind
      w_.EndObject();
    }
    w_.EndArray();
  }

  void memory() {
    const PlanMemoryBytes m = plan_memory_bytes(p_, capacity_);
    w_.Key("memory");
    w_.StartObject();
    u64("weights_bytes", m.weights);
    u64("state_bytes_per_token", m.state_bytes_per_token);
    u64("state_bytes_fixed", m.state_bytes_fixed);
    opt_u64("capacity_tokens", capacity_);
    opt_u64("states_bytes", m.states);
    u64("io_bytes", m.io);
    u64("workspace_bytes", m.workspace);
    u64("scratch_bytes", m.scratch);
    u64("arena_bytes", m.arena);
    w_.Key("arena_planned");
    w_.Bool(m.arena_planned);
    u64("arena_unplanned_bytes", m.arena_unplanned);
    u64("arena_peak_live_bytes", m.arena_peak_live);
    u64("arena_align", p_.arena() ? p_.arena()->align() : 0);
    opt_u64("total_bytes", m.total);
    w_.EndObject();
  }

  const plan::Plan& p_;
  std::optional<uint64_t> capacity_;
  rapidjson::StringBuffer buf_;
  Writer w_;
};

}  // namespace

Result<std::string> dump_plan_json(std::span<const uint8_t> bytes, std::optional<uint64_t> capacity) {
  KERN_ASSIGN_OR_RETURN(const plan::Plan* p, checked_plan(bytes));
  return JsonDumper(*p, capacity).run();
}

}  // namespace kern::verify
