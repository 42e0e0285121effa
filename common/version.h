// What `--version` reports for kern's tools (issue 25): the version, the
// commit, the plan format this build writes and reads, and the build type,
// as one text line and as a JSON object for --json / SARIF output.
#pragma once

#include <string>
#include <string_view>

namespace kern {

/// "TOOL 0.1.0 (commit 9d4898b1c2e3, plan format 3, debugoptimized build)\n".
std::string version_text(std::string_view tool);

/// {"version":"0.1.0","commit":"9d4898b1c2e3","plan_format":3,
///  "build_type":"debugoptimized"} as compact JSON text (no newline), to be
/// embedded with rapidjson's Writer::RawValue.
std::string version_json();

}  // namespace kern
