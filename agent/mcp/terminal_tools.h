// The MCP tool definitions termbridge-agent exposes (seed 000 section 9.1):
// names, descriptions, input and output schemas and annotations. The
// handlers are injected, so this file knows nothing about lanes or brokers.
#ifndef TERMBRIDGE_AGENT_MCP_TERMINAL_TOOLS_H_
#define TERMBRIDGE_AGENT_MCP_TERMINAL_TOOLS_H_

#include "agent/mcp/mcp_server.h"

namespace termbridge::mcp {

// memory_terminal_interactive: the canonical contract (execute, read_output,
// terminate, list, and the legacy aliases).
Tool InteractiveTerminalTool(
    std::function<ToolResult(const nlohmann::json&, const CallContext&)> handler);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_TERMINAL_TOOLS_H_
