// The JSON nesting bound for MCP messages, on stdio and HTTP alike: the one
// checker in common/nesting, named here for agent/mcp's callers.
#ifndef TERMBRIDGE_AGENT_MCP_JSON_DEPTH_H_
#define TERMBRIDGE_AGENT_MCP_JSON_DEPTH_H_

#include "common/nesting/nesting.h"

namespace termbridge::mcp {

using nesting::JsonNestsDeeperThan;
using nesting::kMaxJsonDepth;

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_JSON_DEPTH_H_
