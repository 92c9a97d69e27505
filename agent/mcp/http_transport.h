// The MCP Streamable HTTP transport at /mcp (Boost.Beast), for both
// protocol eras on one endpoint:
// - legacy (2025-03-26, 2025-06-18, 2025-11-25): initialize mints an
//   Mcp-Session-Id that every later request must carry (400 without it, 404
//   once unknown or deleted); DELETE ends the session. The session is served
//   at the version initialize agreed on: MCP-Protocol-Version may be absent
//   (2025-03-26 had none) but must name a version HTTP serves (else 400), and
//   a JSON-RPC batch is taken in a 2025-03-26 session only. There are no
//   server-initiated messages outside requests, so GET has no stream to offer
//   and answers 405. 2024-11-05 is not served here (its HTTP transport was
//   HTTP+SSE).
// - modern (2026-07-28): every POST carries MCP-Protocol-Version, Mcp-Method,
//   Mcp-Name and the tool's Mcp-Param-* headers, checked against the body
//   (-32020 on disagreement); no sessions; GET and DELETE answer 405.
// A POST gets application/json, or text/event-stream when the client accepts
// it and the call sends something (progress, a log message, a request to the
// client) before its result. Closing that stream cancels the call. Requests
// with a Host (when bound to loopback) or Origin that is not loopback or
// explicitly allowed get 403; the bearer token guards everything (401, compared
// in constant time). Without a token the endpoint listens only on loopback.
#ifndef TERMBRIDGE_AGENT_MCP_HTTP_TRANSPORT_H_
#define TERMBRIDGE_AGENT_MCP_HTTP_TRANSPORT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/mcp/mcp_server.h"

namespace termbridge::mcp {

struct HttpOptions {
  std::string listen = "127.0.0.1:0";        // host:port
  std::string bearer_token;                  // empty: no token required (loopback only)
  std::vector<std::string> allowed_origins;  // besides loopback origins
  int max_connections = 64;
  int max_sessions = 256;  // beyond it, the least recently used session is ended
  absl::Duration idle_timeout = absl::Minutes(5);  // an idle keep-alive connection is closed
};

class HttpTransport {
 public:
  // `make_server` builds one McpServer per legacy session, plus one that
  // serves every stateless (2026-07-28) request.
  static absl::StatusOr<std::unique_ptr<HttpTransport>> Start(
      HttpOptions options, std::function<std::unique_ptr<McpServer>()> make_server);
  // Stops (as Stop does) and joins every thread the transport started: the
  // acceptor, each connection's, and the tool handlers (an abandoned one
  // ends when its broker call does).
  ~HttpTransport();

  int port() const;
  // Blocks until Stop() is called from another thread or a signal handler thread.
  void Wait();
  void Stop();

 private:
  struct Impl;
  explicit HttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_HTTP_TRANSPORT_H_
