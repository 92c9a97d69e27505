// termbridge audit verify [FILE...]: checks the hash chain and the gap-free
// index of the broker's audit log (broker/audit/audit_verify.h) and says
// where it is broken. Reads the files directly, so it works with the broker
// stopped and on copies taken elsewhere; with no FILE it reads the live log in
// the state dir. Exit 0 when intact (warnings allowed), 1 when broken or
// unreadable, 2 for usage (docs/operating.md#audit-log).
#include <ostream>
#include <string>
#include <vector>

#include "broker/audit/audit_verify.h"
#include "broker/cli/cli_common.h"
#include "nlohmann/json.hpp"

namespace termbridge::cli {
namespace {

using nlohmann::json;

json FindingJson(const audit::AuditFinding& finding) {
  return {{"kind", finding.kind},
          {"file", finding.file},
          {"line", finding.line},
          {"index", finding.index},
          {"message", finding.message}};
}

json VerificationJson(const audit::AuditVerification& result) {
  json warnings = json::array();
  for (const audit::AuditFinding& warning : result.warnings)
    warnings.push_back(FindingJson(warning));
  return {{"intact", result.intact()},
          {"files", result.files},
          {"records", result.records},
          {"first_index", result.first_index},
          {"last_index", result.last_index},
          {"last_hash", result.last_hash},
          {"problem", result.problem ? FindingJson(*result.problem) : json(nullptr)},
          {"warnings", warnings},
          {"warnings_total", result.warnings_total}};
}

// "audit.jsonl line 7: " or "" for a finding about the files as a whole.
std::string Where(const audit::AuditFinding& finding) {
  if (finding.line == 0) return "";
  return finding.file + " line " + std::to_string(finding.line) + ": ";
}

void PrintText(const audit::AuditVerification& result, std::ostream& out) {
  const std::string files =
      result.files.size() == 1 ? result.files[0] : std::to_string(result.files.size()) + " files";
  if (result.problem) {
    out << "audit log BROKEN: " << result.problem->file << " line " << result.problem->line << ": "
        << result.problem->message << "\n"
        << "  (" << result.records << " records checked before it)\n";
  } else {
    out << "audit log intact: " << result.records << " records";
    if (result.records > 0) {
      out << " (index " << result.first_index << " to " << result.last_index << ")";
    }
    out << " in " << files << "\n";
    if (result.records > 0) {
      out << "  last record: index " << result.last_index << ", hash " << result.last_hash << "\n"
          << "  (keep this hash elsewhere: a later verify that does not reach it shows records "
             "removed from the end)\n";
    }
  }
  for (const audit::AuditFinding& warning : result.warnings) {
    out << "warning: " << Where(warning) << warning.message << "\n";
  }
  if (result.warnings_total > result.warnings.size()) {
    out << "warning: " << result.warnings_total - result.warnings.size() << " more warnings\n";
  }
}

}  // namespace

int AuditCommand(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
                 std::ostream& err) {
  if (args.size() < 2 || args[1] != "verify") {
    err << "usage: termbridge audit verify [FILE...]  (rotated files oldest first, the live "
           "log last; default "
        << options.state_dir << "/audit.jsonl)\n";
    return 2;
  }
  std::vector<std::string> files(args.begin() + 2, args.end());
  if (files.empty()) files.push_back(options.state_dir + "/audit.jsonl");
  absl::StatusOr<audit::AuditVerification> result = audit::VerifyAuditFiles(files);
  if (!result.ok()) {
    if (options.json) {
      out << json{{"intact", false},
                  {"files", files},
                  {"error", std::string(result.status().message())}}
                 .dump()
          << "\n";
    }
    err << "termbridge: " << result.status().message() << "\n";
    return 1;
  }
  if (options.json) {
    out << VerificationJson(*result).dump() << "\n";
  } else {
    PrintText(*result, out);
  }
  return result->intact() ? 0 : 1;
}

}  // namespace termbridge::cli
