// McpServer is the transport-independent core of the agent's MCP server:
// JSON-RPC 2.0 dispatch, the initialize handshake and version negotiation,
// tools/list and tools/call, ping, and request cancellation. It knows nothing
// about PTYs or gRPC; tools are plain handlers registered at construction.
#ifndef TERMBRIDGE_AGENT_MCP_MCP_SERVER_H_
#define TERMBRIDGE_AGENT_MCP_MCP_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"

namespace termbridge::mcp {

// What a tool handler can see about its call.
struct CallContext {
  // True once the client sent notifications/cancelled for this request.
  std::function<bool()> cancelled;
  // Sends notifications/progress when the client asked for it (progressToken); no-op otherwise.
  std::function<void(double progress, const std::string& message)> progress;
};

struct ToolResult {
  nlohmann::json structured;  // sent as structuredContent and as JSON text content
  bool is_error = false;
};

struct Tool {
  nlohmann::json definition;  // name, title, description, inputSchema, outputSchema, annotations
  std::function<ToolResult(const nlohmann::json& arguments, const CallContext& context)> handler;
};

// Sends a server-to-client message (a notification) on the caller's transport.
using Sink = std::function<void(const nlohmann::json& message)>;

inline constexpr std::string_view kLatestProtocolVersion = "2025-11-25";
const std::vector<std::string>& SupportedProtocolVersions();

// Maximum size of one incoming JSON-RPC message, in bytes.
inline constexpr size_t kMaxMessageBytes = 4 << 20;

class McpServer {
 public:
  McpServer(std::string name, std::string version, std::vector<Tool> tools);

  // Handles one raw message (one line on stdio, one POST body on HTTP). Returns
  // the response text, or nullopt for notifications and responses. Malformed
  // JSON gets a -32700 error with a null id. Thread-safe: transports call it
  // from several threads at once so that ping and cancellation are answered
  // while a tool call waits.
  std::optional<std::string> HandleText(std::string_view text, const Sink& notify);
  std::optional<nlohmann::json> Handle(const nlohmann::json& message, const Sink& notify);

  // The protocol version agreed in initialize ("" before it).
  std::string negotiated_version() const;

 private:
  nlohmann::json Initialize(const nlohmann::json& params);
  nlohmann::json ListTools() const;
  std::optional<nlohmann::json> CallTool(const nlohmann::json& id, const nlohmann::json& params,
                                         const Sink& notify);
  void Cancel(const nlohmann::json& params);

  const std::string name_;
  const std::string version_;
  std::vector<Tool> tools_;
  mutable absl::Mutex mu_;
  std::string negotiated_version_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> in_flight_ ABSL_GUARDED_BY(mu_);
};

// JSON-RPC error response.
nlohmann::json ErrorReply(const nlohmann::json& id, int code, std::string_view message,
                          const nlohmann::json& data = nullptr);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_MCP_SERVER_H_
