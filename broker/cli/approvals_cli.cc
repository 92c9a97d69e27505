// termbridge approvals list|watch|approve|deny and policy show|check: the
// person's side of the approval queue and the host policy.
#include <limits.h>
#include <unistd.h>

#include <iomanip>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "broker/cli/cli_common.h"
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
          {"duplicates", a.duplicates()}};
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
  if (a.state().state() != "pending") {
    out << "    decided by " << Visible(a.state().decided_by()) << " (" << a.state().surface()
        << ")";
    if (!a.state().note().empty()) out << ": " << Visible(a.state().note());
    out << "\n";
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

int Decide(const std::string& approval_id, const std::string& decision, const CliOptions& options,
           std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DecideApprovalRequest request;
  request.set_approval_id(approval_id);
  request.set_decision(decision);
  request.set_note(options.note);
  request.set_approver(options.approver);
  request.set_surface("cli");
  v1::DecideApprovalResponse response;
  grpc::Status status = stub->DecideApproval(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    out << ApprovalJson(response.approval()).dump(2) << "\n";
  } else {
    out << (decision == "deny" ? "denied " : "approved ") << approval_id;
    if (decision != "deny") out << " (" << decision << ")";
    out << "\n";
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
    "[--scope once|terminal|always] | deny <id> [--note TEXT]";

}  // namespace

int Approvals(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
              std::ostream& err) {
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
  err << "usage: termbridge policy show | check [--lane headless] [--cwd DIR] <command line>\n";
  return 2;
}

}  // namespace termbridge::cli
