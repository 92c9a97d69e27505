// JSON-RPC 2.0 dispatch and the MCP lifecycle for termbridge-agent, for
// legacy (initialize) and modern (per-request _meta) clients alike, each
// answered in the shape of the protocol version it speaks.
#include "agent/mcp/mcp_server.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/mcp/argument_check.h"
#include "agent/mcp/json_depth.h"
#include "agent/mcp/tool_call.h"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

bool ValidId(const json& id) { return id.is_string() || id.is_number_integer(); }

// How long a client may cache tools/list (the tool set is fixed for the
// lifetime of the process).
constexpr int64_t kToolListTtlMs = 5 * 60 * 1000;

Outcome Reply(json message, int http_status = 200) {
  return Outcome{std::move(message), http_status};
}

// A tool definition as a client of `rules` knows it: outputSchema and title
// came with 2025-06-18, annotations with 2025-03-26.
json ToolFor(json definition, const VersionRules& rules) {
  if (!rules.structured_content) definition.erase("outputSchema");
  if (!rules.titles) definition.erase("title");
  if (!rules.tool_annotations) definition.erase("annotations");
  return definition;
}

// The client's sink, dropping what `rules` does not know from what a call
// sends: progress notifications carry no `message` before 2025-03-26.
Sink SinkFor(const Sink& notify, const VersionRules& rules) {
  if (!notify || rules.progress_message) return notify;
  return [notify](const json& message) {
    if (StringField(message, "method") != "notifications/progress") return notify(message);
    json shaped = message;
    shaped["params"].erase("message");
    notify(shaped);
  };
}

}  // namespace

// The protocol facts one request is served under.
struct McpServer::RequestScope {
  bool modern = false;
  std::string version;
  json client_capabilities = json::object();
  json client_info = json::object();
  int log_rank = -1;  // notifications/message at or above this level; -1: none
};

// The requests this server sent to its client (legacy sessions), each
// waiting for the response that arrives as a separate message.
class McpServer::ClientRequests {
 public:
  // Sends `method` on `stream` and waits for the client's result, until the
  // call is cancelled or `timeout` passes.
  absl::StatusOr<json> Ask(const std::string& method, const json& params, CallControl& call,
                           CallStream& stream, absl::Duration timeout) {
    auto slot = std::make_shared<Slot>();
    const std::string id = Register(slot);
    json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
    if (!stream.Send(request)) {
      Forget(id);
      return absl::FailedPreconditionError(
          "this transport cannot carry a server request for this call (no response stream)");
    }
    std::optional<json> response = Await(*slot, call, absl::Now() + timeout);
    Forget(id);
    if (!response) {
      return call.IsCancelled() ? absl::CancelledError("the call was cancelled")
                                : absl::DeadlineExceededError("the client did not answer");
    }
    if (response->contains("error")) {
      return absl::UnknownError(absl::StrCat("the client answered ", method,
                                             " with an error: ", (*response)["error"].dump()));
    }
    return response->value("result", json::object());
  }

  // Hands a response message to the request waiting for it.
  void Accept(const json& message) {
    std::shared_ptr<Slot> slot;
    {
      absl::MutexLock lock(&mu_);
      auto it = waiting_.find(message["id"].dump());
      if (it == waiting_.end()) {
        spdlog::debug("event=unexpected_client_response id={}", message["id"].dump());
        return;
      }
      slot = it->second;
    }
    absl::MutexLock lock(&slot->mu);
    slot->response = message;
  }

 private:
  struct Slot {
    absl::Mutex mu;
    std::optional<json> response ABSL_GUARDED_BY(mu);
  };

  std::string Register(std::shared_ptr<Slot> slot) {
    absl::MutexLock lock(&mu_);
    std::string id = absl::StrCat("termbridge-", next_id_++);
    waiting_[json(id).dump()] = std::move(slot);
    return id;
  }

  void Forget(const std::string& id) {
    absl::MutexLock lock(&mu_);
    waiting_.erase(json(id).dump());
  }

