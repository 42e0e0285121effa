// kern-run serve's HTTP/1.1 server on Boost.Beast (http_server.h).
//
// Each connection lives on its own strand. Reading is asynchronous and
// bounded: wait for the first byte of a request (the keep-alive timeout
// between requests), read the head within --header-timeout (Beast's
// header_limit bounds its bytes), check it, read the body within
// --body-timeout (Beast's body_limit bounds it, chunked or not), then hand
// the request to its handler. Inline handlers (probes) answer on the I/O
// thread; pool handlers run on a HandlerPool thread and write by posting an
// asynchronous write to the strand and waiting for it, so every write is
// bounded by --write-timeout (tcp_stream's expiry closes the socket). Bytes
// past one request stay in the connection's buffer for the next (pipelining).
#include "kern-run/serve/http_server.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "kern-run/serve/peer_watch.h"

namespace kern::run::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// Beast's string_view (boost::string_view in Boost 1.74) as std's.
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }
beast::string_view bsv(std::string_view s) { return {s.data(), s.size()}; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

// HttpServer::Impl's members: a named namespace, not an anonymous one, so
// that a class with external linkage may hold them in a unity build too
// (GCC's -Wsubobject-linkage, which treats an #included .cpp as a header).
namespace http_detail {

/// Threads for handlers that may block, started as requests need them (at
/// most `max`), kept until drain_and_join.
class HandlerPool {
 public:
  explicit HandlerPool(size_t max) : max_(std::max<size_t>(max, 1)) {}
  ~HandlerPool() { drain_and_join(); }

  /// Runs `task` on a pool thread (a new one while all are busy and fewer
  /// than `max` run). False once drain_and_join has begun (not run).
  bool post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
    if (idle_ < tasks_.size() && threads_.size() < max_) threads_.emplace_back([this] { loop(); });
    cv_.notify_one();
    return true;
  }

  /// Runs what is queued, then ends every thread and joins it.
  void drain_and_join() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (tasks_.empty()) return;  // stopping, nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

struct Route {
  std::string method, path;
  HandlerThread where;
  HttpHandler handler;
};

}  // namespace http_detail

using http_detail::HandlerPool;
using http_detail::Route;

struct HttpServer::Impl {
  Impl(HttpLimits l, size_t pool_threads, size_t io) : limits(l), pool(pool_threads), io_threads(std::max<size_t>(io, 1)) {}

  HttpLimits limits;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<Route> routes;
  std::function<std::optional<HttpResponse>(const HttpRequest&)> pre_routing;
  std::function<HttpResponse(int, const std::string&, const std::string&)> error_body;
  HandlerPool pool;
  size_t io_threads;

  std::atomic<bool> stopping{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop_requested = false;

  std::mutex conns_mu;
  std::unordered_map<HttpConnection*, std::weak_ptr<HttpConnection>> conns;
  std::atomic<size_t> open{0};

  void accept();
  void close_all();
  HttpResponse error(int status, const std::string& message, const std::string& code) const {
    if (error_body) return error_body(status, message, code);
    HttpResponse r;
    r.status = status;
    r.content_type = "text/plain";
    r.body = message;
    return r;
  }
};

/// One client connection (see the file comment for its life).
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(HttpServer::Impl& server, tcp::socket socket)
      : s_(server), stream_(std::move(socket)), buffer_(server.limits.max_header_bytes + (64u << 10)) {}
  ~HttpConnection() {
    std::lock_guard<std::mutex> lock(s_.conns_mu);
    s_.conns.erase(this);
    s_.open--;
  }

  void start(bool over_limit) {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      remote_addr_ = ep.address().to_string();
      remote_port_ = ep.port();
    }
    if (over_limit) {
      keep_alive_ = false;
      return write_inline(s_.error(503, "the server has " + std::to_string(s_.limits.max_connections) +
                                            " connections open (--max-connections); retry later",
                                   "too_many_connections"));
    }
    wait_for_request();
  }

  beast::tcp_stream::executor_type executor() { return stream_.get_executor(); }

  /// Closes the connection if it waits for a request (shutdown); a running handler keeps it.
  void close_if_idle() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->in_handler_) self->stream_.close();
    });
  }

  // The exchange's blocking writes (pool threads only).
  bool blocking_respond(const HttpResponse& r) {
    auto msg = make_response(r);
    return blocking([&](auto done) { http::async_write(stream_, msg, done); });
  }
  bool blocking_begin_stream(int status, std::string_view type,
                             const std::vector<std::pair<std::string, std::string>>& headers) {
    http::response<http::empty_body> head{static_cast<http::status>(status), 11};
    head.set(http::field::server, "kern");
    head.set(http::field::content_type, bsv(type));
    for (const auto& [k, v] : headers) head.set(bsv(k), bsv(v));
    head.chunked(true);
    head.keep_alive(keep_alive_ && !s_.stopping);
    http::response_serializer<http::empty_body> sr{head};
    return blocking([&](auto done) { http::async_write_header(stream_, sr, done); });
  }
  bool blocking_chunk(std::string_view data) {
    if (data.empty()) return !broken_;
    return blocking([&](auto done) {
      asio::async_write(stream_, http::make_chunk(asio::const_buffer(data.data(), data.size())), done);
    });
  }
  bool blocking_last_chunk() {
    return blocking([&](auto done) { asio::async_write(stream_, http::make_chunk_last(), done); });
  }
  bool peer_alive() const { return !broken_ && PeerWatch(fd_).alive(); }
  /// Closes the connection once the handler returns (nothing more is written).
  void mark_broken() { broken_ = true; }
  void write_inline(const HttpResponse& r) {
    auto msg = std::make_shared<http::response<http::string_body>>(make_response(r));
    stream_.expires_after(s_.limits.write_timeout);
    http::async_write(stream_, *msg, [self = shared_from_this(), msg](beast::error_code ec, size_t) {
      self->stream_.expires_never();
      if (ec) return self->stream_.close();
      self->after_response();
    });
  }

 private:
  /// Starts `op(done)` on the strand with the write timeout and waits for it.
  /// False (and the connection unusable) on any error.
  template <typename Op>
  bool blocking(Op op) {
    if (broken_) return false;
    std::promise<beast::error_code> p;
    auto f = p.get_future();
    asio::post(stream_.get_executor(), [&] {
      stream_.expires_after(s_.limits.write_timeout);
      op([this, &p](beast::error_code ec, size_t) {
        stream_.expires_never();
        p.set_value(ec);
      });
    });
    if (f.get()) {
      broken_ = true;
      return false;
    }
    return true;
  }

  http::response<http::string_body> make_response(const HttpResponse& r) const {
    http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
    res.set(http::field::server, "kern");
    res.set(http::field::content_type, bsv(r.content_type));
    for (const auto& [k, v] : r.headers) res.set(bsv(k), bsv(v));
    res.body() = r.body;
    res.keep_alive(keep_alive_ && !s_.stopping);
    res.prepare_payload();
    return res;
  }

  void wait_for_request() {
    if (s_.stopping) return stream_.close();
    parser_.emplace();
    parser_->header_limit(s_.limits.max_header_bytes);
    parser_->body_limit(s_.limits.max_body_bytes);
    if (buffer_.size() > 0) return read_head();  // a pipelined request
    arm(first_ ? s_.limits.header_timeout : s_.limits.keep_alive_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->disarm();
      if (ec) return self->stream_.close();  // idle too long, the client left, or shutdown
      self->buffer_.commit(n);
      self->read_head();
    });
  }

  void read_head() {
    first_ = false;
    arm(s_.limits.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->on_head(self->disarm(ec));
    });
  }

  /// Starts a read deadline: past it the socket's pending read is cancelled
  /// and completes as a timeout (disarm). tcp_stream's own expiry would
  /// close the socket, leaving no way to answer 408.
  void arm(std::chrono::milliseconds d) {
    timed_out_ = false;
    deadline_.expires_after(d);
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // cancelled: the read completed first
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  /// Stops the deadline; a read cancelled by it becomes beast::error::timeout.
  beast::error_code disarm(beast::error_code ec = {}) {
    deadline_.cancel();
    if (timed_out_ && ec == asio::error::operation_aborted) return beast::error::timeout;
    return ec;
  }

  /// Answers a request that cannot be read on (a limit, a malformed head)
  /// and closes the connection once the answer is written.
  void refuse(int status, const std::string& message, const std::string& code) {
    keep_alive_ = false;
    write_inline(s_.error(status, message, code));
  }

  bool read_error(beast::error_code ec, bool head) {
    if (!ec) return false;
    if (ec == http::error::header_limit)
      refuse(431, "the request head is larger than " + std::to_string(s_.limits.max_header_bytes) +
                      " bytes (--max-header-bytes)",
             "request_header_fields_too_large");
    else if (ec == http::error::body_limit)
      refuse(413, "the request body is larger than " + std::to_string(s_.limits.max_body_bytes) +
                      " bytes (--max-body-bytes)",
             "payload_too_large");
    else if (ec == beast::error::timeout)
      refuse(408, head ? "the request head did not arrive within --header-timeout"
                       : "the request body did not arrive within --body-timeout",
             "request_timeout");
    else if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
             ec == asio::error::operation_aborted || ec == http::error::partial_message)
      stream_.close();
    else
      refuse(400, "malformed HTTP request: " + ec.message(), "bad_request");
    return true;
  }

  void on_head(beast::error_code ec) {
    if (read_error(ec, true)) return;
    auto& req = parser_->get();
    const size_t fields = static_cast<size_t>(std::distance(req.begin(), req.end()));
    if (fields > s_.limits.max_headers)
      return refuse(431, "the request has " + std::to_string(fields) + " header fields; at most " +
                             std::to_string(s_.limits.max_headers) + " are accepted (--max-headers)",
                    "request_header_fields_too_large");
    auto ce = req.find(http::field::content_encoding);
    if (ce != req.end() && !iequals(sv(ce->value()), "identity"))
      return refuse(415, "Content-Encoding '" + std::string(sv(ce->value()).substr(0, 64)) +
                             "' is not accepted: send the body uncompressed",
                    "unsupported_content_encoding");
    auto te = req.find(http::field::transfer_encoding);
    if (te != req.end() && !iequals(sv(te->value()), "chunked"))
      return refuse(501, "Transfer-Encoding '" + std::string(sv(te->value()).substr(0, 64)) +
                             "' is not supported: send chunked or a Content-Length",
                    "unsupported_transfer_encoding");
    keep_alive_ = req.keep_alive();
    if (parser_->is_done()) return dispatch();
    auto expect = req.find(http::field::expect);
    if (expect != req.end() && iequals(sv(expect->value()), "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      stream_.expires_after(s_.limits.write_timeout);
      return asio::async_write(stream_, asio::buffer(kContinue),
                               [self = shared_from_this()](beast::error_code wec, size_t) {
                                 if (wec) return self->stream_.close();
                                 self->read_body();
                               });
    }
    read_body();
  }

  void read_body() {
    arm(s_.limits.body_timeout);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->read_error(self->disarm(ec), false)) return;
      self->dispatch();
    });
  }

  void dispatch() {
    stream_.expires_never();
    auto& m = parser_->get();
    HttpRequest r;
    r.method = std::string(sv(m.method_string()));
    r.target = std::string(sv(m.target()));
    r.path = r.target.substr(0, r.target.find('?'));
    for (const auto& f : m) r.headers.emplace_back(std::string(sv(f.name_string())), std::string(sv(f.value())));
    r.body = std::move(m.body());
    r.remote_addr = remote_addr_;
    r.remote_port = remote_port_;
    parser_.reset();
    if (s_.stopping) {
      keep_alive_ = false;
      return write_inline(s_.error(503, "the server is shutting down", "shutting_down"));
    }
    if (s_.pre_routing)
      if (auto refused = s_.pre_routing(r)) return write_inline(*refused);
    const Route* route = nullptr;
    bool path_known = false;
    for (const Route& rt : s_.routes) {
      if (rt.path != r.path) continue;
      path_known = true;
      if (rt.method == r.method) route = &rt;
    }
    if (route == nullptr) {
      const std::string shown = r.method.substr(0, 16) + " " + r.path.substr(0, 256);
      return write_inline(path_known ? s_.error(405, "the method " + shown + " is not allowed", "method_not_allowed")
                                     : s_.error(404, "no route " + shown, "not_found"));
    }
    in_handler_ = true;
    if (route->where == HandlerThread::kInline) {
      HttpExchange ex(*this, std::move(r), true);
      run_handler(*route, ex);
      in_handler_ = false;
      return write_inline(ex.inline_response() ? *ex.inline_response()
                                               : s_.error(500, "the handler gave no response", "internal_error"));
    }
    const bool posted = s_.pool.post([self = shared_from_this(), route, r = std::move(r)]() mutable {
      HttpExchange ex(*self, std::move(r), false);
      self->run_handler(*route, ex);
      if (!ex.answered()) ex.respond(self->s_.error(500, "the handler gave no response", "internal_error"));
      if (ex.stream_open()) self->mark_broken();  // an unfinished stream: the client sees it cut
      asio::post(self->stream_.get_executor(), [self] {
        self->in_handler_ = false;
        if (self->broken_) return self->stream_.close();
        self->after_response();
      });
    });
    if (!posted) {  // the server began stopping after the check above
      in_handler_ = false;
      keep_alive_ = false;
      write_inline(s_.error(503, "the server is shutting down", "shutting_down"));
    }
  }

  void run_handler(const Route& route, HttpExchange& ex) {
    try {
      route.handler(ex);
    } catch (const std::exception& e) {
      if (!ex.answered()) ex.respond(s_.error(500, e.what(), "internal_error"));
    } catch (...) {
      if (!ex.answered()) ex.respond(s_.error(500, "internal error", "internal_error"));
    }
  }

  void after_response() {
    if (!keep_alive_ || s_.stopping) return linger_close();
    wait_for_request();
  }

  /// Ends the connection after an answer: our side shuts down, then what the
  /// client still sends (the rest of a refused body) is read and dropped for
  /// a while, so that closing with unread bytes does not reset the
  /// connection before the client has read the answer (nginx's
  /// lingering_close: at most kLingerBytes or kLingerTime).
  void linger_close() {
    static constexpr size_t kLingerBytes = 8u << 20;
    static constexpr auto kLingerTime = std::chrono::seconds(2);
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return stream_.close();
    linger_left_ = kLingerBytes;
    scratch_.resize(16u << 10);
    stream_.expires_after(kLingerTime);
    discard();
  }

  void discard() {
    stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec || n >= self->linger_left_) return self->stream_.close();
      self->linger_left_ -= n;
      self->discard();
    });
  }

  HttpServer::Impl& s_;
  beast::tcp_stream stream_;
  asio::steady_timer deadline_{stream_.get_executor()};  ///< the read deadline (arm)
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string remote_addr_;
  int remote_port_ = -1;
  int fd_ = stream_.socket().native_handle();
  bool first_ = true;
  bool keep_alive_ = true;
  bool in_handler_ = false;       ///< strand only
  size_t linger_left_ = 0;        ///< bytes still dropped before a lingering close ends
  std::vector<char> scratch_;     ///< where they are dropped
  std::atomic<bool> broken_{false};  ///< a blocking write failed
};

