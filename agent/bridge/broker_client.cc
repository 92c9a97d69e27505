// The agent's gRPC client for termbridge-broker.
#include "agent/bridge/broker_client.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/bridge/broker_launcher.h"
#include "agent/bridge/tcp_probe.h"
#include "common/contract/errors.h"
#include "common/contract/gui_unavailable.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::bridge {
namespace {

using contract::ErrorCode;
using contract::MakeError;
namespace gui = contract::gui_unavailable;

constexpr char kErrorDetailKey[] = "termbridge-error-bin";
// How long tb-bridge-watch waits on a channel before it looks again (for a
// newer connection, or the destructor).
constexpr absl::Duration kWatchSlice = absl::Milliseconds(200);
constexpr uint32_t kProtocolVersion = v1::PROTOCOL_VERSION_CURRENT;
// Keepalive (docs/troubleshooting.md "When the broker stops answering"): a
// ping after each second in which the broker sent nothing. An unanswered ping
// closes the connection only after request_timeout_ms plus two intervals, so
// a hung broker's call without a wait reaches its own deadline first; gRPC
// uses the same value as TCP_USER_TIMEOUT. A dead broker needs no ping: its
// kernel closes or resets the connection, which ends every call at once.
// The broker accepts a ping every 500 ms (broker/server/broker_server.cc).
// Pings go only while a call is in flight: an idle agent has nothing to wait
// for, and a ping each second would keep gRPC's timer threads busy for good.
constexpr int kKeepaliveTimeMs = 1000;
// What gRPC says when it closed the connection for an unanswered ping.
constexpr char kKeepaliveClosed[] = "keepalive watchdog timeout";

std::string HostPort(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos;
  return v6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

// The host part of what HostPort built.
std::string HostOf(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read agent token file ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(buffer.str()));
  if (token.empty()) return absl::NotFoundError(absl::StrCat("agent token file is empty: ", path));
  return token;
}

absl::StatusOr<std::string> ReadFile(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return MakeError(ErrorCode::kGuiUnavailable, absl::StrCat("cannot read ", what, " ", path),
                     {{"reason", gui::kTlsMaterialUnavailable}, {"file", path}});
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Plaintext unless a CA file is configured; then TLS, plus a client
// certificate when one is configured.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const BridgeConfig& config) {
  if (config.tls_ca_file.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> ca = ReadFile("TLS CA file", config.tls_ca_file);
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *ca;
  if (!config.tls_cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadFile("TLS certificate", config.tls_cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile("TLS key", config.tls_key_file);
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

// The cause of a broker's PM_TERM_GUI_UNAVAILABLE that names none (a broker
// from before details.reason), told by the details it does send.
std::string GuiUnavailableReason(const nlohmann::json& details) {
  if (details.contains("broker_protocol_version")) return gui::kVersionMismatch;
  if (details.contains("surfaces_tried")) return gui::kNoViewer;
  return "unknown";
}

template <typename Request>
void SetAgent(Request* request, const std::string& agent_id) {
  if (request->agent_id().empty()) request->set_agent_id(agent_id);
}

}  // namespace

BrokerClient::BrokerClient(BridgeConfig config) : config_(std::move(config)) {}

BrokerClient::~BrokerClient() {
  thread::NamedThread watcher;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    watcher = std::move(watcher_);
  }
  watcher.Join();
}

// gRPC polls a channel's socket only while some thread waits on gRPC: with
// no call in flight, a connection that dropped (the broker restarted) would
// look ready until the next call was sent on it and failed. Waiting here
// keeps it polled, so the drop is seen within a slice and the next call
// connects anew.
void BrokerClient::WatchConnections() {
  for (;;) {
    std::shared_ptr<Connection> connection;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || connection_ != nullptr;
      };
      mu_.Await(absl::Condition(&wake));
      if (stopping_) return;
      connection = connection_;
    }
    grpc_connectivity_state state = connection->channel->GetState(false);
    if (state == GRPC_CHANNEL_READY) {
      connection->channel->WaitForStateChange(state, absl::ToChronoTime(absl::Now() + kWatchSlice));
      state = connection->channel->GetState(false);
    }
    if (state != GRPC_CHANNEL_READY) {
      spdlog::info("event=bridge_dropped address={} state={}", connection->address,
                   static_cast<int>(state));
      Forget(connection);
    }
  }
}

bool BrokerClient::AwaitNoConnectionForTest(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return connection_ == nullptr; };
  return mu_.AwaitWithTimeout(absl::Condition(&none), timeout);
}

