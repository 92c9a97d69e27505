// Layered configuration for termbridge-broker: flags > environment > TOML > defaults.
#include "broker/server/broker_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "toml++/toml.h"

namespace termbridge::broker {
namespace {

// kAddresses: a list that the TOML file may also give as one string.
enum class Kind { kString, kInt, kList, kAddresses };

struct Setting {
  const char* key;
  Kind kind;
};

// Every setting, once. The environment variable is TERMBRIDGE_ + upper(key),
// the flag is --key (dashes or underscores), the TOML key is key.
constexpr Setting kSettings[] = {
    {"listen", Kind::kAddresses},
    {"operator_socket", Kind::kString},
    {"state_dir", Kind::kString},
    {"agent_token_file", Kind::kString},
    {"agent_tokens_dir", Kind::kString},
    {"shared_agent_name", Kind::kString},
    {"ready_file", Kind::kString},
    {"shell", Kind::kString},
    {"tls_cert", Kind::kString},
    {"tls_key", Kind::kString},
    {"tls_client_ca", Kind::kString},
    {"ring_bytes", Kind::kInt},
    {"record", Kind::kString},
    {"recording_max_terminal_bytes", Kind::kInt},
    {"recording_max_total_bytes", Kind::kInt},
    {"max_terminals_per_agent", Kind::kInt},
    {"max_terminals_total", Kind::kInt},
    {"max_input_bytes", Kind::kInt},
    {"idle_timeout_s", Kind::kInt},
    {"max_runtime_s", Kind::kInt},
    {"cwd_roots", Kind::kList},
    {"env_allow", Kind::kList},
    {"drain_ms", Kind::kInt},
    {"max_finished_sessions", Kind::kInt},
    {"policy", Kind::kString},
    {"approval_timeout_s", Kind::kInt},
    {"require_viewer", Kind::kString},
    {"spawn_timeout_ms", Kind::kInt},
    {"window_command", Kind::kString},
    {"notify", Kind::kString},
    {"console", Kind::kString},
    {"console_assets", Kind::kString},
    {"allow_in_container", Kind::kString},
    {"max_pending_approvals_per_agent", Kind::kInt},
    {"max_pending_proposals_per_agent", Kind::kInt},
    {"max_proposal_words", Kind::kInt},
    {"max_proposal_rule_bytes", Kind::kInt},
    {"max_proposal_reason_bytes", Kind::kInt},
};

const Setting* FindSetting(const std::string& key) {
  for (const Setting& s : kSettings) {
    if (key == s.key) return &s;
  }
  return nullptr;
}

std::string EnvName(const std::string& key) { return "TERMBRIDGE_" + absl::AsciiStrToUpper(key); }

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Reads the TOML file into key -> value strings (lists joined by ',').
absl::Status ReadToml(const std::string& path, std::map<std::string, std::string>* out) {
  // toml++ reports parse errors by exception; it stops here.
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", error.source().begin.line, ": ", std::string(error.description())));
  }
  for (const auto& [raw_key, node] : table) {
    std::string key(raw_key.str());
    std::string where = absl::StrCat(path, ":", node.source().begin.line, ": ", key);
    const Setting* setting = FindSetting(key);
    if (setting == nullptr) return absl::InvalidArgumentError(where + ": unknown setting");
    switch (setting->kind) {
      case Kind::kString:
        if (node.is_boolean()) {
          (*out)[key] = *node.value<bool>() ? "true" : "false";
          break;
        }
        if (!node.is_string()) return absl::InvalidArgumentError(where + ": must be a string");
        (*out)[key] = std::string(*node.value<std::string>());
        break;
      case Kind::kInt:
        if (!node.is_integer()) return absl::InvalidArgumentError(where + ": must be an integer");
        (*out)[key] = std::to_string(*node.value<int64_t>());
        break;
      case Kind::kAddresses:
        if (node.is_string()) {
          (*out)[key] = std::string(*node.value<std::string>());
          break;
        }
        [[fallthrough]];
      case Kind::kList: {
        const toml::array* array = node.as_array();
        if (array == nullptr) return absl::InvalidArgumentError(where + ": must be an array");
        std::vector<std::string> items;
        for (const toml::node& item : *array) {
          if (!item.is_string()) {
            return absl::InvalidArgumentError(where + ": items must be strings");
          }
          items.push_back(std::string(*item.value<std::string>()));
        }
        (*out)[key] = absl::StrJoin(items, ",");
        break;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ParseInt(const std::string& key, const std::string& value, int64_t min, int64_t max,
                      int64_t* out) {
  int64_t parsed;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min || parsed > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": '", value, "' must be an integer in [", min, ", ", max, "]"));
  }
  *out = parsed;
  return absl::OkStatus();
}

// true/1 or false/0; `fallback` when the setting is absent.
absl::Status ParseBool(const std::string& key, const std::optional<std::string>& value,
                       bool fallback, bool* out) {
  std::string text = value.value_or(fallback ? "true" : "false");
  if (text == "true" || text == "1") {
    *out = true;
  } else if (text == "false" || text == "0") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(key + ": '" + text + "' must be true or false");
  }
  return absl::OkStatus();
}

std::vector<std::string> SplitList(const std::string& value) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
    out.push_back(std::string(absl::StripAsciiWhitespace(part)));
  }
  return out;
}

