// Tests of the version tables and per-version rules: which versions each
// transport serves, what initialize agrees on, and what each version allows.
#include "agent/mcp/versions.h"

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

using Versions = std::vector<std::string>;

TEST(VersionsTest, StdioServesEveryReleasedVersionHttpAllButHttpSseEra) {
  EXPECT_EQ(SupportedProtocolVersions(Transport::kStdio),
            (Versions{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}));
  EXPECT_EQ(SupportedProtocolVersions(Transport::kHttp),
            (Versions{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}));
  EXPECT_TRUE(IsLegacyVersion("2024-11-05", Transport::kStdio));
  EXPECT_FALSE(IsLegacyVersion("2024-11-05", Transport::kHttp));
  EXPECT_FALSE(IsLegacyVersion("2026-07-28", Transport::kStdio));
  EXPECT_TRUE(IsKnownLegacyVersion("2024-11-05"));
  EXPECT_FALSE(IsKnownLegacyVersion("2026-07-28"));
  EXPECT_FALSE(IsSupportedVersion("2024-10-07", Transport::kStdio));
}

TEST(VersionsTest, InitializeAgreesOnTheClientsVersionElseTheLatestLegacyOne) {
  for (const char* version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    EXPECT_EQ(NegotiateVersion(version, Transport::kStdio), version);
  }
  EXPECT_EQ(NegotiateVersion("2025-03-26", Transport::kHttp), "2025-03-26");
  EXPECT_EQ(NegotiateVersion("2024-11-05", Transport::kHttp), "2025-11-25");
  // initialize belongs to the legacy era: a modern version is not agreed there.
  EXPECT_EQ(NegotiateVersion("2026-07-28", Transport::kStdio), "2025-11-25");
  EXPECT_EQ(NegotiateVersion("1999-01-01", Transport::kStdio), "2025-11-25");
  EXPECT_EQ(NegotiateVersion("", Transport::kHttp), "2025-11-25");
}

TEST(VersionsTest, EachVersionHasItsOwnRules) {
  VersionRules oldest = RulesFor("2024-11-05");
  EXPECT_FALSE(oldest.batching);
  EXPECT_FALSE(oldest.tool_annotations);
  EXPECT_FALSE(oldest.progress_message);
  EXPECT_FALSE(oldest.structured_content);

  VersionRules batching = RulesFor("2025-03-26");
  EXPECT_TRUE(batching.batching);
  EXPECT_TRUE(batching.tool_annotations);
  EXPECT_TRUE(batching.progress_message);
  EXPECT_FALSE(batching.structured_content);
  EXPECT_FALSE(batching.titles);
  EXPECT_FALSE(batching.version_header);

  for (const char* version : {"2025-06-18", "2025-11-25", "2026-07-28", ""}) {
    VersionRules rules = RulesFor(version);
    EXPECT_FALSE(rules.batching) << version;
    EXPECT_TRUE(rules.structured_content) << version;
    EXPECT_TRUE(rules.titles) << version;
    EXPECT_TRUE(rules.elicitation) << version;
    EXPECT_TRUE(rules.version_header) << version;
  }
}

}  // namespace
}  // namespace termbridge::mcp