absl::StatusOr<std::shared_ptr<BrokerClient::Connection>> BrokerClient::Connect(
    const std::string& trace_id) {
  {
    absl::MutexLock lock(&mu_);
    if (connection_) return connection_;
  }
  auto connection = std::make_shared<Connection>();
  nlohmann::json attempts = nlohmann::json::array();
  for (const std::string& host : config_.hosts) {
    absl::Status probe = ProbeTcp(host, config_.port, config_.connect_timeout_ms);
    if (config_.trace)
      spdlog::info("event=bridge_probe host={} result=\"{}\"", host, probe.ToString());
    if (probe.ok()) {
      connection->address = HostPort(host, config_.port);
      break;
    }
    attempts.push_back({{"host", host}, {"error", std::string(probe.message())}});
  }
  if (connection->address.empty() && config_.launch && config_.mode == AdapterMode::kLocal) {
    // Nothing answers: start the host's broker (opt-in), once at a time.
    absl::MutexLock launch_lock(&launch_mu_);
    if (ProbeTcp("127.0.0.1", config_.port, config_.connect_timeout_ms).ok()) {
      connection->address = HostPort("127.0.0.1", config_.port);  // another call launched it
    } else {
      char exe[4096];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      absl::StatusOr<LaunchedBroker> launched = LaunchBroker(
          config_, BrokerCandidates(config_, n > 0 ? std::string(exe, n) : std::string()));
      if (!launched.ok()) return launched.status();
      connection->address = HostPort("127.0.0.1", launched->port);
    }
  }
  if (connection->address.empty()) {
    return MakeError(ErrorCode::kGuiUnavailable,
                     "no termbridge-broker is reachable on any configured host alias",
                     {{"reason", gui::kBrokerUnreachable},
                      {"aliases_tried", config_.hosts},
                      {"port", config_.port},
                      {"connect_timeout_ms", config_.connect_timeout_ms},
                      {"attempts", attempts}});
  }
  absl::StatusOr<std::string> token = ReadToken(config_.token_file);
  if (!token.ok()) {
    return MakeError(ErrorCode::kGuiUnavailable, std::string(token.status().message()),
                     {{"reason", gui::kAgentTokenUnavailable}, {"token_file", config_.token_file}});
  }
  connection->token = *token;
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, config_.request_timeout_ms + 2 * kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 16 << 20);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentials(config_);
  if (!credentials.ok()) return credentials.status();
  if (!config_.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(config_.tls_server_name);
  }
  connection->channel = grpc::CreateCustomChannel(connection->address, *credentials, args);
  if (!connection->channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + absl::Milliseconds(config_.connect_timeout_ms)))) {
    // The port accepted TCP a moment ago; if it refuses now, what answered
    // is gone (a broker that stopped, or a process that held the port
    // briefly): that is an unreachable broker, not a hung one.
    std::string host = HostOf(connection->address);
    if (absl::Status again = ProbeTcp(host, config_.port, config_.connect_timeout_ms);
        absl::IsUnavailable(again)) {
      return MakeError(ErrorCode::kGuiUnavailable,
                       "the broker stopped answering while the agent connected to it",
                       {{"reason", gui::kBrokerUnreachable},
                        {"aliases_tried", {host}},
                        {"port", config_.port},
                        {"connect_timeout_ms", config_.connect_timeout_ms},
                        {"attempts", {{{"host", host}, {"error", std::string(again.message())}}}}});
    }
    return MakeError(ErrorCode::kTimeout,
                     "the broker accepted TCP but the gRPC connection did not come up",
                     {{"timeout_ms", config_.connect_timeout_ms},
                      {"phase", "connect"},
                      {"address", connection->address}});
  }
  connection->stub = v1::TerminalBroker::NewStub(connection->channel);
  grpc::ClientContext context;
  PrepareContext(&context, *connection, config_.connect_timeout_ms);
  v1::HandshakeRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_agent_id(config_.agent_id);
  request.set_trace_id(trace_id);
  grpc::Status status = connection->stub->Handshake(&context, request, &connection->handshake);
  if (!status.ok()) {
    return MapError(status, context, *connection, "handshake", config_.connect_timeout_ms);
  }
  if (connection->handshake.protocol_version() != kProtocolVersion) {
    return MakeError(ErrorCode::kGuiUnavailable,
                     absl::StrCat("protocol version mismatch: agent speaks ", kProtocolVersion,
                                  ", broker speaks ", connection->handshake.protocol_version()),
                     {{"reason", gui::kVersionMismatch},
                      {"agent_protocol_version", kProtocolVersion},
                      {"broker_protocol_version", connection->handshake.protocol_version()},
                      {"address", connection->address}});
  }
  spdlog::info(
      "event=bridge_connected address={} agent={} broker_instance_id={} "
      "runtime_session_id={} trace_id={}",
      connection->address, connection->handshake.agent_id(),
      connection->handshake.broker_instance_id(), connection->handshake.runtime_session_id(),
      trace_id);
  absl::MutexLock lock(&mu_);
  if (!connection_) connection_ = connection;
  if (!watcher_.joinable() && !stopping_) {
    try {
      watcher_ = thread::NamedThread("tb-bridge-watch", [this] { WatchConnections(); });
    } catch (const std::system_error& e) {
      // Calls still work; a drop between them is then seen by the next call.
      spdlog::warn("event=bridge_watch_unavailable error=\"{}\"", e.what());
    }
  }
  return connection_;
}

