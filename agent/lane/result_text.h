// The text content of a terminal tool's result, written for a model to read
// (docs/CONTRACT.md, 'MCP wrapping'): the output itself, with a marker where
// bytes were omitted, and one short status line in brackets
// ("[exit 0 · 3 bytes · session s_… · cursor 57]"). structuredContent keeps
// the full canonical payload; this text is never a second copy of it.
#ifndef TERMBRIDGE_AGENT_LANE_RESULT_TEXT_H_
#define TERMBRIDGE_AGENT_LANE_RESULT_TEXT_H_

#include <string>

#include "nlohmann/json.hpp"

namespace termbridge::lane {

// The text for a canonical response or error payload (common/contract/response.h),
// as Router::Handle and Router::HandleHeadlessTool return them.
// With `with_output` false, an output result's text is its status line alone
// (the caller reads the output from structuredContent).
std::string ResultText(const nlohmann::json& response, bool with_output = true);

}  // namespace termbridge::lane

#endif  // TERMBRIDGE_AGENT_LANE_RESULT_TEXT_H_
