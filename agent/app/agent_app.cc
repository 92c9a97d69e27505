// termbridge-agent's whole program: parses flags, resolves the bridge to the
// broker, wires the router into the MCP tools and serves MCP on stdio or
// Streamable HTTP. agent/main.cc calls it with no extra tools; the
// conformance test's agent (tests/conformance) adds its fixture tools, which
// the shipped binary never contains.
#include "agent/app/agent_app.h"

#include <malloc.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "agent/bridge/bridge_config.h"
#include "agent/lane/result_text.h"
#include "agent/lane/router.h"
#include "agent/mcp/http_token.h"
#include "agent/mcp/http_transport.h"
#include "agent/mcp/mcp_server.h"
#include "agent/mcp/stdio_transport.h"
#include "agent/mcp/terminal_tools.h"
#include "common/cli/flags.h"
#include "spdlog/cfg/env.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(
    std::string, http, "",
    "serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:45461)");
ABSL_FLAG(std::string, http_token_file, "",
          "require 'Authorization: Bearer <token>' on HTTP, with the token read from this file "
          "(default: <state dir>/agent-http-token, created with mode 0600 on first start)");
ABSL_FLAG(bool, http_no_auth, false,
          "serve HTTP without a bearer token: anyone on this machine may use the agent; "
          "refused unless --http listens on a loopback address");
ABSL_FLAG(std::vector<std::string>, allowed_origin, {},
          "browser Origins allowed besides loopback ones (comma-separated)");
ABSL_FLAG(std::string, ready_file, "", "write JSON with the bound HTTP address here once serving");
ABSL_FLAG(std::string, deprecation_phase, "",
          "legacy alias phase: A (accept), B (accept and warn), C (reject); default A, or env "
          "TERMBRIDGE_DEPRECATION_PHASE (the flag wins)");

namespace {

// The flag wins over the environment, as for every other setting. An unknown
// phase is refused: silently accepting legacy aliases is not what C means.
std::optional<termbridge::contract::DeprecationPhase> ParsePhase(std::string phase) {
  if (const char* env = std::getenv("TERMBRIDGE_DEPRECATION_PHASE"); phase.empty() && env) {
    phase = env;
  }
  if (phase.empty() || phase == "A" || phase == "a") {
    return termbridge::contract::DeprecationPhase::kA;
  }
  if (phase == "B" || phase == "b") return termbridge::contract::DeprecationPhase::kB;
  if (phase == "C" || phase == "c") return termbridge::contract::DeprecationPhase::kC;
  return std::nullopt;
}

// A terminal tool's MCP result: the canonical payload as structuredContent,
// and text written for a model (docs/CONTRACT.md, 'MCP wrapping').
// `arguments` is the call's: text_output false keeps the output out of the
// text (Normalize has refused a text_output that is not a boolean).
termbridge::mcp::ToolResult ModelReadable(termbridge::lane::RouterResult result,
                                          const nlohmann::json& arguments) {
  bool with_output = true;
  if (arguments.is_object()) {
    auto text_output = arguments.find("text_output");
    with_output =
        text_output == arguments.end() || !text_output->is_boolean() || text_output->get<bool>();
  }
  nlohmann::json content = nlohmann::json::array(
      {{{"type", "text"}, {"text", termbridge::lane::ResultText(result.response, with_output)}}});
  return termbridge::mcp::ToolResult{std::move(result.response), result.is_error,
                                     std::move(content)};
}

std::string ReadSecret(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return std::string(absl::StripAsciiWhitespace(buffer.str()));
}

// The HTTP bearer token: read from --http-token-file, or from the default
// file (created on first start), or none with --http-no-auth. Sets
// `token_file` to the file used ("" without one). Logs the file, never the
// token. Returns false after logging why the agent cannot start.
bool ResolveHttpToken(termbridge::mcp::HttpOptions* options, std::string* token_file) {
  std::string file = absl::GetFlag(FLAGS_http_token_file);
  if (absl::GetFlag(FLAGS_http_no_auth)) {
    if (!file.empty()) {
      spdlog::critical(
          "event=config_error --http-no-auth and --http-token-file exclude each other");
      return false;
    }
    spdlog::warn("event=http_auth mode=none listen={}: anyone who can connect may use this agent",
                 options->listen);
    return true;
  }
  bool created = false;
  if (file.empty()) {
    file = termbridge::bridge::DefaultHttpTokenFile(termbridge::bridge::ProcessEnv());
    absl::StatusOr<termbridge::mcp::HttpToken> token = termbridge::mcp::LoadOrCreateHttpToken(file);
    if (!token.ok()) {
      spdlog::critical("event=config_error HTTP token: {} (or give --http-token-file FILE)",
                       std::string(token.status().message()));
      return false;
    }
    options->bearer_token = token->token;
    created = token->created;
  } else {
    options->bearer_token = ReadSecret(file);
    if (options->bearer_token.empty()) {
      spdlog::critical("event=config_error http token file {} is empty or unreadable", file);
      return false;
    }
  }
  *token_file = file;
  spdlog::info("event=http_auth mode=bearer token_file={} created={}", file, created);
  return true;
}

// Serves MCP over HTTP until SIGTERM or SIGINT.
int ServeHttp(const std::function<std::unique_ptr<termbridge::mcp::McpServer>()>& make_server) {
  termbridge::mcp::HttpOptions options;
  options.listen = absl::GetFlag(FLAGS_http);
  options.allowed_origins = absl::GetFlag(FLAGS_allowed_origin);
  std::string token_file;
  if (!ResolveHttpToken(&options, &token_file)) return 2;
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto transport = termbridge::mcp::HttpTransport::Start(options, make_server);
  if (!transport.ok()) {
    spdlog::critical(
        "event=start_failed {}{}", transport.status().ToString(),
        options.bearer_token.empty() ? " (drop --http-no-auth to require a token)" : "");
    return options.bearer_token.empty() &&
                   transport.status().code() == absl::StatusCode::kInvalidArgument
               ? 2
               : 1;
  }
  std::string host = options.listen.substr(0, options.listen.rfind(':'));
  std::string url = "http://" + host + ":" + std::to_string((*transport)->port()) + "/mcp";
  spdlog::info("event=serving transport=http url={}", url);
  if (std::string ready = absl::GetFlag(FLAGS_ready_file); !ready.empty()) {
    std::string tmp = ready + ".tmp";
    nlohmann::json ready_json = {{"url", url}, {"port", (*transport)->port()}, {"pid", getpid()}};
    ready_json["token_file"] = token_file;  // "" with --http-no-auth
    std::ofstream(tmp) << ready_json.dump() << "\n";
    std::rename(tmp.c_str(), ready.c_str());
  }
  int signo = 0;
  sigwait(&stop_signals, &signo);
  spdlog::info("event=signal signo={}", signo);
  (*transport)->Stop();
  return 0;
}

// A page of output is a megabyte, held in several strings while a reply is
// built: glibc would map and unmap each (its mmap threshold starts at 128 KiB)
// and the agent fault in fresh pages for every page read, 40 % of its CPU
// (tests/bench/README.md, 'Throughput through MCP'). Below kMmapThresholdBytes
// allocations come from the heap, which keeps up to kTrimThresholdBytes free
// for the next reply, in at most two arenas (as the broker does,
// broker/server/process_tuning.cc).
bool KeepFreedMemoryForReuse() {
  constexpr int kMmapThresholdBytes = 32 << 20;
  constexpr int kTrimThresholdBytes = 16 << 20;
  constexpr int kArenaMax = 2;
  bool ok = mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1 && ok;
  return mallopt(M_ARENA_MAX, kArenaMax) == 1 && ok;
}

}  // namespace

