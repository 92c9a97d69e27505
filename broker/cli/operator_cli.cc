// termbridge CLI commands: list every session, close any terminal, and the
// dispatch to the other subcommands.
#include "broker/cli/operator_cli.h"

#include <cstdlib>
#include <iomanip>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "broker/cli/cli_common.h"
#include "common/text/visible.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::cli {

using nlohmann::json;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

json ExitJson(const v1::ExitInfo& exit) {
  json j = {{"running", exit.running()}};
  j["exit_code"] = exit.has_exit_code() ? json(exit.exit_code()) : json(nullptr);
  j["signal"] = exit.has_signal() ? json(exit.signal()) : json(nullptr);
  return j;
}

std::string StateText(const v1::ExitInfo& exit) {
  if (exit.running()) return "running";
  if (exit.has_signal()) return absl::StrCat("killed(", exit.signal(), ")");
  return absl::StrCat("exited(", exit.has_exit_code() ? exit.exit_code() : -1, ")");
}

int Fail(const grpc::Status& status, const CliOptions& options, std::ostream& err) {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    err << "termbridge: no broker on " << options.operator_socket << " (" << status.error_message()
        << "); is termbridge-broker running with this state dir?\n";
  } else {
    err << "termbridge: " << status.error_message() << "\n";
  }
  return 1;
}

std::unique_ptr<v1::TerminalOperator::Stub> Connect(const CliOptions& options) {
  return v1::TerminalOperator::NewStub(
      grpc::CreateChannel("unix:" + options.operator_socket, grpc::InsecureChannelCredentials()));
}

void SetDeadline(grpc::ClientContext* context, const CliOptions& options) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(options.timeout_ms)));
}

json SessionJson(const v1::SessionInfo& s) {
  json j = {{"session_id", s.session_id()},
            {"terminal_id", s.terminal_id()},
            {"agent_id", s.agent_id()},
            {"command", s.command()},
            {"cwd", s.cwd()},
            {"started_at_unix_ms", s.started_at_unix_ms()},
            {"output_bytes", s.output_bytes()},
            {"viewers", s.viewers()},
            {"ring_resident_bytes", s.ring_resident_bytes()},
            {"lock", s.lock().empty() ? "shared" : s.lock()},
            {"name", s.name()},
            {"person", s.person()},
            {"secret_prompt", s.secret_prompt()},
            {"exit", ExitJson(s.exit())}};
  j["last_exit_code"] = s.has_last_exit_code() ? json(s.last_exit_code()) : json(nullptr);
  if (s.has_approval()) {
    j["approval"] = {{"state", s.approval().state()},
                     {"approval_id", s.approval().approval_id()},
                     {"decided_by", s.approval().decided_by()}};
  }
  return j;
}

