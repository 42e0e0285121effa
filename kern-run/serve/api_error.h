// The OpenAI error shape kern-run serve answers with:
// {"error": {"message", "type", "param", "code"}} and its HTTP status
// (docs/serving.md lists each status, type and code).
#pragma once

#include <string>

namespace kern::run::serve {

/// One failed request: the HTTP status and the body's fields.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  ///< the request field at fault ("messages[1].content"); empty: null
  std::string code;   ///< a stable code ("context_length_exceeded"); empty: null
};

/// A 400 invalid_request_error naming `param`.
ApiError bad_request(std::string message, std::string param = "", std::string code = "");

/// The error as its JSON body (one line).
std::string error_json(const ApiError& e);

}  // namespace kern::run::serve