namespace termbridge::app {

int RunAgent(int argc, char** argv, const ExtraTools& extra_tools) {
  absl::SetProgramUsageMessage(
      "termbridge-agent [flags]: MCP server on stdio, or on Streamable HTTP with --http");
  termbridge::cli::ParseFlags(argc, argv);
  // stdout belongs to MCP: every log line goes to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("agent"));
  spdlog::cfg::load_env_levels();
  std::signal(SIGPIPE, SIG_IGN);
  if (!KeepFreedMemoryForReuse()) {
    spdlog::warn("event=malloc_tuning_refused (large outputs will page-fault more)");
  }

  auto bridge_config = termbridge::bridge::ResolveBridgeConfig(termbridge::bridge::ProcessEnv());
  if (bridge_config.ok()) {
    std::string hosts;
    for (const auto& host : bridge_config->hosts) hosts += host + " ";
    spdlog::info(
        "event=bridge_config mode_source={} hosts=[{}] port={} connect_timeout_ms={} "
        "request_timeout_ms={} token_file={}",
        bridge_config->mode_source, hosts, bridge_config->port, bridge_config->connect_timeout_ms,
        bridge_config->request_timeout_ms, bridge_config->token_file);
  } else {
    spdlog::error("event=bridge_config_invalid {}", bridge_config.status().ToString());
  }
  termbridge::lane::RouterOptions options;
  std::optional<termbridge::contract::DeprecationPhase> phase =
      ParsePhase(absl::GetFlag(FLAGS_deprecation_phase));
  if (!phase) {
    spdlog::critical(
        "event=config_error deprecation phase must be A, B or C (--deprecation-phase "
        "or TERMBRIDGE_DEPRECATION_PHASE)");
    return 2;
  }
  options.phase = *phase;
  termbridge::lane::Router router(options, std::move(bridge_config));

  auto make_server = [&router, &extra_tools] {
    std::vector<termbridge::mcp::Tool> tools;
    tools.push_back(termbridge::mcp::InteractiveTerminalTool(
        [&router](const nlohmann::json& arguments, const termbridge::mcp::CallContext&) {
          return ModelReadable(router.Handle(arguments), arguments);
        }));
    tools.push_back(termbridge::mcp::HeadlessTerminalTool(
        [&router](const nlohmann::json& arguments, const termbridge::mcp::CallContext&) {
          return ModelReadable(router.HandleHeadlessTool(arguments), arguments);
        }));
    if (extra_tools) {
      for (auto& tool : extra_tools()) tools.push_back(std::move(tool));
    }
    return std::make_unique<termbridge::mcp::McpServer>("termbridge-agent", "0.1.0",
                                                        std::move(tools));
  };
  if (!absl::GetFlag(FLAGS_http).empty()) return ServeHttp(make_server);
  return termbridge::mcp::RunStdio(*make_server());
}

}  // namespace termbridge::app
