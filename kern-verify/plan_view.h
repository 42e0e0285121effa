// Reading an untrusted .kplan for the dumps (plan_dump.h): the checks
// before anything is read, and the text of names, dtypes and expressions
// shared by the text and the JSON dump.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/plan_format.h"
#include "common/result.h"

namespace kern::verify {

/// The plan in `bytes` after the file identifier, format version, size,
/// checksum trailer and FlatBuffers Verifier checks; borrowed from `bytes`.
/// Errors (kManifest) start "not a valid plan: ".
Result<const plan::Plan*> checked_plan(std::span<const uint8_t> bytes);

/// A string field, "?" when absent.
std::string plan_name(const flatbuffers::String* s);

/// "bf16", or "dtype#N" for a value outside the enum.
std::string plan_dtype_text(plan::DType d);

/// An expression as the manifest writes it, symbols by name:
/// "ceil_div(mul(tokens, 32), 4)"; "<empty>" for none.
std::string plan_expr_text(const plan::Plan& p, const plan::Expr* e);

}  // namespace kern::verify
