// The MCP tool definitions termbridge-agent exposes (docs/CONTRACT.md
// section 1, "Tools and the canonical request"): names, descriptions, input
// and output schemas and annotations. The handlers are injected, so this
// file knows nothing about lanes or brokers.
#ifndef TERMBRIDGE_AGENT_MCP_TERMINAL_TOOLS_H_
#define TERMBRIDGE_AGENT_MCP_TERMINAL_TOOLS_H_

#include "agent/mcp/mcp_server.h"

namespace termbridge::mcp {

// memory_terminal_interactive: the canonical contract (execute, read_output,
// terminate, list, and the legacy aliases). Its handler validates arguments
// itself (PM_TERM_* codes naming the field), so the core does not.
Tool InteractiveTerminalTool(ToolHandler handler);

// memory_terminal: the strict headless tool (docs/CONTRACT.md sections 1
// and 4, "Lanes"): run an allowlisted argv without a shell, read_output,
// kill, get_allowlist, and update_allowlist (which only proposes a change
// for a person to approve).
// The core checks argument types against its schema before the handler runs.
Tool HeadlessTerminalTool(ToolHandler handler);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_TERMINAL_TOOLS_H_
