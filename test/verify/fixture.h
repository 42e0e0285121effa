// Test helpers for the verifier: the valid base manifest (base_manifest.json
// beside this file), JSON-pointer mutations of it (RapidJSON), and a run of
// the real reader + verifier returning compact "CODE /json/pointer" findings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "kern-verify/verifier.h"

namespace kern::verify::testing {

/// The base manifest text (valid, no warnings).
const std::string& base_manifest();

/// `json` with the value at `pointer` replaced (or created) by `value_json`.
std::string set(const std::string& json, const std::string& pointer, const std::string& value_json);
/// `json` without the value at `pointer`.
std::string erase(const std::string& json, const std::string& pointer);
/// `json` with `value_json` inserted into the array at `pointer` before `index`.
std::string insert(const std::string& json, const std::string& pointer, size_t index, const std::string& value_json);

/// One read + verify run.
struct Run {
  bool read_ok = false;
  std::vector<Diagnostic> diags;
  std::optional<VerifiedManifest> verified;
};
Run run(const std::string& json);

/// "E0105 /buffers/hidden/shape/0" per diagnostic, sorted.
std::vector<std::string> findings(const Run& r);
/// Findings of verifying `json`; fails the test if the reader rejected it.
std::vector<std::string> verify_findings(const std::string& json);

/// JSON pointers into the base manifest used by many tests.
inline const std::string& B() { return base_manifest(); }
inline const std::string kEmbedStep = "/kernels/embed/impl/steps/0";
inline const std::string kKvStep = "/kernels/kv_write/impl/steps/0";
inline const std::string kGemmStep = "/kernels/gemm/impl/steps/0";
inline const std::string kArgmax0 = "/kernels/argmax/impl/steps/0";
inline const std::string kArgmax1 = "/kernels/argmax/impl/steps/1";
inline const std::string kDecode = "/programs/decode/dispatches/";
inline const std::string kHex64 = std::string(64, 'd');

}  // namespace kern::verify::testing
