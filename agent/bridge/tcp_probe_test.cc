// Tests for the TCP probe: a listener is reachable, a bound port that does not
// listen is refused, and a loopback socket the kernel connected to itself
// (nothing listens; source port == destination port) is told apart.
#include "agent/bridge/tcp_probe.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace termbridge::bridge {
namespace {

// A loopback TCP socket bound to a port of the kernel's choice.
class BoundSocket {
 public:
  BoundSocket() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    address_.sin_family = AF_INET;
    address_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address_), sizeof address_), 0);
    socklen_t len = sizeof address_;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address_), &len);
  }
  ~BoundSocket() { close(fd_); }
  int fd() const { return fd_; }
  int port() const { return ntohs(address_.sin_port); }
  const sockaddr_in& address() const { return address_; }

 private:
  int fd_ = -1;
  sockaddr_in address_{};
};

TEST(TcpProbeTest, AListeningPortIsReachable) {
  BoundSocket listener;
  ASSERT_EQ(listen(listener.fd(), 1), 0);
  EXPECT_TRUE(ProbeTcp("127.0.0.1", listener.port(), 2000).ok());
}

TEST(TcpProbeTest, ABoundPortThatDoesNotListenIsRefused) {
  BoundSocket closed;
  absl::Status probe = ProbeTcp("127.0.0.1", closed.port(), 2000);
  EXPECT_TRUE(absl::IsUnavailable(probe)) << probe;
}

TEST(TcpProbeTest, ASocketConnectedToItselfIsRecognised) {
  // Connecting a bound socket to its own address is the simultaneous open the
  // kernel performs when it picks the destination port as the source port.
  BoundSocket self;
  ASSERT_EQ(
      connect(self.fd(), reinterpret_cast<const sockaddr*>(&self.address()), sizeof self.address()),
      0);
  EXPECT_TRUE(ConnectedToItself(self.fd()));

  BoundSocket listener;
  ASSERT_EQ(listen(listener.fd(), 1), 0);
  int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<const sockaddr*>(&listener.address()),
                    sizeof listener.address()),
            0);
  EXPECT_FALSE(ConnectedToItself(client));
  close(client);
}

}  // namespace
}  // namespace termbridge::bridge
