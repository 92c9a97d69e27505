// termbridge open, rename and hand: a person's own terminals (docs/operating.md,
// "Your own terminals"), and the terminal table `termbridge sessions` prints.
#include <unistd.h>

#include <climits>
#include <iomanip>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "broker/cli/cli_common.h"
#include "common/text/visible.h"
#include "nlohmann/json.hpp"

namespace termbridge::cli {

using nlohmann::json;

namespace {

// Who the terminal is for: its agent, or the person who opened it.
std::string Holder(const v1::SessionInfo& t) {
  if (!t.person().empty() && t.agent_id().empty()) return "person " + t.person();
  if (!t.person().empty()) return t.agent_id() + " (from " + t.person() + ")";
  return t.agent_id();
}

void PrintChanged(const char* verb, const v1::SessionInfo& t, const CliOptions& options,
                  std::ostream& out) {
  if (options.json) {
    out << SessionJson(t).dump(2) << "\n";
    return;
  }
  out << verb << " " << text::Visible(t.name()) << " (" << t.terminal_id() << ") for "
      << text::Visible(Holder(t)) << "\n";
}

// One change to a terminal: `request` (filled in with who asks, from the
// CLI) sent with `rpc`; prints the terminal it answers with as `verb` says.
// Returns the exit code, 0 when it changed.
template <typename Request, typename Response>
int Change(grpc::Status (v1::TerminalOperator::Stub::*rpc)(grpc::ClientContext*, const Request&,
                                                           Response*),
           Request request, const char* verb, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  request.set_by(options.approver);
  request.set_surface("cli");
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  Response response;
  grpc::Status status = ((*stub).*rpc)(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  PrintChanged(verb, response.terminal(), options, out);
  if (std::is_same_v<Response, v1::OpenTerminalResponse> && !options.json) {
    out << "attach: termbridge attach " << response.terminal().terminal_id()
        << "   give it to an agent: termbridge hand " << response.terminal().terminal_id()
        << " <agent>\n";
  }
  return 0;
}

int Open(const CliOptions& options, std::ostream& out, std::ostream& err) {
  v1::OpenTerminalRequest request;
  request.set_name(options.name);
  std::string cwd = options.cwd;
  if (cwd.empty()) {  // where the person is
    if (char here[PATH_MAX]; getcwd(here, sizeof here) != nullptr) cwd = here;
  }
  request.set_cwd(cwd);
  return Change(&v1::TerminalOperator::Stub::OpenTerminal, std::move(request), "opened", options,
                out, err);
}

int Rename(const std::string& terminal_id, const std::string& name, const CliOptions& options,
           std::ostream& out, std::ostream& err) {
  v1::RenameTerminalRequest request;
  request.set_terminal_id(terminal_id);
  request.set_name(name);
  return Change(&v1::TerminalOperator::Stub::RenameTerminal, std::move(request), "named", options,
                out, err);
}

int Hand(const std::string& terminal_id, const std::string& agent, const CliOptions& options,
         std::ostream& out, std::ostream& err) {
  v1::HandOverTerminalRequest request;
  request.set_terminal_id(terminal_id);
  request.set_agent_id(agent == "-" ? "" : agent);
  return Change(&v1::TerminalOperator::Stub::HandOverTerminal, std::move(request),
                agent == "-" ? "took back" : "handed", options, out, err);
}

}  // namespace

std::string TerminalStatusLine(const v1::SessionInfo& t) {
  // Text an agent chose shows '|' as U+00A6: it cannot pose as a field of its own.
  auto shown = [](const std::string& text) {
    return absl::StrReplaceAll(text::Visible(text), {{"|", "\u00a6"}});
  };
  std::string state = StateText(t.exit());
  if (t.exit().running() && t.secret_prompt()) state = "waiting for a person to type a secret";
  // The name in quotes (one inside as \"): look-alike separators in it
  // stay inside the name.
  std::string line = absl::StrCat(
      "\"",
      absl::StrReplaceAll(shown(t.name().empty() ? t.terminal_id() : t.name()), {{"\"", "\\\""}}),
      "\"");
  const std::string holder = Holder(t);
  if (!holder.empty()) absl::StrAppend(&line, " | for ", shown(holder));
  absl::StrAppend(&line, " | ", state, " | lock ", t.lock().empty() ? "shared" : t.lock());
  if (t.has_last_exit_code()) absl::StrAppend(&line, " | last exit ", t.last_exit_code());
  if (!t.cwd().empty()) absl::StrAppend(&line, " | ", shown(t.cwd()));
  return line;
}

void PrintTerminals(const v1::ListResponse& response, std::ostream& out) {
  if (response.terminals().empty()) return;
  // Each column ends with two spaces, whatever its width: a long name (or
  // holder) never runs into the column after it, the id most of all.
  auto cell = [&out](const std::string& text, int width) {
    out << std::left << std::setw(width) << text << "  ";
  };
  cell("NAME", 22);
  cell("TERMINAL", 28);
  cell("FOR", 16);
  cell("STATE", 13);
  cell("LOCK", 10);
  cell("LAST", 4);
  out << "CWD\n";
  for (const v1::SessionInfo& t : response.terminals()) {
    std::string state = StateText(t.exit());
    if (t.exit().running() && t.secret_prompt()) state = "secret-prompt";
    cell(text::Visible(t.name()), 22);
    cell(t.terminal_id(), 28);
    cell(text::Visible(Holder(t)), 16);
    cell(state, 13);
    cell(t.lock().empty() ? "shared" : t.lock(), 10);
    cell(t.has_last_exit_code() ? std::to_string(t.last_exit_code()) : "-", 4);
    out << text::Visible(t.cwd()) << "\n";
  }
  for (const v1::SessionInfo& t : response.terminals()) {
    if (t.exit().running() && t.secret_prompt()) {
      out << text::Visible(t.name())
          << ": waiting for a person to type a secret (termbridge attach " << t.terminal_id()
          << ")\n";
    }
  }
}

int Terminals(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
              std::ostream& err) {
  if (args[0] == "open" && args.size() == 1) return Open(options, out, err);
  if (args[0] == "rename" && args.size() == 3) return Rename(args[1], args[2], options, out, err);
  if (args[0] == "hand" && args.size() == 3) return Hand(args[1], args[2], options, out, err);
  err << "usage: termbridge open [--name N] [--cwd DIR] | rename <terminal> <name> | hand "
         "<terminal> <agent|->\n";
  return 2;
}

}  // namespace termbridge::cli
