// A waiting handler's view of its client's connection (peer_watch.h).
#include "kern-run/serve/peer_watch.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace kern::run::serve {

bool PeerWatch::alive() const {
  if (fd_ < 0) return true;
  pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return true;  // nothing happened (or EINTR: ask again later)
  if ((p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) != 0) return false;
  if ((p.revents & POLLIN) != 0) {
    char c = 0;
    const ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return false;  // the peer's FIN
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;  // a reset
  }
  return true;
}

}  // namespace kern::run::serve
