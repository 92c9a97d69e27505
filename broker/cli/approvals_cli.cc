// termbridge approvals list|watch|approve|deny, grants and policy
// show|check|replay: the person's side of the approval queue, the grants it
// gave, and the host policy.
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/cli/audit_history.h"
#include "broker/cli/cli_common.h"
#include "broker/cli/policy_replay.h"
#include "broker/server/broker_config.h"
#include "common/policy/policy.h"
#include "common/text/visible.h"

namespace termbridge::cli {
namespace {

using nlohmann::json;

// A command with no terminal yet runs in a new one, opened once approved.
bool NewTerminal(const v1::Approval& a) {
  return a.terminal_id().empty() && (a.kind().empty() || a.kind() == "command");
}

// Where the request came from and what asked: the rule and its reason.
std::string RuleText(const v1::Approval& a) {
  std::string rule = a.state().rule().empty() ? "default action" : "rule " + a.state().rule();
  return a.state().reason().empty() ? rule : rule + ": " + a.state().reason();
}

json ApprovalJson(const v1::Approval& a) {
  json env = json::object();
  for (const auto& [name, value] : a.env()) env[name] = value;
  return {{"approval_id", a.approval_id()},
          {"kind", a.kind()},
          {"command", a.command()},
          {"cwd", a.cwd()},
          {"env", env},
          {"lane", a.lane()},
          {"agent_id", a.agent_id()},
          {"terminal_id", a.terminal_id()},
          {"new_terminal", NewTerminal(a)},
          {"session_id", a.session_id()},
          {"trace_id", a.trace_id()},
          {"request_id", a.request_id()},
          {"state", a.state().state()},
          {"rule", a.state().rule()},
          {"reason", a.state().reason()},
          {"decided_by", a.state().decided_by()},
          {"surface", a.state().surface()},
          {"note", a.state().note()},
          {"scope", a.state().scope()},
          {"requested_at_unix_ms", a.requested_at_unix_ms()},
          {"expires_at_unix_ms", a.expires_at_unix_ms()},
          {"read_scope", std::vector<std::string>(a.read_scope().begin(), a.read_scope().end())},
          {"reads", std::vector<std::string>(a.reads().begin(), a.reads().end())},
          {"abridged", a.abridged()},
          {"duplicates", a.duplicates()},
          {"always_rules_toml", a.always_rules_toml()},
          {"always_refusal", a.always_refusal()},
          {"grant_expires_at_unix_ms", a.state().grant_expires_at_unix_ms()}};
}

// "1h 4m", "3m 20s", "12s": how long until `unix_ms`, from now.
std::string TimeLeft(int64_t unix_ms) {
  int64_t s = std::max<int64_t>((unix_ms - absl::ToUnixMillis(absl::Now()) + 999) / 1000, 0);
  if (s >= 86400) return absl::StrCat(s / 86400, "d ", (s % 86400) / 3600, "h");
  if (s >= 3600) return absl::StrCat(s / 3600, "h ", (s % 3600) / 60, "m");
  if (s >= 60) return absl::StrCat(s / 60, "m ", s % 60, "s");
  return absl::StrCat(s, "s");
}

// `text` (TOML a person reads) indented, each line made visible.
void PrintIndented(const std::string& text, const std::string& indent, std::ostream& out) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    out << indent << text::Visible(std::string(line)) << "\n";
  }
}

