// A .kplan file opened for loading: read, identified, verified (plan_file.h).
#include "kern-load/plan_file.h"

#include <cstring>

#include "common/file_util.h"
#include "common/file_kind.h"
#include "common/plan_checksum.h"
#include "flatbuffers/flatbuffers.h"
#include "kern-load/plan_validate.h"

namespace kern::load {

namespace {

std::string printable(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    char c = static_cast<char>(p[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += c;
    } else {
      static const char* hex = "0123456789abcdef";
      s += "\\x";
      s += hex[p[i] >> 4];
      s += hex[p[i] & 15];
    }
  }
  return s;
}

template <typename Vec>
int find_named(const Vec* v, std::string_view name) {
  for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i)
    if (v->Get(i)->name()->string_view() == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

Result<PlanFile> PlanFile::open(const std::string& path) {
  // Read, not mapped: a plan rewritten or truncated while kern-run runs must
  // not change (or SIGBUS) the replay. A plan is small (the Qwen3-4B one is
  // 242 KB); the bound is the FlatBuffers buffer limit checked below.
  KERN_ASSIGN_OR_RETURN(auto bytes, read_file(path, FLATBUFFERS_MAX_BUFFER_SIZE));
  PlanFile file;
  file.owned_.assign(bytes.begin(), bytes.end());
  file.path_ = path;
  return check(std::move(file));
}

Result<PlanFile> PlanFile::from_bytes(std::span<const uint8_t> bytes, const std::string& name) {
  PlanFile file;
  file.owned_.assign(bytes.begin(), bytes.end());
  file.path_ = name;
  return check(std::move(file));
}

std::span<const uint8_t> PlanFile::bytes() const { return {owned_.data(), owned_.size()}; }

Result<PlanFile> PlanFile::check(PlanFile file) {
  std::span<const uint8_t> b = file.bytes();
  auto bad = [&](const std::string& what) { return make_error(ErrorKind::kManifest, file.path_ + ": " + what); };
  // Identifier first: a clear message for "this is not a plan at all",
  // with the next step when the file is a manifest or weights instead.
  const std::string next_step = not_a_plan_next_step(sniff_file_kind(b), file.path_);
  auto not_a_plan = [&](const std::string& what) { return bad(next_step.empty() ? what : what + "; " + next_step); };
  if (b.size() < 8)
    return not_a_plan("not a kplan file: " + std::to_string(b.size()) + " B is shorter than the 8-byte header");
  if (std::memcmp(b.data() + 4, kPlanFileIdentifier, 4) != 0)
    return not_a_plan("not a kplan file: file identifier '" + printable(b.data() + 4, 4) + "', expected '" +
                      kPlanFileIdentifier + "'");
  if (b.size() > FLATBUFFERS_MAX_BUFFER_SIZE) return bad("file of " + std::to_string(b.size()) + " B is too large");
  // A finished FlatBuffers buffer is padded to its minimum alignment (at
  // least the 4-byte uoffset_t); any other size is a truncated or padded file,
  // even when the Verifier would never read the missing bytes.
  if (b.size() % sizeof(flatbuffers::uoffset_t) != 0)
    return bad("file of " + std::to_string(b.size()) + " B is truncated or damaged: a plan's size is a multiple of 4 B");
  // Version next, from the root table alone (shallow_plan_format_version).
  if (auto version = shallow_plan_format_version(b); version && *version != kPlanFormatVersion)
    return bad("plan format version " + std::to_string(*version) + ", this loader reads version " +
               std::to_string(kPlanFormatVersion) + " (recompile the manifest with a matching kern-verify)");
  // The checksum before anything else is read as a plan: a flipped, cut or
  // appended byte is rejected here (the version check above only reads one
  // field through the bounds-checked Verifier).
  KERN_ASSIGN_OR_RETURN(auto body, check_plan_trailer(b, file.path_));
  b = body;
  if (b.size() % sizeof(flatbuffers::uoffset_t) != 0)
    return bad("plan body of " + std::to_string(b.size()) + " B is not a multiple of 4 B");
  flatbuffers::Verifier verifier(b.data(), b.size(), kPlanVerifierMaxDepth, kPlanVerifierMaxTables);
  if (!plan::VerifyPlanBuffer(verifier))
    return bad("corrupt plan: the FlatBuffers verifier rejected it (truncated file, bad offset, or depth/table "
               "limits exceeded)");
  const plan::Plan* p = plan::GetPlan(b.data());
  if (p->manifest_sha256()->size() != 32)
    return bad("manifest_sha256 has " + std::to_string(p->manifest_sha256()->size()) + " bytes, expected 32");
  KERN_RETURN_IF_ERROR(validate_plan(*p), file.path_);
  file.plan_ = p;
  return file;
}

int PlanFile::find_program(std::string_view name) const { return find_named(plan_->programs(), name); }
int PlanFile::find_buffer(std::string_view name) const { return find_named(plan_->buffers(), name); }
int PlanFile::find_symbol(std::string_view name) const { return find_named(plan_->symbols(), name); }
int PlanFile::find_state(std::string_view name) const { return find_named(plan_->states(), name); }

}  // namespace kern::load