namespace {

constexpr char kCommands[] =
    "sessions, open, rename <terminal> <name>, hand <terminal> <agent|->, close <terminal>, lock "
    "<terminal> shared|user_only|agent_only, attach <terminal>, "
    "watch, approvals list|show|watch|approve|deny, agents add|list|revoke, "
    "policy show|check, audit verify [FILE...], recordings list|export <terminal>, replay "
    "<terminal>, doctor";

int Sessions(const CliOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListResponse response;
  grpc::Status status = stub->ListAll(&context, v1::ListRequest(), &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    json sessions = json::array();
    for (const auto& s : response.sessions()) sessions.push_back(SessionJson(s));
    json terminals = json::array();
    for (const auto& t : response.terminals()) terminals.push_back(SessionJson(t));
    json env = json::array();
    for (const auto& e : response.terminal_env()) env.push_back(e);
    out << json({{"sessions", sessions}, {"terminals", terminals}, {"terminal_env", env}}).dump(2)
        << "\n";
    return 0;
  }
  if (!response.terminal_env().empty()) {
    out << "agent terminals start with: "
        << text::Visible(absl::StrJoin(response.terminal_env(), " ")) << "\n";
  }
  PrintTerminals(response, out);
  if (response.sessions().empty()) {
    out << "no sessions\n";
    return 0;
  }
  out << "\n"
      << std::left << std::setw(30) << "TERMINAL" << std::setw(30) << "SESSION" << std::setw(12)
      << "AGENT" << std::setw(12) << "STATE"
      << "COMMAND\n";
  for (const auto& s : response.sessions()) {
    out << std::left << std::setw(30) << s.terminal_id() << std::setw(30) << s.session_id()
        << std::setw(12) << text::Visible(s.agent_id()) << std::setw(12) << StateText(s.exit())
        << text::Visible(s.command()) << "\n";
  }
  return 0;
}

int Close(const std::string& terminal_id, const CliOptions& options, std::ostream& out,
          std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::CloseTerminalRequest request;
  request.set_terminal_id(terminal_id);
  v1::CloseTerminalResponse response;
  grpc::Status status = stub->CloseTerminal(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    out << json({{"terminal_id", terminal_id}, {"exit", ExitJson(response.exit())}}).dump(2)
        << "\n";
  } else {
    out << "closed " << terminal_id << ": " << StateText(response.exit()) << "\n";
  }
  return 0;
}

int Lock(const std::string& terminal_id, const std::string& mode, const CliOptions& options,
         std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::SetLockRequest request;
  request.set_terminal_id(terminal_id);
  request.set_mode(mode);
  request.set_surface("cli");
  v1::SetLockResponse response;
  grpc::Status status = stub->SetLock(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    out << json({{"terminal_id", terminal_id}, {"lock", response.mode()}}).dump(2) << "\n";
  } else {
    out << terminal_id << " is " << response.mode() << "\n";
  }
  return 0;
}

}  // namespace

std::string ResolveStateDir(const std::string& state_dir) {
  std::string dir = state_dir;
  if (dir.empty()) dir = Env("TERMBRIDGE_STATE_DIR");
  if (dir.empty()) {
    std::string xdg = Env("XDG_STATE_HOME");
    dir = (xdg.empty() ? Env("HOME") + "/.local/state" : xdg) + "/termbridge";
  }
  return dir;
}

std::string ResolveOperatorSocket(const std::string& socket_flag, const std::string& state_dir) {
  if (!socket_flag.empty()) return socket_flag;
  if (std::string env = Env("TERMBRIDGE_OPERATOR_SOCKET"); !env.empty()) return env;
  return ResolveStateDir(state_dir) + "/operator.sock";
}

int RunCommand(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
               std::ostream& err) {
  if (args.empty()) {
    err << "usage: termbridge [--json] [--state-dir DIR] <command>; commands: " << kCommands
        << "\n";
    return 2;
  }
  if (args[0] == "sessions" && args.size() == 1) return Sessions(options, out, err);
  if (args[0] == "close" && args.size() == 2) return Close(args[1], options, out, err);
  if (args[0] == "open" || args[0] == "rename" || args[0] == "hand") {
    return Terminals(args, options, out, err);
  }
  if (args[0] == "lock" && args.size() == 3) return Lock(args[1], args[2], options, out, err);
  if (args[0] == "approvals") return Approvals(args, options, out, err);
  if (args[0] == "grants") return Approvals(args, options, out, err);  // approvals_cli.cc
  if (args[0] == "agents") return Agents(args, options, out, err);
  if (args[0] == "policy") return PolicyCommand(args, options, out, err);
  if (args[0] == "attach") return Attach(args, options, out, err);
  if (args[0] == "watch") return Watch(args, options, out, err);
  if (args[0] == "audit") return AuditCommand(args, options, out, err);
  if (args[0] == "recordings") return Recordings(args, options, out, err);
  if (args[0] == "replay") return Replay(args, options, out, err);
  if (args[0] == "doctor") return Doctor(args, options, out, err);
  err << "termbridge: unknown or incomplete command '" << args[0] << "'; commands: " << kCommands
      << "\n";
  return 2;
}

}  // namespace termbridge::cli
