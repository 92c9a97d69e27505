// A bounded TCP connect used to tell "nothing is listening" (refused, no
// route, unresolvable) apart from a broker that accepted the connection.
#ifndef TERMBRIDGE_AGENT_BRIDGE_TCP_PROBE_H_
#define TERMBRIDGE_AGENT_BRIDGE_TCP_PROBE_H_

#include <string>

#include "absl/status/status.h"

namespace termbridge::bridge {

// Returns OK when host:port accepted a TCP connection within timeout_ms;
// otherwise UNAVAILABLE (refused, unreachable, unresolvable) or
// DEADLINE_EXCEEDED, with the reason in the message.
// A connection to a port nothing listens on can still "succeed" on loopback:
// when the kernel picks the destination port as the source port, the socket
// connects to itself (TCP simultaneous open). Such a connection counts as
// refused.
absl::Status ProbeTcp(const std::string& host, int port, int timeout_ms);

// Whether the connected socket fd is connected to itself (its local and peer
// addresses are the same).
bool ConnectedToItself(int fd);

}  // namespace termbridge::bridge

#endif  // TERMBRIDGE_AGENT_BRIDGE_TCP_PROBE_H_