// Everything that will run, one item a line: the command, then where (cwd,
// environment, terminal), who asked (agent) and why (the rule). Every field
// an agent wrote goes through Visible: a command holding "\r\e[2K" must not
// print as the harmless text after it.
void PrintApproval(const v1::Approval& a, std::ostream& out) {
  using text::Visible;
  out << a.approval_id() << "  " << a.state().state() << "  " << a.kind() << "  agent "
      << Visible(a.agent_id());
  if (!a.terminal_id().empty()) out << "  terminal " << Visible(a.terminal_id());
  if (NewTerminal(a)) out << "  terminal (new)";
  out << "\n    " << Visible(a.command()) << "\n";
  if (!a.cwd().empty()) out << "    cwd " << Visible(a.cwd()) << "\n";
  if (!a.env().empty()) {
    std::vector<std::string> names;
    for (const auto& [name, value] : a.env()) names.push_back(Visible(name + "=" + value));
    out << "    env " << absl::StrJoin(names, " ") << "\n";
  }
  if (!a.reads().empty()) {
    out << "    reads " << Visible(absl::StrJoin(a.reads(), "  ")) << "\n";
    out << "    read scope " << Visible(absl::StrJoin(a.read_scope(), "  ")) << "\n";
  }
  out << "    policy: " << Visible(RuleText(a)) << "\n";
  if (a.duplicates() > 0) out << "    asked " << a.duplicates() + 1 << " times (merged)\n";
  if (a.abridged()) {
    out << "    (abridged to fit the list: termbridge approvals show " << a.approval_id()
        << " prints all of it)\n";
  }
  if (a.state().state() == "pending") {
    // What "always" would write, exactly, before anyone chooses it.
    if (!a.always_rules_toml().empty()) {
      out << "    always would write:\n";
      PrintIndented(a.always_rules_toml(), "      ", out);
    } else if (!a.always_refusal().empty()) {
      out << "    always: " << Visible(a.always_refusal()) << "\n";
    }
  }
  if (a.state().state() != "pending") {
    out << "    decided by " << Visible(a.state().decided_by()) << " (" << a.state().surface()
        << ")";
    if (!a.state().note().empty()) out << ": " << Visible(a.state().note());
    out << "\n";
    if (a.state().grant_expires_at_unix_ms() != 0) {
      out << "    " << a.state().scope() << " grant until "
          << WhenText(a.state().grant_expires_at_unix_ms()) << "\n";
    }
  } else {
    int64_t left_s = (a.expires_at_unix_ms() - absl::ToUnixMillis(absl::Now())) / 1000;
    out << "    expires in " << std::max<int64_t>(left_s, 0) << " s; trace " << a.trace_id()
        << "\n";
  }
}

// `approval_id` empty: the list (abridged by the broker); else that request, whole.
int List(const CliOptions& options, const std::string& approval_id, std::ostream& out,
         std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListApprovalsRequest request;
  request.set_include_decided(options.all);
  request.set_approval_id(approval_id);
  v1::ListApprovalsResponse response;
  grpc::Status status = stub->ListApprovals(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    json list = json::array();
    for (const auto& a : response.approvals()) list.push_back(ApprovalJson(a));
    if (!approval_id.empty() && !list.empty()) {
      out << list[0].dump(2) << "\n";
      return 0;
    }
    out << json({{"approvals", list}, {"omitted", response.omitted()}}).dump(2) << "\n";
    return 0;
  }
  if (response.approvals().empty()) out << "no pending approvals\n";
  for (const auto& a : response.approvals()) PrintApproval(a, out);
  if (response.omitted() > 0) {
    out << "(" << response.omitted()
        << " more not shown: the list is full; decide some and list again)\n";
  }
  return 0;
}

// Streams requests and decisions until interrupted (or, with --once, until
// the snapshot of pending requests has been printed).
int Watch(const CliOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  v1::ListApprovalsRequest request;
  auto reader = stub->WatchApprovals(&context, request);
  v1::ApprovalEvent event;
  while (reader->Read(&event)) {
    if (event.kind() == "snapshot_done") {
      if (options.once) {
        context.TryCancel();
        break;
      }
      // What was pending has been printed; every later line is live. A
      // script can start what it wants to watch once it has read this.
      if (options.json) {
        out << json({{"event", "live"}}).dump() << std::endl;
      } else {
        out << "-- watching for new requests and decisions (Ctrl-C stops) --" << std::endl;
      }
      continue;
    }
    if (options.json) {
      out << json({{"event", event.kind()}, {"approval", ApprovalJson(event.approval())}}).dump()
          << std::endl;
    } else {
      out << "[" << event.kind() << "] ";
      PrintApproval(event.approval(), out);
      out.flush();
    }
  }
  grpc::Status status = reader->Finish();
  if (!status.ok() && !(options.once && status.error_code() == grpc::StatusCode::CANCELLED)) {
    return Fail(status, options, err);
  }
  return 0;
}

