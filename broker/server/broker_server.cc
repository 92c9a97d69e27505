// Start-up and shutdown of termbridge-broker.
#include "broker/server/broker_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/service/broker_service.h"
#include "broker/service/terminal_registry.h"
#include "common/contract/request.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "broker/service/health_service.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::broker {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

absl::Status MakeDirs(const std::string& path) {
  std::string partial;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&partial, "/", part);
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", partial, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

bool IsLoopback(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]" ||
         absl::StartsWith(host, "127.");
}

absl::StatusOr<std::string> RandomHex(size_t bytes) {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!urandom.read(raw.data(), static_cast<std::streamsize>(bytes))) {
    return absl::InternalError("cannot read /dev/urandom");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Reads the agent token, creating it (mode 0600) when it does not exist yet.
absl::StatusOr<std::string> LoadOrCreateToken(const std::string& path, bool create) {
  std::ifstream in(path);
  if (in) {
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string token(absl::StripAsciiWhitespace(buffer.str()));
    if (token.size() < 16) {
      return absl::FailedPreconditionError(
          absl::StrCat("agent token in ", path, " is shorter than 16 characters"));
    }
    return token;
  }
  if (!create) {
    return absl::NotFoundError(absl::StrCat("agent token file not readable: ", path));
  }
  absl::StatusOr<std::string> token = RandomHex(32);
  if (!token.ok()) return token.status();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  std::string line = *token + "\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  return *token;
}

// Writes `content` to `path` atomically (temporary file, then rename).
absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BrokerConfig> ResolveConfig(BrokerConfig config) {
  config.listen = EnvOr("TERMBRIDGE_LISTEN", config.listen);
  if (config.state_dir.empty()) {
    std::string xdg = EnvOr("XDG_STATE_HOME", EnvOr("HOME", "/tmp") + "/.local/state");
    config.state_dir = EnvOr("TERMBRIDGE_STATE_DIR", xdg + "/termbridge");
  }
  if (config.agent_token_file.empty()) {
    config.agent_token_file = EnvOr("TERMBRIDGE_AGENT_TOKEN_FILE", "");
  }
  if (config.ready_file.empty()) config.ready_file = EnvOr("TERMBRIDGE_READY_FILE", "");
  if (config.shell.empty()) config.shell = EnvOr("TERMBRIDGE_SHELL", "");
  if (config.listen.rfind(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen must be host:port, got '", config.listen, "'"));
  }
  if (!IsLoopback(config.listen)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to listen on non-loopback address ", config.listen,
        " without TLS; this build serves loopback only"));
  }
  return config;
}

struct BrokerServer::State {
  BrokerConfig config;
  std::string grpc_address;
  std::unique_ptr<TerminalRegistry> registry;
  std::unique_ptr<BrokerService> service;
  std::unique_ptr<HealthService> health;
  std::unique_ptr<grpc::Server> server;
};

BrokerServer::BrokerServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

BrokerServer::~BrokerServer() { Drain(absl::ZeroDuration()); }

const std::string& BrokerServer::grpc_address() const { return state_->grpc_address; }

absl::StatusOr<std::unique_ptr<BrokerServer>> BrokerServer::Start(const BrokerConfig& config) {
  auto state = std::make_unique<State>();
  state->config = config;
  if (absl::Status s = MakeDirs(config.state_dir); !s.ok()) return s;
  bool default_token = config.agent_token_file.empty();
  std::string token_file =
      default_token ? config.state_dir + "/agent-token" : config.agent_token_file;
  absl::StatusOr<std::string> token = LoadOrCreateToken(token_file, default_token);
  if (!token.ok()) return token.status();

  RegistryOptions registry_options;
  registry_options.ring_bytes = config.ring_bytes;
  registry_options.max_terminals_per_agent = config.max_terminals_per_agent;
  registry_options.max_terminals_total = config.max_terminals_total;
  registry_options.shell = config.shell;
  state->registry = std::make_unique<TerminalRegistry>(registry_options);

  ServiceOptions service_options;
  service_options.agent_token = *token;
  service_options.broker_instance_id = contract::NewId("b_");
  state->service = std::make_unique<BrokerService>(service_options, state->registry.get());

  // Our own grpc.health.v1 service, so reflection can describe it.
  grpc::EnableDefaultHealthCheckService(false);
  state->health = std::make_unique<HealthService>();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(state->service.get());
  builder.RegisterService(state->health.get());
  // Keepalive: ping idle clients every 10 s and drop them after 5 s of silence;
  // the agent uses the same values so both sides notice a dead peer.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  state->server = builder.BuildAndStart();
  if (!state->server || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen));
  }
  state->health->SetServing(true);
  state->grpc_address =
      absl::StrCat(config.listen.substr(0, config.listen.rfind(':')), ":", port);
  spdlog::info("event=serving grpc={} state_dir={} agent_token_file={} shell={}",
               state->grpc_address, config.state_dir, token_file, state->registry->shell());

  if (!config.ready_file.empty()) {
    nlohmann::json ready = {{"grpc_address", state->grpc_address},
                            {"grpc_port", port},
                            {"pid", getpid()},
                            {"state_dir", config.state_dir},
                            {"agent_token_file", token_file},
                            {"broker_instance_id", service_options.broker_instance_id}};
    if (absl::Status s = WriteFileAtomically(config.ready_file, ready.dump() + "\n"); !s.ok()) {
      return s;
    }
  }
  return std::unique_ptr<BrokerServer>(new BrokerServer(std::move(state)));
}

void BrokerServer::Drain(absl::Duration deadline) {
  if (!state_ || !state_->server) return;
  state_->health->SetServing(false);
  spdlog::info("event=draining deadline_ms={}", absl::ToInt64Milliseconds(deadline));
  // Terminals close first so that waits in flight (Execute, ReadOutput) and
  // Attach streams see the exit and finish instead of holding the shutdown.
  // Then calls in flight get until `deadline` to finish; idle connections
  // don't hold the shutdown (gRPC would otherwise wait for clients to hang up).
  state_->registry->CloseAll();
  bool idle = state_->service->WaitIdle(deadline);
  if (!idle) spdlog::warn("event=drain_deadline_passed cancelling calls still in flight");
  state_->health->Shutdown();
  state_->server->Shutdown(absl::ToChronoTime(absl::Now()));
  state_->server->Wait();
  state_->server.reset();
  spdlog::info("event=stopped");
}

}  // namespace termbridge::broker
