// HTTP for the web console (see http_session.h): access checks first, then
// page files, the JSON API, or a WebSocket upgrade. Beast reports errors by
// error_code on every call used here; Handle also catches anything thrown
// below it and answers 500, so no exception reaches the io_context.
#include "broker/surface/console/http_session.h"

#include <chrono>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "boost/beast/websocket.hpp"
#include "broker/surface/console/attach_bridge.h"
#include "broker/surface/console/events_bridge.h"
#include "broker/surface/console/messages.h"
#include "broker/surface/console/operator_api.h"
#include "broker/surface/console/static_assets.h"
#include "broker/surface/console/string_views.h"
#include "broker/surface/console/ws_session.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using Request = HttpSession::Request;
using Response = HttpSession::Response;

constexpr auto kIdleTimeout = std::chrono::seconds(30);
constexpr char kUnauthorizedText[] =
    "termbridge console: the operator token is required. Open the console link that "
    "termbridge-broker prints (console_url in its ready file); it carries the token.\n";

std::string_view Header(const Request& request, http::field field) {
  auto it = request.find(field);
  return it == request.end() ? std::string_view() : std::string_view(it->value());
}

Response MakeResponse(unsigned version, bool keep_alive, http::status status, std::string body,
                      std::string_view content_type) {
  Response response(status, version);
  response.set(http::field::server, "termbridge-console");
  response.set(http::field::content_type, content_type);
  response.set(http::field::cache_control, "no-store");
  response.set("X-Content-Type-Options", "nosniff");
  response.set("X-Frame-Options", "DENY");
  response.set("Referrer-Policy", "no-referrer");
  response.keep_alive(keep_alive);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

Response ErrorResponse(const Request& request, http::status status, std::string_view code,
                       std::string_view message) {
  return MakeResponse(request.version(), request.keep_alive(), status,
                      Dump({{"error", {{"status", code}, {"message", message}}}}),
                      "application/json");
}

Response Unauthorized(const Request& request) {
  Response response =
      MakeResponse(request.version(), request.keep_alive(), http::status::unauthorized,
                   kUnauthorizedText, "text/plain; charset=utf-8");
  response.set(http::field::www_authenticate, "Bearer realm=\"termbridge console\"");
  return response;
}

// Scripts, styles and connections only from the console itself; no framing
// (an approve button must not be clickjacked). xterm.js sets inline styles.
std::string ContentSecurityPolicy(const ConsoleAccess& access) {
  std::vector<std::string> sockets;
  for (const std::string& origin : access.origins()) {
    if (absl::StartsWith(origin, "http://")) sockets.push_back("ws://" + origin.substr(7));
    if (absl::StartsWith(origin, "https://")) sockets.push_back("wss://" + origin.substr(8));
  }
  return absl::StrCat(
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
      "img-src 'self' data:; connect-src 'self' ",
      absl::StrJoin(sockets, " "), "; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
}

bool IsJson(const Request& request) {
  std::string_view type = Header(request, http::field::content_type);
  return absl::StartsWithIgnoreCase(absl::StripAsciiWhitespace(AbslView(type)), "application/json");
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, ConsoleContext* context)
    : stream_(std::move(socket)), executor_(stream_.get_executor()), context_(context) {}

HttpSession::~HttpSession() { context_->connections.Remove(live_id_); }

void HttpSession::Run() {
  live_id_ = context_->connections.Add(weak_from_this());
  asio::dispatch(executor_, [self = shared_from_this()] {
    if (self->live_id_ == 0) {
      self->Close();
      return;
    }
    self->DoRead();
  });
}

void HttpSession::Shutdown() {
  asio::post(executor_, [self = shared_from_this()] { self->Close(); });
}

void HttpSession::DoRead() {
  parser_.emplace();
  parser_->body_limit(kMaxBodyBytes);
  parser_->header_limit(16 << 10);
  stream_.expires_after(kIdleTimeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

void HttpSession::OnRead(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    Request head;
    head.version(11);
    head.keep_alive(false);
    Reply(ErrorResponse(head, http::status::payload_too_large, "INVALID_ARGUMENT",
                        "request body too large"));
    return;
  }
  if (ec) {
    Close();
    return;
  }
  Request request = parser_->release();
  try {
    Handle(std::move(request));
  } catch (const std::exception& e) {
    spdlog::error("event=console_http_error error=\"{}\"", e.what());
    Close();
  }
}

void HttpSession::Handle(Request request) {
  auto [path, query] = SplitTarget(request.target());
  const ConsoleAccess& access = *context_->access;
  std::optional<std::string_view> origin;
  if (auto it = request.find(http::field::origin); it != request.end()) origin = it->value();
  if (!access.OriginAllowed(origin)) {
    spdlog::warn("event=console_refused reason=origin origin=\"{}\" path={}", *origin, path);
    Reply(
        ErrorResponse(request, http::status::forbidden, "PERMISSION_DENIED", "origin not allowed"));
    return;
  }
  bool authorized = access.Authorized(Header(request, http::field::authorization),
                                      Header(request, http::field::cookie));
  std::optional<std::string> login = QueryParam(query, "token");
  if (login && request.method() == http::verb::get && (path == "/" || path == "/index.html")) {
    if (!access.TokenValid(*login)) {
      spdlog::warn("event=console_refused reason=bad_token path={}", path);
      Reply(Unauthorized(request));
      return;
    }
    // Swap the token in the address bar for a cookie and a clean URL.
    Response response = MakeResponse(request.version(), request.keep_alive(),
                                     http::status::see_other, "", "text/plain");
    response.set(http::field::location, "/");
    response.set(http::field::set_cookie, access.SetCookieHeader());
    Reply(std::move(response));
    return;
  }
  if (!authorized) {
    spdlog::warn("event=console_refused reason=no_token path={}", path);
    Reply(Unauthorized(request));
    return;
  }
  if (beast::websocket::is_upgrade(request)) {
    Upgrade(std::move(request));
    return;
  }
  std::string method(request.method_string());
  if (IsApiRoute(method, path)) {
    std::optional<std::string_view> site;
    if (auto it = request.find("Sec-Fetch-Site"); it != request.end()) site = it->value();
    if (!FetchSiteAllowed(site)) {
      spdlog::warn("event=console_refused reason=fetch_site site=\"{}\" path={}", *site, path);
      Reply(ErrorResponse(request, http::status::forbidden, "PERMISSION_DENIED",
                          "the console's API answers only the console's own page "
                          "(Sec-Fetch-Site is not same-origin)"));
      return;
    }
    if (request.method() == http::verb::post && !IsJson(request)) {
      Reply(ErrorResponse(request, http::status::unsupported_media_type, "INVALID_ARGUMENT",
                          "Content-Type must be application/json"));
      return;
    }
    unsigned version = request.version();
    bool keep_alive = request.keep_alive();
    HandleApi(context_, method, path, query, request.body(),
              [self = shared_from_this(), version, keep_alive](int status, std::string body) {
                asio::post(self->executor_, [self, version, keep_alive, status,
                                             body = std::move(body)]() mutable {
                  self->Reply(MakeResponse(version, keep_alive, static_cast<http::status>(status),
                                           std::move(body), "application/json"));
                });
              });
    return;
  }
  std::optional<std::string> asset = AssetName(path);
  if (!asset || (request.method() != http::verb::get && request.method() != http::verb::head)) {
    Reply(ErrorResponse(request, http::status::not_found, "NOT_FOUND", "not found"));
    return;
  }
  absl::StatusOr<std::string> content = ReadAsset(context_->options.assets_dir, *asset);
  if (!content.ok()) {
    spdlog::warn("event=console_asset_missing name={} error=\"{}\"", *asset,
                 std::string(content.status().message()));
    Reply(ErrorResponse(request, http::status::not_found, "NOT_FOUND", "not found"));
    return;
  }
  Response response = MakeResponse(request.version(), request.keep_alive(), http::status::ok,
                                   *std::move(content), *ContentType(*asset));
  if (absl::EndsWith(*asset, ".html")) {
    response.set("Content-Security-Policy", ContentSecurityPolicy(access));
  }
  if (request.method() == http::verb::head) response.body().clear();
  Reply(std::move(response));
}

void HttpSession::Upgrade(Request request) {
  auto [path, query] = SplitTarget(request.target());
  std::shared_ptr<WsHandler> handler;
  std::shared_ptr<WsSession> ws;
  if (path == "/ws/attach") {
    absl::StatusOr<AttachTarget> target = ParseAttachTarget(query);
    if (!target.ok()) {
      Reply(ErrorResponse(request, http::status::bad_request, "INVALID_ARGUMENT",
                          StdView(target.status().message())));
      return;
    }
    ws = std::make_shared<WsSession>(std::move(stream_), context_);
    handler = std::make_shared<AttachBridge>(context_, ws, *std::move(target));
  } else if (path == "/ws/events") {
    ws = std::make_shared<WsSession>(std::move(stream_), context_);
    handler = std::make_shared<EventsBridge>(context_, ws);
  } else {
    Reply(ErrorResponse(request, http::status::not_found, "NOT_FOUND", "no such WebSocket"));
    return;
  }
  // This HTTP session ends here: the socket now belongs to the WebSocket.
  upgraded_ = true;
  context_->connections.Remove(live_id_);
  live_id_ = 0;
  ws->Run(std::move(request), std::move(handler));
}

void HttpSession::Reply(Response response) {
  auto shared = std::make_shared<Response>(std::move(response));
  stream_.expires_after(kIdleTimeout);
  http::async_write(stream_, *shared,
                    [self = shared_from_this(), shared](beast::error_code ec, size_t) {
                      self->OnWrite(shared->keep_alive(), ec);
                    });
}

void HttpSession::OnWrite(bool keep_alive, beast::error_code ec) {
  if (ec || !keep_alive) {
    Close();
    return;
  }
  DoRead();
}

void HttpSession::Close() {
  if (upgraded_) return;
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.socket().close(ignored);
}

}  // namespace termbridge::console
