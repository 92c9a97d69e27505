// HttpResponder writes the one response an HTTP request gets: a complete
// JSON (or empty) response, or, once something must go out before the final
// reply, a chunked text/event-stream whose last event is the reply. It also
// tells whether the client has gone (closed the connection), which is how
// a client cancels a call it no longer waits for.
#ifndef TERMBRIDGE_AGENT_MCP_HTTP_RESPONSE_H_
#define TERMBRIDGE_AGENT_MCP_HTTP_RESPONSE_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/ip/tcp.hpp"
#include "nlohmann/json.hpp"

namespace termbridge::mcp {

class HttpResponder {
 public:
  // `http_version` is 10 or 11. `stream_allowed`: the client accepts
  // text/event-stream (and speaks HTTP/1.1, which chunked streams need).
  HttpResponder(boost::asio::ip::tcp::socket& socket, unsigned http_version, bool keep_alive,
                bool stream_allowed);

  // Adds a header to the response (before anything is written).
  void AddHeader(std::string name, std::string value);
  // Sends `message` as an SSE event, starting the stream if needed. False if
  // streaming is not allowed or the response is finished or broken.
  bool Stream(const nlohmann::json& message);
  // Ends the response: `body` as JSON with `status`, or as the stream's last
  // event when streaming; no body: an empty response (or the stream's end).
  void Finish(int status, const std::optional<nlohmann::json>& body);
  // Like Finish for responses that never stream (errors, 405, ...).
  void FinishPlain(int status, const std::string& body, const std::string& content_type);

  // True when the peer closed or reset the connection.
  bool PeerGone() const;
  // Whether the connection can serve another request afterwards.
  bool reusable() const;

 private:
  bool StartStream() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WriteChunk(const std::string& data) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  boost::asio::ip::tcp::socket& socket_;
  const unsigned http_version_;
  const bool keep_alive_;
  const bool stream_allowed_;
  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, std::string>> headers_ ABSL_GUARDED_BY(mu_);
  bool streaming_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_HTTP_RESPONSE_H_
