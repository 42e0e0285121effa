// The --version text and JSON object of kern's tools (version.h).
#include "common/version.h"

#include "common/build_info.h"
#include "common/plan_format.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace kern {

std::string version_text(std::string_view tool) {
  return std::string(tool) + " " + kVersion + " (commit " + kBuildCommit + ", plan format " +
         std::to_string(kPlanFormatVersion) + ", " + kBuildType + " build)\n";
}

std::string version_json() {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("version");
  w.String(kVersion);
  w.Key("commit");
  w.String(kBuildCommit);
  w.Key("plan_format");
  w.Uint(kPlanFormatVersion);
  w.Key("build_type");
  w.String(kBuildType);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace kern
