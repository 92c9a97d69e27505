// Token, cookie, Origin and Sec-Fetch-Site checks for the web console (see access.h).
#include "broker/surface/console/access.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "broker/surface/console/string_views.h"

namespace termbridge::console {
namespace {

constexpr char kCookieLabel[] = "termbridge-console-session-v1";

std::string HmacHex(std::string_view key, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(AbslView(host), "127.");
}

}  // namespace

bool TokenMatches(std::string_view expected, std::string_view presented) {
  if (expected.empty() || presented.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), presented.data(), expected.size()) == 0;
}

std::optional<std::string> BearerToken(std::string_view header) {
  absl::string_view authorization = absl::StripAsciiWhitespace(AbslView(header));
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return std::nullopt;
  }
  return std::string(absl::StripAsciiWhitespace(authorization.substr(kScheme.size())));
}

std::optional<std::string> CookieValue(std::string_view cookie_header, std::string_view name) {
  for (absl::string_view pair : absl::StrSplit(AbslView(cookie_header), ';')) {
    pair = absl::StripAsciiWhitespace(pair);
    size_t eq = pair.find('=');
    if (eq == absl::string_view::npos) continue;
    if (absl::StripAsciiWhitespace(pair.substr(0, eq)) != AbslView(name)) continue;
    absl::string_view value = absl::StripAsciiWhitespace(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    return std::string(value);
  }
  return std::nullopt;
}

std::string NormalizeOrigin(std::string_view origin) {
  std::string normalized = absl::AsciiStrToLower(absl::StripAsciiWhitespace(AbslView(origin)));
  while (!normalized.empty() && normalized.back() == '/') normalized.pop_back();
  return normalized;
}

std::vector<std::string> OwnOrigins(std::string_view listen_host, int port) {
  if (listen_host.size() > 2 && listen_host.front() == '[') {
    listen_host = listen_host.substr(1, listen_host.size() - 2);
  }
  std::string host = absl::AsciiStrToLower(AbslView(listen_host));
  std::vector<std::string> origins;
  bool wildcard = host.empty() || host == "0.0.0.0" || host == "::";
  if (wildcard || IsLoopbackHost(host)) {
    origins = {absl::StrCat("http://127.0.0.1:", port), absl::StrCat("http://localhost:", port),
               absl::StrCat("http://[::1]:", port)};
  }
  if (!wildcard && host != "127.0.0.1" && host != "localhost" && host != "::1") {
    bool v6 = absl::StrContains(host, ':');
    origins.push_back(absl::StrCat("http://", v6 ? "[" : "", host, v6 ? "]" : "", ":", port));
  }
  return origins;
}

bool FetchSiteAllowed(std::optional<std::string_view> sec_fetch_site) {
  if (!sec_fetch_site.has_value()) return true;
  absl::string_view site = absl::StripAsciiWhitespace(AbslView(*sec_fetch_site));
  return absl::EqualsIgnoreCase(site, "same-origin") || absl::EqualsIgnoreCase(site, "none");
}

ConsoleAccess::ConsoleAccess(std::string token, std::string_view listen_host, int port,
                             const std::vector<std::string>& allowed_origins)
    : token_(std::move(token)),
      cookie_name_(absl::StrCat("tb_console_", port)),
      cookie_value_(HmacHex(token_, kCookieLabel)),
      origins_(OwnOrigins(listen_host, port)) {
  for (const std::string& origin : allowed_origins) origins_.push_back(NormalizeOrigin(origin));
}

bool ConsoleAccess::Authorized(std::string_view authorization, std::string_view cookie) const {
  if (std::optional<std::string> bearer = BearerToken(authorization)) {
    return TokenMatches(token_, *bearer);
  }
  std::optional<std::string> session = CookieValue(cookie, cookie_name_);
  return session.has_value() && TokenMatches(cookie_value_, *session);
}

bool ConsoleAccess::TokenValid(std::string_view token) const { return TokenMatches(token_, token); }

bool ConsoleAccess::OriginAllowed(std::optional<std::string_view> origin) const {
  if (!origin.has_value()) return true;
  std::string normalized = NormalizeOrigin(*origin);
  for (const std::string& allowed : origins_) {
    if (allowed == normalized) return true;
  }
  return false;
}

std::string ConsoleAccess::SetCookieHeader() const {
  return absl::StrCat(cookie_name_, "=", cookie_value_, "; Path=/; HttpOnly; SameSite=Strict");
}

}  // namespace termbridge::console
