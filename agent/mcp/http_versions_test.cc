// Tests of the Streamable HTTP transport per protocol version (docs/CONTRACT.md,
// "MCP protocol versions"): 2025-03-26 sessions (no MCP-Protocol-Version
// header, JSON-RPC batches), the header rules from 2025-06-18, and the
// refusal of 2024-11-05, whose HTTP transport was HTTP+SSE.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/mcp/http_transport.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::mcp {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using nlohmann::json;
using Headers = std::map<std::string, std::string>;

std::unique_ptr<McpServer> EchoServer() {
  Tool echo;
  echo.definition = {{"name", "echo"},
                     {"inputSchema", {{"type", "object"}}},
                     {"outputSchema", {{"type", "object"}}}};
  echo.handler = [](const json& args, const CallContext&) { return ToolResult{args, false}; };
  return std::make_unique<McpServer>("test", "1.0", std::vector<Tool>{echo});
}

struct Reply {
  unsigned status = 0;
  std::string session;  // Mcp-Session-Id of the response
  json body;            // null when empty
};

// One POST on a new connection to the transport on 127.0.0.1.
Reply Post(int port, const json& body, const Headers& headers = {}) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.connect(
      tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  http::request<http::string_body> request(http::verb::post, "/mcp", 11);
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body.dump();
  request.prepare_payload();
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  Reply reply;
  reply.status = response.result_int();
  if (auto it = response.find("Mcp-Session-Id"); it != response.end()) {
    reply.session = std::string(it->value());
  }
  if (!response.body().empty()) reply.body = json::parse(response.body());
  return reply;
}

json Request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json Initialize(const std::string& version) {
  return Request(1, "initialize",
                 {{"protocolVersion", version},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "c"}, {"version", "1"}}}});
}

class HttpVersionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = HttpTransport::Start(HttpOptions{}, EchoServer);
    ASSERT_TRUE(started.ok()) << started.status();
    transport_ = std::move(*started);
  }

  // Opens a session at `version`; returns its id.
  std::string Open(const std::string& version) {
    Reply init = Post(port(), Initialize(version));
    EXPECT_EQ(init.status, 200u);
    EXPECT_EQ(init.body["result"]["protocolVersion"], version);
    EXPECT_FALSE(init.session.empty());
    return init.session;
  }

  int port() const { return transport_->port(); }

  std::unique_ptr<HttpTransport> transport_;
};

TEST_F(HttpVersionsTest, A2025_03_26SessionIsServedWithoutAVersionHeader) {
  std::string session = Open("2025-03-26");
  Reply call = Post(port(), Request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"w", 1}}}}),
                    {{"Mcp-Session-Id", session}});
  EXPECT_EQ(call.status, 200u);
  EXPECT_EQ(call.body["id"], 2);
  EXPECT_FALSE(call.body["result"].contains("structuredContent"));  // 2025-06-18 on
  // A client may also name its version in the header (the released
  // conformance suite does, in any session).
  Reply list = Post(port(), Request(3, "tools/list"),
                    {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-03-26"}});
  EXPECT_EQ(list.status, 200u);
  EXPECT_FALSE(list.body["result"]["tools"][0].contains("outputSchema"));
}

TEST_F(HttpVersionsTest, A2025_03_26SessionTakesABatch) {
  std::string session = Open("2025-03-26");
  json batch = json::array({Request(2, "ping"),
                            Request(3, "tools/list"),
                            {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}});
  Reply replies = Post(port(), batch, {{"Mcp-Session-Id", session}});
  EXPECT_EQ(replies.status, 200u);
  ASSERT_TRUE(replies.body.is_array());
  ASSERT_EQ(replies.body.size(), 2u);
  EXPECT_EQ(replies.body[0]["id"], 2);
  EXPECT_EQ(replies.body[1]["result"]["tools"][0]["name"], "echo");

  Reply notes = Post(port(), json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/x"}}}),
                     {{"Mcp-Session-Id", session}});
  EXPECT_EQ(notes.status, 202u);
  EXPECT_TRUE(notes.body.is_null());
}

TEST_F(HttpVersionsTest, BatchesAreRefusedOutsideA2025_03_26Session) {
  json batch = json::array({Request(2, "ping")});
  std::string session = Open("2025-06-18");
  Reply later =
      Post(port(), batch, {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-06-18"}});
  EXPECT_EQ(later.status, 400u);
  EXPECT_EQ(later.body["error"]["code"], kInvalidRequest);

  Reply no_session = Post(port(), batch);
  EXPECT_EQ(no_session.status, 400u);
  EXPECT_EQ(no_session.body["error"]["code"], kInvalidRequest);

  Reply modern = Post(port(), batch, {{"MCP-Protocol-Version", "2026-07-28"}});
  EXPECT_EQ(modern.status, 400u);
  EXPECT_EQ(modern.body["error"]["code"], kInvalidRequest);

  Reply unknown = Post(port(), batch, {{"Mcp-Session-Id", "nope"}});
  EXPECT_EQ(unknown.status, 404u);
}

TEST_F(HttpVersionsTest, TheVersionHeaderMustNameAVersionHttpServes) {
  std::string session = Open("2025-11-25");
  Reply ok = Post(port(), Request(2, "ping"),
                  {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"}});
  EXPECT_EQ(ok.status, 200u);
  // Absent: the session's version applies.
  EXPECT_EQ(Post(port(), Request(3, "ping"), {{"Mcp-Session-Id", session}}).status, 200u);
  for (const char* version : {"2024-11-05", "1999-01-01", "garbage"}) {
    Reply refused = Post(port(), Request(4, "ping"),
                         {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", version}});
    EXPECT_EQ(refused.status, 400u) << version;
    EXPECT_EQ(refused.body["id"], 4) << version;
    EXPECT_EQ(refused.body["error"]["code"], kUnsupportedProtocolVersion) << version;
    EXPECT_EQ(refused.body["error"]["data"]["supported"],
              json({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}));
  }
}

TEST_F(HttpVersionsTest, A2024_11_05ClientIsOfferedTheLatestVersion) {
  Reply init = Post(port(), Initialize("2024-11-05"));
  EXPECT_EQ(init.status, 200u);
  EXPECT_EQ(init.body["result"]["protocolVersion"], "2025-11-25");
}

}  // namespace
}  // namespace termbridge::mcp
