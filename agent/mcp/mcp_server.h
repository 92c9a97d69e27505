// McpServer is the transport-independent core of the agent's MCP server:
// JSON-RPC 2.0 dispatch for both protocol eras. A legacy client (2024-11-05,
// 2025-03-26, 2025-06-18, 2025-11-25) opens with initialize and the server
// keeps what it agreed (the version, client capabilities, log level) for the
// rest of the stdio process or HTTP session, and shapes every answer to that
// version (versions.h: batches, structuredContent, titles...). A modern client
// (2026-07-28) sends server/discover and carries its version, capabilities and
// identity in every request's _meta; nothing is kept between its requests.
// Tools are plain handlers registered at construction, so this layer knows
// nothing about PTYs or gRPC.
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
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/mcp/protocol.h"
#include "agent/mcp/versions.h"
#include "common/thread/named_thread.h"
#include "nlohmann/json.hpp"

namespace termbridge::mcp {

struct CallControl;
class CallStream;

// What a tool handler can see about its call. Every hook is always set.
struct CallContext {
  // True once the client cancelled the request (notifications/cancelled, or
  // it closed the HTTP response stream). The server has then stopped waiting
  // for the handler; the handler should stop waiting too. It must not undo
  // work it already started (a command keeps running in its terminal).
  std::function<bool()> cancelled;
  // Sends notifications/progress when the client asked for it (progressToken);
  // a no-op otherwise. Values that do not increase are dropped.
  std::function<void(double progress, const std::string& message)> progress;
  // The same, with the total the progress counts towards.
  std::function<void(double progress, double total, const std::string& message)> progress_of;
  // Sends notifications/message at `level` ("debug" ... "emergency") when the
  // client asked for that level (logging/setLevel, or the request's logLevel).
  std::function<void(const std::string& level, const nlohmann::json& data)> log;
  // Legacy sessions only: sends a request to the client (sampling/createMessage,
  // elicitation/create, roots/list) on this call's stream and waits for its
  // result. Modern requests get kFailedPrecondition: tools ask for input with an
  // input-required result (ToolResult::input_required) instead.
  std::function<absl::StatusOr<nlohmann::json>(const std::string& method,
                                               const nlohmann::json& params)>
      ask_client;
  std::string protocol_version;  // the version this request speaks
  bool stateless = false;        // true for 2026-07-28 requests
  nlohmann::json client_capabilities = nlohmann::json::object();
  nlohmann::json client_info = nlohmann::json::object();
  // The full tools/call params (name, arguments, _meta, inputResponses, requestState).
  nlohmann::json params = nlohmann::json::object();
};

// A JSON-RPC error a tool wants instead of a result.
struct RpcError {
  int code = kInternalError;
  std::string message;
  nlohmann::json data = nullptr;
};

struct ToolResult {
  // Sent as structuredContent and, unless `content` is set, as JSON text content.
  // Null: no structuredContent (only for tools without an outputSchema).
  nlohmann::json structured;
  bool is_error = false;
  // Explicit content blocks (text, image, audio, resource); null: the text of `structured`.
  nlohmann::json content = nullptr;
  // Non-null (an object of inputRequests): the call needs client input first;
  // 2026-07-28 only. Answered as resultType "input_required" with
  // `request_state` when it is not empty.
  nlohmann::json input_required = nullptr;
  std::string request_state = {};
  // Set: answer with this JSON-RPC error instead of a result.
  std::optional<RpcError> rpc_error = std::nullopt;
};

using ToolHandler = std::function<ToolResult(const nlohmann::json& arguments, const CallContext&)>;

struct Tool {
  nlohmann::json definition;  // name, title, description, inputSchema, outputSchema, annotations
  ToolHandler handler;
  // When false the core checks arguments against inputSchema first and
  // answers a violation with an isError result naming the field. Tools whose
  // handler validates with a richer taxonomy (PM_TERM codes) set it true.
  bool validates_own_arguments = false;
};

// Sends a server-to-client message (a notification or request) on the
// transport stream of the request being handled.
using Sink = std::function<void(const nlohmann::json& message)>;

// The transport's side of one incoming message.
struct Exchange {
  Sink notify;                      // null: the transport cannot stream before the reply
  std::function<bool()> peer_gone;  // null: no transport-level cancellation
  // HTTP: the MCP-Protocol-Version header named a modern version, so the
  // request must carry modern _meta even for methods that look legacy.
  bool modern_transport = false;
  // Which versions initialize can agree on (2024-11-05 only on stdio).
  Transport transport = Transport::kStdio;
  // Where tools/call handlers run: the transport's group, which joins them
  // at its shutdown. Null: the server's own, joined by ~McpServer.
  thread::ThreadGroup* handlers = nullptr;
};

// What the core answers to one message.
struct Outcome {
  std::optional<nlohmann::json> reply;  // nullopt: nothing to send (notification, cancelled)
  // The Streamable HTTP status the spec gives this outcome (2026-07-28: 400
  // for malformed _meta and version errors, 404 for unknown methods).
  int http_status = 200;
};

struct ServerOptions {
  // While a tool call runs and the client sent a progressToken but the tool
  // reports no progress of its own, a heartbeat progress notification goes
  // out this often. Zero disables it.
  absl::Duration progress_heartbeat = absl::Seconds(1);
  absl::Duration ask_client_timeout = absl::Minutes(10);
  std::string instructions =
      "Terminal tools for AI agents. memory_terminal_interactive runs commands in visible "
      "terminals on the host; a person can see and control every one of them. memory_terminal "
      "runs allowlisted commands headless, without a shell.";
};

class McpServer {
 public:
  McpServer(std::string name, std::string version, std::vector<Tool> tools,
            ServerOptions options = {});
  ~McpServer();