  static std::optional<json> Await(Slot& slot, CallControl& call, absl::Time deadline) {
    absl::MutexLock lock(&slot.mu);
    auto answered = [&slot]()
                        ABSL_SHARED_LOCKS_REQUIRED(slot.mu) { return slot.response.has_value(); };
    while (!slot.mu.AwaitWithTimeout(absl::Condition(&answered), absl::Milliseconds(100))) {
      if (call.IsCancelled() || absl::Now() > deadline) return std::nullopt;
    }
    return slot.response;
  }

  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Slot>> waiting_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

McpServer::McpServer(std::string name, std::string version, std::vector<Tool> tools,
                     ServerOptions options)
    : name_(std::move(name)),
      version_(std::move(version)),
      tools_(std::move(tools)),
      options_(std::move(options)),
      client_requests_(std::make_shared<ClientRequests>()),
      own_handlers_("tb-mcp-handler", kMaxToolHandlers) {}

McpServer::~McpServer() {
  CancelAll();
  own_handlers_.JoinAll();
}

void McpServer::CancelAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [id, call] : in_flight_) call->Cancel();
}

std::string McpServer::negotiated_version() const {
  absl::MutexLock lock(&mu_);
  return negotiated_version_;
}

const Tool* McpServer::FindTool(std::string_view name) const {
  for (const Tool& tool : tools_) {
    if (tool.definition.value("name", "") == name) return &tool;
  }
  return nullptr;
}

std::optional<std::string> McpServer::HandleText(std::string_view text, const Sink& notify) {
  if (text.size() > kMaxMessageBytes) {
    return Dump(ErrorReply(nullptr, kInvalidRequest, "Invalid Request: message too large",
                           {{"max_bytes", kMaxMessageBytes}, {"received_bytes", text.size()}}));
  }
  if (JsonNestsDeeperThan(text)) {
    return Dump(ErrorReply(nullptr, kInvalidRequest, "Invalid Request: JSON nests too deeply",
                           {{"max_depth", kMaxJsonDepth}}));
  }
  // nlohmann's parser ends the text at a NUL byte; JSON has no raw NUL.
  json message = text.find('\0') != std::string_view::npos
                     ? json(json::value_t::discarded)
                     : json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    return Dump(ErrorReply(nullptr, kParseError, "Parse error: invalid JSON"));
  }
  Exchange exchange;
  exchange.notify = notify;
  Outcome outcome = Handle(message, exchange);
  if (!outcome.reply) return std::nullopt;
  return Dump(*outcome.reply);
}

Outcome McpServer::Handle(const json& message, const Exchange& exchange) {
  // The checks below read fields by type; this catches any that a message
  // can still trip, so that no input ends the process.
  json id = message.is_object() ? AnyField(message, "id") : json();
  if (!ValidId(id)) id = nullptr;
  try {
    return HandleUnguarded(message, exchange);
  } catch (const json::exception& e) {
    spdlog::warn("event=mcp_bad_field error=\"{}\"", e.what());
    if (!message.is_object() || !message.contains("id")) return Outcome{std::nullopt, 400};
    return Reply(
        ErrorReply(id, kInvalidParams,
                   absl::StrCat("Invalid params: a field has the wrong type (", e.what(), ")")),
        400);
  } catch (const std::exception& e) {
    spdlog::error("event=mcp_internal_error error=\"{}\"", e.what());
    if (!message.is_object() || !message.contains("id")) return Outcome{std::nullopt, 500};
    return Reply(ErrorReply(id, kInternalError, "Internal error"), 500);
  }
}

