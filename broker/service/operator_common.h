// What the parts of OperatorService share (operator_service.cc,
// operator_terminals.cc, operator_grants.cc, operator_recordings.cc): who
// acted, from where, and the refusal of callers holding agent credentials.
#ifndef TERMBRIDGE_BROKER_SERVICE_OPERATOR_COMMON_H_
#define TERMBRIDGE_BROKER_SERVICE_OPERATOR_COMMON_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"

namespace termbridge::broker {

// Who acts when an operator request does not say: the broker's user ($USER),
// else "operator".
std::string OperatorName(const std::string& given);

// The surface a request came from: "cli" when it does not say.
std::string SurfaceName(const std::string& given);

// PERMISSION_DENIED with `refused`'s message.
grpc::Status RefusedStatus(const absl::Status& refused);

}  // namespace termbridge::broker

// Opens an OperatorService method: a caller presenting agent credentials is
// refused (docs/security.md: agents never reach the operator service).
#define TB_OPERATOR_ONLY(context)                                                   \
  do {                                                                              \
    if (absl::Status refused = RefuseAgentCredentials(*(context)); !refused.ok()) { \
      return ::termbridge::broker::RefusedStatus(refused);                          \
    }                                                                               \
  } while (0)

#endif  // TERMBRIDGE_BROKER_SERVICE_OPERATOR_COMMON_H_
