// The 2026-07-28 Streamable HTTP request headers (SEP-2243): Mcp-Method and
// Mcp-Name mirror the JSON-RPC method and params.name/uri, and each tool
// parameter annotated with `x-mcp-header` is mirrored as Mcp-Param-{Name}.
// A server that reads the body must reject a request whose headers are
// missing, malformed or disagree with it (HeaderMismatch, -32020), so that an
// intermediary routing on headers and the server acting on the body always
// see the same request.
#ifndef TERMBRIDGE_AGENT_MCP_HTTP_HEADERS_H_
#define TERMBRIDGE_AGENT_MCP_HTTP_HEADERS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace termbridge::mcp {

// A request's header by case-insensitive name, with surrounding whitespace
// removed; nullopt when absent.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view name)>;

// Decodes a header value: "=?base64?...?=" is strict Base64 (padding and
// alphabet checked) of UTF-8 bytes; anything else is taken literally.
// Returns nullopt for invalid Base64 or for characters no header value may
// carry (controls other than tab, non-ASCII bytes).
std::optional<std::string> DecodeHeaderValue(std::string_view value);

// Checks Mcp-Method, Mcp-Name and, for tools/call, the Mcp-Param-* headers
// that `input_schema` (the called tool's, or null) declares. Returns a
// HeaderMismatch message, or nullopt when the headers agree with `message`.
std::optional<std::string> CheckMirroredHeaders(const HeaderLookup& header,
                                                const nlohmann::json& message,
                                                const nlohmann::json* input_schema);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_HTTP_HEADERS_H_
