// JSON-RPC 2.0 dispatch and the MCP lifecycle for termbridge-agent.
#include "agent/mcp/mcp_server.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

bool ValidId(const nlohmann::json& id) { return id.is_string() || id.is_number_integer(); }

nlohmann::json Reply(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

}  // namespace

const std::vector<std::string>& SupportedProtocolVersions() {
  static const auto* versions = new std::vector<std::string>{"2025-11-25", "2025-06-18"};
  return *versions;
}

nlohmann::json ErrorReply(const nlohmann::json& id, int code, std::string_view message,
                          const nlohmann::json& data) {
  nlohmann::json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

McpServer::McpServer(std::string name, std::string version, std::vector<Tool> tools)
    : name_(std::move(name)), version_(std::move(version)), tools_(std::move(tools)) {}

std::string McpServer::negotiated_version() const {
  absl::MutexLock lock(&mu_);
  return negotiated_version_;
}

std::optional<std::string> McpServer::HandleText(std::string_view text, const Sink& notify) {
  if (text.size() > kMaxMessageBytes) {
    return ErrorReply(nullptr, kInvalidRequest, "message too large",
                      {{"max_bytes", kMaxMessageBytes}, {"received_bytes", text.size()}})
        .dump();
  }
  nlohmann::json message = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    return ErrorReply(nullptr, kParseError, "Parse error: invalid JSON").dump();
  }
  std::optional<nlohmann::json> reply = Handle(message, notify);
  if (!reply) return std::nullopt;
  // Tool output is made valid UTF-8 upstream; replace anything else rather than throw.
  return reply->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<nlohmann::json> McpServer::Handle(const nlohmann::json& message,
                                                const Sink& notify) {
  if (message.is_array()) {
    return ErrorReply(nullptr, kInvalidRequest, "JSON-RPC batches are not supported");
  }
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0") {
    return ErrorReply(nullptr, kInvalidRequest, "Invalid Request: expected a JSON-RPC 2.0 object");
  }
  bool has_id = message.contains("id");
  nlohmann::json id = has_id ? message["id"] : nlohmann::json(nullptr);
  if (!message.contains("method")) {
    return std::nullopt;  // a response to a server request: nothing to answer
  }
  if (!message["method"].is_string() || (has_id && !ValidId(id))) {
    return ErrorReply(has_id && ValidId(id) ? id : nullptr, kInvalidRequest,
                      "Invalid Request: method must be a string and id a string or integer");
  }
  const std::string method = message["method"];
  nlohmann::json params = message.value("params", nlohmann::json::object());
  if (!params.is_object()) {
    if (!has_id) return std::nullopt;
    return ErrorReply(id, kInvalidParams, "params must be an object");
  }
  if (!has_id) {  // notifications
    if (method == "notifications/cancelled") Cancel(params);
    return std::nullopt;
  }
  if (method == "initialize") return Reply(id, Initialize(params));
  if (method == "ping") return Reply(id, nlohmann::json::object());
  if (method == "tools/list") return Reply(id, ListTools());
  if (method == "tools/call") return CallTool(id, params, notify);
  return ErrorReply(id, kMethodNotFound, absl::StrCat("Method not found: ", method));
}

nlohmann::json McpServer::Initialize(const nlohmann::json& params) {
  std::string requested = params.value("protocolVersion", "");
  const auto& supported = SupportedProtocolVersions();
  // The spec: answer with the requested version if supported, else our latest;
  // the client decides whether it can continue.
  std::string agreed = std::find(supported.begin(), supported.end(), requested) != supported.end()
                           ? requested
                           : std::string(kLatestProtocolVersion);
  {
    absl::MutexLock lock(&mu_);
    negotiated_version_ = agreed;
  }
  spdlog::info("event=initialize requested={} agreed={}", requested, agreed);
  return {{"protocolVersion", agreed},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", name_}, {"title", "termbridge"}, {"version", version_}}},
          {"instructions",
           "Terminal tools for AI agents. memory_terminal_interactive runs commands in visible "
           "terminals on the host; a person can see and control every one of them."}};
}

nlohmann::json McpServer::ListTools() const {
  nlohmann::json tools = nlohmann::json::array();
  for (const Tool& tool : tools_) tools.push_back(tool.definition);
  return {{"tools", tools}};
}

std::optional<nlohmann::json> McpServer::CallTool(const nlohmann::json& id,
                                                  const nlohmann::json& params,
                                                  const Sink& notify) {
  if (!params.contains("name") || !params["name"].is_string()) {
    return ErrorReply(id, kInvalidParams, "tools/call needs a string 'name'");
  }
  const std::string name = params["name"];
  auto tool = std::find_if(tools_.begin(), tools_.end(),
                           [&](const Tool& t) { return t.definition["name"] == name; });
  if (tool == tools_.end()) {
    return ErrorReply(id, kInvalidParams, absl::StrCat("Unknown tool: ", name));
  }
  nlohmann::json arguments = params.value("arguments", nlohmann::json::object());
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  std::string key = id.dump();
  {
    absl::MutexLock lock(&mu_);
    in_flight_[key] = cancelled;
  }
  CallContext context;
  context.cancelled = [cancelled] { return cancelled->load(); };
  nlohmann::json token = params.value("_meta", nlohmann::json::object()).value("progressToken",
                                                                                nlohmann::json());
  context.progress = [token, notify](double progress, const std::string& message) {
    if (token.is_null() || !notify) return;
    notify({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params", {{"progressToken", token}, {"progress", progress}, {"message", message}}}});
  };
  ToolResult result = tool->handler(arguments, context);
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(key);
  }
  if (cancelled->load()) return std::nullopt;  // the spec: no response to a cancelled request
  std::string text =
      result.structured.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return Reply(id, {{"content", {{{"type", "text"}, {"text", text}}}},
                    {"structuredContent", result.structured},
                    {"isError", result.is_error}});
}

void McpServer::Cancel(const nlohmann::json& params) {
  if (!params.contains("requestId")) return;
  absl::MutexLock lock(&mu_);
  if (auto it = in_flight_.find(params["requestId"].dump()); it != in_flight_.end()) {
    it->second->store(true);
    spdlog::info("event=cancelled request_id={}", params["requestId"].dump());
  }
}

}  // namespace termbridge::mcp
