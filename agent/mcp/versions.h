// The MCP protocol versions termbridge-agent serves, on which transport, and
// what each one allows (docs/CONTRACT.md, "MCP protocol versions"). Legacy
// versions open with initialize and keep what they agreed for the stdio
// process or HTTP session: 2024-11-05 (stdio only: its HTTP transport was
// HTTP+SSE, which the agent does not serve), 2025-03-26, 2025-06-18 and
// 2025-11-25. The modern 2026-07-28 is stateless: every request carries its
// version in _meta. Versions are dates, so later means greater.
#ifndef TERMBRIDGE_AGENT_MCP_VERSIONS_H_
#define TERMBRIDGE_AGENT_MCP_VERSIONS_H_

#include <string>
#include <string_view>
#include <vector>

namespace termbridge::mcp {

// The transport a message arrived on.
enum class Transport { kStdio, kHttp };

inline constexpr std::string_view kModernProtocolVersion = "2026-07-28";
inline constexpr std::string_view kLatestLegacyVersion = "2025-11-25";

// Every version served on `transport`, newest first (server/discover's
// supportedVersions and the `supported` list of UnsupportedProtocolVersion).
const std::vector<std::string>& SupportedProtocolVersions(Transport transport);
// The versions an initialize handshake on `transport` can agree on, newest first.
const std::vector<std::string>& LegacyProtocolVersions(Transport transport);
bool IsSupportedVersion(std::string_view version, Transport transport);
bool IsLegacyVersion(std::string_view version, Transport transport);
// True for every released handshake-era version, whatever the transport.
bool IsKnownLegacyVersion(std::string_view version);

// The version initialize answers to a client asking for `requested`: the
// same when `transport` serves it, else the latest legacy version (the
// client then decides whether to go on).
std::string NegotiateVersion(std::string_view requested, Transport transport);

// What a protocol version allows, as far as this server's messages differ.
struct VersionRules {
  bool batching = false;            // JSON-RPC batches (2025-03-26 only)
  bool tool_annotations = false;    // Tool.annotations (2025-03-26 on)
  bool progress_message = false;    // notifications/progress carries `message` (2025-03-26 on)
  bool structured_content = false;  // outputSchema, structuredContent (2025-06-18 on)
  bool titles = false;              // `title` on tools and serverInfo (2025-06-18 on)
  bool elicitation = false;         // elicitation/create to the client (2025-06-18 on)
  bool version_header = false;      // HTTP requests carry MCP-Protocol-Version (2025-06-18 on)
};

// The rules of `version`; "" (no handshake yet) gets those of the latest
// legacy version.
VersionRules RulesFor(std::string_view version);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_VERSIONS_H_