// "90s", "15m", "2h", "1h30m", "3d" as seconds; InvalidArgument otherwise.
absl::StatusOr<uint32_t> ParseFor(const std::string& text) {
  absl::Duration d;
  double days = 0;
  absl::string_view number = text;
  if (absl::ConsumeSuffix(&number, "d") && absl::SimpleAtod(number, &days) && days > 0) {
    d = absl::Hours(24 * days);
  } else if (!absl::ParseDuration(text, &d)) {
    d = absl::ZeroDuration();
  }
  if (d < absl::Seconds(1) || d > absl::Hours(24 * 3650)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--for ", text, ": give a duration from 1s to 3650d (90s, 15m, 2h, 1h30m, 3d)"));
  }
  return static_cast<uint32_t>(absl::ToInt64Seconds(d));
}

// The file's text, or standard input's for "-".
absl::StatusOr<std::string> ReadRuleFile(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--rule ", path, ": cannot be read"));
  text << in.rdbuf();
  return text.str();
}

int Decide(const std::string& approval_id, const std::string& decision, const CliOptions& options,
           std::ostream& out, std::ostream& err) {
  v1::DecideApprovalRequest request;
  request.set_approval_id(approval_id);
  request.set_decision(decision);
  request.set_note(options.note);
  request.set_approver(options.approver);
  request.set_surface("cli");
  if (!options.grant_for.empty()) {
    absl::StatusOr<uint32_t> seconds = ParseFor(options.grant_for);
    if (!seconds.ok()) {
      err << "termbridge: " << seconds.status().message() << "\n";
      return 2;
    }
    request.set_expires_in_seconds(*seconds);
  }
  if (!options.rule_file.empty()) {
    absl::StatusOr<std::string> rules = ReadRuleFile(options.rule_file);
    if (!rules.ok()) {
      err << "termbridge: " << rules.status().message() << "\n";
      return 2;
    }
    request.set_rules_toml(*rules);
  }
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DecideApprovalResponse response;
  grpc::Status status = stub->DecideApproval(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  const v1::Approval& a = response.approval();
  if (options.json) {
    out << ApprovalJson(a).dump(2) << "\n";
    return 0;
  }
  out << (decision == "deny" ? "denied " : "approved ") << approval_id;
  if (decision != "deny") out << " (" << decision << ")";
  if (a.state().grant_expires_at_unix_ms() != 0) {
    out << " until " << WhenText(a.state().grant_expires_at_unix_ms()) << " ("
        << TimeLeft(a.state().grant_expires_at_unix_ms()) << ")";
  }
  out << "\n";
  if (decision == "always" && !a.always_rules_toml().empty()) {
    out << "wrote to the policy file:\n";
    PrintIndented(a.always_rules_toml(), "  ", out);
  }
  return 0;
}

json GrantJson(const v1::Grant& g) {
  json j = {{"kind", g.kind()},
            {"command", g.command()},
            {"terminal_id", g.terminal_id()},
            {"agent_id", g.agent_id()},
            {"granted_by", g.granted_by()},
            {"surface", g.surface()},
            {"granted_at_unix_ms", g.granted_at_unix_ms()},
            {"expires_at_unix_ms", g.expires_at_unix_ms()},
            {"rule_id", g.rule_id()}};
  j["seconds_left"] =
      g.expires_at_unix_ms() == 0
          ? json(nullptr)
          : json(std::max<int64_t>(
                (g.expires_at_unix_ms() - absl::ToUnixMillis(absl::Now())) / 1000, 0));
  return j;
}

// termbridge grants: terminal grants and expiring rules in force, time left.
int Grants(const CliOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListGrantsResponse response;
  grpc::Status status = stub->ListGrants(&context, v1::ListGrantsRequest(), &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    json grants = json::array();
    for (const v1::Grant& g : response.grants()) grants.push_back(GrantJson(g));
    out << json({{"grants", grants}}).dump(2) << "\n";
    return 0;
  }
  if (response.grants().empty()) {
    out << "no grants in force\n";
    return 0;
  }
  for (const v1::Grant& g : response.grants()) {
    std::string left = g.expires_at_unix_ms() == 0
                           ? std::string("until the terminal closes")
                           : absl::StrCat(TimeLeft(g.expires_at_unix_ms()), " left (until ",
                                          WhenText(g.expires_at_unix_ms()), ")");
    std::string by = g.granted_by().empty()
                         ? std::string("(written in the policy file)")
                         : absl::StrCat("by ", text::Visible(g.granted_by()), " via ", g.surface());
    if (g.kind() == "terminal") {
      out << "terminal " << text::Visible(g.terminal_id()) << "  agent "
          << text::Visible(g.agent_id()) << "  " << by << "  " << left << "\n";
      out << "    granted approving: " << text::Visible(g.command()) << "\n";
    } else {
      out << "rule " << text::Visible(g.rule_id()) << "  " << by << "  " << left << "\n";
      PrintIndented(g.command(), "    ", out);
    }
  }
  return 0;
}

// A JSON array of strings (or anything else) as one line.
std::string ListText(const json& value) {
  if (!value.is_array()) return value.dump();
  std::vector<std::string> items;
  for (const json& item : value) {
    items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  }
  return items.empty() ? std::string("(none)") : absl::StrJoin(items, "  ");
}

constexpr char kApprovalsUsage[] =
    "usage: termbridge approvals list [--all] | show <id> | watch [--once] | approve <id> "
    "[--scope once|terminal|always] [--for 1h] [--rule FILE|-] | deny <id> [--note TEXT]; "
    "termbridge grants";

// The broker's files as replay reads them: those of the running broker
// (GetBrokerInfo) or, with none answering, of the configuration as the
// broker (and `termbridge doctor`) resolves it; cwd_roots always from the
// configuration (the broker does not report them).
struct BrokerFiles {
  std::string policy_file;
  std::string audit_log;
  std::vector<std::string> cwd_roots;
  std::vector<std::string> protected_paths;  // as the broker protects them (broker_server.cc)
};

absl::StatusOr<BrokerFiles> FindBrokerFiles(const CliOptions& options) {
  BrokerFiles files;
  absl::StatusOr<broker::BrokerConfig> config =
      broker::ResolveConfig(options.broker_settings, options.config_file, broker::ProcessEnv());
  if (config.ok()) {
    files.policy_file = config->policy_file;
    files.audit_log = config->state_dir + "/audit.jsonl";
    files.cwd_roots = config->cwd_roots;
    files.protected_paths = {config->state_dir,
                             config->agent_token_file.empty() ? config->state_dir + "/agent-token"
                                                              : config->agent_token_file,
                             config->agent_tokens_dir,
                             files.audit_log,
                             config->policy_file,
                             config->operator_socket,
                             config->tls_cert,
                             config->tls_key,
                             config->tls_client_ca,
                             config->config_file};
  }
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::BrokerInfo info;
  grpc::Status status = stub->GetBrokerInfo(&context, v1::BrokerInfoRequest(), &info);
  if (status.ok()) {
    files.policy_file = info.policy_file();
    files.audit_log = info.audit_log();
    files.protected_paths = {info.state_dir(),  info.agent_token_file(), info.agent_tokens_dir(),
                             info.audit_log(),  info.policy_file(),      info.operator_socket(),
                             info.tls_cert(),   info.tls_key(),          info.tls_client_ca(),
                             info.config_file()};
  } else if (!config.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no broker answers (", status.error_message(),
                     ") and its configuration does not resolve: ", config.status().message()));
  }
  files.protected_paths.erase(
      std::remove(files.protected_paths.begin(), files.protected_paths.end(), ""),
      files.protected_paths.end());
  return files;
}

