// kern-run serve's HTTP/1.1 layer, on Boost.Beast (Debian's libboost-dev):
// Beast's parser bounds the request head (bytes) and the body (bytes after
// chunked transfer decoding) as it reads, keeps pipelined bytes for the next
// request, and Asio reads every connection asynchronously, so a client that
// sends slowly holds no thread. What is ours is the policy around it
// (docs/serving.md "Limits and hostile clients"): deadlines for the whole
// head and the whole body, a header count, 415 for content codings, a cap
// on open connections, probes answered on the I/O threads, and every other
// handler on a pool of threads that may block (a generation streams for
// minutes). cpp-httplib 0.11, which this replaces, had none of these limits
// built in (issue 48).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kern::run::serve {

/// Every bound the server puts on a client (docs/serving.md "Limits and
/// hostile clients" gives each one's option and default).
struct HttpLimits {
  /// Body bytes after chunked transfer decoding; more: 413 and the
  /// connection closed. A Content-Length over it is refused before a byte of
  /// the body is read.
  uint64_t max_body_bytes = 8u << 20;
  /// Bytes of the request line and headers together; more: 431.
  uint32_t max_header_bytes = 32u << 10;
  /// Header fields in one request; more: 431.
  size_t max_headers = 100;
  /// The whole request head must arrive within this (nginx's
  /// client_header_timeout, measured from the first byte wait, not restarted
  /// by each byte); past it: 408 and the connection closed.
  std::chrono::milliseconds header_timeout{10'000};
  /// The whole body must arrive within this after the head; past it: 408.
  std::chrono::milliseconds body_timeout{30'000};
  /// An idle keep-alive connection is closed after this.
  std::chrono::milliseconds keep_alive_timeout{5'000};
  /// One write to a client that does not read: past it, the connection is
  /// closed (a stream's handler sees its write fail).
  std::chrono::milliseconds write_timeout{30'000};
  /// Open connections; a connection past it gets 503 and is closed.
  size_t max_connections = 512;
  /// The listen(2) backlog: connections the kernel queues before accept.
  int backlog = 512;
};

/// One request as read, the body whole (at most HttpLimits::max_body_bytes).
struct HttpRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string target;  ///< as sent: the path and query
  std::string path;    ///< target up to '?'
  std::vector<std::pair<std::string, std::string>> headers;  ///< in arrival order
  std::string body;
  std::string remote_addr;  ///< the client's numeric address
  int remote_port = -1;

  /// The first header named `name` (case-insensitive), or "".
  std::string_view header(std::string_view name) const;
};

/// One whole response.
struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< beyond Content-Type and Content-Length
};

class HttpConnection;  // http_server.cpp

/// A handler's side of one request: answer once, either whole (respond) or
/// streamed in chunks (begin_stream, write..., end_stream). Calls from a pool
/// handler block until the bytes are written, at most
/// HttpLimits::write_timeout each; an inline handler's response is written
/// after it returns and it may not stream.
class HttpExchange {
 public:
  HttpExchange(HttpConnection& connection, HttpRequest request, bool inline_handler)
      : connection_(connection), request_(std::move(request)), inline_(inline_handler) {}

  const HttpRequest& request() const { return request_; }

  /// Sends `response` whole. False when the client is gone (the answer is lost).
  bool respond(const HttpResponse& response);
  /// Sends the status line and headers of a chunked response (Transfer-Encoding: chunked).
  bool begin_stream(int status, std::string_view content_type,
                    const std::vector<std::pair<std::string, std::string>>& headers);
  /// Sends one chunk (empty: nothing). False once the client is gone or a write timed out.
  bool write(std::string_view data);
  /// Ends a stream (the last, empty chunk).
  bool end_stream();
  /// False once the client closed or reset the connection; reads nothing,
  /// never blocks (peer_watch.h). For a handler that waits without writing.
  bool peer_alive() const;

  /// The client is gone: nothing is sent and the connection is closed.
  void drop();

  /// Whether a response (whole or begun) was sent, or the exchange dropped.
  bool answered() const { return answered_; }
  /// Whether a stream was begun and not ended (the connection cannot be reused).
  bool stream_open() const { return streaming_; }
  /// The response an inline handler gave (written after it returns).
  std::optional<HttpResponse>& inline_response() { return inline_response_; }

 private:
  HttpConnection& connection_;
  HttpRequest request_;
  bool inline_ = false;
  bool answered_ = false;
  bool streaming_ = false;
  std::optional<HttpResponse> inline_response_;
};

/// A request handler. It must answer through the exchange; one that returns
/// without answering gets a 500.
using HttpHandler = std::function<void(HttpExchange&)>;

/// Where a route's handler runs.
enum class HandlerThread {
  kInline,  ///< on an I/O thread: must never block (probes: /health, /metrics)
  kPool,    ///< on a pool thread: may block and stream
};

/// The server: bind, then run until stop. Thread-safe: stop() from any thread.
class HttpServer {
 public:
  /// `pool_threads`: handlers that may run at once on the pool (requests
  /// past it wait for a thread). `io_threads`: threads reading and writing.
  HttpServer(HttpLimits limits, size_t pool_threads, size_t io_threads = 2);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Adds a route: `method` and exact `path` (the query is ignored).
  void route(std::string method, std::string path, HandlerThread where, HttpHandler handler);
  /// Called before routing (on the I/O thread, must not block): a response
  /// refuses the request (e.g. a missing API key).
  void set_pre_routing(std::function<std::optional<HttpResponse>(const HttpRequest&)> check);
  /// Builds the body of a status the server answers itself (400, 404, 405,
  /// 408, 413, 415, 431, 500, 503): `code` is a stable word such as
  /// "payload_too_large", `message` says what was exceeded.
  void set_error_body(std::function<HttpResponse(int status, const std::string& message, const std::string& code)> f);

  /// Binds `host`:`port` (0: any free port) without SO_REUSEPORT, so a port
  /// another process listens on is an error. Returns the port bound. Errors
  /// (kIo): the host does not resolve, or bind/listen fails (errno's text).
  Result<int> bind(const std::string& host, int port);
  /// Serves until stop(): returns once every handler has returned.
  void run();
  /// Stops accepting, closes idle connections and lets run() return once
  /// running handlers return. Safe before run() (run returns at once).
  void stop();

 private:
  friend class HttpConnection;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kern::run::serve
