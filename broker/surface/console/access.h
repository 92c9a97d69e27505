// Who may use the web console. Every HTTP request and WebSocket upgrade must
// carry the operator token: as `Authorization: Bearer <token>` (scripts), as
// `?token=<token>` on the page link (exchanged once for a cookie), or as the
// session cookie. The cookie holds HMAC-SHA256(token, label), not the token
// itself, is HttpOnly and SameSite=Strict, and is named after the port
// because browsers send cookies to every port of a host. Browsers also send
// Origin: a request whose Origin is not the console's own (or explicitly
// allowed) is refused, which stops cross-site WebSocket hijacking and
// cross-origin POSTs from other pages on localhost. A simple GET (an <img
// src>) carries no Origin, and SameSite=Strict cookies go to it from any
// other port of the same host, so API requests a browser marks as coming
// from another page (Sec-Fetch-Site) are refused too. Everything here is
// pure string logic so it can be unit tested without sockets.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_ACCESS_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_ACCESS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace termbridge::console {

// True when `presented` equals `expected`. The time taken depends only on
// the lengths (CRYPTO_memcmp), never on where the first difference is.
bool TokenMatches(std::string_view expected, std::string_view presented);

// The token of an `Authorization: Bearer <token>` header value, or nullopt.
std::optional<std::string> BearerToken(std::string_view authorization);

// The value of cookie `name` in a `Cookie:` header value, or nullopt.
std::optional<std::string> CookieValue(std::string_view cookie_header, std::string_view name);

// Lower-cases scheme and host and drops a trailing slash, so that origins
// compare as strings: "HTTP://LocalHost:80/" -> "http://localhost:80".
std::string NormalizeOrigin(std::string_view origin);

// The console's own origins for a listen host and bound port. A loopback
// host gives its three spellings (127.0.0.1, localhost, [::1]); a wildcard
// host (0.0.0.0, ::) gives only the loopback ones, because the name people
// use to reach it is unknown (list it in allowed_origins).
std::vector<std::string> OwnOrigins(std::string_view listen_host, int port);

// Whether an API request with this Sec-Fetch-Site header (nullopt when
// absent: not a browser, or an old one) may go on: only "same-origin" (the
// console's page) and "none" (typed or opened by the person) may; a page on
// another port of localhost is "same-site".
bool FetchSiteAllowed(std::optional<std::string_view> sec_fetch_site);

class ConsoleAccess {
 public:
  // `token` must not be empty. `allowed_origins` are extra origins (for
  // example a reverse proxy's), besides OwnOrigins(listen_host, port).
  ConsoleAccess(std::string token, std::string_view listen_host, int port,
                const std::vector<std::string>& allowed_origins);

  // Whether a request carries the operator token or the session cookie.
  // Arguments are the raw header values ("" when absent).
  bool Authorized(std::string_view authorization, std::string_view cookie) const;
  // Whether `token` (from a `?token=` query) is the operator token.
  bool TokenValid(std::string_view token) const;
  // An absent Origin (not a browser, or a same-origin GET) is allowed.
  bool OriginAllowed(std::optional<std::string_view> origin) const;

  const std::string& cookie_name() const { return cookie_name_; }
  // The `Set-Cookie` header value that logs a browser in.
  std::string SetCookieHeader() const;
  const std::vector<std::string>& origins() const { return origins_; }

 private:
  std::string token_;
  std::string cookie_name_;   // "tb_console_<port>"
  std::string cookie_value_;  // hex HMAC-SHA256(token, kCookieLabel)
  std::vector<std::string> origins_;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_ACCESS_H_
