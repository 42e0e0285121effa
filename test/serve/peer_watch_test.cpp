// kern-run serve's PeerWatch (kern-run/serve/peer_watch.h) on real loopback
// TCP connections: the accepted socket is alive while the client is
// connected (also with unread bytes waiting), and is seen gone once the
// client closes or resets it. Waits are on the
// sockets' states (poll), bounded by 10 s, never a fixed sleep.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "kern-run/serve/peer_watch.h"

using namespace kern::run::serve;

namespace {

/// A listening socket on 127.0.0.1, a client connected to it and the accepted end.
struct Connection {
  int listener = -1, client = -1, server = -1;
  int server_port = -1;
  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(listener, 1) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    server_port = ntohs(a.sin_port);
    client = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    server = accept(listener, nullptr, nullptr);
    REQUIRE(server >= 0);
  }
  ~Connection() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
  void close_client() {
    close(client);
    client = -1;
  }
};

/// Polls `w` until it reports the peer gone (the FIN or RST crosses loopback
/// at once; at most 10 s and 10000 looks, for a loaded machine).
bool seen_gone(const PeerWatch& w) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < 10000 && std::chrono::steady_clock::now() < deadline; ++i) {
    if (!w.alive()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return !w.alive();
}

/// Waits until `fd` has bytes to read (at most 10 s).
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 10000) == 1 && (p.revents & POLLIN) != 0;
}

}  // namespace

TEST_CASE("PeerWatch sees the client close the connection, not unread bytes", "[serve][peer]") {
  Connection c;
  const PeerWatch w(c.server);
  CHECK(w.alive());
  // Unread bytes (a pipelined request) are not a hang-up; they stay unread.
  // Looked at once they have arrived (was: after a 10 ms sleep, which on a
  // loaded machine could look before they did and prove nothing).
  REQUIRE(write(c.client, "GET", 3) == 3);
  REQUIRE(readable(c.server));
  CHECK(w.alive());
  char buf[4] = {};
  CHECK(recv(c.server, buf, sizeof buf, MSG_DONTWAIT) == 3);
  c.close_client();
  CHECK(seen_gone(w));
}

TEST_CASE("PeerWatch sees a reset connection gone, and no socket as alive", "[serve][peer]") {
  Connection c;
  const PeerWatch w(c.server);
  linger reset{1, 0};  // close with RST
  REQUIRE(setsockopt(c.client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset) == 0);
  c.close_client();
  CHECK(seen_gone(w));
  // No socket: nothing is known to be gone.
  CHECK(PeerWatch(-1).alive());
}
