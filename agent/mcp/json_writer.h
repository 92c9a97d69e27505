// Serializes a JSON message for the wire as nlohmann's dump(-1, ' ', false,
// replace) does, byte for byte, but writes well-formed strings a run of
// plain bytes at a time instead of one decoded byte at a time: a tool
// result carries up to a megabyte of terminal output twice (docs/CONTRACT.md,
// 'MCP wrapping'), and nlohmann's escaping was most of the agent's work per
// byte read (tests/bench/README.md, 'Throughput through MCP').
#ifndef TERMBRIDGE_AGENT_MCP_JSON_WRITER_H_
#define TERMBRIDGE_AGENT_MCP_JSON_WRITER_H_

#include <string>

#include "nlohmann/json.hpp"

namespace termbridge::mcp {

// Appends `value` to *out, compact, non-ASCII as UTF-8; a string that is not
// well-formed UTF-8 gets U+FFFD where nlohmann's replace handler puts it.
void AppendJson(const nlohmann::json& value, std::string* out);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_JSON_WRITER_H_
