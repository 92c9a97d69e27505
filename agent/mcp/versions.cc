// Version tables and per-version rules.
#include "agent/mcp/versions.h"

#include <algorithm>

namespace termbridge::mcp {
namespace {

bool Contains(const std::vector<std::string>& versions, std::string_view version) {
  return std::find(versions.begin(), versions.end(), version) != versions.end();
}

}  // namespace

const std::vector<std::string>& SupportedProtocolVersions(Transport transport) {
  static const auto* stdio = new std::vector<std::string>{"2026-07-28", "2025-11-25", "2025-06-18",
                                                          "2025-03-26", "2024-11-05"};
  static const auto* http =
      new std::vector<std::string>{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"};
  return transport == Transport::kStdio ? *stdio : *http;
}

const std::vector<std::string>& LegacyProtocolVersions(Transport transport) {
  static const auto* stdio =
      new std::vector<std::string>{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  static const auto* http = new std::vector<std::string>{"2025-11-25", "2025-06-18", "2025-03-26"};
  return transport == Transport::kStdio ? *stdio : *http;
}

bool IsSupportedVersion(std::string_view version, Transport transport) {
  return Contains(SupportedProtocolVersions(transport), version);
}

bool IsLegacyVersion(std::string_view version, Transport transport) {
  return Contains(LegacyProtocolVersions(transport), version);
}

bool IsKnownLegacyVersion(std::string_view version) {
  return IsLegacyVersion(version, Transport::kStdio);
}

std::string NegotiateVersion(std::string_view requested, Transport transport) {
  return IsLegacyVersion(requested, transport) ? std::string(requested)
                                               : std::string(kLatestLegacyVersion);
}

VersionRules RulesFor(std::string_view version) {
  if (version.empty()) version = kLatestLegacyVersion;
  VersionRules rules;
  rules.batching = version == "2025-03-26";
  rules.tool_annotations = version >= "2025-03-26";
  rules.progress_message = version >= "2025-03-26";
  rules.structured_content = version >= "2025-06-18";
  rules.titles = version >= "2025-06-18";
  rules.elicitation = version >= "2025-06-18";
  rules.version_header = version >= "2025-06-18";
  return rules;
}

}  // namespace termbridge::mcp
