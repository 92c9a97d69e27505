// How `termbridge attach` and `termbridge watch` find the broker again after
// it went away (stopped, restarted, or the connection dropped): each attempt
// dials a fresh channel to the operator socket, the waits between attempts
// grow to at most 2 s, and the person can stop at any moment (Ctrl-C). What
// each viewer resumes is theirs (attach_cli.cc, watch_cli.cc); docs/operating.md
// ("Viewers reconnect") describes what a person sees.
#ifndef TERMBRIDGE_BROKER_CLI_RECONNECT_H_
#define TERMBRIDGE_BROKER_CLI_RECONNECT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "broker/cli/operator_cli.h"
#include "grpcpp/grpcpp.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::cli {

// The one-line status a viewer shows while it redials.
inline constexpr char kBrokerGoneText[] = "broker gone, reconnecting…";

// The waits between attempts: 100 ms, doubling, at most 2 s.
class ReconnectBackoff {
 public:
  // Returns the wait before the next attempt and lengthens the one after.
  absl::Duration Next();
  // Back to 100 ms, once a connection worked.
  void Reset() { next_ = kFirst; }

  static constexpr absl::Duration kFirst = absl::Milliseconds(100);
  static constexpr absl::Duration kMax = absl::Seconds(2);

 private:
  absl::Duration next_ = kFirst;
};

// True when a stream that a viewer did not cancel ended because the broker
// went away (UNAVAILABLE, CANCELLED, ABORTED, UNKNOWN, INTERNAL, or OK from a
// stream the broker only ends when it stops), not because it refused the
// request (NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED, ...).
bool BrokerWentAway(const grpc::Status& status);

// A new channel to the operator socket (its own subchannel, so it dials now
// instead of waiting out an earlier channel's backoff), once it is
// connected. UNAVAILABLE when nothing answers on the socket or the
// connection is not up within `limit`; CANCELLED as soon as `stop` is
// notified (looked at every 100 ms).
absl::StatusOr<std::shared_ptr<v1::TerminalOperator::Stub>> DialOperator(
    const CliOptions& options, absl::Duration limit, const absl::Notification& stop);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_RECONNECT_H_
