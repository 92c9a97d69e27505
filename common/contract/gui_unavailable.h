// The causes of PM_TERM_GUI_UNAVAILABLE: the stable values of its
// details.reason, one per thing the user does about it (docs/CONTRACT.md
// "Errors", the table of GUI_UNAVAILABLE reasons). The code stays the same
// for all of them, so callers that only read the code keep working.
#ifndef TERMBRIDGE_COMMON_CONTRACT_GUI_UNAVAILABLE_H_
#define TERMBRIDGE_COMMON_CONTRACT_GUI_UNAVAILABLE_H_

namespace termbridge::contract::gui_unavailable {

// No broker accepts a connection on any host alias tried (or it went away).
inline constexpr char kBrokerUnreachable[] = "broker_unreachable";
// The broker refused the agent's credentials (token, or its client certificate).
inline constexpr char kCredentialsRefused[] = "credentials_refused";
// The agent cannot read its own agent token file.
inline constexpr char kAgentTokenUnavailable[] = "agent_token_unavailable";
// The agent cannot read a TLS file it was given (CA, certificate or key).
inline constexpr char kTlsMaterialUnavailable[] = "tls_material_unavailable";
// Agent and broker speak different protocol versions.
inline constexpr char kVersionMismatch[] = "version_mismatch";
// No broker was running and none of the candidates could be started.
inline constexpr char kLaunchFailed[] = "launch_failed";
// The broker refused to write a command into a terminal nobody watches.
inline constexpr char kNoViewer[] = "no_viewer";

}  // namespace termbridge::contract::gui_unavailable

#endif  // TERMBRIDGE_COMMON_CONTRACT_GUI_UNAVAILABLE_H_