// --- HttpExchange ---

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

bool HttpExchange::respond(const HttpResponse& response) {
  if (answered_) return false;
  answered_ = true;
  if (inline_) {
    inline_response_ = response;
    return true;
  }
  return connection_.blocking_respond(response);
}

bool HttpExchange::begin_stream(int status, std::string_view content_type,
                                const std::vector<std::pair<std::string, std::string>>& headers) {
  if (answered_ || inline_) return false;
  answered_ = streaming_ = true;
  return connection_.blocking_begin_stream(status, content_type, headers);
}

bool HttpExchange::write(std::string_view data) { return streaming_ && connection_.blocking_chunk(data); }

bool HttpExchange::end_stream() {
  if (!streaming_) return false;
  streaming_ = false;
  return connection_.blocking_last_chunk();
}

void HttpExchange::drop() {
  answered_ = true;
  streaming_ = false;
  connection_.mark_broken();
}

bool HttpExchange::peer_alive() const { return connection_.peer_alive(); }

// --- HttpServer ---

void HttpServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec && !stopping) {
      const bool over = open.load() >= limits.max_connections;
      open++;
      auto c = std::make_shared<HttpConnection>(*this, std::move(socket));
      {
        std::lock_guard<std::mutex> lock(conns_mu);
        conns.emplace(c.get(), c);
      }
      // The connection's work runs on its strand (the socket's executor).
      asio::dispatch(c->executor(), [c, over] { c->start(over); });
    }
    // Errors of one accept (EMFILE, a reset before accept) do not end the server.
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
      auto timer = std::make_shared<asio::steady_timer>(ioc, std::chrono::milliseconds(50));
      timer->async_wait([this, timer](beast::error_code) { accept(); });
      return;
    }
    accept();
  });
}

