// Streamable HTTP for the agent's MCP server. One thread accepts
// ("tb-http-accept"); each connection is served by its own thread
// ("tb-http-conn") with synchronous Beast I/O, so a tool call that waits only
// holds its own connection. The transport owns those threads and the tool
// handlers' ("tb-mcp-handler"), and its destructor joins them all.
#include "agent/mcp/http_transport.h"

#include <openssl/crypto.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "agent/mcp/http_headers.h"
#include "agent/mcp/http_response.h"
#include "agent/mcp/json_depth.h"
#include "agent/mcp/tool_call.h"
#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "common/thread/named_thread.h"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using nlohmann::json;

constexpr char kSessionHeader[] = "Mcp-Session-Id";
constexpr char kVersionHeader[] = "MCP-Protocol-Version";

std::optional<std::string> Header(const Request& request, std::string_view name) {
  auto it = request.find(beast::string_view(name.data(), name.size()));
  if (it == request.end()) return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(std::string(it->value())));
}

// host[:port], [v6]:port, or a bare host; returns the host part.
std::string HostPart(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    return std::string(authority.substr(0, authority.find(']') + 1));
  }
  return std::string(authority.substr(0, authority.find(':')));
}

bool IsLoopbackHost(std::string_view host) {
  std::string lower = absl::AsciiStrToLower(std::string(host));
  return lower == "localhost" || lower == "127.0.0.1" || lower == "[::1]";
}

bool IsLoopbackOrigin(std::string_view origin) {
  size_t scheme = origin.find("://");
  if (scheme == std::string_view::npos) return false;
  return IsLoopbackHost(HostPart(origin.substr(scheme + 3)));
}

std::string NewSessionId() {
  thread_local absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen));
}

void RefuseJson(HttpResponder& out, int status, const json& id, int code, std::string_view message,
                const json& data = nullptr) {
  out.FinishPlain(status, Dump(ErrorReply(id, code, message, data)), "application/json");
}

json RequestId(const json& message) {
  if (!message.is_object()) return nullptr;
  json id = message.value("id", json());
  return id.is_string() || id.is_number_integer() ? id : json();
}

struct Session {
  std::shared_ptr<McpServer> server;
  absl::Time last_used;
  bool used = false;  // a request came after initialize
};

// A connection between requests can be closed to make room for a new one;
// one whose request is being served cannot.
struct Connection {
  bool busy = false;     // a request is being served
  bool closing = false;  // shut down to make room; its thread is ending
  absl::Time idle_since = absl::Now();
};

// Request headers larger than this get 431 (Mcp-Session-Id, tokens and
// mirrored parameters fit many times over).
constexpr uint32_t kMaxHeaderBytes = 16 << 10;

}  // namespace

struct HttpTransport::Impl {
  HttpOptions options;
  std::function<std::unique_ptr<McpServer>()> make_server;
  std::shared_ptr<McpServer> stateless;  // serves every 2026-07-28 request
  bool loopback_only = false;            // bound to a loopback address: Host must say so
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  int port = 0;

  absl::Mutex mu;
  std::map<std::string, Session> sessions ABSL_GUARDED_BY(mu);
  std::map<tcp::socket*, Connection> live ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;

