// What the termbridge CLI's commands share: the operator channel, deadlines,
// error printing and the JSON shapes of exits and sessions.
#ifndef TERMBRIDGE_BROKER_CLI_CLI_COMMON_H_
#define TERMBRIDGE_BROKER_CLI_CLI_COMMON_H_

#include <memory>
#include <ostream>
#include <string>

#include "broker/cli/operator_cli.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::cli {

std::unique_ptr<v1::TerminalOperator::Stub> Connect(const CliOptions& options);
void SetDeadline(grpc::ClientContext* context, const CliOptions& options);
// Prints a failed call for a person (naming the socket when no broker
// answers) and returns exit code 1.
int Fail(const grpc::Status& status, const CliOptions& options, std::ostream& err);
nlohmann::json ExitJson(const v1::ExitInfo& exit);
std::string StateText(const v1::ExitInfo& exit);
nlohmann::json SessionJson(const v1::SessionInfo& session);
// A Unix time in ms as local "YYYY-MM-DD HH:MM:SS", "-" for 0 (agents_cli.cc).
std::string WhenText(int64_t unix_ms);

// Subcommands in their own files.
int Approvals(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
              std::ostream& err);
int PolicyCommand(const std::vector<std::string>& args, const CliOptions& options,
                  std::ostream& out, std::ostream& err);
int Agents(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err);
// recordings list|export and replay (recordings_cli.cc).
int Recordings(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
               std::ostream& err);
int Replay(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err);
// audit verify [FILE...] (audit_cli.cc): reads the files, not the broker.
int AuditCommand(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
                 std::ostream& err);
// doctor [KEY=VALUE...] (doctor_cli.cc): checks the set-up, each finding with its fix.
int Doctor(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err);
// open, rename <terminal> <name>, hand <terminal> <agent|-> (terminals_cli.cc).
int Terminals(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
              std::ostream& err);
// The terminal table of `termbridge sessions` (terminals_cli.cc).
void PrintTerminals(const v1::ListResponse& response, std::ostream& out);
// One line a person reads about a terminal: name (its id when it has none),
// who holds it, state, lock, last exit code, cwd; agent text made visible.
std::string TerminalStatusLine(const v1::SessionInfo& terminal);
// attach <terminal> (attach_cli.cc) and watch (watch_cli.cc).
int Attach(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err);
int Watch(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
          std::ostream& err);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_CLI_COMMON_H_
