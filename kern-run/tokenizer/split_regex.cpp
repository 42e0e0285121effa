// PCRE2-backed Split pre-tokenizer (see split_regex.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "kern-run/tokenizer/split_regex.h"

#include <pcre2.h>

#include <algorithm>

#include "kern-run/tokenizer/pattern_compat.h"

namespace kern::tok {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "pcre2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}

/// Per-thread match state: match data for the whole-match offsets and a JIT
/// stack large enough for long whitespace runs.
struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  ThreadMatchState() {
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
    if (context != nullptr) pcre2_set_match_limit(context, SplitRegex::kMatchLimit);
  }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

struct SplitRegex::Impl {
  pcre2_code* code = nullptr;
  std::string pattern;  ///< as written in the tokenizer file
  std::string origin;   ///< "FILE: JSON pointer" of the pattern
  ~Impl() { pcre2_code_free(code); }
};

SplitRegex::SplitRegex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;
SplitRegex::~SplitRegex() = default;

Result<SplitRegex> SplitRegex::compile(std::string_view pattern, bool literal, std::string origin) {
  std::string source(pattern);
  if (!literal) {
    std::string rewrite_error;
    source = onig_compatible_pattern(pattern, &rewrite_error);
    if (!rewrite_error.empty()) return make_error(ErrorKind::kWeight, rewrite_error);
  }
  uint32_t options = PCRE2_UTF | PCRE2_UCP;
  if (literal) options |= PCRE2_LITERAL;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  auto impl = std::make_unique<Impl>();
  impl->pattern = std::string(pattern);
  impl->origin = std::move(origin);
  impl->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(), options,
                             &error_code, &error_offset, nullptr);
  if (impl->code == nullptr) {
    // The offset is into the rewritten pattern; report it only when no
    // rewrite changed the text before it.
    std::string where;
    if (source.compare(0, error_offset, pattern.substr(0, error_offset)) == 0) {
      where = " at offset " + std::to_string(error_offset);
    }
    return make_error(ErrorKind::kWeight, "invalid regex: " + pcre2_message(error_code) + where);
  }
  // JIT is an optimization: without it (unsupported CPU) matching still works.
  (void)pcre2_jit_compile(impl->code, PCRE2_JIT_COMPLETE);
  return SplitRegex(std::move(impl));
}

Status SplitRegex::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  ThreadMatchState& state = thread_match_state();
  if (state.data == nullptr || state.context == nullptr) {
    return make_error(ErrorKind::kUsage, "split: out of memory for pcre2 match data");
  }
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    // The limit grows with the text left: Qwen3's `\s*[\r\n]+|\s+(?!\S)`
    // backtracks once per character of a whitespace run (linear, HF encodes a
    // run of 1,000,000 spaces), while a catastrophic pattern's exponential
    // steps still hit it at once.
    const uint64_t limit = SplitRegex::kMatchLimit + SplitRegex::kMatchLimitPerByte * uint64_t{text.size() - pos};
    if (state.context != nullptr) {
      pcre2_set_match_limit(state.context, static_cast<uint32_t>(std::min<uint64_t>(limit, UINT32_MAX)));
    }
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                               state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
        rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // The tokenizer file's pattern is at fault, not the text: a content
      // error (exit 1) naming the file and the pattern.
      return make_error(ErrorKind::kWeight,
                        (impl_->origin.empty() ? std::string("split pattern") : impl_->origin) + ": the pattern '" +
                            impl_->pattern + "' exceeded PCRE2's limit at byte " + std::to_string(pos) +
                            " of the text (" + pcre2_message(rc) +
                            "): it backtracks catastrophically; fix the tokenizer's regex");
    }
    if (rc < 0) return make_error(ErrorKind::kUsage, "split: regex match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ov[0], end = ov[1];
    if (begin == end) {
      // An empty match yields an empty piece, which HF drops; step over one
      // character and search again.
      pos = begin + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (begin > gap_start) pieces.push_back(text.substr(gap_start, begin - gap_start));
    pieces.push_back(text.substr(begin, end - begin));
    gap_start = pos = end;
  }
  if (gap_start < text.size()) pieces.push_back(text.substr(gap_start));
  return Status::ok_status();
}

}  // namespace kern::tok
