// Protocol vocabulary shared by the MCP core and its transports: the
// reserved _meta keys of the stateless 2026-07-28 version, the JSON-RPC and
// MCP error codes, and JSON-RPC message builders. Which versions are served,
// and what each allows, is in versions.h.
#ifndef TERMBRIDGE_AGENT_MCP_PROTOCOL_H_
#define TERMBRIDGE_AGENT_MCP_PROTOCOL_H_

#include <string>
#include <string_view>
#include <vector>

#include "agent/mcp/versions.h"
#include "nlohmann/json.hpp"

namespace termbridge::mcp {

// Reserved _meta keys (2026-07-28, basic/index "Per-request protocol fields").
inline constexpr char kMetaProtocolVersion[] = "io.modelcontextprotocol/protocolVersion";
inline constexpr char kMetaClientInfo[] = "io.modelcontextprotocol/clientInfo";
inline constexpr char kMetaClientCapabilities[] = "io.modelcontextprotocol/clientCapabilities";
inline constexpr char kMetaLogLevel[] = "io.modelcontextprotocol/logLevel";
inline constexpr char kMetaServerInfo[] = "io.modelcontextprotocol/serverInfo";

// JSON-RPC 2.0 codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// Implementation-defined server error (JSON-RPC reserves -32000..-32099):
// too many requests in flight, retry later.
inline constexpr int kServerBusy = -32000;
// MCP codes (2026-07-28, basic/index "Error Codes").
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingRequiredClientCapability = -32021;
inline constexpr int kUnsupportedProtocolVersion = -32022;

// Maximum size of one incoming JSON-RPC message, in bytes.
inline constexpr size_t kMaxMessageBytes = 4 << 20;

// Syslog-style MCP log levels, least severe first; -1 for an unknown name.
int LogLevelRank(std::string_view level);

// A JSON-RPC error response; `id` is null when the request's id is unknown.
nlohmann::json ErrorReply(const nlohmann::json& id, int code, std::string_view message,
                          const nlohmann::json& data = nullptr);
// The UnsupportedProtocolVersionError for `requested`, listing every version
// served on `transport`.
nlohmann::json UnsupportedVersionReply(const nlohmann::json& id, std::string_view requested,
                                       Transport transport);
nlohmann::json ResultReply(const nlohmann::json& id, nlohmann::json result);
nlohmann::json Notification(std::string_view method, nlohmann::json params);

// Typed reads of a message field that never throw: `key` missing, or holding
// another type, gives the fallback (nlohmann's value() throws on a type
// mismatch, and a client's "clientInfo": "me" must not abort the agent).
std::string StringField(const nlohmann::json& object, std::string_view key,
                        std::string fallback = "");
nlohmann::json ObjectField(const nlohmann::json& object, std::string_view key);
// The field when present with any type, else null.
nlohmann::json AnyField(const nlohmann::json& object, std::string_view key);

// Serializes a message for the wire; invalid UTF-8 is replaced, never thrown on.
std::string Dump(const nlohmann::json& message);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_PROTOCOL_H_
