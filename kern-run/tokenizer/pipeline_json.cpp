// tokenizer.json pipeline sections (see tokenizer_json.h): which normalizer,
// pre-tokenizer, post-processor and decoder settings this library accepts.
#include <string>

#include "kern-run/tokenizer/tokenizer_json.h"

namespace kern::tok {
namespace {

using rapidjson::Value;

/// The "type" string of a pipeline object at `pointer`, or an error.
Result<std::string> type_of(const JsonContext& ctx, const Value& v, const std::string& pointer) {
  if (!v.IsObject()) return ctx.expected(pointer, "an object with a \"type\"", v);
  const Value* type = JsonContext::member(v, "type");
  if (type == nullptr) return ctx.error(pointer, "missing member \"type\"");
  if (!type->IsString()) return ctx.expected(JsonContext::child(pointer, "type"), "a string", *type);
  return std::string(type->GetString(), type->GetStringLength());
}

Status parse_split(const JsonContext& ctx, const Value& step, const std::string& pointer,
                   TokenizerModel& model) {
  const Value* pattern = JsonContext::member(step, "pattern");
  const std::string pattern_ptr = JsonContext::child(pointer, "pattern");
  if (pattern == nullptr) return ctx.error(pointer, "missing member \"pattern\"");
  if (!pattern->IsObject() || pattern->MemberCount() != 1) {
    return ctx.expected(pattern_ptr, "{\"Regex\": ...} or {\"String\": ...}", *pattern);
  }
  const auto& kv = *pattern->MemberBegin();
  const std::string kind(kv.name.GetString(), kv.name.GetStringLength());
  if ((kind != "Regex" && kind != "String") || !kv.value.IsString()) {
    return ctx.expected(pattern_ptr, "{\"Regex\": string} or {\"String\": string}", *pattern);
  }
  const Value* behavior = JsonContext::member(step, "behavior");
  const std::string behavior_ptr = JsonContext::child(pointer, "behavior");
  if (behavior == nullptr) return ctx.error(pointer, "missing member \"behavior\"");
  if (!behavior->IsString() || std::string_view(behavior->GetString()) != "Isolated") {
    return ctx.expected(behavior_ptr, "\"Isolated\" (the only supported split behavior)", *behavior);
  }
  KERN_RETURN_IF_ERROR(ctx.require_default(step, pointer, "invert", "an inverted split"));
  auto regex = SplitRegex::compile(std::string_view(kv.value.GetString(), kv.value.GetStringLength()),
                                   kind == "String", ctx.name() + ": " + JsonContext::child(pattern_ptr, kind));
  if (!regex.ok()) return ctx.error(JsonContext::child(pattern_ptr, kind), regex.error().message);
  model.splits.push_back(std::move(regex).value());
  return Status::ok_status();
}

Status check_byte_level(const JsonContext& ctx, const Value& step, const std::string& pointer) {
  KERN_RETURN_IF_ERROR(ctx.require_default(step, pointer, "add_prefix_space", "add_prefix_space"));
  KERN_RETURN_IF_ERROR(
      ctx.require_default(step, pointer, "use_regex", "the ByteLevel built-in regex (use_regex)"));
  return Status::ok_status();
}

}  // namespace

Status parse_normalizer(const JsonContext& ctx, const Value& root, TokenizerModel& model) {
  const Value* v = JsonContext::member(root, "normalizer");
  if (v == nullptr || v->IsNull()) {
    model.normalizer = NormalizerKind::kNone;
    return Status::ok_status();
  }
  KERN_ASSIGN_OR_RETURN(auto type, type_of(ctx, *v, "/normalizer"));
  if (type != "NFC") {
    return ctx.error("/normalizer/type", "unsupported normalizer \"" + type + "\" (supported: \"NFC\" or null)");
  }
  model.normalizer = NormalizerKind::kNfc;
  return Status::ok_status();
}

Status parse_pre_tokenizer(const JsonContext& ctx, const Value& root, TokenizerModel& model) {
  const Value* v = JsonContext::member(root, "pre_tokenizer");
  const std::string byte_level_needed =
      "a ByteLevel pre-tokenizer is required (this library implements byte-level BPE only)";
  if (v == nullptr || v->IsNull()) return ctx.error("/pre_tokenizer", byte_level_needed);
  KERN_ASSIGN_OR_RETURN(auto type, type_of(ctx, *v, "/pre_tokenizer"));
  if (type == "ByteLevel") return check_byte_level(ctx, *v, "/pre_tokenizer");
  if (type != "Sequence") {
    return ctx.error("/pre_tokenizer/type",
                     "unsupported pre-tokenizer \"" + type + "\" (supported: Sequence, Split, ByteLevel)");
  }
  const Value* steps = JsonContext::member(*v, "pretokenizers");
  if (steps == nullptr || !steps->IsArray()) {
    return steps == nullptr ? ctx.error("/pre_tokenizer", "missing member \"pretokenizers\"")
                            : ctx.expected("/pre_tokenizer/pretokenizers", "an array", *steps);
  }
  bool byte_level_seen = false;
  for (rapidjson::SizeType i = 0; i < steps->Size(); ++i) {
    const std::string pointer = JsonContext::child("/pre_tokenizer/pretokenizers", i);
    const Value& step = (*steps)[i];
    KERN_ASSIGN_OR_RETURN(auto step_type, type_of(ctx, step, pointer));
    if (byte_level_seen) {
      return ctx.error(pointer, "ByteLevel must be the last pre-tokenizer step, found \"" + step_type + "\" after it");
    }
    if (step_type == "Split") {
      KERN_RETURN_IF_ERROR(parse_split(ctx, step, pointer, model));
    } else if (step_type == "ByteLevel") {
      KERN_RETURN_IF_ERROR(check_byte_level(ctx, step, pointer));
      byte_level_seen = true;
    } else {
      return ctx.error(JsonContext::child(pointer, "type"),
                       "unsupported pre-tokenizer step \"" + step_type + "\" (supported: Split, ByteLevel)");
    }
  }
  if (!byte_level_seen) return ctx.error("/pre_tokenizer/pretokenizers", byte_level_needed);
  return Status::ok_status();
}

Status check_post_and_decoder(const JsonContext& ctx, const Value& root) {
  for (const char* key : {"truncation", "padding"}) {
    const Value* v = JsonContext::member(root, key);
    if (v != nullptr && !v->IsNull()) {
      return ctx.expected(JsonContext::child("", key), "null (truncation and padding are not supported)", *v);
    }
  }
  if (const Value* post = JsonContext::member(root, "post_processor"); post != nullptr && !post->IsNull()) {
    KERN_ASSIGN_OR_RETURN(auto type, type_of(ctx, *post, "/post_processor"));
    if (type != "ByteLevel") {
      return ctx.error("/post_processor/type",
                       "unsupported post-processor \"" + type + "\" (supported: \"ByteLevel\" or null)");
    }
  }
  const Value* decoder = JsonContext::member(root, "decoder");
  if (decoder == nullptr || decoder->IsNull()) {
    return ctx.error("/decoder", "a ByteLevel decoder is required, found none");
  }
  KERN_ASSIGN_OR_RETURN(auto type, type_of(ctx, *decoder, "/decoder"));
  if (type != "ByteLevel") {
    return ctx.error("/decoder/type", "unsupported decoder \"" + type + "\" (supported: \"ByteLevel\")");
  }
  return Status::ok_status();
}

}  // namespace kern::tok
