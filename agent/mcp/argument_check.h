// Checks tool-call arguments against the structural part of a tool's
// inputSchema before its handler runs, so that a wrong type is reported as an
// isError result naming the field instead of reaching the handler. Debian
// bookworm ships no C++ JSON Schema validator, so this covers by hand the
// keywords our tool schemas use: type (one or a list), enum, const,
// properties, required, additionalProperties (false or a schema), items,
// minimum/maximum, minLength/maxLength, minItems/maxItems. Every other keyword
// ($ref, allOf, anyOf, oneOf, if/then/else, ...) is accepted unchecked: the
// handler stays the authority on meaning.
#ifndef TERMBRIDGE_AGENT_MCP_ARGUMENT_CHECK_H_
#define TERMBRIDGE_AGENT_MCP_ARGUMENT_CHECK_H_

#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace termbridge::mcp {

struct ArgumentViolation {
  std::string
      field;  // dotted path, e.g. "runtime.timeout_ms" or "args[2]"; "arguments" for the root
  std::string reason;  // e.g. "must be an integer"
};

// Returns the first violation found, walking properties in key order, or
// nullopt when `value` satisfies the checked subset of `schema`.
std::optional<ArgumentViolation> CheckArguments(const nlohmann::json& schema,
                                                const nlohmann::json& value);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_ARGUMENT_CHECK_H_
