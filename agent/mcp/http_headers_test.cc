// Tests for the 2026-07-28 mirrored request headers (SEP-2243): decoding
// and agreement between the headers and the JSON-RPC body.
#include "agent/mcp/http_headers.h"

#include <map>

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

// Case-insensitive header lookup over a fixed set, like HTTP's.
HeaderLookup Headers(std::map<std::string, std::string> headers) {
  std::map<std::string, std::string> lower;
  for (auto& [name, value] : headers) lower[absl::AsciiStrToLower(name)] = value;
  return [lower](std::string_view name) -> std::optional<std::string> {
    auto it = lower.find(absl::AsciiStrToLower(std::string(name)));
    if (it == lower.end()) return std::nullopt;
    return it->second;
  };
}

json ToolCall(json arguments) {
  return {{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "tools/call"},
          {"params", {{"name", "deploy"}, {"arguments", std::move(arguments)}}}};
}

json DeploySchema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "region": {"type": "string", "x-mcp-header": "Region"},
      "replicas": {"type": "integer", "x-mcp-header": "Replicas"},
      "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
      "note": {"type": "string"}
    }
  })");
}

TEST(DecodeHeaderValueTest, PlainValuesAreLiteral) {
  EXPECT_EQ(DecodeHeaderValue("tools/call"), "tools/call");
  EXPECT_EQ(DecodeHeaderValue("a\tb"), "a\tb");
  EXPECT_EQ(DecodeHeaderValue(""), "");
  // Looks like Base64 but lacks the =?base64?...?= wrapping: literal.
  EXPECT_EQ(DecodeHeaderValue("SGVsbG8="), "SGVsbG8=");
}

TEST(DecodeHeaderValueTest, WrappedBase64IsDecoded) {
  EXPECT_EQ(DecodeHeaderValue("=?base64?SGVsbG8=?="), "Hello");
  EXPECT_EQ(DecodeHeaderValue("=?base64?w6lsw6g=?="), "\xc3\xa9l\xc3\xa8");  // "élè" in UTF-8
}

TEST(DecodeHeaderValueTest, InvalidBase64IsRejected) {
  EXPECT_FALSE(DecodeHeaderValue("=?base64?SGVsbG8?="));      // missing padding
  EXPECT_FALSE(DecodeHeaderValue("=?base64?SGVs!!!bG8=?="));  // outside the alphabet
  EXPECT_FALSE(DecodeHeaderValue("=?base64?SG=sbG8=?="));     // padding in the middle
  EXPECT_FALSE(
      DecodeHeaderValue("=?base64?"
                        "?="));  // empty
}

TEST(DecodeHeaderValueTest, ControlAndNonAsciiCharactersAreRejected) {
  EXPECT_FALSE(DecodeHeaderValue("a\nb"));
  EXPECT_FALSE(DecodeHeaderValue("caf\xc3\xa9"));
  EXPECT_FALSE(DecodeHeaderValue(std::string("a\0b", 3)));
}

TEST(CheckMirroredHeadersTest, McpMethodIsRequiredAndExact) {
  json list = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}};
  EXPECT_FALSE(CheckMirroredHeaders(Headers({{"Mcp-Method", "tools/list"}}), list, nullptr));
  EXPECT_FALSE(CheckMirroredHeaders(Headers({{"mcp-method", "tools/list"}}), list, nullptr));

  auto missing = CheckMirroredHeaders(Headers({}), list, nullptr);
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, "Header mismatch: Mcp-Method is required");

  auto wrong = CheckMirroredHeaders(Headers({{"Mcp-Method", "prompts/list"}}), list, nullptr);
  ASSERT_TRUE(wrong);
  EXPECT_NE(wrong->find("does not match"), std::string::npos);
  // Method names are case-sensitive.
  EXPECT_TRUE(CheckMirroredHeaders(Headers({{"Mcp-Method", "TOOLS/LIST"}}), list, nullptr));
}

TEST(CheckMirroredHeadersTest, McpNameMirrorsTheToolName) {
  json call = ToolCall(json::object());
  EXPECT_FALSE(CheckMirroredHeaders(Headers({{"Mcp-Method", "tools/call"}, {"Mcp-Name", "deploy"}}),
                                    call, nullptr));
  EXPECT_FALSE(CheckMirroredHeaders(
      Headers({{"Mcp-Method", "tools/call"}, {"Mcp-Name", "=?base64?ZGVwbG95?="}}), call, nullptr));

  auto missing = CheckMirroredHeaders(Headers({{"Mcp-Method", "tools/call"}}), call, nullptr);
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, "Header mismatch: Mcp-Name is required");

  EXPECT_TRUE(CheckMirroredHeaders(Headers({{"Mcp-Method", "tools/call"}, {"Mcp-Name", "destroy"}}),
                                   call, nullptr));
}

TEST(CheckMirroredHeadersTest, ResourcesReadMirrorsTheUri) {
  json read = {{"jsonrpc", "2.0"},
               {"id", 1},
               {"method", "resources/read"},
               {"params", {{"uri", "file:///a"}}}};
  EXPECT_FALSE(CheckMirroredHeaders(
      Headers({{"Mcp-Method", "resources/read"}, {"Mcp-Name", "file:///a"}}), read, nullptr));
  EXPECT_TRUE(CheckMirroredHeaders(
      Headers({{"Mcp-Method", "resources/read"}, {"Mcp-Name", "file:///b"}}), read, nullptr));
}

TEST(CheckMirroredHeadersTest, AnnotatedParametersAreMirrored) {
  json schema = DeploySchema();
  json call = ToolCall({{"region", "eu-west"}, {"replicas", 3}, {"dry_run", true}, {"note", "x"}});
  std::map<std::string, std::string> good = {{"Mcp-Method", "tools/call"},
                                             {"Mcp-Name", "deploy"},
                                             {"Mcp-Param-Region", "eu-west"},
                                             {"Mcp-Param-Replicas", "3"},
                                             {"Mcp-Param-Dry-Run", "true"}};
  EXPECT_FALSE(CheckMirroredHeaders(Headers(good), call, &schema));

  auto without_region = good;
  without_region.erase("Mcp-Param-Region");
  auto missing = CheckMirroredHeaders(Headers(without_region), call, &schema);
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, "Header mismatch: Mcp-Param-Region is required");

  auto other_count = good;
  other_count["Mcp-Param-Replicas"] = "4";
  auto mismatch = CheckMirroredHeaders(Headers(other_count), call, &schema);
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(*mismatch, "Header mismatch: Mcp-Param-Replicas does not match the body value");

  auto bad_encoding = good;
  bad_encoding["Mcp-Param-Region"] = "=?base64?ZXUtd2VzdA?=";
  auto invalid = CheckMirroredHeaders(Headers(bad_encoding), call, &schema);
  ASSERT_TRUE(invalid);
  EXPECT_EQ(*invalid, "Header mismatch: Mcp-Param-Region has an invalid value");

  auto encoded = good;
  encoded["Mcp-Param-Region"] = "=?base64?ZXUtd2VzdA==?=";
  EXPECT_FALSE(CheckMirroredHeaders(Headers(encoded), call, &schema));
}

TEST(CheckMirroredHeadersTest, AParameterAbsentFromTheBodyNeedsNoHeader) {
  json schema = DeploySchema();
  json call = ToolCall({{"note", "only a note"}});
  EXPECT_FALSE(CheckMirroredHeaders(Headers({{"Mcp-Method", "tools/call"}, {"Mcp-Name", "deploy"}}),
                                    call, &schema));
}

}  // namespace
}  // namespace termbridge::mcp