Outcome McpServer::HandleBatch(const json& batch, const Exchange& exchange) {
  const std::string version = negotiated_version();
  if (exchange.modern_transport || !RulesFor(version).batching || version.empty()) {
    std::string why = exchange.modern_transport ? absl::StrCat("this request speaks ",
                                                               std::string(kModernProtocolVersion))
                      : version.empty() ? std::string("no version is agreed yet (initialize first)")
                                        : absl::StrCat("this session speaks ", version);
    return Reply(ErrorReply(nullptr, kInvalidRequest,
                            absl::StrCat("Invalid Request: JSON-RPC batches are part of protocol "
                                         "version 2025-03-26 only; ",
                                         why),
                            {{"batching_versions", {"2025-03-26"}}}),
                 400);
  }
  if (batch.empty()) {
    return Reply(ErrorReply(nullptr, kInvalidRequest, "Invalid Request: the batch is empty"), 400);
  }
  json replies = json::array();
  for (const json& element : batch) {
    if (element.is_array() || StringField(element, "method") == "initialize") {
      json id = ValidId(AnyField(element, "id")) ? element["id"] : json();
      replies.push_back(ErrorReply(id, kInvalidRequest,
                                   element.is_array()
                                       ? "Invalid Request: a batch cannot hold a batch"
                                       : "Invalid Request: initialize cannot be part of a batch"));
      continue;
    }
    Outcome outcome = Handle(element, exchange);
    if (outcome.reply) replies.push_back(std::move(*outcome.reply));
  }
  // Only notifications and responses: nothing to answer (202 on HTTP).
  if (replies.empty()) return Outcome{std::nullopt, 202};
  return Reply(std::move(replies));
}

Outcome McpServer::HandleUnguarded(const json& message, const Exchange& exchange) {
  if (message.is_array()) return HandleBatch(message, exchange);
  if (!message.is_object() || StringField(message, "jsonrpc") != "2.0") {
    json id = ValidId(AnyField(message, "id")) ? message["id"] : json();
    return Reply(ErrorReply(id, kInvalidRequest, "Invalid Request: expected a JSON-RPC 2.0 object"),
                 400);
  }
  const bool has_id = message.contains("id");
  const json id = has_id ? message["id"] : json();
  if (!message.contains("method")) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      client_requests_->Accept(message);
      return Outcome{std::nullopt, 202};
    }
    return Reply(ErrorReply(ValidId(id) ? id : json(), kInvalidRequest,
                            "Invalid Request: a request needs a method"),
                 400);
  }
  if (!message["method"].is_string() || (has_id && !ValidId(id))) {
    return Reply(ErrorReply(has_id && ValidId(id) ? id : json(), kInvalidRequest,
                            "Invalid Request: method must be a string and id a string or integer"),
                 400);
  }
  const std::string method = message["method"];
  const json params = message.value("params", json::object());
  if (!params.is_object()) {
    if (!has_id) return Outcome{std::nullopt, 400};
    return Reply(ErrorReply(id, kInvalidParams, "Invalid params: params must be an object"), 400);
  }
  if (params.contains("_meta") && !params["_meta"].is_object()) {
    if (!has_id) return Outcome{std::nullopt, 400};
    return Reply(ErrorReply(id, kInvalidParams, "Invalid params: _meta must be an object"), 400);
  }
  RequestScope scope;
  const json* meta = params.contains("_meta") ? &params["_meta"] : nullptr;
  const bool modern =
      exchange.modern_transport || method == "server/discover" ||
      (meta != nullptr && meta->is_object() && meta->contains(kMetaProtocolVersion));
  if (modern) {
    if (std::optional<Outcome> refused = CheckModernMeta(id, params, exchange.transport, &scope)) {
      if (!has_id) return Outcome{std::nullopt, refused->http_status};
      return *refused;
    }
  } else {
    absl::MutexLock lock(&mu_);
    scope.version = negotiated_version_;
    scope.client_capabilities = client_capabilities_;
    scope.client_info = client_info_;
    scope.log_rank = log_rank_;
  }
  if (!has_id) {
    if (method == "notifications/cancelled") Cancel(params);
    return Outcome{std::nullopt, 202};
  }
  return Dispatch(id, method, params, scope, exchange);
}

