// The MCP stdio transport: newline-delimited JSON-RPC on stdin/stdout. stdout
// carries only protocol messages; logs go to stderr.
#ifndef TERMBRIDGE_AGENT_MCP_STDIO_TRANSPORT_H_
#define TERMBRIDGE_AGENT_MCP_STDIO_TRANSPORT_H_

#include "agent/mcp/mcp_server.h"

namespace termbridge::mcp {

// Serves `server` until `in_fd` reaches EOF, then waits for calls in flight and
// returns 0 (closing stdin is how a client ends the session; the replies of
// calls it already sent still go out). Each tool call (and each 2025-03-26
// batch holding one) runs on its own thread, at most `max_concurrent` at
// once, the rest queued; every other message is
// handled on the reading thread, so waiting tool calls never block ping or
// cancellation. A line longer than kMaxMessageBytes is discarded and answered
// with a JSON-RPC error.
int RunStdio(McpServer& server, int in_fd = 0, int out_fd = 1, int max_concurrent = 16);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_STDIO_TRANSPORT_H_