void BrokerClient::Forget(const std::shared_ptr<Connection>& connection) {
  absl::MutexLock lock(&mu_);
  if (connection_ == connection) connection_.reset();
}

void BrokerClient::PrepareContext(grpc::ClientContext* context, const Connection& connection,
                                  int64_t timeout_ms) const {
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(timeout_ms)));
  context->AddMetadata("authorization", "Bearer " + connection.token);
}

absl::Status BrokerClient::MapError(const grpc::Status& status, const grpc::ClientContext& context,
                                    const Connection& connection, const std::string& phase,
                                    int timeout_ms, bool was_ready, int64_t wait_ms) {
  const auto& trailers = context.GetServerTrailingMetadata();
  if (auto it = trailers.find(kErrorDetailKey); it != trailers.end()) {
    v1::ErrorDetail detail;
    if (detail.ParseFromString(std::string(it->second.data(), it->second.size()))) {
      if (std::optional<ErrorCode> code = contract::ParseCode(detail.code()); code) {
        nlohmann::json details =
            nlohmann::json::parse(detail.details_json(), nullptr, /*allow_exceptions=*/false);
        if (!details.is_object()) details = nlohmann::json::object();
        if (*code == ErrorCode::kGuiUnavailable && !details.contains("reason")) {
          details["reason"] = GuiUnavailableReason(details);
        }
        return MakeError(*code, detail.message(), std::move(details));
      }
    }
  }
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED: {
      nlohmann::json details = {
          {"timeout_ms", timeout_ms}, {"phase", phase}, {"address", connection.address}};
      if (wait_ms > 0) details["wait_ms"] = wait_ms;
      return MakeError(ErrorCode::kTimeout,
                       wait_ms > 0
                           ? absl::StrCat("the broker did not answer within ", timeout_ms,
                                          " ms after the call's wait of ", wait_ms, " ms")
                           : absl::StrCat("the broker did not answer within ", timeout_ms, " ms"),
                       std::move(details));
    }
    case grpc::StatusCode::UNAUTHENTICATED:
      return MakeError(ErrorCode::kGuiUnavailable,
                       "the broker rejected the agent token: " + status.error_message(),
                       {{"reason", gui::kCredentialsRefused},
                        {"token_file", config_.token_file},
                        {"address", connection.address}});
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED: {
      // The connection stands but the broker answers nothing (hung, stopped):
      // gRPC gave up on a keepalive ping during the call's wait.
      if (absl::StrContains(status.error_message(), kKeepaliveClosed)) {
        return MakeError(ErrorCode::kTimeout,
                         absl::StrCat("the broker stopped answering: a keepalive ping went "
                                      "unanswered for more than ",
                                      timeout_ms, " ms"),
                         {{"timeout_ms", timeout_ms},
                          {"phase", phase},
                          {"address", connection.address},
                          {"unanswered", "keepalive"}});
      }
      // A call that went out on a ready channel and lost it mid-way: the
      // stream dropped (the broker died or restarted), whatever is listening now.
      // gRPC says "failed to connect to all addresses" when the call never
      // reached a broker (it was gone before the call): that is not a drop.
      bool never_connected = absl::StrContains(status.error_message(), "failed to connect");
      if (was_ready && !never_connected) {
        return MakeError(
            ErrorCode::kDisconnected,
            "the connection to the broker dropped during the call: " + status.error_message(),
            {{"phase", phase}, {"address", connection.address}});
      }
      // Was anything listening at all? Refused now means the broker is gone.
      std::string host = HostOf(connection.address);
      if (!ProbeTcp(host, config_.port, config_.connect_timeout_ms).ok()) {
        return MakeError(ErrorCode::kGuiUnavailable, "the broker is not reachable",
                         {{"reason", gui::kBrokerUnreachable},
                          {"aliases_tried", {host}},
                          {"port", config_.port},
                          {"phase", phase}});
      }
      return MakeError(ErrorCode::kDisconnected,
                       "the connection to the broker dropped: " + status.error_message(),
                       {{"phase", phase}, {"address", connection.address}});
    }
    default:
      return MakeError(ErrorCode::kInternal, "unexpected broker error",
                       {{"grpc_code", static_cast<int>(status.error_code())}, {"phase", phase}});
  }
}