// policy replay [--policy FILE] [--since T] [--until T] [--agent A].
int PolicyReplay(const CliOptions& options, std::ostream& out, std::ostream& err) {
  replay::ReplayOptions replay_options;
  replay_options.agent = options.agent;
  const absl::Time now = absl::Now();
  for (auto [flag, text, slot] : {std::tuple{"since", &options.since, &replay_options.since},
                                  std::tuple{"until", &options.until, &replay_options.until}}) {
    if (text->empty()) continue;
    absl::StatusOr<absl::Time> when = history::ParseWhen(*text, now, flag);
    if (!when.ok()) {
      err << "termbridge: " << when.status().message() << "\n";
      return 2;
    }
    *slot = *when;
  }
  absl::StatusOr<BrokerFiles> broker_files = FindBrokerFiles(options);
  if (!broker_files.ok()) {
    err << "termbridge: " << broker_files.status().message() << "\n";
    return 1;
  }
  replay_options.cwd_roots = broker_files->cwd_roots;
  const bool candidate = !options.policy_file.empty();
  const std::string path = candidate ? options.policy_file : broker_files->policy_file;
  std::error_code ec;
  if (candidate && !std::filesystem::is_regular_file(path, ec)) {
    err << "termbridge: --policy " << text::Visible(path) << ": no such file\n";
    return 1;
  }
  policy::PolicyFile file(path);
  file.SetProtectedPaths(broker_files->protected_paths);
  if (absl::Status loaded = file.Load(); !loaded.ok()) {
    err << "termbridge: " << text::Visible(std::string(loaded.message())) << "\n";
    return 1;
  }
  std::string why_default;
  std::shared_ptr<const policy::Policy> policy = file.Current(&why_default);
  absl::StatusOr<std::vector<std::string>> audit_files =
      history::FindAuditFiles(broker_files->audit_log);
  if (!audit_files.ok()) {
    err << "termbridge: " << audit_files.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<history::AuditRecords> audit = history::ReadAuditRecords(*audit_files);
  if (!audit.ok()) {
    err << "termbridge: " << audit.status().message() << "\n";
    return 1;
  }
  if (audit->skipped_lines > 0) {
    err << "termbridge: warning: skipped " << audit->skipped_lines
        << " line(s) of the audit log that are not records\n";
  }
  replay::ReplayResult result = replay::Replay(audit->records, *policy, replay_options);
  const std::string shown_policy = why_default.empty() ? path : "(built-in: " + why_default + ")";
  if (options.json) {
    json j = replay::ResultJson(result);
    j["policy"] = shown_policy;
    j["candidate"] = candidate;
    j["audit_files"] = *audit_files;
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "judged again with " << (candidate ? "the candidate " : "the policy in force, ")
      << text::Visible(shown_policy) << "\n";
  replay::PrintResult(result, out);
  return 0;
}

}  // namespace

int Approvals(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
              std::ostream& err) {
  if (args.size() == 1 && args[0] == "grants") return Grants(options, out, err);
  if (args[0] == "grants") {
    err << "usage: termbridge [--json] grants\n";
    return 2;
  }
  if (args.size() == 2 && args[1] == "list") return List(options, "", out, err);
  if (args.size() == 3 && args[1] == "show") return List(options, args[2], out, err);
  if (args.size() == 2 && args[1] == "watch") return Watch(options, out, err);
  if (args.size() == 3 && args[1] == "approve") {
    std::string scope = options.scope.empty() ? "once" : options.scope;
    return Decide(args[2], scope, options, out, err);
  }
  if (args.size() == 3 && args[1] == "deny") return Decide(args[2], "deny", options, out, err);
  err << kApprovalsUsage << "\n";
  return 2;
}

int PolicyCommand(const std::vector<std::string>& args, const CliOptions& options,
                  std::ostream& out, std::ostream& err) {
  if (args.size() == 2 && args[1] == "replay") return PolicyReplay(options, out, err);
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  if (args.size() == 2 && args[1] == "show") {
    v1::GetPolicyResponse response;
    grpc::Status status = stub->GetPolicy(&context, v1::GetPolicyRequest(), &response);
    if (!status.ok()) return Fail(status, options, err);
    json policy = json::parse(response.policy_json(), nullptr, false);
    if (options.json) {
      out << json({{"path", response.path()},
                   {"generation", response.generation()},
                   {"last_error", response.last_error()},
                   {"policy", policy}})
                 .dump(2)
          << "\n";
      return 0;
    }
    out << "policy file: " << (response.path().empty() ? "(built-in)" : response.path())
        << "  generation " << response.generation() << "\n";
    if (!response.last_error().empty()) {
      out << "REJECTED newest file, previous policy in force: " << response.last_error() << "\n";
    }
    // Rules with a time limit: in force until then, kept in the file after.
    if (policy.is_object() && policy.contains("rules") && policy["rules"].is_array()) {
      for (const json& rule : policy["rules"]) {
        if (!rule.is_object() || !rule.contains("expires")) continue;
        out << (rule.value("expired", false) ? "EXPIRED (kept in the file, no longer applied) "
                                             : "expires ")
            << rule.value("expires", std::string()) << ": rule "
            << text::Visible(rule.value("id", std::string())) << "\n";
      }
    }
    out << policy.dump(2) << "\n";
    return 0;
  }
  if (args.size() >= 3 && args[1] == "check") {
    v1::CheckPolicyRequest request;
    std::vector<std::string> words(args.begin() + 2, args.end());
    request.set_command(absl::StrJoin(words, " "));
    request.set_lane(options.lane);
    std::string cwd = options.cwd;
    if (cwd.empty()) {
      if (char here[PATH_MAX]; getcwd(here, sizeof here) != nullptr) cwd = here;
    }
    request.set_cwd(cwd);
    v1::CheckPolicyResponse response;
    grpc::Status status = stub->CheckPolicy(&context, request, &response);
    if (!status.ok()) return Fail(status, options, err);
    json decision = json::parse(response.decision_json(), nullptr, false);
    if (options.json) {
      out << decision.dump(2) << "\n";
    } else {
      out << response.action() << ": " << decision.value("reason", std::string()) << "\n";
      // Where reads may go, what the line reads, and which read asked.
      if (decision.contains("read_scope")) {
        out << "  read scope: " << ListText(decision["read_scope"]) << "\n";
      }
      if (decision.contains("reads") && !decision["reads"].empty()) {
        out << "  reads: " << ListText(decision["reads"]) << "\n";
      }
      if (decision.value("read_blocker", std::string()) != "") {
        out << "  asks because of: " << decision.value("read_blocker", std::string()) << "\n";
      }
      if (decision.contains("commands")) {
        for (const json& command : decision["commands"]) {
          out << "  " << command.value("action", std::string()) << "  "
              << command.value("command", std::string()) << "  ("
              << command.value("rule_id", command.value("rule", std::string("default"))) << ")\n";
        }
      }
    }
    return 0;
  }
  err << "usage: termbridge policy show | check [--lane headless] [--cwd DIR] <command line> | "
         "replay [--policy FILE] [--since 2h] [--until T] [--agent A]\n";
  return 2;
}

}  // namespace termbridge::cli
