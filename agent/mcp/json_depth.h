// A bound on how deeply an untrusted JSON message may nest, checked before
// it is parsed: nlohmann::json builds and frees nested values recursively,
// so a line of 200,000 '[' ended the agent with SIGSEGV (a stack overflow)
// instead of a JSON-RPC error.
#ifndef TERMBRIDGE_AGENT_MCP_JSON_DEPTH_H_
#define TERMBRIDGE_AGENT_MCP_JSON_DEPTH_H_

#include <cstddef>
#include <string_view>

namespace termbridge::mcp {

// Deeper than any MCP message needs (tool arguments included), far below
// what the parser's recursion can take.
inline constexpr size_t kMaxJsonDepth = 128;

// True when `text` opens more than `max_depth` arrays or objects inside one
// another (brackets inside strings do not count). Does not validate the JSON.
bool JsonNestsDeeperThan(std::string_view text, size_t max_depth = kMaxJsonDepth);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_JSON_DEPTH_H_
