// The Attach bidi stream, shared by the agent's service and the operator's:
// an agent's attachment is policy-checked input into its terminal; a
// person's attachment (role.person) counts as a viewer of the terminal for
// as long as it lasts, which is what lets commands run there.
#ifndef TERMBRIDGE_BROKER_SERVICE_ATTACH_REACTOR_H_
#define TERMBRIDGE_BROKER_SERVICE_ATTACH_REACTOR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "broker/core/terminal_registry.h"
#include "broker/service/broker_service.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::broker {

struct AttachRole {
  bool person = false;   // an operator surface: counts as a viewer, input is not policy-checked
  std::string viewer;    // "attach", "watch", "console", "window" (from Resume.viewer)
  std::string agent_id;  // the agent's identity (agent role): it reaches only its own terminals
};

// `scope` (may be null) counts the stream as in flight until it ends. When
// `auth` is not OK the stream ends UNAUTHENTICATED at once.
grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* NewAttachReactor(
    std::unique_ptr<BrokerService::CallScope> scope, grpc::CallbackServerContext* context,
    core::TerminalRegistry* registry, const ServiceOptions& options, absl::Status auth,
    AttachRole role);

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_ATTACH_REACTOR_H_
