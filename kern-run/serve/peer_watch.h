// Whether an HTTP client is still connected, for a handler that waits
// without writing (kern-run serve: a non-streaming request while it
// generates, any request while it waits in the queue). cpp-httplib 0.11
// hands a handler its Request, not its socket, and notices a closed
// connection only when a write fails, so a handler that writes nothing
// until the end never sees the client leave. PeerWatch finds the
// connection's socket among the process's descriptors by its two addresses
// (Request::local_addr/local_port and remote_addr/remote_port: a TCP
// connection's 4-tuple is unique among open sockets, and httplib keeps the
// socket open until the handler returns) and polls it: a peer that closed
// or reset the connection makes the socket report a hang-up, or readable
// with nothing to read. A client that only half-closes (shutdown of its
// writing side) while it still waits for the answer is taken as gone too,
// as later cpp-httplib's Request::is_connection_closed takes it; HTTP
// clients (curl, Node's fetch, the openai clients) do not half-close.
#pragma once

#include <string>

namespace kern::run::serve {

class PeerWatch {
 public:
  /// Finds the socket whose local end is local_addr:local_port and whose
  /// peer is remote_addr:remote_port (numeric hosts, as httplib writes
  /// them) in /proc/self/fd. Not found (no /proc, an address httplib could
  /// not read): found() is false and alive() always true.
  PeerWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

  /// Whether the connection's socket was found.
  bool found() const { return fd_ >= 0; }
  /// False once the client closed or reset the connection. Does not block
  /// and reads nothing (a peek of one byte).
  bool alive() const;

 private:
  int fd_ = -1;  ///< borrowed from httplib: never closed here
};

}  // namespace kern::run::serve
