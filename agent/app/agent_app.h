// The termbridge-agent program as a function, so that a test binary can run
// the same agent with tools of its own (tests/conformance adds the MCP
// conformance suite's fixtures) while the shipped binary holds none of them.
#ifndef TERMBRIDGE_AGENT_APP_AGENT_APP_H_
#define TERMBRIDGE_AGENT_APP_AGENT_APP_H_

#include <functional>
#include <vector>

#include "agent/mcp/mcp_server.h"

namespace termbridge::app {

// Tools served after the two terminal tools, made anew for every MCP server
// (one per HTTP session). termbridge-agent passes none.
using ExtraTools = std::function<std::vector<mcp::Tool>()>;

// Runs termbridge-agent: parses argv, resolves the bridge configuration and
// serves MCP on stdio, or on Streamable HTTP with --http until SIGTERM or
// SIGINT. Returns the process exit code (2: bad configuration).
int RunAgent(int argc, char** argv, const ExtraTools& extra_tools = nullptr);

}  // namespace termbridge::app

#endif  // TERMBRIDGE_AGENT_APP_AGENT_APP_H_
