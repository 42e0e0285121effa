// SARIF 2.1.0 output of kern-verify (`--message-format sarif`), for
// code-scanning tools (GitHub code scanning, VS Code SARIF viewer). One run,
// one artifact (the manifest); the rule table is the whole diagnostics
// catalogue (catalogue.h) in catalogue order, so a rule's id (the code) and
// its index are stable across runs and manifests.
#pragma once

#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/source.h"

namespace kern::verify {

/// Renders `diags` of `file` as one SARIF 2.1.0 log (a JSON document and a
/// newline). Each result carries ruleId + ruleIndex, level, message (help and
/// location-less notes appended as sentences), the region (1-based lines,
/// columns in Unicode code points, byte offset and length) and the JSON
/// pointer as a logical location; notes with a location become
/// relatedLocations. The driver carries kern's version (common/version.h:
/// `version`, and commit, plan format and build type in its `properties`).
std::string render_sarif(const std::vector<Diagnostic>& diags, const SourceFile& file);

}  // namespace kern::verify
