// Tests of McpServer per protocol version (docs/CONTRACT.md, "MCP protocol
// versions"): each legacy version's initialize, the shape of tools/list,
// tools/call and progress that version knows, JSON-RPC batches in 2025-03-26
// sessions only, and refusals of versions a transport does not serve.
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "agent/mcp/mcp_server.h"
#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

// One tool with everything a version may strip: title, annotations,
// outputSchema, structured results and progress with a message.
McpServer MakeServer() {
  Tool echo;
  echo.definition = {{"name", "echo"},
                     {"title", "Echo"},
                     {"description", "echoes its arguments"},
                     {"inputSchema", {{"type", "object"}}},
                     {"outputSchema", {{"type", "object"}}},
                     {"annotations", {{"readOnlyHint", true}}}};
  echo.handler = [](const json& args, const CallContext& context) {
    context.progress(1, "halfway");
    return ToolResult{args};
  };
  return McpServer("test", "1.0", {echo});
}

json Request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json InitializeRequest(const std::string& version) {
  return Request(1, "initialize",
                 {{"protocolVersion", version},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "c"}, {"version", "1"}}}});
}

// Handles `message` on `transport` and returns the reply (null when none).
json Send(McpServer& server, const json& message, Transport transport = Transport::kStdio,
          Sink notify = nullptr) {
  Exchange exchange;
  exchange.transport = transport;
  exchange.notify = std::move(notify);
  Outcome out = server.Handle(message, exchange);
  return out.reply ? *out.reply : json();
}

struct Collected {
  absl::Mutex mu;
  std::vector<json> messages ABSL_GUARDED_BY(mu);
  Sink sink() {
    return [this](const json& message) {
      absl::MutexLock lock(&mu);
      messages.push_back(message);
    };
  }
};

TEST(McpVersionsTest, EachLegacyVersionIsAgreedOnStdio) {
  for (const char* version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    McpServer server = MakeServer();
    json reply = Send(server, InitializeRequest(version));
    EXPECT_EQ(reply["result"]["protocolVersion"], version);
    EXPECT_EQ(server.negotiated_version(), version);
    EXPECT_EQ(reply["result"]["serverInfo"]["name"], "test");
    // serverInfo.title came with 2025-06-18.
    EXPECT_EQ(reply["result"]["serverInfo"].contains("title"), std::string(version) >= "2025-06-18")
        << version;
  }
}

TEST(McpVersionsTest, HttpAgreesOnEveryStreamableHttpVersionButNot2024) {
  for (const char* version : {"2025-03-26", "2025-06-18", "2025-11-25"}) {
    McpServer server = MakeServer();
    EXPECT_EQ(
        Send(server, InitializeRequest(version), Transport::kHttp)["result"]["protocolVersion"],
        version);
  }
  // 2024-11-05's HTTP transport was HTTP+SSE: over Streamable HTTP the server
  // offers its latest, as the lifecycle says for a version it does not serve.
  McpServer server = MakeServer();
  EXPECT_EQ(
      Send(server, InitializeRequest("2024-11-05"), Transport::kHttp)["result"]["protocolVersion"],
      "2025-11-25");
}

TEST(McpVersionsTest, ToolsListHasOnlyWhatTheVersionKnows) {
  struct Case {
    const char* version;
    bool annotations, title, output_schema;
  } cases[] = {{"2024-11-05", false, false, false},
               {"2025-03-26", true, false, false},
               {"2025-06-18", true, true, true},
               {"2025-11-25", true, true, true}};
  for (const Case& c : cases) {
    McpServer server = MakeServer();
    Send(server, InitializeRequest(c.version));
    json tool = Send(server, Request(2, "tools/list"))["result"]["tools"][0];
    EXPECT_EQ(tool["name"], "echo");
    EXPECT_TRUE(tool.contains("inputSchema"));
    EXPECT_EQ(tool.contains("annotations"), c.annotations) << c.version;
    EXPECT_EQ(tool.contains("title"), c.title) << c.version;
    EXPECT_EQ(tool.contains("outputSchema"), c.output_schema) << c.version;
  }
}

TEST(McpVersionsTest, StructuredContentOnlyFrom2025_06_18) {
  for (const char* version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    McpServer server = MakeServer();
    Send(server, InitializeRequest(version));
    json result = Send(
        server,
        Request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"word", "hi"}}}}))["result"];
    bool structured = std::string(version) >= "2025-06-18";
    EXPECT_EQ(result.contains("structuredContent"), structured) << version;
    // Every version reads the result as text content.
    EXPECT_NE(result["content"][0]["text"].get<std::string>().find("hi"), std::string::npos);
  }
}

TEST(McpVersionsTest, ProgressCarriesAMessageFrom2025_03_26) {
  for (const char* version : {"2024-11-05", "2025-03-26"}) {
    McpServer server = MakeServer();
    Send(server, InitializeRequest(version));
    Collected collected;
    Send(server, Request(2, "tools/call", {{"name", "echo"}, {"_meta", {{"progressToken", "t"}}}}),
         Transport::kStdio, collected.sink());
    absl::MutexLock lock(&collected.mu);
    ASSERT_FALSE(collected.messages.empty()) << version;
    const json& params = collected.messages[0]["params"];
    EXPECT_EQ(params["progressToken"], "t");
    EXPECT_EQ(params["progress"], 1);
    EXPECT_EQ(params.contains("message"), std::string(version) == "2025-03-26") << version;
  }
}