std::optional<Outcome> McpServer::CheckModernMeta(const json& id, const json& params,
                                                  Transport transport, RequestScope* scope) const {
  const json meta = params.value("_meta", json());
  std::vector<std::string> missing;
  if (!meta.is_object()) {
    missing.push_back("_meta");
  } else {
    if (!meta.value(kMetaProtocolVersion, json()).is_string()) {
      missing.push_back(kMetaProtocolVersion);
    }
    if (!meta.value(kMetaClientCapabilities, json()).is_object()) {
      missing.push_back(kMetaClientCapabilities);
    }
  }
  if (!missing.empty()) {
    std::string message =
        meta.is_object() ? absl::StrCat("Invalid params: the request's _meta must carry ",
                                        absl::StrJoin(missing, " and "))
                         : absl::StrCat("Invalid params: the request needs _meta carrying ",
                                        kMetaProtocolVersion, " and ", kMetaClientCapabilities);
    return Reply(ErrorReply(id, kInvalidParams, message, {{"missing", missing}}), 400);
  }
  const std::string version = meta[kMetaProtocolVersion];
  if (!IsSupportedVersion(version, transport)) {
    return Reply(UnsupportedVersionReply(id, version, transport), 400);
  }
  scope->modern = true;
  scope->version = version;
  scope->client_capabilities = meta[kMetaClientCapabilities];
  scope->client_info = ObjectField(meta, kMetaClientInfo);
  if (auto level = meta.find(kMetaLogLevel); level != meta.end() && level->is_string()) {
    scope->log_rank = LogLevelRank(level->get<std::string>());
  }
  return std::nullopt;
}

Outcome McpServer::Dispatch(const json& id, const std::string& method, const json& params,
                            const RequestScope& scope, const Exchange& exchange) {
  if (method == "tools/list") return Reply(ResultReply(id, ListTools(scope)));
  if (method == "tools/call") return CallTool(id, params, scope, exchange);
  if (scope.modern) {
    if (method == "server/discover") {
      return Reply(ResultReply(id, Complete(Discover(exchange.transport), scope)));
    }
    // initialize, ping, logging/setLevel and the subscription methods are not
    // part of the stateless protocol.
    return Reply(ErrorReply(id, kMethodNotFound, absl::StrCat("Method not found: ", method)), 404);
  }
  if (method == "initialize") {
    for (const char* field : {"capabilities", "clientInfo"}) {
      if (params.contains(field) && !params[field].is_object()) {
        return Reply(ErrorReply(id, kInvalidParams,
                                absl::StrCat("Invalid params: ", field, " must be an object")));
      }
    }
    if (params.contains("protocolVersion") && !params["protocolVersion"].is_string()) {
      return Reply(
          ErrorReply(id, kInvalidParams, "Invalid params: protocolVersion must be a string"));
    }
    return Reply(ResultReply(id, Initialize(params, exchange.transport)));
  }
  if (method == "ping") return Reply(ResultReply(id, json::object()));
  if (method == "logging/setLevel") return SetLogLevel(id, params);
  return Reply(ErrorReply(id, kMethodNotFound, absl::StrCat("Method not found: ", method)));
}

json McpServer::ServerInfo(bool with_title) const {
  json info = {{"name", name_}, {"version", version_}};
  if (with_title) info["title"] = "termbridge";
  return info;
}

json McpServer::Complete(json result, const RequestScope& scope) const {
  if (!scope.modern) return result;
  result["resultType"] = "complete";
  result["_meta"][kMetaServerInfo] = ServerInfo();
  return result;
}

