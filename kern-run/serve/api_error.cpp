// The OpenAI error body (api_error.h).
#include "kern-run/serve/api_error.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace kern::run::serve {

ApiError bad_request(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

std::string error_json(const ApiError& e) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str_or_null = [&w](const std::string& s) {
    if (s.empty()) w.Null();
    else w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("message");
  w.String(e.message.c_str(), static_cast<rapidjson::SizeType>(e.message.size()));
  w.Key("type");
  w.String(e.type.c_str(), static_cast<rapidjson::SizeType>(e.type.size()));
  w.Key("param");
  str_or_null(e.param);
  w.Key("code");
  str_or_null(e.code);
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

}  // namespace kern::run::serve
