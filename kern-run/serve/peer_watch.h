// Whether an HTTP client is still connected, for a handler that waits
// without writing (kern-run serve: a non-streaming request while it
// generates, any request while it waits in the queue). A TCP peer that
// closed or reset the connection makes its socket report a hang-up, or
// readable with nothing to read; PeerWatch polls for that without reading.
// A client that only half-closes (shutdown of its writing side) while it
// still waits for the answer is taken as gone too, as cpp-httplib's
// Request::is_connection_closed takes it; HTTP clients (curl, Node's fetch,
// the openai clients) do not half-close.
#pragma once

namespace kern::run::serve {

class PeerWatch {
 public:
  /// Watches the connected socket `fd` (borrowed: never closed here); a
  /// negative fd is never seen gone.
  explicit PeerWatch(int fd) : fd_(fd) {}

  /// False once the client closed or reset the connection. Does not block
  /// and reads nothing (a peek of one byte): bytes that wait (a pipelined
  /// request) are not a hang-up.
  bool alive() const;

 private:
  int fd_ = -1;
};

}  // namespace kern::run::serve
