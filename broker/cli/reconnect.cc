// Redialing the operator socket for attach and watch: backoff, the statuses
// that mean the broker went away, and a dial that waits for the connection.
#include "broker/cli/reconnect.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace termbridge::cli {

absl::Duration ReconnectBackoff::Next() {
  absl::Duration wait = next_;
  next_ = std::min(next_ * 2, kMax);
  return wait;
}

bool BrokerWentAway(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::shared_ptr<v1::TerminalOperator::Stub>> DialOperator(
    const CliOptions& options, absl::Duration limit, const absl::Notification& stop) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      "unix:" + options.operator_socket, grpc::InsecureChannelCredentials(), args);
  const absl::Time deadline = absl::Now() + limit;
  grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (stop.HasBeenNotified()) return absl::CancelledError("stopped");
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::UnavailableError(absl::StrCat("nothing answers on ", options.operator_socket));
    }
    if (absl::Now() >= deadline) {
      return absl::UnavailableError(absl::StrCat("the broker on ", options.operator_socket,
                                                 " did not answer within ",
                                                 absl::FormatDuration(limit)));
    }
    const absl::Time slice = std::min(deadline, absl::Now() + absl::Milliseconds(100));
    if (channel->WaitForStateChange(state, absl::ToChronoTime(slice))) {
      state = channel->GetState(/*try_to_connect=*/true);
    }
  }
  return std::shared_ptr<v1::TerminalOperator::Stub>(v1::TerminalOperator::NewStub(channel));
}

}  // namespace termbridge::cli
