// Protocol vocabulary shared by the MCP core and its transports: the
// protocol versions termbridge-agent speaks, which of them are "legacy"
// (initialize handshake, sessions: 2025-06-18, 2025-11-25) and which are
// "modern" (stateless, per-request _meta: 2026-07-28), the reserved _meta
// keys, the JSON-RPC and MCP error codes, and JSON-RPC message builders.
#ifndef TERMBRIDGE_AGENT_MCP_PROTOCOL_H_
#define TERMBRIDGE_AGENT_MCP_PROTOCOL_H_

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace termbridge::mcp {

inline constexpr std::string_view kModernProtocolVersion = "2026-07-28";
inline constexpr std::string_view kLatestLegacyVersion = "2025-11-25";

// Every version served, newest first (server/discover's supportedVersions and
// the `supported` list of UnsupportedProtocolVersion errors).
const std::vector<std::string>& SupportedProtocolVersions();
// The versions an initialize handshake can agree on, newest first.
const std::vector<std::string>& LegacyProtocolVersions();
bool IsSupportedVersion(std::string_view version);
bool IsLegacyVersion(std::string_view version);

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
// The UnsupportedProtocolVersionError for `requested`, listing every supported version.
nlohmann::json UnsupportedVersionReply(const nlohmann::json& id, std::string_view requested);
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