template <typename Request, typename Response, typename Method>
absl::StatusOr<Response> BrokerClient::Call(Request request, Method method,
                                            const std::string& phase, uint32_t wait_ms) {
  SetAgent(&request, config_.agent_id);
  absl::StatusOr<std::shared_ptr<Connection>> connection =
      Connect(request.correlation().trace_id());
  if (!connection.ok()) return connection.status();
  // The broker waits at most its max_wait_ms (from the handshake), then has
  // the request timeout to answer.
  const uint32_t max_wait = (*connection)->handshake.limits().max_wait_ms();
  const int64_t wait = max_wait > 0 ? std::min(wait_ms, max_wait) : wait_ms;
  const int timeout_ms = config_.request_timeout_ms;
  grpc::ClientContext context;
  PrepareContext(&context, **connection, wait + timeout_ms);
  Response response;
  // Ready before the call: a failure to reach the broker is then a dropped
  // connection (DISCONNECTED), not one that was never there.
  bool was_ready = (*connection)->channel->GetState(false) == GRPC_CHANNEL_READY;
  if (config_.trace) {
    spdlog::info("event=bridge_call phase={} wait_ms={} timeout_ms={} trace_id={}", phase, wait,
                 timeout_ms, request.correlation().trace_id());
  }
  grpc::Status status = ((*connection)->stub.get()->*method)(&context, request, &response);
  if (config_.trace) {
    spdlog::info("event=bridge_done phase={} grpc_code={} message=\"{}\" trace_id={}", phase,
                 static_cast<int>(status.error_code()), status.error_message(),
                 request.correlation().trace_id());
  }
  if (status.ok()) return response;
  absl::Status mapped = MapError(status, context, **connection, phase, timeout_ms, was_ready, wait);
  contract::ErrorCode code = contract::FromStatus(mapped).code;
  if (code == ErrorCode::kGuiUnavailable || code == ErrorCode::kDisconnected ||
      code == ErrorCode::kTimeout) {
    Forget(*connection);  // reconnect (and re-handshake) on the next call
  }
  return mapped;
}

absl::StatusOr<v1::ExecuteResponse> BrokerClient::Execute(v1::ExecuteRequest request) {
  const uint32_t wait_ms = request.wait_ms();
  return Call<v1::ExecuteRequest, v1::ExecuteResponse>(
      std::move(request), &v1::TerminalBroker::Stub::Execute, "execute", wait_ms);
}

absl::StatusOr<v1::ReadOutputResponse> BrokerClient::ReadOutput(v1::ReadOutputRequest request) {
  const uint32_t wait_ms = request.wait_ms();
  return Call<v1::ReadOutputRequest, v1::ReadOutputResponse>(
      std::move(request), &v1::TerminalBroker::Stub::ReadOutput, "read", wait_ms);
}

absl::StatusOr<v1::TerminateResponse> BrokerClient::Terminate(v1::TerminateRequest request) {
  return Call<v1::TerminateRequest, v1::TerminateResponse>(
      std::move(request), &v1::TerminalBroker::Stub::Terminate, "terminate", 0);
}

absl::StatusOr<v1::ListResponse> BrokerClient::List(v1::ListRequest request) {
  return Call<v1::ListRequest, v1::ListResponse>(std::move(request),
                                                 &v1::TerminalBroker::Stub::List, "list", 0);
}

absl::StatusOr<v1::ProposeRuleResponse> BrokerClient::ProposeRule(v1::ProposeRuleRequest request) {
  const uint32_t wait_ms = request.wait_ms();
  return Call<v1::ProposeRuleRequest, v1::ProposeRuleResponse>(
      std::move(request), &v1::TerminalBroker::Stub::ProposeRule, "approval", wait_ms);
}

absl::StatusOr<v1::GetPolicyResponse> BrokerClient::GetPolicy(v1::AgentPolicyRequest request) {
  return Call<v1::AgentPolicyRequest, v1::GetPolicyResponse>(
      std::move(request), &v1::TerminalBroker::Stub::GetAgentPolicy, "read", 0);
}

absl::StatusOr<v1::HandshakeResponse> BrokerClient::Handshake(const std::string& trace_id) {
  absl::StatusOr<std::shared_ptr<Connection>> connection = Connect(trace_id);
  if (!connection.ok()) return connection.status();
  return (*connection)->handshake;
}

}  // namespace termbridge::bridge
