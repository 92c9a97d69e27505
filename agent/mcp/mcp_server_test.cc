// Tests for JSON-RPC dispatch and the MCP lifecycle.
#include "agent/mcp/mcp_server.h"

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

McpServer MakeServer() {
  Tool echo;
  echo.definition = {{"name", "echo"}, {"inputSchema", {{"type", "object"}}}};
  echo.handler = [](const nlohmann::json& args, const CallContext&) {
    return ToolResult{args, args.contains("fail")};
  };
  return McpServer("test", "1.0", {echo});
}

nlohmann::json Call(McpServer& server, const std::string& text) {
  auto reply = server.HandleText(text, nullptr);
  return reply ? nlohmann::json::parse(*reply) : nlohmann::json();
}

TEST(McpServerTest, InitializeEchoesASupportedVersion) {
  McpServer server = MakeServer();
  auto reply = Call(server, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
      "params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})");
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(server.negotiated_version(), "2025-06-18");
}

TEST(McpServerTest, InitializeOffersTheLatestForAnUnknownVersion) {
  McpServer server = MakeServer();
  auto reply = Call(server, R"({"jsonrpc":"2.0","id":1,"method":"initialize",
      "params":{"protocolVersion":"1999-01-01"}})");
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25");
}

TEST(McpServerTest, MalformedJsonIsAParseErrorWithNullId) {
  McpServer server = MakeServer();
  auto reply = Call(server, R"({"jsonrpc":"2.0","id":1,"method":)");
  EXPECT_EQ(reply["error"]["code"], -32700);
  EXPECT_TRUE(reply["id"].is_null());
}

TEST(McpServerTest, InvalidRequestsAndUnknownMethods) {
  McpServer server = MakeServer();
  EXPECT_EQ(Call(server, R"([1,2])")["error"]["code"], -32600);
  EXPECT_EQ(Call(server, R"({"id":1,"method":"ping"})")["error"]["code"], -32600);
  EXPECT_EQ(Call(server, R"({"jsonrpc":"2.0","id":{},"method":"ping"})")["error"]["code"], -32600);
  auto unknown = Call(server, R"({"jsonrpc":"2.0","id":"x","method":"nope"})");
  EXPECT_EQ(unknown["error"]["code"], -32601);
  EXPECT_EQ(unknown["id"], "x");
}

TEST(McpServerTest, NotificationsGetNoReply) {
  McpServer server = MakeServer();
  EXPECT_FALSE(server.HandleText(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                                 nullptr));
}

TEST(McpServerTest, PingAndToolsList) {
  McpServer server = MakeServer();
  EXPECT_EQ(Call(server, R"({"jsonrpc":"2.0","id":2,"method":"ping"})")["result"],
            nlohmann::json::object());
  auto tools = Call(server, R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})");
  ASSERT_EQ(tools["result"]["tools"].size(), 1u);
  EXPECT_EQ(tools["result"]["tools"][0]["name"], "echo");
}

TEST(McpServerTest, ToolsCallReturnsStructuredAndTextContent) {
  McpServer server = MakeServer();
  auto reply = Call(server, R"({"jsonrpc":"2.0","id":4,"method":"tools/call",
      "params":{"name":"echo","arguments":{"a":1}}})");
  EXPECT_EQ(reply["result"]["structuredContent"], nlohmann::json({{"a", 1}}));
  EXPECT_EQ(nlohmann::json::parse(reply["result"]["content"][0]["text"].get<std::string>()),
            nlohmann::json({{"a", 1}}));
  EXPECT_EQ(reply["result"]["isError"], false);
  auto failed = Call(server, R"({"jsonrpc":"2.0","id":5,"method":"tools/call",
      "params":{"name":"echo","arguments":{"fail":true}}})");
  EXPECT_EQ(failed["result"]["isError"], true);
}

TEST(McpServerTest, UnknownToolIsInvalidParams) {
  McpServer server = MakeServer();
  auto reply = Call(server, R"({"jsonrpc":"2.0","id":6,"method":"tools/call",
      "params":{"name":"rm_rf"}})");
  EXPECT_EQ(reply["error"]["code"], -32602);
}

TEST(McpServerTest, OversizedMessageIsRejected) {
  McpServer server = MakeServer();
  std::string big(kMaxMessageBytes + 1, ' ');
  EXPECT_EQ(Call(server, big)["error"]["code"], -32600);
}

}  // namespace
}  // namespace termbridge::mcp