TEST(McpVersionsTest, A2025_03_26SessionAnswersABatchWithAnArray) {
  McpServer server = MakeServer();
  Send(server, InitializeRequest("2025-03-26"));
  json batch = json::array({Request(2, "ping"),
                            {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                            Request(3, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 3}}}}),
                            Request(4, "no/such/method"),
                            42});
  json replies = Send(server, batch);
  ASSERT_TRUE(replies.is_array());
  ASSERT_EQ(replies.size(), 4u);  // the notification gets none
  EXPECT_EQ(replies[0]["id"], 2);
  EXPECT_EQ(replies[0]["result"], json::object());
  EXPECT_EQ(replies[1]["id"], 3);
  EXPECT_NE(replies[1]["result"]["content"][0]["text"].get<std::string>().find("3"),
            std::string::npos);
  EXPECT_EQ(replies[2]["error"]["code"], kMethodNotFound);
  EXPECT_EQ(replies[3]["error"]["code"], kInvalidRequest);
  EXPECT_TRUE(replies[3]["id"].is_null());

  // Only notifications: nothing to answer.
  Exchange exchange;
  Outcome quiet = server.Handle(
      json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}}), exchange);
  EXPECT_FALSE(quiet.reply);
  EXPECT_EQ(quiet.http_status, 202);
}

TEST(McpVersionsTest, ABatchCannotHoldInitializeAndCannotBeEmpty) {
  McpServer server = MakeServer();
  Send(server, InitializeRequest("2025-03-26"));
  json replies = Send(server, json::array({InitializeRequest("2025-03-26"), Request(2, "ping")}));
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0]["error"]["code"], kInvalidRequest);
  EXPECT_EQ(replies[0]["id"], 1);
  EXPECT_EQ(replies[1]["id"], 2);
  EXPECT_EQ(server.negotiated_version(), "2025-03-26");

  Exchange exchange;
  Outcome empty = server.Handle(json::array(), exchange);
  ASSERT_TRUE(empty.reply);
  EXPECT_EQ((*empty.reply)["error"]["code"], kInvalidRequest);
}

TEST(McpVersionsTest, BatchesAreRefusedOutsideA2025_03_26Session) {
  json batch = json::array({Request(2, "ping")});
  for (const char* version : {"", "2024-11-05", "2025-06-18", "2025-11-25"}) {
    McpServer server = MakeServer();
    if (*version != '\0') Send(server, InitializeRequest(version));
    Exchange exchange;
    Outcome out = server.Handle(batch, exchange);
    ASSERT_TRUE(out.reply) << version;
    EXPECT_EQ((*out.reply)["error"]["code"], kInvalidRequest) << version;
    EXPECT_TRUE((*out.reply)["id"].is_null());
    EXPECT_NE((*out.reply)["error"]["message"].get<std::string>().find("2025-03-26"),
              std::string::npos);
    EXPECT_EQ(out.http_status, 400);
  }
}

TEST(McpVersionsTest, AModernRequestNamesTheVersionsOfItsTransport) {
  McpServer server = MakeServer();
  json meta = {{kMetaProtocolVersion, "2024-11-05"}, {kMetaClientCapabilities, json::object()}};
  json reply = Send(server, Request(1, "tools/list", {{"_meta", meta}}), Transport::kHttp);
  EXPECT_EQ(reply["error"]["code"], kUnsupportedProtocolVersion);
  EXPECT_EQ(reply["error"]["data"]["supported"],
            json({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}));
  meta[kMetaProtocolVersion] = "2026-07-28";
  json discover = Send(server, Request(2, "server/discover", {{"_meta", meta}}), Transport::kHttp);
  EXPECT_EQ(discover["result"]["supportedVersions"],
            json({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}));
  // A modern request keeps every field, whatever a legacy session agreed.
  json tool = Send(server, Request(3, "tools/list", {{"_meta", meta}}))["result"]["tools"][0];
  EXPECT_TRUE(tool.contains("outputSchema"));
}

TEST(McpVersionsTest, ElicitationIsRefusedBefore2025_06_18) {
  Tool asking;
  asking.definition = {{"name", "ask"}, {"inputSchema", {{"type", "object"}}}};
  asking.handler = [](const json&, const CallContext& context) {
    absl::StatusOr<json> answer = context.ask_client("elicitation/create", json::object());
    return ToolResult{{{"refused", !answer.ok()},
                       {"why", answer.ok() ? "" : std::string(answer.status().message())}}};
  };
  McpServer server("test", "1.0", {asking});
  Send(server, InitializeRequest("2025-03-26"));
  json text = Send(server, Request(2, "tools/call", {{"name", "ask"}}))["result"]["content"][0];
  EXPECT_NE(text["text"].get<std::string>().find("2025-06-18"), std::string::npos);
}

}  // namespace
}  // namespace termbridge::mcp
