// Streamable HTTP for the agent's MCP server. One thread accepts; each
// connection is served by its own thread with synchronous Beast I/O, so a
// tool call that waits only holds its own connection.
#include "agent/mcp/http_transport.h"

#include <openssl/crypto.h>

#include <map>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

constexpr char kSessionHeader[] = "Mcp-Session-Id";
constexpr char kVersionHeader[] = "MCP-Protocol-Version";

Response MakeResponse(const Request& request, http::status status, std::string body,
                      std::string content_type = "application/json") {
  Response response(status, request.version());
  response.set(http::field::server, "termbridge-agent");
  response.keep_alive(request.keep_alive());
  if (!body.empty()) response.set(http::field::content_type, content_type);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

Response JsonRpcError(const Request& request, http::status status, int code,
                      std::string_view message) {
  return MakeResponse(request, status, ErrorReply(nullptr, code, message).dump());
}

bool IsLoopbackOrigin(std::string_view origin) {
  // scheme://host[:port]
  size_t scheme = origin.find("://");
  if (scheme == std::string_view::npos) return false;
  std::string_view host = origin.substr(scheme + 3);
  if (host.substr(0, 5) == "[::1]") return true;
  host = host.substr(0, host.find(':'));
  return host == "localhost" || host == "127.0.0.1";
}

std::string NewSessionId() {
  thread_local absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen));
}

}  // namespace

struct HttpTransport::Impl {
  HttpOptions options;
  std::function<std::unique_ptr<McpServer>()> make_server;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  int port = 0;

