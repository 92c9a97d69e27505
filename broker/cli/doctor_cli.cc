// termbridge doctor [KEY=VALUE...]: everything a set-up needs, checked at
// once instead of one error at a time (docs/troubleshooting.md). The
// settings come from the broker's own resolution (ResolveConfig: --config,
// TERMBRIDGE_* and KEY=VALUE as its flags); when a broker answers on the
// operator socket, its GetBrokerInfo is what runs, and the checks look at
// that. The checks themselves are in doctor_checks.h. Prints one line per
// finding with its fix, or {"checks":[...],"ok":bool} with --json; exit 0
// when nothing failed, 1 otherwise, 2 for usage.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "broker/cli/cli_common.h"
#include "broker/cli/doctor_checks.h"
#include "broker/server/broker_config.h"

// The version comes unquoted from CMake (a quoted -D does not survive every
// tool that reads compile_commands.json, e.g. lint.thread_safety).
#define TB_DOCTOR_STRINGIFY2(x) #x
#define TB_DOCTOR_STRINGIFY(x) TB_DOCTOR_STRINGIFY2(x)
#ifdef TERMBRIDGE_VERSION_TOKEN
#define TERMBRIDGE_VERSION TB_DOCTOR_STRINGIFY(TERMBRIDGE_VERSION_TOKEN)
#else
#define TERMBRIDGE_VERSION "unknown"
#endif