void HttpServer::Impl::close_all() {
  std::vector<std::shared_ptr<HttpConnection>> live;
  {
    std::lock_guard<std::mutex> lock(conns_mu);
    for (auto& [p, w] : conns)
      if (auto c = w.lock()) live.push_back(std::move(c));
  }
  for (auto& c : live) c->close_if_idle();
}

HttpServer::HttpServer(HttpLimits limits, size_t pool_threads, size_t io_threads)
    : impl_(std::make_unique<Impl>(limits, pool_threads, io_threads)) {}

HttpServer::~HttpServer() = default;

void HttpServer::route(std::string method, std::string path, HandlerThread where, HttpHandler handler) {
  impl_->routes.push_back({std::move(method), std::move(path), where, std::move(handler)});
}

void HttpServer::set_pre_routing(std::function<std::optional<HttpResponse>(const HttpRequest&)> check) {
  impl_->pre_routing = std::move(check);
}

void HttpServer::set_error_body(std::function<HttpResponse(int, const std::string&, const std::string&)> f) {
  impl_->error_body = std::move(f);
}

Result<int> HttpServer::bind(const std::string& host, int port) {
  beast::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::numeric_service, ec);
  if (ec || results.empty())
    return make_error(ErrorKind::kIo, "--host " + host + ": cannot resolve (" + ec.message() + ")");
  const tcp::endpoint ep = results.begin()->endpoint();
  const std::string where = "--host " + host + " --port " + std::to_string(port);
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  // SO_REUSEADDR lets a restarted server bind over connections in TIME_WAIT;
  // on Linux it never lets two sockets listen on one port (SO_REUSEPORT,
  // which httplib set, does: a second server shared the port).
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(impl_->limits.backlog, ec);
  if (ec) {
    beast::error_code ignored;
    a.close(ignored);
    return make_error(ErrorKind::kIo, where + ": cannot listen (" + ec.message() +
                                          (ec == asio::error::address_in_use ? ": another process listens there" : "") +
                                          ")");
  }
  return static_cast<int>(a.local_endpoint().port());
}

void HttpServer::run() {
  Impl& s = *impl_;
  auto work = asio::make_work_guard(s.ioc);
  s.accept();
  std::vector<std::thread> io;
  for (size_t i = 0; i < s.io_threads; ++i) io.emplace_back([&s] { s.ioc.run(); });
  {
    std::unique_lock<std::mutex> lock(s.stop_mu);
    s.stop_cv.wait(lock, [&s] { return s.stop_requested; });
  }
  s.pool.drain_and_join();  // running handlers return (their writes still need the I/O threads)
  asio::post(s.ioc, [&s] { s.close_all(); });
  work.reset();
  for (std::thread& t : io) t.join();
}

void HttpServer::stop() {
  Impl& s = *impl_;
  s.stopping = true;
  asio::post(s.ioc, [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
    s.close_all();
  });
  {
    std::lock_guard<std::mutex> lock(s.stop_mu);
    s.stop_requested = true;
  }
  s.stop_cv.notify_all();
}

}  // namespace kern::run::serve