// One agents' address: host:port (IPv6 in brackets), port 0 to 65535, and
// TLS unless it is loopback (docs/security.md). Errors name the address.
absl::Status CheckListenAddress(const std::string& address, bool tls) {
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  int port = -1;
  const bool bracketed = !host.empty() && host.front() == '[';
  if (host.empty() || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535 || bracketed != (host.back() == ']') ||
      (!bracketed && host.find(':') != std::string::npos)) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen: '", address,
                     "' must be host:port with a port from 0 to 65535 (IPv6 as [::1]:45459)"));
  }
  if (!IsLoopbackAddress(address) && !tls) {
    return absl::FailedPreconditionError(
        "refusing to listen on non-loopback address " + address +
        " without TLS: set tls_cert and tls_key (the agent token alone travels in clear text)");
  }
  return absl::OkStatus();
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::vector<std::string> SettingKeys() {
  std::vector<std::string> keys;
  for (const Setting& s : kSettings) keys.push_back(s.key);
  return keys;
}

std::vector<std::string> ContainerSigns(const EnvLookup& env, const std::string& root) {
  std::vector<std::string> signs;
  for (const char* marker : {"/run/.containerenv", "/.dockerenv"}) {
    if (FileExists(root + marker)) signs.push_back(absl::StrCat("file: ", marker));
  }
  if (auto value = env("container"); value) signs.push_back("environment: container=" + *value);
  std::ifstream cgroup(root + "/proc/1/cgroup");
  std::stringstream text;
  text << cgroup.rdbuf();
  for (const char* name : {"docker", "kubepods", "libpod", "containerd", "lxc"}) {
    if (text.str().find(name) != std::string::npos) {
      signs.push_back(absl::StrCat("/proc/1/cgroup: ", name));
      break;
    }
  }
  return signs;
}

absl::Status RefuseInContainer(const BrokerConfig& config, const std::vector<std::string>& signs) {
  if (signs.empty() || config.allow_in_container) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to run inside a container (", absl::StrJoin(signs, ", "),
      "): the broker belongs on the host, where a person sees its terminals; run it there, or "
      "force it with --allow-in-container (TERMBRIDGE_ALLOW_IN_CONTAINER=true) on a test rig"));
}

std::vector<std::string> JoinRepeatedFlag(const std::vector<std::string>& args,
                                          const std::string& name) {
  std::vector<std::string> out;
  std::vector<std::string> values;
  size_t first = 0;  // where the joined flag goes in `out`
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (i > 0 && arg == "--") flags_done = true;
    std::string spelled = arg;
    const size_t dashes = absl::StartsWith(arg, "--") ? 2 : absl::StartsWith(arg, "-") ? 1 : 0;
    const size_t equals = arg.find('=');
    for (size_t k = dashes; k < std::min(equals, arg.size()); ++k) {
      if (spelled[k] == '-') spelled[k] = '_';
    }
    const std::string flag_name =
        spelled.substr(dashes, equals == std::string::npos ? std::string::npos : equals - dashes);
    if (i == 0 || flags_done || dashes == 0 || flag_name != name) {
      out.push_back(arg);
      continue;
    }
    if (values.empty()) first = out.size();
    if (equals != std::string::npos) {
      values.push_back(arg.substr(equals + 1));
    } else if (i + 1 < args.size()) {
      values.push_back(args[++i]);
    } else {
      out.push_back(arg);  // no value: absl reports it
      continue;
    }
  }
  if (!values.empty()) {
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(first),
               absl::StrCat("--", name, "=", absl::StrJoin(values, ",")));
  }
  return out;
}

