// Non-blocking connect with a poll() deadline, over every resolved address.
#include "agent/bridge/tcp_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace termbridge::bridge {
namespace {

// Returns 0 on success, an errno value on failure, or ETIMEDOUT.
int ConnectOne(const addrinfo& ai, absl::Time deadline) {
  int fd = socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) return errno;
  int result = 0;
  if (connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      result = errno;
    } else {
      pollfd pfd{fd, POLLOUT, 0};
      int left = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
      int ready = poll(&pfd, 1, left < 0 ? 0 : left);
      if (ready <= 0) {
        result = ETIMEDOUT;
      } else {
        socklen_t len = sizeof(result);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &result, &len);
      }
    }
  }
  if (result == 0 && ConnectedToItself(fd)) result = ECONNREFUSED;
  close(fd);
  return result;
}

}  // namespace

bool ConnectedToItself(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  return local_len == peer_len && std::memcmp(&local, &peer, local_len) == 0;
}

absl::Status ProbeTcp(const std::string& host, int port, int timeout_ms) {
  absl::Time deadline = absl::Now() + absl::Milliseconds(timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  int last = ECONNREFUSED;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    last = ConnectOne(*ai, deadline);
    if (last == 0) break;
  }
  freeaddrinfo(list);
  if (last == 0) return absl::OkStatus();
  std::string reason = absl::StrCat(host, ":", port, ": ", std::strerror(last));
  if (last == ETIMEDOUT) return absl::DeadlineExceededError(reason);
  return absl::UnavailableError(reason);
}

}  // namespace termbridge::bridge
