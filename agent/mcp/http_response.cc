// JSON and SSE responses with synchronous Beast writes.
#include "agent/mcp/http_response.h"

#include <poll.h>
#include <sys/socket.h>

#include "agent/mcp/protocol.h"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

std::string SseEvent(const nlohmann::json& message) {
  return "event: message\ndata: " + Dump(message) + "\n\n";
}

}  // namespace

HttpResponder::HttpResponder(asio::ip::tcp::socket& socket, unsigned http_version, bool keep_alive,
                             bool stream_allowed)
    : socket_(socket),
      http_version_(http_version),
      keep_alive_(keep_alive),
      stream_allowed_(stream_allowed && http_version >= 11) {}

void HttpResponder::AddHeader(std::string name, std::string value) {
  absl::MutexLock lock(&mu_);
  headers_.emplace_back(std::move(name), std::move(value));
}

bool HttpResponder::StartStream() {
  http::response<http::empty_body> head{http::status::ok, http_version_};
  head.set(http::field::server, "termbridge-agent");
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  head.set("X-Accel-Buffering", "no");
  for (const auto& [name, value] : headers_) head.set(name, value);
  head.keep_alive(keep_alive_);
  head.chunked(true);
  http::response_serializer<http::empty_body> serializer{head};
  beast::error_code ec;
  http::write_header(socket_, serializer, ec);
  if (ec) {
    broken_ = true;
    return false;
  }
  streaming_ = true;
  return true;
}

bool HttpResponder::WriteChunk(const std::string& data) {
  beast::error_code ec;
  asio::write(socket_, http::make_chunk(asio::buffer(data)), ec);
  if (ec) {
    spdlog::debug("event=sse_write_failed error={}", ec.message());
    broken_ = true;
    return false;
  }
  return true;
}

bool HttpResponder::Stream(const nlohmann::json& message) {
  absl::MutexLock lock(&mu_);
  if (!stream_allowed_ || finished_ || broken_) return false;
  if (!streaming_ && !StartStream()) return false;
  return WriteChunk(SseEvent(message));
}

void HttpResponder::Finish(int status, const std::optional<nlohmann::json>& body) {
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    if (streaming_) {
      finished_ = true;
      if (broken_) return;
      if (body) WriteChunk(SseEvent(*body));
      if (broken_) return;
      beast::error_code ec;
      asio::write(socket_, http::make_chunk_last(), ec);
      if (ec) broken_ = true;
      return;
    }
  }
  FinishPlain(status, body ? Dump(*body) : std::string(), "application/json");
}

void HttpResponder::FinishPlain(int status, const std::string& body,
                                const std::string& content_type) {
  absl::MutexLock lock(&mu_);
  if (finished_ || streaming_) return;
  finished_ = true;
  http::response<http::string_body> response{static_cast<http::status>(status), http_version_};
  response.set(http::field::server, "termbridge-agent");
  for (const auto& [name, value] : headers_) response.set(name, value);
  if (!body.empty()) response.set(http::field::content_type, content_type);
  response.keep_alive(keep_alive_);
  response.body() = body;
  response.prepare_payload();
  beast::error_code ec;
  http::write(socket_, response, ec);
  if (ec) broken_ = true;
}

bool HttpResponder::PeerGone() const {
  pollfd fd{};
  fd.fd = const_cast<asio::ip::tcp::socket&>(socket_).native_handle();
  fd.events = POLLIN | POLLRDHUP;
  if (poll(&fd, 1, 0) <= 0) return false;
  if (fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  if (fd.revents & POLLIN) {
    char byte;
    ssize_t n = recv(fd.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
  }
  return false;
}

bool HttpResponder::reusable() const {
  absl::MutexLock lock(&mu_);
  return keep_alive_ && !broken_ && finished_;
}

}  // namespace termbridge::mcp
