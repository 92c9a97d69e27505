// Fuzzes what the web console parses from a browser or script
// (broker/surface/console: messages.cc, access.cc, static_assets.cc). The
// input is given twice: as a WebSocket text message and API body (the page
// messages, approval decisions and close requests), and as the bytes of an
// HTTP request, read by Beast with the limits HttpSession sets and then
// taken through the same checks HttpSession::Handle makes (origin, token or
// cookie, ?token= login, attach query, API route, asset name). Besides
// crashes, it checks what those parsers promise: every accepted message is
// within its bounds, an asset name is a plain file name, and a request is
// authorized only by the operator token or its cookie.
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/websocket/rfc6455.hpp"
#include "broker/surface/console/access.h"
#include "broker/surface/console/messages.h"
#include "broker/surface/console/static_assets.h"

namespace {

namespace console = termbridge::console;
namespace http = boost::beast::http;

constexpr char kToken[] = "fuzz-operator-token-0123456789abcdef";
constexpr int kPort = 8765;

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "console_messages: %s\ninput: %.*s\n", what, static_cast<int>(input.size()),
               input.data());
  std::abort();
}

const console::ConsoleAccess& Access() {
  static const auto* access =
      new console::ConsoleAccess(kToken, "127.0.0.1", kPort, {"https://Proxy.Example/"});
  return *access;
}

// The cookie value a login sets ("tb_console_<port>=<hmac>; Path=...").
const std::string& CookieValue() {
  static const std::string* value = [] {
    std::string header = Access().SetCookieHeader();
    size_t eq = header.find('=');
    return new std::string(header.substr(eq + 1, header.find(';') - eq - 1));
  }();
  return *value;
}

// A WebSocket text message or a POST body.
void CheckBodies(std::string_view text) {
  if (absl::StatusOr<console::PageMessage> m = console::ParsePageMessage(text); m.ok()) {
    if (m->kind == console::PageMessage::Kind::kResize &&
        (m->cols < 1 || m->rows < 1 || m->cols > 1000 || m->rows > 1000)) {
      Fail("a resize outside 1..1000 was accepted", text);
    }
    if (m->kind == console::PageMessage::Kind::kSignal && m->signal != SIGINT &&
        m->signal != SIGTERM && m->signal != SIGQUIT) {
      Fail("a signal the page does not offer was accepted", text);
    }
  }
  if (auto d = console::ParseDecision(text); d.ok()) {
    const std::string& decision = d->decision();
    if (decision != "once" && decision != "terminal" && decision != "always" &&
        decision != "deny") {
      Fail("an unknown decision was accepted", text);
    }
    if (d->surface() != "console" || d->approval_id().empty() || d->approval_id().size() > 256 ||
        d->note().size() > 4096) {
      Fail("a decision outside its bounds was accepted", text);
    }
  }
  if (auto c = console::ParseCloseTerminal(text); c.ok()) {
    if (c->terminal_id().empty() || c->terminal_id().size() > 256) {
      Fail("a close request outside its bounds was accepted", text);
    }
  }
}

std::string_view Header(const http::request<http::string_body>& request, http::field field) {
  auto it = request.find(field);
  return it == request.end() ? std::string_view() : std::string_view(it->value());
}

// The checks HttpSession::Handle and Upgrade make, without the socket.
void CheckRequest(std::string_view input) {
  http::request_parser<http::string_body> parser;
  parser.body_limit(64 << 10);    // HttpSession::kMaxBodyBytes
  parser.header_limit(16 << 10);  // HttpSession::DoRead
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(input.data(), input.size()), ec);
  if (ec || !parser.is_done()) return;
  const http::request<http::string_body>& request = parser.get();

  auto [path, query] = console::SplitTarget(request.target());
  const console::ConsoleAccess& access = Access();
  std::optional<std::string_view> origin;
  if (auto it = request.find(http::field::origin); it != request.end()) origin = it->value();
  access.OriginAllowed(origin);

  std::string_view authorization = Header(request, http::field::authorization);
  std::string_view cookie = Header(request, http::field::cookie);
  if (access.Authorized(authorization, cookie)) {
    std::optional<std::string> bearer = console::BearerToken(authorization);
    std::optional<std::string> session = console::CookieValue(cookie, access.cookie_name());
    if (!(bearer && *bearer == kToken) && !(!bearer && session && *session == CookieValue())) {
      Fail("authorized without the operator token or its cookie", input);
    }
  }
  if (std::optional<std::string> login = console::QueryParam(query, "token")) {
    if (access.TokenValid(*login) && *login != kToken) Fail("a wrong ?token= was valid", input);
  }
  if (boost::beast::websocket::is_upgrade(request) && path == "/ws/attach") {
    if (auto target = console::ParseAttachTarget(query); target.ok()) {
      if (target->terminal_id.empty() || target->terminal_id.size() > 256) {
        Fail("an attach target outside its bounds was accepted", input);
      }
    }
  }
  // The POST routes of operator_api.h (which needs the gRPC stubs).
  if (request.method() == http::verb::post &&
      (path == "/api/approvals/decide" || path == "/api/terminals/close")) {
    CheckBodies(request.body());
  }
  if (std::optional<std::string> asset = console::AssetName(path)) {
    if (asset->empty() || asset->front() == '.' || asset->find('/') != std::string::npos ||
        asset->find('\0') != std::string::npos || !console::ContentType(*asset)) {
      Fail("an asset name that is not a plain file name", input);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckBodies(input);
  CheckRequest(input);
  return 0;
}
