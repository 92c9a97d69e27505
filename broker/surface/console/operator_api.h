// The console's small JSON API over unary operator RPCs: what the page (or a
// script holding the operator token) can ask besides the two WebSockets.
//   GET  /api/terminals              ListAll -> {"sessions":[...],"terminals":[...],"home"}
//                                    (home: the broker's HOME; the page shows ~/ for it)
//   GET  /api/approvals[?decided=1]  ListApprovals -> {"approvals":[...]}
//   GET  /api/policy                 GetPolicy -> {"path","policy","generation","last_error"}
//   GET  /api/recordings             ListRecordings -> {"recordings":[...],"total_bytes"}
//   GET  /api/recordings/cast, /api/recordings/search  ExportRecording:
//                                    a replay window, whole-history search (recording_api.h)
//   GET  /api/agents                 ListAgents -> {"agents":[{"name",...}]} (not revoked)
//   GET  /api/grants                 ListGrants -> {"grants":[...]}
//   GET  /api/history/decisions, /api/history/timeline  the audit log (history_api.h)
//   POST /api/approvals/decide       DecideApproval (surface "console") -> {"approval":{...}}
//   POST /api/terminals/close        CloseTerminal -> {"exit":{...}}
//   POST /api/terminals/lock         SetLock (surface "console") -> {"mode"}
//   POST /api/terminals/open         OpenTerminal (surface "console") -> {"terminal":{...}}
//   POST /api/terminals/rename       RenameTerminal (surface "console") -> {"terminal":{...}}
//   POST /api/terminals/hand         HandOverTerminal (surface "console") -> {"terminal":{...}}
// Failures answer {"error":{"status","message","pm_code"}} with an HTTP
// status that matches the gRPC code (messages.h HttpStatusFor).
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_OPERATOR_API_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_OPERATOR_API_H_

#include <functional>
#include <string>
#include <string_view>

#include "broker/surface/console/console_context.h"

namespace termbridge::console {

// Called once, from a gRPC thread or the caller's, with the HTTP status and
// a JSON body.
using ApiReply = std::function<void(int http_status, std::string body)>;

// Whether `method path` names an API route. GET routes take no body.
bool IsApiRoute(std::string_view method, std::string_view path);

// Answers an API request through `reply`. `query` is the target's query string.
void HandleApi(ConsoleContext* context, std::string_view method, std::string_view path,
               std::string_view query, std::string_view body, ApiReply reply);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_OPERATOR_API_H_
