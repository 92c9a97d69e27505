// Tests for JSON-RPC dispatch and the MCP lifecycle.
#include "agent/mcp/mcp_server.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "agent/mcp/tool_call.h"
#include "common/thread/named_thread.h"
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
  EXPECT_EQ(Call(server, R"([1,2])")["error"]["code"], -32600);  // no batches before 2025-03-26
  EXPECT_EQ(Call(server, R"({"id":1,"method":"ping"})")["error"]["code"], -32600);
  EXPECT_EQ(Call(server, R"({"jsonrpc":"2.0","id":{},"method":"ping"})")["error"]["code"], -32600);
  auto unknown = Call(server, R"({"jsonrpc":"2.0","id":"x","method":"nope"})");
  EXPECT_EQ(unknown["error"]["code"], -32601);
  EXPECT_EQ(unknown["id"], "x");
}

// Every field a client sends can hold the wrong type. Each of these once
// aborted the agent (nlohmann's value() throws on a type mismatch); each
// must get a JSON-RPC error naming the request, and the server goes on.
TEST(McpServerTest, WronglyTypedFieldsAreErrorsNotCrashes) {
  McpServer server = MakeServer();
  struct Case {
    const char* message;
    int code;
  } cases[] = {
      {R"({"jsonrpc":2.0,"id":1,"method":"ping"})", -32600},
      {R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":20251125}})",
       -32602},
      {R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"clientInfo":"me"}})", -32602},
      {R"({"jsonrpc":"2.0","id":4,"method":"initialize","params":{"capabilities":[1]}})", -32602},
      {R"({"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":3}})", -32602},
      {R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","_meta":"x"}})",
       -32602},
      {R"({"jsonrpc":"2.0","id":7,"method":7})", -32600},
  };
  for (const Case& c : cases) {
    nlohmann::json reply = Call(server, c.message);
    EXPECT_EQ(reply["error"]["code"], c.code) << c.message << " -> " << reply.dump();
    EXPECT_EQ(reply["id"], nlohmann::json::parse(c.message)["id"]) << c.message;
  }
  // A cancellation with an object for its reason is a notification: no reply, no crash.
  EXPECT_EQ(
      server.HandleText(
          R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":{"a":1}}})",
          nullptr),
      std::nullopt);
  EXPECT_TRUE(Call(server, R"({"jsonrpc":"2.0","id":8,"method":"ping"})").contains("result"));
}

// nlohmann's parser stops at a NUL byte: a request followed by NUL and
// anything was answered as if the rest were not there (tests/fuzz).
TEST(McpServerTest, AMessageWithANulByteIsAParseError) {
  McpServer server = MakeServer();
  auto reply =
      Call(server, std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})") + '\0' + "x");
  EXPECT_EQ(reply["error"]["code"], kParseError) << reply.dump();
  EXPECT_TRUE(reply["id"].is_null());
}

