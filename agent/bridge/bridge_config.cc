// Bridge configuration from the environment: the contract's PM_* names, our
// TERMBRIDGE_* names, and the deprecated PM_* spellings of the latter.
#include "agent/bridge/bridge_config.h"

#include <arpa/inet.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/contract/errors.h"
#include "spdlog/spdlog.h"

namespace termbridge::bridge {
namespace {

using contract::ErrorCode;
using contract::MakeError;

constexpr size_t kRenamedCount = std::size(kRenamedSettings);
// One warning per deprecated name per process, however often the
// configuration is resolved.
std::atomic<bool> warned[kRenamedCount];

// A setting's value and the variable it came from.
struct Found {
  std::string value;  // "" when unset
  std::string from;   // the name read: the setting's own, or its deprecated alias
};

// Reads setting `name`; for a renamed setting whose own name is unset, its
// deprecated alias, with a warning on stderr the first time.
Found Lookup(const EnvLookup& env, const std::string& name) {
  Found found{env(name).value_or(""), name};
  if (!found.value.empty()) return found;
  for (size_t i = 0; i < kRenamedCount; ++i) {
    if (name != kRenamedSettings[i].name) continue;
    std::string old = env(kRenamedSettings[i].deprecated).value_or("");
    if (old.empty()) break;
    if (!warned[i].exchange(true)) {
      spdlog::warn("event=deprecated_setting name={} use={}: the old name still works for now",
                   kRenamedSettings[i].deprecated, name);
    }
    return {old, kRenamedSettings[i].deprecated};
  }
  return found;
}

std::string Get(const EnvLookup& env, const std::string& name) { return Lookup(env, name).value; }

absl::Status ReadMs(const EnvLookup& env, const std::string& name, int min, int max, int* out) {
  Found found = Lookup(env, name);
  if (found.value.empty()) return absl::OkStatus();
  int parsed = 0;
  if (!absl::SimpleAtoi(found.value, &parsed) || parsed < min || parsed > max) {
    return MakeError(ErrorCode::kInvalidPayload,
                     absl::StrCat(found.from, " must be an integer in [", min, ", ", max, "]"),
                     {{"field", found.from}, {"value", found.value}});
  }
  *out = parsed;
  return absl::OkStatus();
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string DefaultGateway(const std::string& route_table_path) {
  std::ifstream in(route_table_path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, destination, gateway;
    fields >> iface >> destination >> gateway;
    if (destination != "00000000" || gateway.size() != 8) continue;
    uint32_t raw = static_cast<uint32_t>(std::strtoul(gateway.c_str(), nullptr, 16));
    char text[INET_ADDRSTRLEN];
    in_addr addr{raw};  // /proc/net/route is in host (little-endian) order = network bytes
    if (inet_ntop(AF_INET, &addr, text, sizeof(text)) != nullptr) return text;
  }
  return "";
}

std::string StateDir(const EnvLookup& env) {
  if (std::string state = Get(env, "TERMBRIDGE_STATE_DIR"); !state.empty()) return state;
  std::string xdg = Get(env, "XDG_STATE_HOME");
  return (xdg.empty() ? Get(env, "HOME") + "/.local/state" : xdg) + "/termbridge";
}

std::string DefaultHttpTokenFile(const EnvLookup& env) {
  return StateDir(env) + "/agent-http-token";
}

absl::StatusOr<BridgeConfig> ResolveBridgeConfig(const EnvLookup& env,
                                                 const std::string& request_override) {
  BridgeConfig config;
  // Precedence (docs/CONTRACT.md "Environment variables"): request,
  // server config, container signal, default.
  std::string mode = "auto";
  if (!request_override.empty()) {
    mode = request_override;
    config.mode_source = "request";
  } else if (std::string configured = Get(env, "PM_TERM_ADAPTER_MODE"); !configured.empty()) {
    mode = configured;
    config.mode_source = "PM_TERM_ADAPTER_MODE";
  }
  mode = absl::AsciiStrToLower(mode);
  if (mode != "auto" && mode != "local" && mode != "bundled" && mode != "container_bridge") {
    return MakeError(ErrorCode::kInvalidPayload, absl::StrCat("unknown adapter mode '", mode, "'"),
                     {{"field", config.mode_source == "request" ? "runtime.adapter_override"
                                                                : "PM_TERM_ADAPTER_MODE"},
                      {"allowed", {"auto", "local", "bundled", "container_bridge"}}});
  }
  bool in_container = absl::AsciiStrToLower(Get(env, "PM_RUNNING_IN_CONTAINER")) == "true";
  if (mode == "auto") {
    mode = in_container ? "container_bridge" : "local";
    config.mode_source = in_container ? "PM_RUNNING_IN_CONTAINER" : "default";
  }
  config.mode = mode == "container_bridge" ? AdapterMode::kContainerBridge : AdapterMode::kLocal;

  if (absl::Status s = ReadMs(env, "PM_INTERACTIVE_TERMINAL_HOST_PORT", 1, 65535, &config.port);
      !s.ok()) {
    return config.mode == AdapterMode::kContainerBridge
               ? MakeError(ErrorCode::kInvalidMode, std::string(s.message()),
                           {{"field", "PM_INTERACTIVE_TERMINAL_HOST_PORT"}})
               : s;
  }
  if (absl::Status s = ReadMs(env, "PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS", 1, 600000,
                              &config.connect_timeout_ms);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadMs(env, "PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS", 1, 3600000,
                              &config.request_timeout_ms);
      !s.ok()) {
    return s;
  }
  std::string alias = Get(env, "PM_INTERACTIVE_TERMINAL_HOST_ALIAS");
  std::string fallback = Get(env, "PM_INTERACTIVE_TERMINAL_HOST_FALLBACK_ALIAS");
  if (config.mode == AdapterMode::kContainerBridge) {
    config.hosts.push_back(alias.empty() ? "host.containers.internal" : alias);
    config.hosts.push_back(fallback.empty() ? "host.docker.internal" : fallback);
    if (std::string gateway = DefaultGateway(); !gateway.empty()) config.hosts.push_back(gateway);
  } else {
    config.hosts.push_back(alias.empty() ? "127.0.0.1" : alias);
    if (!fallback.empty()) config.hosts.push_back(fallback);
  }
  config.tls_ca_file = Get(env, "TERMBRIDGE_BRIDGE_TLS_CA_FILE");
  config.tls_server_name = Get(env, "TERMBRIDGE_BRIDGE_TLS_SERVER_NAME");
  Found cert = Lookup(env, "TERMBRIDGE_BRIDGE_TLS_CERT_FILE");
  Found key = Lookup(env, "TERMBRIDGE_BRIDGE_TLS_KEY_FILE");
  config.tls_cert_file = cert.value;
  config.tls_key_file = key.value;
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return MakeError(ErrorCode::kInvalidPayload,
                     "TERMBRIDGE_BRIDGE_TLS_CERT_FILE and TERMBRIDGE_BRIDGE_TLS_KEY_FILE go "
                     "together",
                     {{"field", config.tls_cert_file.empty() ? cert.from : key.from}});
  }
  config.token_file = Get(env, "TERMBRIDGE_BRIDGE_TOKEN_FILE");
  if (config.mode == AdapterMode::kLocal) {
    std::string state = StateDir(env);
    config.state_dir = state;
    if (config.token_file.empty()) config.token_file = state + "/agent-token";
    config.launch = mode == "bundled" || Get(env, "TERMBRIDGE_BRIDGE_LAUNCH") == "1";
    config.broker_binary = Get(env, "PM_INTERACTIVE_TERMINAL_BINARY");
    if (!config.broker_binary.empty() && config.broker_binary.front() != '/') {
      return MakeError(
          ErrorCode::kInvalidPayload, "PM_INTERACTIVE_TERMINAL_BINARY must be an absolute path",
          {{"field", "PM_INTERACTIVE_TERMINAL_BINARY"}, {"value", config.broker_binary}});
    }
    if (absl::Status s =
            ReadMs(env, "TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS", 100, 30000, &config.spawn_timeout_ms);
        !s.ok()) {
      return s;
    }
    config.path_env = Get(env, "PATH");
  }
  if (config.token_file.empty()) {
    return MakeError(ErrorCode::kInvalidMode,
                     "container_bridge mode needs TERMBRIDGE_BRIDGE_TOKEN_FILE",
                     {{"field", "TERMBRIDGE_BRIDGE_TOKEN_FILE"}});
  }
  if (std::string id = Get(env, "TERMBRIDGE_AGENT_ID"); !id.empty()) config.agent_id = id;
  config.trace = Get(env, "PM_INTERACTIVE_TERMINAL_TRACE_BRIDGE") == "1";
  return config;
}

}  // namespace termbridge::bridge
