// A waiting handler's view of its client's connection (peer_watch.h).
#include "kern-run/serve/peer_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace kern::run::serve {
namespace {

/// The numeric host and port of `addr` (as httplib's get_remote_ip_and_port
/// writes them); false for a family other than IPv4 or IPv6.
bool host_and_port(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  if (addr.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  else if (addr.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  else
    return false;
  char buf[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) != 0)
    return false;
  host = buf;
  return true;
}

bool end_is(int fd, bool peer, const std::string& want_host, int want_port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int r = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                     : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string host;
  int port = -1;
  return r == 0 && host_and_port(addr, len, host, port) && port == want_port && host == want_host;
}

}  // namespace

PeerWatch::PeerWatch(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  if (local_port < 0 || remote_port < 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st{};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (end_is(static_cast<int>(fd), false, local_addr, local_port) &&
        end_is(static_cast<int>(fd), true, remote_addr, remote_port)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

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
  return true;  // bytes wait (a pipelined request): still there
}

}  // namespace kern::run::serve
