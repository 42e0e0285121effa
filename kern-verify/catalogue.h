// The complete diagnostics catalogue of kern-verify: the reader's codes
// (E00xx, common/reader_codes.h) and the verifier's (E01xx errors, W00xx
// warnings, codes.h) as one list. It is the single source of `--explain`,
// the SARIF rule table and docs/diagnostics.md (which a test regenerates and
// compares, so the document cannot drift from the code).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"

namespace kern::verify {

/// One code of either catalogue. Strings are static.
struct CatalogueEntry {
  std::string_view id;           ///< "E0001", "E0133", "W0001"
  Severity severity;
  std::string_view title;        ///< one line, lower case
  std::string_view explanation;  ///< prose + a failing and a fixed example
};

/// Every code, reader codes first, then verifier errors, then warnings, each
/// group in ascending order of its spelling.
const std::vector<CatalogueEntry>& full_catalogue();

/// The entry spelled `id` (case-sensitive); nullptr when no code has it.
const CatalogueEntry* find_catalogue_entry(std::string_view id);

/// The text `kern-verify --explain ID` prints: "ID: title", a blank line and
/// the explanation.
std::string render_explanation(const CatalogueEntry& entry);

/// A manifest feature `--explain NAME` describes (not a diagnostic): what
/// a flag promises that kern-verify cannot check. Strings are static.
struct CatalogueTopic {
  std::string_view id;     ///< "pdl"
  std::string_view title;  ///< one line, lower case
  std::string_view explanation;
};

/// Every topic, in the order docs/diagnostics.md lists them.
const std::vector<CatalogueTopic>& catalogue_topics();

/// The topic named `id` (case-sensitive); nullptr when none is.
const CatalogueTopic* find_catalogue_topic(std::string_view id);

/// The text `kern-verify --explain NAME` prints for a topic.
std::string render_topic(const CatalogueTopic& topic);

/// docs/diagnostics.md: an index table and one section per code with its
/// explanation and examples as code blocks (markdown).
std::string render_catalogue_markdown();

}  // namespace kern::verify
