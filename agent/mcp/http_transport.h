// The MCP Streamable HTTP transport at /mcp (Boost.Beast): POST carries one
// JSON-RPC message and gets an application/json reply (202 for notifications
// and responses), DELETE ends a session, GET has no server-initiated stream
// (405). Sessions are named by the Mcp-Session-Id header minted at
// initialize; MCP-Protocol-Version is checked; a browser Origin that is not
// loopback (or explicitly allowed) gets 403; an optional bearer token guards
// everything.
#ifndef TERMBRIDGE_AGENT_MCP_HTTP_TRANSPORT_H_
#define TERMBRIDGE_AGENT_MCP_HTTP_TRANSPORT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/mcp/mcp_server.h"

namespace termbridge::mcp {

struct HttpOptions {
  std::string listen = "127.0.0.1:0";  // host:port
  std::string bearer_token;            // empty: no token required
  std::vector<std::string> allowed_origins;  // besides loopback origins
  int max_connections = 64;
};

class HttpTransport {
 public:
  // `make_server` builds one McpServer per MCP session.
  static absl::StatusOr<std::unique_ptr<HttpTransport>> Start(
      HttpOptions options, std::function<std::unique_ptr<McpServer>()> make_server);
  ~HttpTransport();  // stops accepting and closes idle connections

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