TEST(McpServerTest, NotificationsGetNoReply) {
  McpServer server = MakeServer();
  EXPECT_FALSE(
      server.HandleText(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", nullptr));
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

// 2026-07-28 _meta for a request.
nlohmann::json ModernMeta(const std::string& version = "2026-07-28") {
  return {{kMetaProtocolVersion, version},
          {kMetaClientCapabilities, nlohmann::json::object()},
          {kMetaClientInfo, {{"name", "t"}, {"version", "1"}}}};
}

nlohmann::json Request(int id, const std::string& method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

TEST(McpServerModernTest, DiscoverListsEveryVersionAndServerInfo) {
  McpServer server = MakeServer();
  Outcome out = server.Handle(Request(1, "server/discover", {{"_meta", ModernMeta()}}), {});
  ASSERT_TRUE(out.reply);
  const auto& result = (*out.reply)["result"];
  EXPECT_EQ(result["supportedVersions"],
            nlohmann::json({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}));
  EXPECT_TRUE(result["capabilities"].contains("tools"));
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_EQ(result["_meta"][kMetaServerInfo]["name"], "test");
}

TEST(McpServerModernTest, EveryRequestCarriesItsOwnMeta) {
  McpServer server = MakeServer();
  // No initialize: a tools/list with _meta is served at once, and nothing is kept.
  Outcome list = server.Handle(Request(1, "tools/list", {{"_meta", ModernMeta()}}), {});
  ASSERT_TRUE(list.reply);
  EXPECT_EQ((*list.reply)["result"]["tools"].size(), 1u);
  EXPECT_EQ((*list.reply)["result"]["resultType"], "complete");
  EXPECT_EQ(server.negotiated_version(), "");

  // Over HTTP with a modern MCP-Protocol-Version header, _meta is mandatory.
  Exchange modern;
  modern.modern_transport = true;
  Outcome bare = server.Handle(Request(2, "tools/list", nlohmann::json::object()), modern);
  ASSERT_TRUE(bare.reply);
  EXPECT_EQ((*bare.reply)["error"]["code"], kInvalidParams);
  EXPECT_EQ(bare.http_status, 400);

  nlohmann::json partial = {{kMetaProtocolVersion, "2026-07-28"}};
  Outcome no_caps = server.Handle(Request(3, "tools/list", {{"_meta", partial}}), {});
  ASSERT_TRUE(no_caps.reply);
  EXPECT_EQ((*no_caps.reply)["error"]["data"]["missing"],
            nlohmann::json({kMetaClientCapabilities}));
}

TEST(McpServerModernTest, AnUnsupportedVersionListsTheSupportedOnes) {
  McpServer server = MakeServer();
  Outcome out = server.Handle(Request(1, "tools/list", {{"_meta", ModernMeta("2099-01-01")}}), {});
  ASSERT_TRUE(out.reply);
  const auto& error = (*out.reply)["error"];
  EXPECT_EQ(error["code"], kUnsupportedProtocolVersion);
  EXPECT_EQ(error["data"]["supported"],
            nlohmann::json({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}));
  EXPECT_EQ(error["data"]["requested"], "2099-01-01");
  EXPECT_EQ(out.http_status, 400);
}

TEST(McpServerModernTest, SessionMethodsAreNotPartOfTheStatelessProtocol) {
  McpServer server = MakeServer();
  for (const char* method : {"initialize", "ping", "logging/setLevel"}) {
    Outcome out = server.Handle(Request(1, method, {{"_meta", ModernMeta()}}), {});
    ASSERT_TRUE(out.reply) << method;
    EXPECT_EQ((*out.reply)["error"]["code"], kMethodNotFound) << method;
    EXPECT_EQ(out.http_status, 404) << method;
  }
}

TEST(McpServerTest, InvalidArgumentsAreAnIsErrorResultNamingTheField) {
  Tool typed;
  typed.definition = {{"name", "typed"},
                      {"inputSchema",
                       {{"type", "object"},
                        {"properties", {{"count", {{"type", "integer"}}}}},
                        {"required", {"count"}}}}};
  bool called = false;
  typed.handler = [&called](const nlohmann::json&, const CallContext&) {
    called = true;
    return ToolResult{nlohmann::json::object()};
  };
  McpServer server("test", "1.0", {typed});
  auto reply = Call(server, R"({"jsonrpc":"2.0","id":1,"method":"tools/call",
      "params":{"name":"typed","arguments":{"count":"three"}}})");
  EXPECT_FALSE(called);
  EXPECT_EQ(reply["result"]["isError"], true);
  EXPECT_EQ(reply["result"]["structuredContent"]["error"]["field"], "count");
  EXPECT_NE(reply["result"]["content"][0]["text"].get<std::string>().find("count"),
            std::string::npos);
  auto missing = Call(server, R"({"jsonrpc":"2.0","id":2,"method":"tools/call",
      "params":{"name":"typed","arguments":{}}})");
  EXPECT_EQ(missing["result"]["structuredContent"]["error"]["field"], "count");
  auto not_object = Call(server, R"({"jsonrpc":"2.0","id":3,"method":"tools/call",
      "params":{"name":"typed","arguments":[1]}})");
  EXPECT_EQ(not_object["error"]["code"], kInvalidParams);
}

// A tool that blocks until released, and says when it started and whether it
// saw its call cancelled.
struct BlockingTool {
  absl::Notification started;
  absl::Notification release;
  absl::Notification finished;
  std::atomic<bool> saw_cancel{false};
};

// The handler holds `state`: a cancelled call's handler runs on after the
// call has returned.
Tool MakeBlockingTool(std::shared_ptr<BlockingTool> state) {
  Tool tool;
  tool.definition = {{"name", "wait"}, {"inputSchema", {{"type", "object"}}}};
  tool.handler = [state](const nlohmann::json&, const CallContext& context) {
    state->started.Notify();
    state->release.WaitForNotification();
    state->saw_cancel = context.cancelled();
    state->finished.Notify();
    return ToolResult{{{"done", true}}};
  };
  return tool;
}

// Collects what a call sends before its reply.
struct Collected {
  absl::Mutex mu;
  std::vector<nlohmann::json> messages ABSL_GUARDED_BY(mu);
  Sink sink() {
    return [this](const nlohmann::json& message) {
      absl::MutexLock lock(&mu);
      messages.push_back(message);
    };
  }
};

TEST(McpServerTest, ProgressGoesOutWhileACallWaitsOnlyWhenAskedFor) {
  auto tool = std::make_shared<BlockingTool>();
  ServerOptions options;
  options.progress_heartbeat = absl::Milliseconds(10);
  McpServer server("test", "1.0", {MakeBlockingTool(tool)}, options);
  Collected collected;
  Exchange exchange;
  exchange.notify = collected.sink();
  std::thread release([&] {
    tool->started.WaitForNotification();
    absl::MutexLock lock(&collected.mu);
    collected.mu.Await(absl::Condition(
        +[](std::vector<nlohmann::json>* m) { return !m->empty(); }, &collected.messages));
    tool->release.Notify();
  });
  Outcome out = server.Handle(
      Request(7, "tools/call", {{"name", "wait"}, {"_meta", {{"progressToken", "tok"}}}}),
      exchange);
  release.join();
  ASSERT_TRUE(out.reply);
  EXPECT_EQ((*out.reply)["result"]["structuredContent"]["done"], true);
  absl::MutexLock lock(&collected.mu);
  ASSERT_FALSE(collected.messages.empty());
  EXPECT_EQ(collected.messages[0]["method"], "notifications/progress");
  EXPECT_EQ(collected.messages[0]["params"]["progressToken"], "tok");
}

TEST(McpServerTest, NoProgressWithoutAToken) {
  Collected collected;
  Tool reporting;
  reporting.definition = {{"name", "report"}, {"inputSchema", {{"type", "object"}}}};
  reporting.handler = [](const nlohmann::json&, const CallContext& context) {
    context.progress(1, "one");
    return ToolResult{nlohmann::json::object()};
  };
  McpServer server("test", "1.0", {reporting});
  Exchange exchange;
  exchange.notify = collected.sink();
  Outcome out = server.Handle(Request(1, "tools/call", {{"name", "report"}}), exchange);
  ASSERT_TRUE(out.reply);
  absl::MutexLock lock(&collected.mu);
  EXPECT_TRUE(collected.messages.empty());
}

TEST(McpServerTest, CancelledStopsTheWaitButNotTheWork) {
  auto tool = std::make_shared<BlockingTool>();
  McpServer server("test", "1.0", {MakeBlockingTool(tool)});
  std::optional<Outcome> outcome;
  std::thread call([&] {
    outcome = server.Handle(Request(9, "tools/call", {{"name", "wait"}}), Exchange{});
  });
  tool->started.WaitForNotification();
  nlohmann::json cancel = {{"jsonrpc", "2.0"},
                           {"method", "notifications/cancelled"},
                           {"params", {{"requestId", 9}, {"reason", "user gave up"}}}};
  EXPECT_FALSE(server.Handle(cancel, {}).reply);
  call.join();  // returns although the tool is still blocked
  ASSERT_TRUE(outcome.has_value());
  EXPECT_FALSE(outcome->reply);  // a cancelled request gets no response
  EXPECT_FALSE(tool->finished.HasBeenNotified());
  // The work goes on, and can see that nobody waits for it any more.
  tool->release.Notify();
  tool->finished.WaitForNotification();
  EXPECT_TRUE(tool->saw_cancel);
  // The server still serves.
  EXPECT_EQ(Call(server, R"({"jsonrpc":"2.0","id":10,"method":"ping"})")["result"],
            nlohmann::json::object());
}

// A cancelled call's handler runs on; the server (or the transport whose
// group it ran in) joins it before it goes.
TEST(McpServerTest, DestructionJoinsTheHandlersOfCancelledCalls) {
  auto tool = std::make_shared<BlockingTool>();
  auto server =
      std::make_unique<McpServer>("test", "1.0", std::vector<Tool>{MakeBlockingTool(tool)});
  std::optional<Outcome> outcome;
  thread::NamedThread call("tb-test-call", [&] {
    outcome = server->Handle(Request(3, "tools/call", {{"name", "wait"}}), Exchange{});
  });
  tool->started.WaitForNotification();
  server->CancelAll();
  call.Join();
  EXPECT_FALSE(outcome->reply);
  thread::NamedThread release("tb-test-release", [&] {
    absl::SleepFor(absl::Milliseconds(50));  // the server is being destroyed by now
    tool->release.Notify();
  });
  server.reset();
  EXPECT_TRUE(tool->finished.HasBeenNotified());
}

// Past the transport's bound on handler threads (abandoned ones included), a
// call is refused as busy, with a reason, and its handler never runs.
TEST(McpServerTest, CallsPastTheHandlerBoundAreRefusedAsBusy) {
  auto tool = std::make_shared<BlockingTool>();
  McpServer server("test", "1.0", {MakeBlockingTool(tool)});
  thread::ThreadGroup handlers("tb-test-handler", 1);
  Exchange exchange;
  exchange.handlers = &handlers;
  thread::NamedThread first("tb-test-call", [&] {
    server.Handle(Request(1, "tools/call", {{"name", "wait"}}), exchange);
  });
  tool->started.WaitForNotification();
  Outcome refused = server.Handle(Request(2, "tools/call", {{"name", "wait"}}), exchange);
  ASSERT_TRUE(refused.reply);
  EXPECT_EQ((*refused.reply)["id"], 2);
  EXPECT_EQ((*refused.reply)["error"]["code"], kServerBusy);
  EXPECT_EQ((*refused.reply)["error"]["data"]["max_running"], kMaxToolHandlers);
  EXPECT_EQ((*refused.reply)["error"]["data"]["reason"],
            "tb-test-handler: 1 threads running, the most allowed");
  tool->release.Notify();
  first.Join();
  handlers.JoinAll();
  EXPECT_EQ(handlers.held(), 0u);
}

}  // namespace
}  // namespace termbridge::mcp