  // Last, so that they are joined before anything their threads use goes.
  thread::NamedThread accept_thread;  // runs ioc: the acceptor
  // One per connection, at most twice max_connections (set by Start): `live`,
  // which max_connections bounds, lists a connection once its thread runs,
  // and one closed to make room may still be ending.
  std::unique_ptr<thread::ThreadGroup> connections;
  thread::ThreadGroup handlers{"tb-mcp-handler", kMaxToolHandlers};  // tools/call handlers

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket accepted) {
      if (ec) return;  // closed by Stop
      auto socket = std::make_shared<tcp::socket>(std::move(accepted));
      bool full = false;
      {
        absl::MutexLock lock(&mu);
        if (stopping) return;
        full =
            static_cast<int>(live.size()) >= options.max_connections && !CloseLongestIdleLocked();
      }
      if (full) {
        spdlog::warn("event=http_connection_refused reason=max_connections");
        RefuseBusy(*socket);
      } else if (absl::Status started = connections->Start([this, socket] { Serve(*socket); });
                 !started.ok()) {
        spdlog::warn("event=http_connection_refused reason=\"{}\"", std::string(started.message()));
        RefuseBusy(*socket);
      }
      Accept();
    });
  }

  // Every connection is in use: a short 503 the client can act on, rather
  // than a reset it cannot tell from a crash.
  static void RefuseBusy(tcp::socket& socket) {
    http::response<http::string_body> response{http::status::service_unavailable, 11};
    response.set(http::field::server, "termbridge-agent");
    response.set(http::field::retry_after, "1");
    response.set(http::field::content_type, "application/json");
    response.keep_alive(false);
    response.body() = Dump(
        ErrorReply(nullptr, kServerBusy, "Server busy: every connection is serving a request"));
    response.prepare_payload();
    beast::error_code ignored;
    http::write(socket, response, ignored);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
  }

  // Makes room by closing the connection that has waited longest for its
  // next request (idle keep-alive sockets, or ones that never sent a whole
  // request). False when every connection is serving a request.
  bool CloseLongestIdleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto idlest = live.end();
    for (auto it = live.begin(); it != live.end(); ++it) {
      if (it->second.busy || it->second.closing) continue;
      if (idlest == live.end() || it->second.idle_since < idlest->second.idle_since) idlest = it;
    }
    if (idlest == live.end()) return false;
    spdlog::info("event=http_connection_closed reason=idle_for_new_connection");
    // The serving thread is blocked reading this socket; shutting down the
    // descriptor (not the asio object) ends that read and the thread cleans up.
    ::shutdown(idlest->first->native_handle(), SHUT_RDWR);
    idlest->second.closing = true;
    return true;
  }

  // A whole request arrived. False if the connection was closed for a new one.
  bool MarkServing(tcp::socket* socket) {
    absl::MutexLock lock(&mu);
    auto it = live.find(socket);
    if (it == live.end() || it->second.closing) return false;
    it->second.busy = true;
    return true;
  }

  // The response is out; the connection waits for its next request.
  void MarkWaiting(tcp::socket* socket) {
    absl::MutexLock lock(&mu);
    auto it = live.find(socket);
    if (it == live.end()) return;
    it->second.busy = false;
    it->second.idle_since = absl::Now();
  }

  void SetIdleTimeout(tcp::socket& socket) {
    timeval timeout{};
    timeout.tv_sec = absl::ToInt64Seconds(options.idle_timeout);
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  }

  // A connection's thread: its requests, one after the other, until it
  // closes or Stop shuts its socket down.
  void Serve(tcp::socket& socket) {
    {
      absl::MutexLock lock(&mu);
      if (stopping) return;  // Stop has shut down the sockets it could see
      live.emplace(&socket, Connection{});
    }
    SetIdleTimeout(socket);
    beast::flat_buffer buffer;
    while (true) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kMaxMessageBytes);
      parser.header_limit(kMaxHeaderBytes);
      beast::error_code ec;
      http::read(socket, buffer, parser, ec);
      if (ec == http::error::body_limit) {
        HttpResponder out(socket, 11, /*keep_alive=*/false, /*stream_allowed=*/false);
        RefuseJson(out, 413, nullptr, kInvalidRequest, "Invalid Request: message too large",
                   {{"max_bytes", kMaxMessageBytes}});
        break;
      }
      if (ec == http::error::header_limit) {
        HttpResponder out(socket, 11, /*keep_alive=*/false, /*stream_allowed=*/false);
        RefuseJson(out, 431, nullptr, kInvalidRequest, "Invalid Request: request headers too large",
                   {{"max_header_bytes", kMaxHeaderBytes}});
        break;
      }
      if (ec) break;
      if (!MarkServing(&socket)) break;  // closed to make room while the request arrived
      Request request = parser.release();
      std::string accept = Header(request, "Accept").value_or("");
      HttpResponder out(socket, request.version(), request.keep_alive(),
                        absl::StrContains(accept, "text/event-stream"));
      Route(request, out);
      if (!out.reusable()) break;
      MarkWaiting(&socket);
    }
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    absl::MutexLock lock(&mu);
    live.erase(&socket);
  }

  // 403 for a foreign Host or Origin, 401 without the bearer token.
  bool Admit(const Request& request, HttpResponder& out) {
    if (auto host = Header(request, "Host");
        host && loopback_only && !IsLoopbackHost(HostPart(*host))) {
      spdlog::warn("event=http_host_refused host={}", *host);
      RefuseJson(out, 403, nullptr, kInvalidRequest, "Forbidden: Host is not a loopback name");
      return false;
    }
    if (auto origin = Header(request, "Origin")) {
      bool allowed = IsLoopbackOrigin(*origin);
      for (const auto& ok : options.allowed_origins) allowed = allowed || ok == *origin;
      if (!allowed) {
        spdlog::warn("event=http_origin_refused origin={}", *origin);
        RefuseJson(out, 403, nullptr, kInvalidRequest, "Forbidden: origin not allowed");
        return false;
      }
    }
    if (!options.bearer_token.empty()) {
      std::string want = "Bearer " + options.bearer_token;
      std::string got = Header(request, "Authorization").value_or("");
      if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
        out.AddHeader("WWW-Authenticate", "Bearer");
        RefuseJson(out, 401, nullptr, kInvalidRequest, "Unauthorized");
        return false;
      }
    }
    return true;
  }

  void Route(const Request& request, HttpResponder& out) {
    std::string_view target = request.target();
    target = target.substr(0, target.find('?'));
    if (target != "/mcp") {
      RefuseJson(out, 404, nullptr, kInvalidRequest, "Not found: the MCP endpoint is /mcp");
      return;
    }
    if (!Admit(request, out)) return;
    switch (request.method()) {
      case http::verb::post:
        // No message may end the process: a field of the wrong type that
        // slipped past the checks is the client's error, anything else ours.
        try {
          Post(request, out);
        } catch (const json::exception& e) {
          spdlog::warn("event=mcp_bad_field error=\"{}\"", e.what());
          out.Finish(400, ErrorReply(nullptr, kInvalidParams,
                                     absl::StrCat("Invalid params: a field has the wrong type (",
                                                  e.what(), ")")));
        } catch (const std::exception& e) {
          spdlog::error("event=mcp_internal_error error=\"{}\"", e.what());
          out.Finish(500, ErrorReply(nullptr, kInternalError, "Internal error"));
        }
        return;
      case http::verb::delete_:
        Delete(request, out);
        return;
      default:
        // No server-initiated stream (GET): nothing is ever sent outside a request.
        out.AddHeader("Allow", "POST, DELETE");
        out.FinishPlain(405, "", "");
        return;
    }
  }

  void Delete(const Request& request, HttpResponder& out) {
    std::optional<std::string> session_id = Header(request, kSessionHeader);
    std::optional<std::string> version = Header(request, kVersionHeader);
    if (!session_id) {
      if (version && !IsKnownLegacyVersion(*version)) {  // 2026-07-28 has no sessions
        out.AddHeader("Allow", "POST");
        out.FinishPlain(405, "", "");
        return;
      }
      RefuseJson(out, 400, nullptr, kInvalidRequest,
                 "Bad Request: Mcp-Session-Id header is required");
      return;
    }
    std::shared_ptr<McpServer> ended;
    {
      absl::MutexLock lock(&mu);
      auto it = sessions.find(*session_id);
      if (it != sessions.end()) {
        ended = std::move(it->second.server);
        sessions.erase(it);
      }
    }
    if (!ended) {
      RefuseJson(out, 404, nullptr, kInvalidRequest, "Session not found");
      return;
    }
    ended->CancelAll();
    spdlog::info("event=session_deleted session_id={}", *session_id);
    out.FinishPlain(200, "", "");
  }

  void Post(const Request& request, HttpResponder& out) {
    std::string type = absl::AsciiStrToLower(Header(request, "Content-Type").value_or(""));
    if (!absl::StrContains(type, "application/json")) {
      RefuseJson(out, 415, nullptr, kInvalidRequest, "Content-Type must be application/json");
      return;
    }
    if (JsonNestsDeeperThan(request.body())) {
      RefuseJson(out, 400, nullptr, kInvalidRequest, "Invalid Request: JSON nests too deeply");
      return;
    }
    // nlohmann's parser ends the text at a NUL byte; JSON has no raw NUL.
    json message = request.body().find('\0') != std::string::npos
                       ? json(json::value_t::discarded)
                       : json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      RefuseJson(out, 400, nullptr, kParseError, "Parse error: invalid JSON");
      return;
    }
    std::optional<std::string> header_version = Header(request, kVersionHeader);
    if (message.is_array()) {
      PostBatch(request, message, header_version, out);
      return;
    }
    if (!message.is_object()) {
      RefuseJson(out, 400, nullptr, kInvalidRequest,
                 "Invalid Request: expected a JSON-RPC 2.0 object");
      return;
    }
    json meta = message.value("params", json::object());
    meta = meta.is_object() ? meta.value("_meta", json()) : json();
    bool meta_version = meta.is_object() && meta.contains(kMetaProtocolVersion);
    // A header naming no handshake-era version (2026-07-28, or one we do not
    // know) is modern; without one, a session's client may speak 2025-03-26,
    // which had no header.
    bool modern = (header_version && !IsKnownLegacyVersion(*header_version)) || meta_version ||
                  message.value("method", json()) == "server/discover";
    if (modern) {
      PostModern(request, message, header_version, out);
    } else {
      PostLegacy(request, message, out);
    }
  }

  // 2026-07-28: headers first (version, then the mirrored ones), then the stateless core.
  void PostModern(const Request& request, const json& message,
                  const std::optional<std::string>& header_version, HttpResponder& out) {
    const json id = RequestId(message);
    if (!header_version) {
      RefuseJson(out, 400, id, kHeaderMismatch,
                 "Header mismatch: MCP-Protocol-Version is required");
      return;
    }
    if (!IsSupportedVersion(*header_version, Transport::kHttp)) {
      out.FinishPlain(400, Dump(UnsupportedVersionReply(id, *header_version, Transport::kHttp)),
                      "application/json");
      return;
    }
    json params = message.value("params", json::object());
    json meta = params.is_object() ? params.value("_meta", json()) : json();
    json body_version = meta.is_object() ? meta.value(kMetaProtocolVersion, json()) : json();
    if (body_version.is_string() && body_version.get<std::string>() != *header_version) {
      RefuseJson(out, 400, id, kHeaderMismatch,
                 absl::StrCat("Header mismatch: MCP-Protocol-Version '", *header_version,
                              "' does not match the body's ", kMetaProtocolVersion));
      return;
    }
    if (message.contains("method") && message.contains("id")) {
      const json* schema = nullptr;
      if (StringField(message, "method") == "tools/call" && params.is_object() &&
          params.value("name", json()).is_string()) {
        if (const Tool* tool = stateless->FindTool(params["name"].get<std::string>())) {
          schema = &tool->definition["inputSchema"];
        }
      }
      HeaderLookup lookup = [&request](std::string_view name) { return Header(request, name); };
      if (auto mismatch = CheckMirroredHeaders(lookup, message, schema)) {
        spdlog::info("event=header_mismatch {}", *mismatch);
        RefuseJson(out, 400, id, kHeaderMismatch, *mismatch);
        return;
      }
    }
    Respond(*stateless, message, /*modern=*/true, out);
  }

  // A header naming a version HTTP does not serve (2024-11-05, whose HTTP
  // transport was HTTP+SSE) gets 400 UnsupportedProtocolVersion. A session
  // is served at the version its initialize agreed on; the header may name
  // another served one (the released conformance suite sends 2025-03-26 in a
  // 2025-11-25 session) and may be absent (2025-03-26 had none).
  bool CheckLegacyHeader(const Request& request, const json& id, HttpResponder& out) {
    std::optional<std::string> version = Header(request, kVersionHeader);
    if (!version || IsSupportedVersion(*version, Transport::kHttp)) return true;
    out.FinishPlain(400, Dump(UnsupportedVersionReply(id, *version, Transport::kHttp)),
                    "application/json");
    return false;
  }

  // A JSON-RPC batch (2025-03-26 sessions only; McpServer checks the
  // version). It cannot hold initialize, so it needs a session.
  void PostBatch(const Request& request, const json& batch,
                 const std::optional<std::string>& header_version, HttpResponder& out) {
    if (header_version && !IsKnownLegacyVersion(*header_version)) {
      RefuseJson(out, 400, nullptr, kInvalidRequest,
                 absl::StrCat("Invalid Request: JSON-RPC batches are part of protocol version "
                              "2025-03-26 only, not ",
                              *header_version),
                 {{"batching_versions", {"2025-03-26"}}});
      return;
    }
    if (!CheckLegacyHeader(request, nullptr, out)) return;
    std::optional<std::string> session_id = Header(request, kSessionHeader);
    if (!session_id) {
      RefuseJson(out, 400, nullptr, kInvalidRequest,
                 "Bad Request: Mcp-Session-Id header is required (a batch cannot hold initialize)");
      return;
    }
    std::shared_ptr<McpServer> server = FindSession(*session_id);
    if (!server) {
      RefuseJson(out, 404, nullptr, kInvalidRequest, "Session not found");
      return;
    }
    Respond(*server, batch, /*modern=*/false, out);
  }

  void PostLegacy(const Request& request, const json& message, HttpResponder& out) {
    const json id = RequestId(message);
    if (!CheckLegacyHeader(request, id, out)) return;
    if (message.value("method", json()) == "initialize") {
      Initialize(message, out);
      return;
    }
    std::optional<std::string> session_id = Header(request, kSessionHeader);
    if (!session_id) {
      RefuseJson(out, 400, id, kInvalidRequest, "Bad Request: Mcp-Session-Id header is required");
      return;
    }
    std::shared_ptr<McpServer> server = FindSession(*session_id);
    if (!server) {
      RefuseJson(out, 404, id, kInvalidRequest, "Session not found");
      return;
    }
    Respond(*server, message, /*modern=*/false, out);
  }

  void Initialize(const json& message, HttpResponder& out) {
    std::shared_ptr<McpServer> server = make_server();
    std::string session_id = NewSessionId();
    Exchange exchange;
    exchange.transport = Transport::kHttp;
    Outcome outcome = server->Handle(message, exchange);
    if (outcome.reply && outcome.reply->contains("result")) {
      AddSession(session_id, server);
      out.AddHeader(kSessionHeader, session_id);
      spdlog::info("event=session_started session_id={}", session_id);
    }
    out.Finish(outcome.reply ? outcome.http_status : 202, outcome.reply);
  }

  void Respond(McpServer& server, const json& message, bool modern, HttpResponder& out) {
    Exchange exchange;
    exchange.modern_transport = modern;
    exchange.transport = Transport::kHttp;
    exchange.notify = [&out](const json& note) { out.Stream(note); };
    exchange.peer_gone = [&out] { return out.PeerGone(); };
    exchange.handlers = &handlers;
    Outcome outcome = server.Handle(message, exchange);
    int status = outcome.reply ? outcome.http_status : 202;
    if (!outcome.reply && message.contains("id") && message.contains("method")) {
      status = 202;  // a cancelled request: no JSON-RPC response, per the spec
    }
    if (!outcome.reply && status >= 400) {
      out.FinishPlain(status, "", "");
      return;
    }
    out.Finish(status, outcome.reply);
  }

  std::shared_ptr<McpServer> FindSession(const std::string& session_id) {
    absl::MutexLock lock(&mu);
    auto it = sessions.find(session_id);
    if (it == sessions.end()) return nullptr;
    it->second.last_used = absl::Now();
    it->second.used = true;
    return it->second.server;
  }

  void AddSession(const std::string& session_id, std::shared_ptr<McpServer> server) {
    std::shared_ptr<McpServer> evicted;
    {
      absl::MutexLock lock(&mu);
      if (static_cast<int>(sessions.size()) >= options.max_sessions) {
        // Sessions that never went past initialize go first, so that a flood
        // of initialize requests cannot end the sessions clients really use.
        auto oldest = sessions.begin();
        for (auto it = sessions.begin(); it != sessions.end(); ++it) {
          if (std::make_pair(it->second.used, it->second.last_used) <
              std::make_pair(oldest->second.used, oldest->second.last_used)) {
            oldest = it;
          }
        }
        spdlog::warn("event=session_evicted session_id={} reason=max_sessions", oldest->first);
        evicted = std::move(oldest->second.server);
        sessions.erase(oldest);
      }
      sessions[session_id] = Session{std::move(server), absl::Now()};
    }
    if (evicted) evicted->CancelAll();
  }
};

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Start(
    HttpOptions options, std::function<std::unique_ptr<McpServer>()> make_server) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->make_server = std::move(make_server);
  impl->stateless = impl->make_server();
  size_t colon = impl->options.listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(impl->options.listen.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError("--http must be host:port");
  }
  std::string host = impl->options.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("bad --http address: ", host));
  impl->loopback_only = address.is_loopback();
  if (impl->options.bearer_token.empty() && !impl->loopback_only) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an HTTP endpoint without a bearer token may listen only on a loopback address "
        "(127.0.0.1, ::1), not on ",
        host));
  }
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
  impl->connections = std::make_unique<thread::ThreadGroup>(
      "tb-http-conn", 2 * static_cast<size_t>(std::max(1, impl->options.max_connections)));
  impl->Accept();
  impl->accept_thread =
      thread::NamedThread("tb-http-accept", [raw = impl.get()] { raw->ioc.run(); });
  return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
}

int HttpTransport::port() const { return impl_->port; }

void HttpTransport::Wait() { impl_->accept_thread.Join(); }

void HttpTransport::Stop() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    for (const auto& [socket, connection] : impl_->live) {
      ::shutdown(socket->native_handle(), SHUT_RDWR);  // ends each thread's blocking read
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
  // Stop shut every connection's socket down, which ends its thread; a call
  // it was waiting for is cancelled (the peer is gone), and its handler ends
  // when the broker answers (each broker call has a deadline).
  impl_->connections->JoinAll();
  impl_->handlers.JoinAll();
}

}  // namespace termbridge::mcp