json McpServer::Initialize(const json& params, Transport transport) {
  std::string requested = StringField(params, "protocolVersion");
  // The legacy handshake: answer with the requested version if this
  // transport serves it, else our latest legacy version; the client decides
  // whether to go on.
  std::string agreed = NegotiateVersion(requested, transport);
  {
    absl::MutexLock lock(&mu_);
    negotiated_version_ = agreed;
    client_capabilities_ = ObjectField(params, "capabilities");
    client_info_ = ObjectField(params, "clientInfo");
  }
  spdlog::info("event=initialize requested={} agreed={} client={}", requested, agreed,
               StringField(ObjectField(params, "clientInfo"), "name"));
  return {{"protocolVersion", agreed},
          {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
          {"serverInfo", ServerInfo(RulesFor(agreed).titles)},
          {"instructions", options_.instructions}};
}

json McpServer::Discover(Transport transport) const {
  return {{"supportedVersions", SupportedProtocolVersions(transport)},
          {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
          {"serverInfo", ServerInfo()},
          {"instructions", options_.instructions},
          {"ttlMs", kToolListTtlMs},
          {"cacheScope", "private"}};
}

json McpServer::ListTools(const RequestScope& scope) const {
  json tools = json::array();
  const VersionRules rules = RulesFor(scope.version);
  for (const Tool& tool : tools_) {
    tools.push_back(scope.modern ? tool.definition : ToolFor(tool.definition, rules));
  }
  json result = {{"tools", std::move(tools)}};
  if (scope.modern) {
    result["ttlMs"] = kToolListTtlMs;
    result["cacheScope"] = "private";
  }
  return Complete(std::move(result), scope);
}

Outcome McpServer::SetLogLevel(const json& id, const json& params) {
  int rank = LogLevelRank(StringField(params, "level"));
  if (rank < 0) {
    return Reply(ErrorReply(id, kInvalidParams,
                            "Invalid params: level must be one of debug, info, notice, warning, "
                            "error, critical, alert, emergency"));
  }
  absl::MutexLock lock(&mu_);
  log_rank_ = rank;
  return Reply(ResultReply(id, json::object()));
}

Outcome McpServer::CallTool(const json& id, const json& params, const RequestScope& scope,
                            const Exchange& exchange) {
  if (!params.contains("name") || !params["name"].is_string()) {
    return Reply(
        ErrorReply(id, kInvalidParams, "Invalid params: tools/call needs a string 'name'"));
  }
  const std::string name = params["name"];
  const Tool* tool = FindTool(name);
  if (tool == nullptr) {
    return Reply(
        ErrorReply(id, kInvalidParams, absl::StrCat("Unknown tool: ", name), {{"tool", name}}));
  }
  if (scope.modern) {
    // Multi round-trip retries (SEP-2322): malformed ones are protocol errors.
    if (params.contains("inputResponses") && !params["inputResponses"].is_object()) {
      return Reply(
          ErrorReply(id, kInvalidParams, "Invalid params: inputResponses must be an object"));
    }
    if (params.contains("requestState") && !params["requestState"].is_string()) {
      return Reply(ErrorReply(id, kInvalidParams, "Invalid params: requestState must be a string"));
    }
  }
  json arguments = params.value("arguments", json::object());
  if (!arguments.is_object()) {
    return Reply(ErrorReply(id, kInvalidParams, "Invalid params: arguments must be an object"));
  }
  if (!tool->validates_own_arguments) {
    if (auto violation =
            CheckArguments(tool->definition.value("inputSchema", json::object()), arguments)) {
      std::string message = absl::StrCat(violation->field, " ", violation->reason);
      spdlog::info("event=invalid_arguments tool={} {}", name, message);
      ToolResult invalid;
      invalid.is_error = true;
      invalid.structured = {
          {"error",
           {{"code", "INVALID_ARGUMENTS"}, {"field", violation->field}, {"message", message}}}};
      return Reply(ResultReply(id, ResultFor(invalid, scope)));
    }
  }
  auto control = std::make_shared<CallControl>();
  const std::string key = id.dump();
  {
    absl::MutexLock lock(&mu_);
    in_flight_.emplace(key, control);
  }
  json token = AnyField(ObjectField(params, "_meta"), "progressToken");
  auto stream = std::make_shared<CallStream>(
      scope.modern ? exchange.notify : SinkFor(exchange.notify, RulesFor(scope.version)), token);
  CallContext context = MakeContext(params, scope, control, stream);
  ToolHandler handler = tool->handler;
  absl::StatusOr<bool> finished = RunToolCall(
      exchange.handlers ? *exchange.handlers : own_handlers_,
      [handler, arguments, context] { return handler(arguments, context); }, control, *stream,
      exchange.peer_gone, options_.progress_heartbeat);
  stream->Close();
  {
    absl::MutexLock lock(&mu_);
    for (auto [it, end] = in_flight_.equal_range(key); it != end; ++it) {
      if (it->second == control) {
        in_flight_.erase(it);
        break;
      }
    }
  }
  if (!finished.ok()) {
    spdlog::warn("event=call_refused tool={} request_id={} reason=\"{}\"", name, key,
                 std::string(finished.status().message()));
    return Reply(ErrorReply(
        id, kServerBusy,
        "Server busy: too many tool calls running (cancelled ones whose "
        "command still runs included); retry when one has finished",
        {{"max_running", kMaxToolHandlers}, {"reason", std::string(finished.status().message())}}));
  }
  if (!*finished) {
    spdlog::info("event=call_abandoned tool={} request_id={}", name, key);
    return Outcome{std::nullopt, 202};  // the spec: no response to a cancelled request
  }
  ToolResult result;
  {
    absl::MutexLock lock(&control->mu);
    result = control->result;
  }
  if (result.rpc_error) {
    const RpcError& error = *result.rpc_error;
    bool bad_request = error.code == kMissingRequiredClientCapability;
    return Reply(ErrorReply(id, error.code, error.message, error.data), bad_request ? 400 : 200);
  }
  return Reply(ResultReply(id, ResultFor(result, scope)));
}

CallContext McpServer::MakeContext(const json& params, const RequestScope& scope,
                                   const std::shared_ptr<CallControl>& call,
                                   const std::shared_ptr<CallStream>& stream) {
  CallContext context;
  context.cancelled = [call] { return call->IsCancelled(); };
  context.progress = [stream](double progress, const std::string& message) {
    stream->Progress(progress, std::nullopt, message);
  };
  context.progress_of = [stream](double progress, double total, const std::string& message) {
    stream->Progress(progress, total, message);
  };
  int log_rank = scope.log_rank;
  std::string logger = name_;
  context.log = [stream, log_rank, logger](const std::string& level, const json& data) {
    int rank = LogLevelRank(level);
    if (log_rank < 0 || rank < log_rank) return;
    stream->Send(Notification("notifications/message",
                              {{"level", level}, {"logger", logger}, {"data", data}}));
  };
  if (scope.modern) {
    context.ask_client = [](const std::string&, const json&) -> absl::StatusOr<json> {
      return absl::FailedPreconditionError(
          "2026-07-28 requests cannot carry server requests; return an input-required result");
    };
  } else {
    context.ask_client = [requests = client_requests_, call, stream,
                          timeout = options_.ask_client_timeout, version = scope.version](
                             const std::string& method, const json& ask) -> absl::StatusOr<json> {
      if (method == "elicitation/create" && !RulesFor(version).elicitation) {
        return absl::FailedPreconditionError(absl::StrCat(
            "elicitation came with protocol version 2025-06-18; this session speaks ", version));
      }
      return requests->Ask(method, ask, *call, *stream, timeout);
    };
  }
  context.protocol_version = scope.version;
  context.stateless = scope.modern;
  context.client_capabilities = scope.client_capabilities;
  context.client_info = scope.client_info;
  context.params = params;
  return context;
}

json McpServer::ResultFor(const ToolResult& result, const RequestScope& scope) const {
  if (!result.input_required.is_null() && scope.modern) {
    json interim = {{"resultType", "input_required"}, {"inputRequests", result.input_required}};
    if (!result.request_state.empty()) interim["requestState"] = result.request_state;
    interim["_meta"][kMetaServerInfo] = ServerInfo();
    return interim;
  }
  json out;
  if (!result.content.is_null()) {
    out["content"] = result.content;
  } else {
    std::string text = result.structured.dump(2, ' ', false, json::error_handler_t::replace);
    out["content"] = json::array({{{"type", "text"}, {"text", text}}});
  }
  // structuredContent came with 2025-06-18; older clients read the content.
  if (!result.structured.is_null() &&
      (scope.modern || RulesFor(scope.version).structured_content)) {
    out["structuredContent"] = result.structured;
  }
  out["isError"] = result.is_error;
  return Complete(std::move(out), scope);
}

void McpServer::Cancel(const json& params) {
  if (!params.contains("requestId")) return;
  const std::string key = params["requestId"].dump();
  absl::MutexLock lock(&mu_);
  for (auto [it, end] = in_flight_.equal_range(key); it != end; ++it) {
    it->second->Cancel();
    spdlog::info("event=cancelled request_id={} reason={}", key, StringField(params, "reason"));
  }
}

}  // namespace termbridge::mcp