bool IsLoopbackAddress(const std::string& host_port) {
  std::string host = host_port.substr(0, host_port.rfind(':'));
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

absl::StatusOr<BrokerConfig> ResolveConfig(const std::map<std::string, std::string>& flags,
                                           const std::string& config_file, const EnvLookup& env) {
  for (const auto& [key, value] : flags) {
    if (FindSetting(key) == nullptr) return absl::InvalidArgumentError("unknown setting " + key);
  }
  BrokerConfig config;
  // The file: --config, else TERMBRIDGE_CONFIG, else the default path if present.
  std::string file = config_file;
  if (file.empty()) file = env("TERMBRIDGE_CONFIG").value_or("");
  std::string home = env("HOME").value_or("/tmp");
  if (file.empty()) {
    std::string xdg = env("XDG_CONFIG_HOME").value_or(home + "/.config");
    if (FileExists(xdg + "/termbridge/broker.toml")) file = xdg + "/termbridge/broker.toml";
  }
  std::map<std::string, std::string> from_file;
  if (!file.empty()) {
    if (!FileExists(file)) return absl::NotFoundError("config file not found: " + file);
    if (absl::Status s = ReadToml(file, &from_file); !s.ok()) return s;
    config.config_file = file;
  }
  auto lookup = [&](const std::string& key) -> std::optional<std::string> {
    if (auto it = flags.find(key); it != flags.end()) return it->second;
    if (auto value = env(EnvName(key)); value) return value;
    if (auto it = from_file.find(key); it != from_file.end()) return it->second;
    return std::nullopt;
  };
  auto str = [&](const char* key, std::string* out, const std::string& fallback) {
    *out = lookup(key).value_or(fallback);
  };
  std::string xdg_state = env("XDG_STATE_HOME").value_or(home + "/.local/state");
  config.listen = SplitList(lookup("listen").value_or("127.0.0.1:45459"));
  str("state_dir", &config.state_dir, xdg_state + "/termbridge");
  str("operator_socket", &config.operator_socket, config.state_dir + "/operator.sock");
  str("agent_token_file", &config.agent_token_file, "");
  str("agent_tokens_dir", &config.agent_tokens_dir, "");
  str("shared_agent_name", &config.shared_agent_name, "agent");
  str("ready_file", &config.ready_file, "");
  str("shell", &config.shell, "");
  str("tls_cert", &config.tls_cert, "");
  str("tls_key", &config.tls_key, "");
  str("tls_client_ca", &config.tls_client_ca, "");
  str("policy", &config.policy_file, config.state_dir + "/policy.toml");
  str("window_command", &config.window_command, "auto");
  str("notify", &config.notify, "auto");
  str("console", &config.console, "");
  str("console_assets", &config.console_assets, "");
  if (absl::Status s =
          ParseBool("require_viewer", lookup("require_viewer"), true, &config.require_viewer);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseBool("record", lookup("record"), true, &config.record); !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseBool("allow_in_container", lookup("allow_in_container"), false,
                                 &config.allow_in_container);
      !s.ok()) {
    return s;
  }
  struct IntSetting {
    const char* key;
    int64_t min, max;
    std::function<void(int64_t)> set;
  };
  const IntSetting ints[] = {
      {"ring_bytes", 4096, int64_t{1} << 30, [&](int64_t v) { config.ring_bytes = v; }},
      {"recording_max_terminal_bytes", 1 << 20, int64_t{1} << 40,
       [&](int64_t v) { config.recording_max_terminal_bytes = v; }},
      {"recording_max_total_bytes", 1 << 20, int64_t{1} << 44,
       [&](int64_t v) { config.recording_max_total_bytes = v; }},
      {"max_terminals_per_agent", 1, 4096,
       [&](int64_t v) { config.max_terminals_per_agent = static_cast<int>(v); }},
      {"max_terminals_total", 1, 65536,
       [&](int64_t v) { config.max_terminals_total = static_cast<int>(v); }},
      {"max_input_bytes", 1, 16 << 20,
       [&](int64_t v) { config.max_input_bytes = static_cast<uint32_t>(v); }},
      {"idle_timeout_s", 0, 30LL * 24 * 3600, [&](int64_t v) { config.idle_timeout_s = v; }},
      {"max_runtime_s", 0, 365LL * 24 * 3600, [&](int64_t v) { config.max_runtime_s = v; }},
      {"drain_ms", 0, 600000, [&](int64_t v) { config.drain_ms = v; }},
      {"max_finished_sessions", 1, 1 << 20,
       [&](int64_t v) { config.max_finished_sessions = static_cast<size_t>(v); }},
      {"approval_timeout_s", 1, 7LL * 24 * 3600, [&](int64_t v) { config.approval_timeout_s = v; }},
      // At most 30000 ms, as the agent's launch timeout (docs/configuration.md).
      {"spawn_timeout_ms", 100, 30000, [&](int64_t v) { config.spawn_timeout_ms = v; }},
      {"max_pending_approvals_per_agent", 1, 1024,
       [&](int64_t v) { config.max_pending_approvals_per_agent = v; }},
      {"max_pending_proposals_per_agent", 1, 1024,
       [&](int64_t v) { config.max_pending_proposals_per_agent = v; }},
      {"max_proposal_words", 1, 1024, [&](int64_t v) { config.max_proposal_words = v; }},
      {"max_proposal_rule_bytes", 1, 64 << 10,
       [&](int64_t v) { config.max_proposal_rule_bytes = v; }},
      {"max_proposal_reason_bytes", 0, 64 << 10,
       [&](int64_t v) { config.max_proposal_reason_bytes = v; }},
  };
  for (const IntSetting& setting : ints) {
    if (auto value = lookup(setting.key); value) {
      int64_t parsed = 0;
      if (absl::Status s = ParseInt(setting.key, *value, setting.min, setting.max, &parsed);
          !s.ok()) {
        return s;
      }
      setting.set(parsed);
    }
  }
  if (auto value = lookup("cwd_roots"); value) config.cwd_roots = SplitList(*value);
  if (auto value = lookup("env_allow"); value) config.env_allow = SplitList(*value);
  for (const std::string& root : config.cwd_roots) {
    if (root.empty() || root[0] != '/') {
      return absl::InvalidArgumentError("cwd_roots: '" + root + "' is not an absolute path");
    }
  }

  if (config.listen.empty()) {
    return absl::InvalidArgumentError("listen: no address given (host:port, comma-separated)");
  }
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key must be given together");
  }
  if (!config.tls_client_ca.empty() && config.tls_cert.empty()) {
    return absl::InvalidArgumentError("tls_client_ca (mTLS) needs tls_cert and tls_key");
  }
  for (size_t i = 0; i < config.listen.size(); ++i) {
    const std::string& address = config.listen[i];
    if (absl::Status s = CheckListenAddress(address, !config.tls_cert.empty()); !s.ok()) return s;
    for (size_t j = 0; j < i; ++j) {
      if (config.listen[j] == address && !absl::EndsWith(address, ":0")) {
        return absl::InvalidArgumentError("listen: '" + address + "' is given twice");
      }
    }
  }
  if (!config.console.empty() && !IsLoopbackAddress(config.console)) {
    // The console speaks plain HTTP and carries the operator token, which
    // can decide approvals: it stays on loopback. Reach it from elsewhere
    // through an SSH tunnel or a TLS reverse proxy on the host.
    return absl::FailedPreconditionError(
        "refusing to serve the web console on non-loopback address " + config.console +
        ": it is plain HTTP with the operator token; use an SSH tunnel or a TLS reverse proxy");
  }
  return config;
}

}  // namespace termbridge::broker
