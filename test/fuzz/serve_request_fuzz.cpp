// libFuzzer target: kern-run serve's request reading on arbitrary bytes.
// The input is an HTTP request as a client sends it: Beast's parser with
// serve's default limits (http_server.h HttpLimits: head bytes, body bytes
// after chunked decoding) reads it; a body it accepts then goes through
// every route's body parser (parse_generation for both endpoints,
// parse_tokenize, parse_detokenize), as does the whole input taken as a
// body. Every outcome is a value or an ApiError: never a crash, an
// out-of-bounds access, deep recursion or an uncaught exception. Built by
// test/fuzz/build.sh; seeded by run.sh with the hostile cases of
// test/serve/hostile_test.mjs.
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kern-run/serve/api_request.h"
#include "kern-run/serve/http_server.h"

namespace {

void parse_body(std::string_view body) {
  using namespace kern::run::serve;
  GenParams g;
  (void)parse_generation(body, Endpoint::kChat, g);
  GenParams c;
  (void)parse_generation(body, Endpoint::kCompletion, c);
  TokenizeParams t;
  (void)parse_tokenize(body, t);
  std::string model;
  std::vector<int64_t> tokens;
  (void)parse_detokenize(body, model, tokens);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace http = boost::beast::http;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  parse_body(input);

  const kern::run::serve::HttpLimits limits;
  http::request_parser<http::string_body> parser;
  parser.header_limit(limits.max_header_bytes);
  parser.body_limit(limits.max_body_bytes);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = 0;
  // Fed in two pieces, as bytes arrive over a socket.
  const size_t cut = size / 2;
  used += parser.put(boost::asio::buffer(input.data(), cut), ec);
  if (ec == http::error::need_more) ec = {};
  if (!ec && !parser.is_done()) used += parser.put(boost::asio::buffer(input.data() + used, size - used), ec);
  // EOF after a partial message (put_eof requires some bytes parsed).
  if (ec == http::error::need_more && parser.got_some() && !parser.is_done()) parser.put_eof(ec);
  if (!ec && parser.is_done()) parse_body(parser.get().body());
  return 0;
}