  absl::Mutex mu;
  std::map<std::string, std::shared_ptr<McpServer>> sessions ABSL_GUARDED_BY(mu);
  std::set<tcp::socket*> live ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed by Stop
      {
        absl::MutexLock lock(&mu);
        if (stopping) return;
        if (static_cast<int>(live.size()) >= options.max_connections) {
          spdlog::warn("event=http_connection_refused reason=max_connections");
          Accept();
          return;
        }
      }
      std::thread(&Impl::Serve, this, std::move(socket)).detach();
      Accept();
    });
  }

  void Serve(tcp::socket socket) {
    {
      absl::MutexLock lock(&mu);
      live.insert(&socket);
    }
    beast::flat_buffer buffer;
    while (true) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kMaxMessageBytes);
      beast::error_code ec;
      http::read(socket, buffer, parser, ec);
      if (ec == http::error::body_limit) {
        Request head;
        head.version(11);
        Response response = JsonRpcError(head, http::status::payload_too_large, -32600,
                                          "message too large");
        response.keep_alive(false);
        http::write(socket, response, ec);
        break;
      }
      if (ec) break;
      Request request = parser.release();
      Response response = Handle(request);
      http::write(socket, response, ec);
      if (ec || !response.keep_alive()) break;
    }
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    absl::MutexLock lock(&mu);
    live.erase(&socket);
  }

  std::optional<Response> CheckAccess(const Request& request) {
    if (auto origin = request.find(http::field::origin); origin != request.end()) {
      std::string value(origin->value());
      bool allowed = IsLoopbackOrigin(value);
      for (const auto& ok : options.allowed_origins) allowed = allowed || ok == value;
      if (!allowed) {
        spdlog::warn("event=http_origin_refused origin={}", value);
        return JsonRpcError(request, http::status::forbidden, -32600, "Forbidden: origin not allowed");
      }
    }
    if (!options.bearer_token.empty()) {
      std::string want = "Bearer " + options.bearer_token;
      auto auth = request.find(http::field::authorization);
      std::string got = auth == request.end() ? std::string() : std::string(auth->value());
      if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
        Response response =
            JsonRpcError(request, http::status::unauthorized, -32600, "Unauthorized");
        response.set(http::field::www_authenticate, "Bearer");
        return response;
      }
    }
    return std::nullopt;
  }

  Response Handle(const Request& request) {
    std::string_view target = request.target();
    target = target.substr(0, target.find('?'));
    if (target != "/mcp") return JsonRpcError(request, http::status::not_found, -32600, "Not found: use /mcp");
    if (auto refused = CheckAccess(request)) return *refused;
    if (auto version = request.find(kVersionHeader); version != request.end()) {
      const auto& supported = SupportedProtocolVersions();
      std::string value(version->value());
      if (std::find(supported.begin(), supported.end(), value) == supported.end() &&
          value != "2025-03-26") {
        return JsonRpcError(request, http::status::bad_request, -32600,
                            absl::StrCat("Bad Request: unsupported MCP-Protocol-Version ", value,
                                         "; supported: 2025-11-25, 2025-06-18"));
      }
    }
    std::string session_id;
    if (auto header = request.find(kSessionHeader); header != request.end()) {
      session_id = std::string(header->value());
    }
    switch (request.method()) {
      case http::verb::post:
        return Post(request, session_id);
      case http::verb::delete_: {
        absl::MutexLock lock(&mu);
        if (session_id.empty() || sessions.erase(session_id) == 0) {
          return JsonRpcError(request, http::status::not_found, -32600, "Session not found");
        }
        return MakeResponse(request, http::status::ok, "");
      }
      default: {
        Response response = MakeResponse(request, http::status::method_not_allowed, "");
        response.set(http::field::allow, "POST, DELETE");
        return response;
      }
    }
  }

  Response Post(const Request& request, const std::string& session_id) {
    auto type = request.find(http::field::content_type);
    if (type == request.end() || !absl::StrContains(absl::AsciiStrToLower(std::string(type->value())),
                                                    "application/json")) {
      return JsonRpcError(request, http::status::unsupported_media_type, -32600,
                          "Content-Type must be application/json");
    }
    nlohmann::json message =
        nlohmann::json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      return JsonRpcError(request, http::status::bad_request, -32700, "Parse error: invalid JSON");
    }
    std::shared_ptr<McpServer> server;
    std::string new_session;
    bool initialize = message.is_object() && message.value("method", "") == "initialize";
    if (initialize) {
      server = make_server();
      new_session = NewSessionId();
    } else {
      absl::MutexLock lock(&mu);
      if (session_id.empty()) {
        return JsonRpcError(request, http::status::bad_request, -32600,
                            "Bad Request: Mcp-Session-Id header is required");
      }
      auto it = sessions.find(session_id);
      if (it == sessions.end()) {
        return JsonRpcError(request, http::status::not_found, -32600, "Session not found");
      }
      server = it->second;
    }
    std::optional<nlohmann::json> reply = server->Handle(message, nullptr);
    if (!reply) return MakeResponse(request, http::status::accepted, "");
    if (initialize && reply->contains("result")) {
      absl::MutexLock lock(&mu);
      sessions[new_session] = server;
    }
    Response response = MakeResponse(
        request, http::status::ok,
        reply->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (initialize) response.set(kSessionHeader, new_session);
    return response;
  }
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Start(
    HttpOptions options, std::function<std::unique_ptr<McpServer>()> make_server) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->make_server = std::move(make_server);
  size_t colon = impl->options.listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(impl->options.listen.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError("--http must be host:port");
  }
  std::string host = impl->options.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("bad --http address: ", host));
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", impl->options.listen, ": ", ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->Accept();
  impl->accept_thread = std::thread([raw = impl.get()] { raw->ioc.run(); });
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::Wait() {
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
}

void HttpTransport::Stop() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    for (tcp::socket* socket : impl_->live) {
      beast::error_code ignored;
      socket->shutdown(tcp::socket::shutdown_both, ignored);
    }
  }
  asio::post(impl_->ioc, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
  });
  impl_->ioc.stop();
}

HttpTransport::~HttpTransport() {
  Stop();
  Wait();
  // Connection threads hold a pointer to impl_: wait for them to leave.
  absl::MutexLock lock(&impl_->mu);
  impl_->mu.Await(absl::Condition(
      +[](std::set<tcp::socket*>* live) { return live->empty(); }, &impl_->live));
}

}  // namespace termbridge::mcp
