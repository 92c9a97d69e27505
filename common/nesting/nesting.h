// Bounds on how deeply untrusted text nests, checked before a recursive
// parser sees it. nlohmann::json builds and frees nested values recursively,
// so a line of 200,000 '[' ended the agent with SIGSEGV (a stack overflow)
// instead of a JSON-RPC error; toml++ bounds arrays and inline tables (256)
// but not dotted keys or table headers, and `a.b.b.b...` 100,000 long
// overflows its stack the same way. Every parser of bytes from outside (MCP
// on stdio and HTTP, the console's WebSocket and HTTP API, policy files)
// asks these first (docs/security.md "No input crashes a process").
#ifndef TERMBRIDGE_COMMON_NESTING_NESTING_H_
#define TERMBRIDGE_COMMON_NESTING_NESTING_H_

#include <cstddef>
#include <string_view>

namespace termbridge::nesting {

// Deeper than any message or file of ours needs (MCP tool arguments
// included), far below what the parsers' recursion can take.
inline constexpr size_t kMaxJsonDepth = 128;
inline constexpr size_t kMaxTomlDepth = 128;

// True when `text` opens more than `max_depth` arrays or objects inside one
// another (brackets inside strings do not count). Does not validate the JSON.
bool JsonNestsDeeperThan(std::string_view text, size_t max_depth = kMaxJsonDepth);

// True when a TOML document would build tables and arrays nested more than
// `max_depth` deep: table headers and dotted keys count one level per part
// ("[a.b]" then "c.d = 1" is 4), arrays and inline tables one each; strings
// and comments do not count. Does not validate the TOML: what it cannot read
// it skips, and the parser reports.
bool TomlNestsDeeperThan(std::string_view text, size_t max_depth = kMaxTomlDepth);

}  // namespace termbridge::nesting

#endif  // TERMBRIDGE_COMMON_NESTING_NESTING_H_