  // Handles one raw message (one line on stdio, one POST body on HTTP), as
  // stdio does.
  // Returns the reply text, or nullopt for notifications, responses and
  // cancelled requests. Malformed JSON gets -32700 with a null id; a field
  // of the wrong type gets -32600 or -32602, never an exception.
  // Thread-safe: transports call it from several threads at once, so ping,
  // cancellation and client responses are handled while a tool call waits.
  std::optional<std::string> HandleText(std::string_view text, const Sink& notify);
  Outcome Handle(const nlohmann::json& message, const Exchange& exchange);

  // Stops waiting for every call in flight (the session or process ends);
  // their clients get no reply.
  void CancelAll();

  // The tool named `name`, or null.
  const Tool* FindTool(std::string_view name) const;
  // The protocol version agreed in initialize ("" before it).
  std::string negotiated_version() const;

 private:
  struct RequestScope;
  class ClientRequests;

  Outcome HandleUnguarded(const nlohmann::json& message, const Exchange& exchange);
  // A JSON-RPC batch: each element handled in order, the replies as one
  // array. Only a session that agreed on 2025-03-26 may send one.
  Outcome HandleBatch(const nlohmann::json& batch, const Exchange& exchange);

  Outcome Dispatch(const nlohmann::json& id, const std::string& method,
                   const nlohmann::json& params, const RequestScope& scope,
                   const Exchange& exchange);
  std::optional<Outcome> CheckModernMeta(const nlohmann::json& id, const nlohmann::json& params,
                                         Transport transport, RequestScope* scope) const;
  nlohmann::json Initialize(const nlohmann::json& params, Transport transport);
  nlohmann::json Discover(Transport transport) const;
  nlohmann::json ListTools(const RequestScope& scope) const;
  // name, version and (from 2025-06-18, and for modern requests) title.
  nlohmann::json ServerInfo(bool with_title = true) const;
  Outcome SetLogLevel(const nlohmann::json& id, const nlohmann::json& params);
  Outcome CallTool(const nlohmann::json& id, const nlohmann::json& params,
                   const RequestScope& scope, const Exchange& exchange);
  CallContext MakeContext(const nlohmann::json& params, const RequestScope& scope,
                          const std::shared_ptr<CallControl>& call,
                          const std::shared_ptr<CallStream>& stream);
  nlohmann::json ResultFor(const ToolResult& result, const RequestScope& scope) const;
  void Cancel(const nlohmann::json& params);
  nlohmann::json Complete(nlohmann::json result, const RequestScope& scope) const;

  const std::string name_;
  const std::string version_;
  const std::vector<Tool> tools_;
  const ServerOptions options_;
  mutable absl::Mutex mu_;
  std::string negotiated_version_ ABSL_GUARDED_BY(mu_);
  nlohmann::json client_capabilities_ ABSL_GUARDED_BY(mu_) = nlohmann::json::object();
  nlohmann::json client_info_ ABSL_GUARDED_BY(mu_) = nlohmann::json::object();
  int log_rank_ ABSL_GUARDED_BY(mu_) = -1;  // legacy logging/setLevel; -1: no logs
  // Tool calls in flight, by request id (dumped), for notifications/cancelled.
  std::multimap<std::string, std::shared_ptr<CallControl>> in_flight_ ABSL_GUARDED_BY(mu_);
  // Requests this server sent to the client; shared with handler threads,
  // which may outlive the server.
  const std::shared_ptr<ClientRequests> client_requests_;
  // Handlers of calls whose Exchange names no group (HandleText, tests).
  thread::ThreadGroup own_handlers_;
};

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_MCP_SERVER_H_
