// The strict manifest v2 reader (SPEC §3, upstream
// reference/kern-manifest-v2.schema.json): JSON text -> Manifest model with a
// source span on every node. It checks the *shape* of the document: JSON
// syntax, no duplicate keys, no unknown fields, JSON types, required fields,
// integer ranges, dtype / buffer class / parameter-type spellings, the
// expression forms and tagged arguments. It deliberately does not check
// meaning (version == 2, names resolve, bounds, sizes, data flow): that is
// kern-verify's job (SPEC §4), which runs on the model this returns.
#pragma once

#include <optional>

#include "common/diagnostic.h"
#include "common/manifest.h"
#include "common/source.h"

namespace kern {

/// Reads `file` as a manifest v2. Every mistake found is reported to `diags`
/// (codes E0001..E0099, common/reader_codes.h) with the span and JSON
/// pointer of the offending value; reading never stops at the first one.
/// Returns nullopt when any reader error was reported (diagnostics already
/// in `diags` before the call do not count). `file` must outlive nothing:
/// the model copies every string it keeps.
std::optional<Manifest> read_manifest(const SourceFile& file, DiagnosticEngine& diags);

}  // namespace kern
