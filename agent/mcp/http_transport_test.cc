// Tests of the Streamable HTTP transport with many clients at once: legacy
// sessions started, used and ended from concurrent connections, and a stop
// while connections are open. tsan.concurrency runs them under
// ThreadSanitizer, where the connection, acceptor and handler threads meet.
#include "agent/mcp/http_transport.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/thread/named_thread.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::mcp {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using nlohmann::json;
using Response = http::response<http::string_body>;

std::unique_ptr<McpServer> EchoServer() {
  Tool echo;
  echo.definition = {{"name", "echo"}, {"inputSchema", {{"type", "object"}}}};
  echo.handler = [](const json& args, const CallContext&) { return ToolResult{args, false}; };
  return std::make_unique<McpServer>("test", "1.0", std::vector<Tool>{echo});
}

// One keep-alive connection to the transport on 127.0.0.1.
class Client {
 public:
  explicit Client(int port) : socket_(ioc_) {
    socket_.connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  }

  // Sends one request and reads its response; a failed exchange returns
  // status 0 (unknown).
  Response Send(http::verb verb, const json& body, const std::string& session = "") {
    http::request<http::string_body> request(verb, "/mcp", 11);
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json, text/event-stream");
    if (!session.empty()) request.set("Mcp-Session-Id", session);
    if (!body.is_null()) request.body() = body.dump();
    request.prepare_payload();
    Response response;
    beast::error_code ec;
    http::write(socket_, request, ec);
    if (!ec) http::read(socket_, buffer_, response, ec);
    if (ec) response.result(http::status::unknown);
    return response;
  }

  // True when the server closed the connection (a read ends without data).
  bool Closed() {
    char byte;
    beast::error_code ec;
    socket_.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

json Initialize() {
  return {{"jsonrpc", "2.0"},
          {"id", 1},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", "2025-06-18"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "c"}, {"version", "1"}}}}}};
}

json EchoCall(int id, const std::string& word) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", "echo"}, {"arguments", {{"word", word}}}}}};
}

// What one client saw: each reply's echoed word, and how its session ended.
struct Seen {
  std::vector<std::string> words;
  unsigned delete_status = 0;
};

TEST(HttpTransportTest, ConcurrentSessionsEachGetTheirOwnReplies) {
  constexpr int kClients = 6;
  constexpr int kCalls = 5;
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport =
      HttpTransport::Start(HttpOptions{}, EchoServer);
  ASSERT_TRUE(transport.ok()) << transport.status();
  const int port = (*transport)->port();
  std::vector<Seen> seen(kClients);
  {
    std::vector<thread::NamedThread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back("tb-test-client", [&, c] {
        Client client(port);
        Response init = client.Send(http::verb::post, Initialize());
        std::string session(init["Mcp-Session-Id"]);
        if (init.result_int() != 200 || session.empty()) return;
        for (int i = 0; i < kCalls; ++i) {
          Response reply =
              client.Send(http::verb::post, EchoCall(i + 2, absl::StrCat(c, "/", i)), session);
          json body = json::parse(reply.body(), nullptr, /*allow_exceptions=*/false);
          if (reply.result_int() != 200 || !body.is_object()) return;
          seen[c].words.push_back(
              body.value(json::json_pointer("/result/structuredContent/word"), std::string("?")));
        }
        seen[c].delete_status = client.Send(http::verb::delete_, nullptr, session).result_int();
      });
    }
  }  // every client joined
  for (int c = 0; c < kClients; ++c) {
    std::vector<std::string> want;
    for (int i = 0; i < kCalls; ++i) want.push_back(absl::StrCat(c, "/", i));
    EXPECT_EQ(seen[c].words, want) << "client " << c;
    EXPECT_EQ(seen[c].delete_status, 200u) << "client " << c;
  }
}

TEST(HttpTransportTest, StopClosesOpenConnectionsAndJoinsTheirThreads) {
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport =
      HttpTransport::Start(HttpOptions{}, EchoServer);
  ASSERT_TRUE(transport.ok()) << transport.status();
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 4; ++c) {
    clients.push_back(std::make_unique<Client>((*transport)->port()));
    // A served request proves the connection's thread runs and is now idle.
    ASSERT_EQ(clients.back()->Send(http::verb::post, Initialize()).result_int(), 200);
  }
  thread::NamedThread stopper("tb-test-stop", [&] { (*transport)->Stop(); });
  stopper.Join();
  transport->reset();  // joins the acceptor and every connection's thread
  for (auto& client : clients) EXPECT_TRUE(client->Closed());
}

}  // namespace
}  // namespace termbridge::mcp
