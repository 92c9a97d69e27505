// termbridge agents add|list|revoke: the agents a broker knows by their
// credentials (docs/security.md "Agent identity").
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "broker/cli/cli_common.h"

namespace termbridge::cli {
namespace {

using nlohmann::json;

json AgentJson(const v1::AgentInfo& agent) {
  return {{"name", agent.name()},
          {"source", agent.source()},
          {"created_unix_ms", agent.created_unix_ms()},
          {"revoked", agent.revoked()},
          {"revoked_unix_ms", agent.revoked_unix_ms()},
          {"last_seen_unix_ms", agent.last_seen_unix_ms()},
          {"open_calls", agent.open_calls()}};
}

// Writes the token to a new file only the caller can read (never over an
// existing file: a token must not replace whatever was there).
bool WriteTokenFile(const std::string& path, const std::string& token, std::ostream& err) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    err << "termbridge: cannot create " << path << ": " << std::strerror(errno)
        << " (the token was issued; revoke it with `termbridge agents revoke` and try again)\n";
    return false;
  }
  std::string line = token + "\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ok = fsync(fd) == 0 && ok;
  close(fd);
  if (!ok) err << "termbridge: cannot write " << path << "\n";
  return ok;
}

int Add(const std::string& name, const CliOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::AddAgentRequest request;
  request.set_name(name);
  v1::AddAgentResponse response;
  grpc::Status status = stub->AddAgent(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  if (!options.token_file.empty()) {
    if (!WriteTokenFile(options.token_file, response.token(), err)) return 1;
    if (options.json) {
      out << json{{"name", response.name()}, {"token_file", options.token_file}}.dump() << "\n";
    } else {
      out << "agent " << response.name() << ": token written to " << options.token_file
          << " (0600)\n";
    }
    return 0;
  }
  if (options.json) {
    out << json{{"name", response.name()}, {"token", response.token()}}.dump() << "\n";
  } else {
    out << "agent " << response.name() << ": token (shown once, the broker keeps only its hash):\n"
        << response.token() << "\n";
  }
  return 0;
}

int List(const CliOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListAgentsResponse response;
  grpc::Status status = stub->ListAgents(&context, v1::ListAgentsRequest(), &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    json agents = json::array();
    for (const v1::AgentInfo& agent : response.agents()) agents.push_back(AgentJson(agent));
    out << json{{"agents", agents}}.dump() << "\n";
    return 0;
  }
  if (response.agents().empty()) {
    out << "no agents\n";
    return 0;
  }
  for (const v1::AgentInfo& agent : response.agents()) {
    out << agent.name() << "  " << agent.source() << "  "
        << (agent.revoked() ? absl::StrCat("revoked ", WhenText(agent.revoked_unix_ms()))
                            : std::string("active"))
        << "  last seen " << WhenText(agent.last_seen_unix_ms()) << "  open calls "
        << agent.open_calls() << "\n";
  }
  return 0;
}

int Revoke(const std::string& name, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::RevokeAgentRequest request;
  request.set_name(name);
  v1::RevokeAgentResponse response;
  grpc::Status status = stub->RevokeAgent(&context, request, &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    json result = AgentJson(response.agent());
    result["ended_calls"] = response.ended_calls();
    out << result.dump() << "\n";
  } else {
    out << "agent " << response.agent().name() << " revoked; " << response.ended_calls()
        << " open call(s) ended\n";
  }
  return 0;
}

}  // namespace

std::string WhenText(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms),
                          absl::LocalTimeZone());
}

int Agents(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  if (args.size() == 3 && args[1] == "add") return Add(args[2], options, out, err);
  if (args.size() == 2 && args[1] == "list") return List(options, out, err);
  if (args.size() == 3 && args[1] == "revoke") return Revoke(args[2], options, out, err);
  err << "usage: termbridge agents add NAME [--token-file FILE] | agents list | agents revoke "
         "NAME\n";
  return 2;
}

}  // namespace termbridge::cli