namespace termbridge::cli {
namespace {

using doctor::Finding;
using doctor::Status;

// What the checks look at: the running broker's settings where it told
// them, else the resolved configuration's.
struct Setup {
  std::vector<std::string> listen;
  bool port_known = false;  // listen holds bound ports (a broker answered)
  std::string state_dir, operator_socket, policy_file, audit_log;
  std::string agent_token_file;  // "" = the default <state_dir>/agent-token
  std::string agent_tokens_dir;
  std::string tls_cert, tls_key, tls_client_ca;
  std::string console;
  std::string window_command = "auto";
  std::optional<std::string> broker_window_command;
  std::string broker_window_unavailable;
  bool require_viewer = true;
};

Setup FromConfig(const broker::BrokerConfig& config) {
  Setup setup;
  setup.listen = config.listen;
  setup.state_dir = config.state_dir;
  setup.operator_socket = config.operator_socket;
  setup.policy_file = config.policy_file;
  setup.audit_log = config.state_dir + "/audit.jsonl";
  setup.agent_token_file = config.agent_token_file;
  setup.agent_tokens_dir = config.agent_tokens_dir;
  setup.tls_cert = config.tls_cert;
  setup.tls_key = config.tls_key;
  setup.tls_client_ca = config.tls_client_ca;
  setup.console = config.console;
  setup.window_command = config.window_command;
  setup.require_viewer = config.require_viewer;
  return setup;
}

void ApplyBroker(const v1::BrokerInfo& info, Setup* setup) {
  setup->listen.assign(info.listen().begin(), info.listen().end());
  setup->port_known = true;
  setup->state_dir = info.state_dir();
  setup->operator_socket = info.operator_socket();
  setup->policy_file = info.policy_file();
  setup->audit_log = info.audit_log();
  setup->agent_token_file = info.agent_token_file();
  setup->agent_tokens_dir = info.agent_tokens_dir();
  setup->tls_cert = info.tls_cert();
  setup->tls_key = info.tls_key();
  setup->tls_client_ca = info.tls_client_ca();
  setup->console = info.console();
  setup->broker_window_command = info.window_command();
  setup->broker_window_unavailable = info.window_unavailable();
  setup->require_viewer = info.require_viewer();
}

std::string HostOf(const std::string& host_port) {
  return host_port.substr(0, host_port.rfind(':'));
}

// "a:0" in the configuration matches whatever port "a:N" was bound to.
bool SameAddress(const std::string& configured, const std::string& bound) {
  if (configured == bound) return true;
  return HostOf(configured) == HostOf(bound) && configured.substr(configured.rfind(':') + 1) == "0";
}

// Where the running broker differs from what this configuration resolves
// to: "listen 127.0.0.1:45459 (the broker: 127.0.0.1:40123)".
std::vector<std::string> Differences(const broker::BrokerConfig& config,
                                     const v1::BrokerInfo& info) {
  std::vector<std::string> out;
  auto differ = [&](const std::string& key, const std::string& configured,
                    const std::string& running) {
    if (configured != running) {
      out.push_back(absl::StrCat(key, " ", configured.empty() ? "(none)" : configured,
                                 " (the broker: ", running.empty() ? "(none)" : running, ")"));
    }
  };
  bool same_listen = static_cast<size_t>(info.listen_size()) == config.listen.size();
  for (size_t i = 0; same_listen && i < config.listen.size(); ++i) {
    same_listen = SameAddress(config.listen[i], info.listen(static_cast<int>(i)));
  }
  if (!same_listen) {
    differ("listen", absl::StrJoin(config.listen, ","), absl::StrJoin(info.listen(), ","));
  }
  differ("config file", config.config_file, info.config_file());
  differ("policy", config.policy_file, info.policy_file());
  differ("tls_cert", config.tls_cert, info.tls_cert());
  if (config.console.empty() != info.console().empty() ||
      (!config.console.empty() && !SameAddress(config.console, info.console()))) {
    differ("console", config.console, info.console());
  }
  const std::string token_file =
      config.agent_token_file.empty() ? config.state_dir + "/agent-token" : config.agent_token_file;
  differ("agent_token_file", token_file, info.agent_token_file());
  differ("agent_tokens_dir", config.agent_tokens_dir, info.agent_tokens_dir());
  const bool windows_off_here = config.window_command == "none";
  const bool windows_off_there =
      info.window_unavailable().find("window_command = none") != std::string::npos;
  if (windows_off_here != windows_off_there) {
    differ("window_command", config.window_command, windows_off_there ? "none" : "on");
  }
  if (config.require_viewer != info.require_viewer()) {
    differ("require_viewer", config.require_viewer ? "true" : "false",
           info.require_viewer() ? "true" : "false");
  }
  return out;
}

struct BrokerAnswer {
  std::optional<v1::BrokerInfo> info;
  Finding finding;
};

BrokerAnswer AskBroker(const std::string& socket, const CliOptions& options) {
  BrokerAnswer answer;
  answer.finding.id = "broker";
  const std::string start_fix =
      "start it (`systemctl --user start termbridge-broker`, deploy/up.sh, or "
      "termbridge-broker in a terminal); if it runs with another state dir, give doctor "
      "--state-dir DIR or --operator-socket PATH";
  struct stat st;
  if (lstat(socket.c_str(), &st) != 0) {
    answer.finding.status = Status::kFail;
    answer.finding.message = absl::StrCat("no broker: ", socket, " does not exist");
    answer.finding.fix = start_fix;
    return answer;
  }
  CliOptions call = options;
  call.operator_socket = socket;
  call.timeout_ms = std::min(options.timeout_ms, 5000);
  auto stub = Connect(call);
  grpc::ClientContext context;
  SetDeadline(&context, call);
  v1::BrokerInfo info;
  grpc::Status status = stub->GetBrokerInfo(&context, v1::BrokerInfoRequest(), &info);
  if (status.ok()) {
    answer.info = info;
    const std::string cli_version = TERMBRIDGE_VERSION;
    std::string message = absl::StrCat(
        "termbridge-broker ", info.broker_version(), " (protocol ", info.protocol_version(),
        ", instance ", info.broker_instance_id(), ", pid ", info.pid(), ") answers on ", socket,
        "; agents at ", absl::StrJoin(info.listen(), ", "));
    if (info.protocol_version() != v1::PROTOCOL_VERSION_CURRENT ||
        info.broker_version() != cli_version) {
      answer.finding = {"broker", Status::kWarn,
                        absl::StrCat(message, "; this termbridge is ", cli_version, " (protocol ",
                                     static_cast<int>(v1::PROTOCOL_VERSION_CURRENT), ")"),
                        "run the broker and the CLI of one release: restart the broker after an "
                        "upgrade"};
    } else {
      answer.finding = {"broker", Status::kOk, message, ""};
    }
    return answer;
  }
  answer.finding.status = Status::kFail;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      answer.finding.message =
          absl::StrCat("no broker answers on ", socket,
                       S_ISSOCK(st.st_mode) ? " (a socket left by a broker that stopped?)" : "",
                       ": ", status.error_message());
      answer.finding.fix = start_fix;
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      answer.finding.message =
          absl::StrCat("the broker on ", socket, " did not answer within ", call.timeout_ms, " ms");
      answer.finding.fix =
          "it is stopped (SIGSTOP) or stuck: `kill -CONT` it, or restart it and look at its log";
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      answer.finding.status = Status::kWarn;
      answer.finding.message =
          absl::StrCat("a broker answers on ", socket, " but is older than this termbridge (",
                       TERMBRIDGE_VERSION, "): its version and settings are unknown");
      answer.finding.fix = "restart it from this release";
      break;
    default:
      answer.finding.message = absl::StrCat("the broker on ", socket, ": ", status.error_message());
      answer.finding.fix = "look at the broker's log";
  }
  return answer;
}

Finding ConfigFinding(const absl::StatusOr<broker::BrokerConfig>& config,
                      const std::optional<v1::BrokerInfo>& info, const CliOptions& options) {
  if (!config.ok()) {
    return {"config", Status::kFail,
            absl::StrCat("the broker's settings do not resolve: ", config.status().message()),
            "fix that setting (docs/configuration.md#broker); a broker with these settings "
            "refuses to start"};
  }
  std::string source = config->config_file.empty()
                           ? std::string("defaults and TERMBRIDGE_* variables, no config file")
                           : absl::StrCat("config file ", config->config_file);
  std::vector<std::string> notes;
  if (options.broker_settings.count("operator_socket") == 0 &&
      config->operator_socket != options.operator_socket) {
    notes.push_back(absl::StrCat("the broker's socket is ", config->operator_socket,
                                 " but other termbridge commands look at ", options.operator_socket,
                                 " unless given --state-dir ", config->state_dir));
  }
  if (info) {
    std::vector<std::string> differences = Differences(*config, *info);
    if (!differences.empty()) {
      return {"config", Status::kWarn,
              absl::StrCat("the running broker was started with other settings than doctor "
                           "resolves (from ",
                           source, "): ", absl::StrJoin(differences, "; "),
                           "; the checks below look at the running broker"),
              "give doctor the broker's flags as KEY=VALUE (e.g. listen=0.0.0.0:45459), or "
              "restart the broker with this configuration"};
    }
  }
  if (!notes.empty()) {
    return {"config", Status::kWarn, absl::StrCat(source, "; ", absl::StrJoin(notes, "; ")),
            absl::StrCat("export TERMBRIDGE_STATE_DIR=", config->state_dir,
                         " (or pass --state-dir) for termbridge")};
  }
  return {"config", Status::kOk, absl::StrCat("settings resolve (", source, ")"), ""};
}

Finding OperatorSocketMode(const std::string& socket) {
  struct stat st;
  if (lstat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return {"credentials.operator_socket", Status::kOk,
            absl::StrCat("operator socket ", socket, " is not there (made 0600 by the broker)"),
            ""};
  }
  if ((st.st_mode & 077) != 0) {
    return {"credentials.operator_socket", Status::kWarn,
            absl::StrCat("operator socket ", socket,
                         " is open to group or others: they could "
                         "decide approvals and type into terminals"),
            absl::StrCat("chmod 600 ", socket, " (the broker makes it so; restart it)")};
  }
  return {"credentials.operator_socket", Status::kOk,
          absl::StrCat("operator socket ", socket, " is 0600"), ""};
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path == nullptr ? "" : path, ':', absl::SkipEmpty())) {
    if (access(absl::StrCat(dir, "/", program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

int Doctor(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  std::map<std::string, std::string> settings = options.broker_settings;
  for (size_t i = 1; i < args.size(); ++i) {
    size_t equals = args[i].find('=');
    if (equals == std::string::npos || equals == 0) {
      err << "usage: termbridge doctor [--json] [--config FILE] [--tls-name NAME,...] "
             "[--probe-container] [KEY=VALUE...]  (KEY=VALUE: a broker setting as its flag "
             "gives it, e.g. listen=0.0.0.0:45459)\n";
      return 2;
    }
    settings[absl::StrReplaceAll(args[i].substr(0, equals), {{"-", "_"}})] =
        args[i].substr(equals + 1);
  }
  absl::StatusOr<broker::BrokerConfig> config =
      broker::ResolveConfig(settings, options.config_file, broker::ProcessEnv());

  std::vector<Finding> findings;
  const std::string socket = config.ok() ? config->operator_socket : options.operator_socket;
  BrokerAnswer answer = AskBroker(socket, options);
  findings.push_back(answer.finding);
  findings.push_back(ConfigFinding(config, answer.info, options));

  Setup setup;
  if (config.ok()) setup = FromConfig(*config);
  if (answer.info) ApplyBroker(*answer.info, &setup);
  const bool known = config.ok() || answer.info.has_value();

  if (known) {
    findings.push_back(doctor::CheckStateDir(setup.state_dir));
    doctor::SecretFileRules token_rules;
    token_rules.token = true;
    std::string token_file = setup.agent_token_file;
    const bool default_token = token_file.empty() || token_file == setup.state_dir + "/agent-token";
    if (token_file.empty()) token_file = setup.state_dir + "/agent-token";
    // An explicit file must exist; one made with deploy/make-credentials.sh
    // is 0644 in a 0700 directory on purpose (a container's user reads it).
    token_rules.required = !default_token;
    token_rules.readable_in_private_dir = !default_token;
    findings.push_back(doctor::CheckSecretFile("credentials.agent_token", "agent token file",
                                               token_file, token_rules));
    findings.push_back(doctor::CheckAgentTokensDir(setup.agent_tokens_dir));
    doctor::SecretFileRules operator_rules;
    operator_rules.token = true;
    findings.push_back(doctor::CheckSecretFile("credentials.operator_token", "operator token",
                                               setup.state_dir + "/operator-token",
                                               operator_rules));
    findings.push_back(OperatorSocketMode(setup.operator_socket));
    findings.push_back(doctor::CheckPolicyFile(setup.policy_file));
    for (Finding& f : doctor::CheckAuditLog(setup.audit_log)) findings.push_back(std::move(f));

    doctor::ViewerInputs viewer;
    viewer.broker_window_command = setup.broker_window_command;
    viewer.broker_window_unavailable = setup.broker_window_unavailable;
    viewer.window_command = setup.window_command;
    viewer.state_dir = setup.state_dir;
    viewer.console = setup.console;
    viewer.broker_running = answer.info.has_value();
    viewer.console_answers = answer.info && !setup.console.empty() &&
                             doctor::TcpProbe(setup.console, absl::Seconds(2)).ok();
    viewer.require_viewer = setup.require_viewer;
    for (Finding& f : doctor::CheckViewer(viewer)) findings.push_back(std::move(f));

    doctor::ProgramRunner run = [](const std::vector<std::string>& argv) {
      return doctor::RunProgram(
          argv, argv.size() > 1 && argv[1] == "run" ? absl::Seconds(90) : absl::Seconds(15));
    };
    doctor::ContainerTools tools = doctor::DiscoverContainerTools(run, OnPath);
    findings.push_back(doctor::CheckContainerReach(
        setup.listen, setup.port_known, tools, [](const std::string& target) {
          std::string ip = target.substr(0, target.rfind(':'));
          if (ip.size() > 2 && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
          if (!doctor::IsLocalAddress(ip)) return absl::FailedPreconditionError("not here");
          return doctor::TcpProbe(target, absl::Seconds(2));
        }));
    if (options.probe_container) {
      if (!answer.info || setup.listen.empty()) {
        findings.push_back({"container_reach.probe", Status::kWarn,
                            "not probed: no broker answers, so its port is unknown",
                            "start the broker, then run doctor --probe-container again"});
      } else {
        const std::string& first = setup.listen.front();
        findings.push_back(
            doctor::ProbeFromContainer(first.substr(first.rfind(':') + 1), tools, run));
      }
    }

    doctor::TlsInputs tls;
    tls.cert = setup.tls_cert;
    tls.key = setup.tls_key;
    tls.client_ca = setup.tls_client_ca;
    tls.names = doctor::TlsNamesFor(setup.listen, !tools.present.empty(), options.tls_names);
    for (Finding& f : doctor::CheckTls(tls)) findings.push_back(std::move(f));
  }

  if (options.json) {
    out << doctor::ReportJson(findings).dump(2) << "\n";
  } else {
    out << doctor::ReportText(findings);
    size_t failed = 0, warned = 0;
    for (const Finding& f : findings) {
      failed += f.status == Status::kFail;
      warned += f.status == Status::kWarn;
    }
    out << (failed == 0 ? "no check failed" : absl::StrCat(failed, " check(s) failed")) << ", "
        << warned << " warning(s)\n";
  }
  return doctor::AnyFailed(findings) ? 1 : 0;
}

}  // namespace termbridge::cli
