// The canonical response and error payloads (docs/CONTRACT.md, 'Results' and
// 'Errors'). Every failure carries the mandatory `fallback` section chosen by
// the code.
#ifndef TERMBRIDGE_COMMON_CONTRACT_RESPONSE_H_
#define TERMBRIDGE_COMMON_CONTRACT_RESPONSE_H_

#include <string>

#include "common/contract/errors.h"
#include "common/contract/request.h"
#include "nlohmann/json.hpp"

namespace termbridge::contract {

// {"success": true, "action", "status", "correlation", "resolved",
//  "identity": {session_id, terminal_id}, "result": result, "error": null}
// plus "warning" at top level of result when request.deprecation_warning is set.
// status: "accepted" | "completed" | "failed".
nlohmann::json SuccessResponse(const CanonicalRequest& request, std::string_view status,
                               const std::string& session_id, const std::string& terminal_id,
                               nlohmann::json result);

// The error payload with "fallback" (docs/CONTRACT.md, 'Errors'). `request`
// may be partial (for example when normalization itself failed: pass what is
// known).
nlohmann::json ErrorResponse(const CanonicalRequest& request, const PmTermError& error);

// For failures before a request could be normalized: action as sent (or
// "unknown"), fresh correlation ids unless the arguments carried them.
nlohmann::json ErrorResponseForArguments(const nlohmann::json& arguments, const PmTermError& error);

}  // namespace termbridge::contract

#endif  // TERMBRIDGE_COMMON_CONTRACT_RESPONSE_H_
