// Reads the audit log's files and joins its records into decisions and
// terminal timelines (audit_history.h). The field names are those the broker
// writes: broker/core/command_gate.cc (policy_decided, command_started,
// command_refused), broker/approval/approval_queue.cc (approval_*),
// broker/core/terminal_registry.cc (terminal_*, command_exited) and
// broker/service (command_requested, input_*, lock_changed).
#include "broker/cli/audit_history.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "broker/audit/audit_log.h"

namespace termbridge::cli::history {
namespace {

using nlohmann::json;

// The string at `key`, "" when absent or not a string.
std::string Str(const json& record, std::string_view key) {
  auto it = record.find(key);
  return it != record.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<int64_t> Int(const json& record, std::string_view key) {
  auto it = record.find(key);
  if (it == record.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

absl::Time TimeOf(const json& record) {
  absl::Time t = absl::InfinitePast();
  std::string err;
  absl::ParseTime(absl::RFC3339_full, Str(record, "time"), &t, &err);
  return t;
}

uint64_t IndexOf(const json& record) { return record.value("index", uint64_t{0}); }

// One file's records.
struct FileRecords {
  std::vector<json> records;
  uint64_t skipped = 0;
};

absl::StatusOr<FileRecords> ReadFile(const std::string& path) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::ErrnoToStatus(errno == 0 ? ENOMEM : errno,
                               absl::StrCat("cannot read the audit log ", path));
  }
  std::string data;
  char buffer[1 << 16];
  for (;;) {
    int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int code = 0;
      const int read_errno = errno;
      std::string message = gzerror(file, &code);
      gzclose(file);
      if (code == Z_ERRNO) {
        return absl::ErrnoToStatus(read_errno, absl::StrCat("cannot read the audit log ", path));
      }
      return absl::DataLossError(absl::StrCat("cannot read the audit log ", path, ": ", message));
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  gzclose(file);
  FileRecords out;
  size_t start = 0;
  while (start < data.size()) {
    size_t end = data.find('\n', start);
    if (end == std::string::npos) break;  // a record being written, or torn: not counted
    std::string_view line(data.data() + start, end - start);
    start = end + 1;
    json record;
    if (audit::ParseRecord(line, &record)) {
      out.records.push_back(std::move(record));
    } else {
      ++out.skipped;
    }
  }
  return out;
}

// "ask" and the states a decision can have.
bool KnownDecision(std::string_view d) {
  for (std::string_view known :
       {"allow", "deny", "ask", "approved", "denied", "timed_out", "cancelled", "pending"}) {
    if (d == known) return true;
  }
  return false;
}

// Fills what a request asked of a person carries (RequestFields in
// broker/approval/approval_queue.cc).
void FillRequest(const json& record, Decision* d) {
  d->approval_id = Str(record, "approval_id");
  d->agent_id = Str(record, "agent_id");
  d->terminal_id = Str(record, "terminal_id");
  d->session_id = Str(record, "session_id");
  d->trace_id = Str(record, "trace_id");
  d->command = Str(record, "command");
  d->rule = Str(record, "rule");
  if (std::string kind = Str(record, "kind"); !kind.empty()) d->kind = kind;
  d->asked = true;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> FindAuditFiles(const std::string& live) {
  namespace fs = std::filesystem;
  const fs::path live_path(live);
  const std::string base = live_path.filename().string();
  fs::path dir = live_path.parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= base.size() + 1 || name.compare(0, base.size(), base) != 0) continue;
    const char sep = name[base.size()];
    const char next = name[base.size() + 1];
    const bool numbered = sep == '.' && absl::ascii_isdigit(static_cast<unsigned char>(next));
    const bool dated = sep == '-';
    if (!numbered && !dated) continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    files.push_back(it->path().string());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return absl::ErrnoToStatus(ec.value(), absl::StrCat("cannot list ", dir.string()));
  }
  std::error_code exists_ec;
  if (fs::exists(live_path, exists_ec)) {
    files.push_back(live);
  } else if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no audit log at ", live,
                     " (is the state dir right? --state-dir or TERMBRIDGE_STATE_DIR name it)"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

absl::StatusOr<AuditRecords> ReadAuditRecords(const std::vector<std::string>& files) {
  std::vector<FileRecords> read;
  AuditRecords out;
  for (const std::string& path : files) {
    absl::StatusOr<FileRecords> one = ReadFile(path);
    if (!one.ok()) return one.status();
    out.skipped_lines += one->skipped;
    read.push_back(*std::move(one));
  }
  // Rotated files hold older records: order the files by their first record.
  std::stable_sort(read.begin(), read.end(), [](const FileRecords& a, const FileRecords& b) {
    if (a.records.empty() || b.records.empty()) return !a.records.empty() && b.records.empty();
    const std::string ta = Str(a.records.front(), "time"), tb = Str(b.records.front(), "time");
    if (ta != tb) return ta < tb;
    return IndexOf(a.records.front()) < IndexOf(b.records.front());
  });
  for (FileRecords& file : read) {
    for (json& record : file.records) out.records.push_back(std::move(record));
  }
  return out;
}

absl::StatusOr<absl::Time> ParseWhen(std::string_view when, absl::Time now, std::string_view flag) {
  const std::string text(when);
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return t;
  absl::Duration ago;
  double days = 0;
  absl::string_view number = text;
  if (absl::ConsumeSuffix(&number, "d") && absl::SimpleAtod(number, &days) && days >= 0) {
    return now - absl::Hours(24 * days);
  }
  if (absl::ParseDuration(text, &ago) && ago >= absl::ZeroDuration() &&
      ago != absl::InfiniteDuration()) {
    return now - ago;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--", std::string(flag), " ", text,
      ": not a time: give RFC 3339 (2026-05-01T12:00:00Z) or a duration ago (90s, 15m, 2h, 3d)"));
}

std::vector<Decision> Decisions(const std::vector<json>& records) {
  std::vector<Decision> out;
  std::map<std::string, size_t> by_approval;  // approval_id -> position in out
  // trace_id -> the command as the agent sent it (policy_decided has the
  // policy's parsed form).
  std::map<std::string, std::string> requested;
  for (const json& record : records) {
    const std::string event = Str(record, "event");
    if (event == audit::kCommandRequested) {
      requested[Str(record, "trace_id")] = Str(record, "command");
    } else if (event == audit::kPolicyDecided) {
      Decision d;
      const json empty = json::object();
      auto it = record.find("decision");
      const json& policy = it != record.end() && it->is_object() ? *it : empty;
      d.command = Str(policy, "command");
      if (d.command.empty()) continue;  // a terminal opened: nothing judged
      d.index = IndexOf(record);
      d.time = TimeOf(record);
      d.time_text = Str(record, "time");
      d.agent_id = Str(record, "agent_id");
      d.terminal_id = Str(record, "terminal_id");
      d.session_id = Str(record, "session_id");
      d.trace_id = Str(record, "trace_id");
      if (auto sent = requested.find(d.trace_id);
          !d.trace_id.empty() && sent != requested.end() && !sent->second.empty()) {
        d.command = sent->second;
      }
      d.decision = Str(record, "action");
      d.rule = Str(policy, "rule_id");
      d.surface = Str(record, "surface");
      d.note = Str(policy, "reason");
      out.push_back(std::move(d));
    } else if (event == audit::kApprovalRequested || event == audit::kApprovalDecided) {
      const std::string id = Str(record, "approval_id");
      auto found = by_approval.find(id);
      if (found == by_approval.end() || id.empty()) {
        Decision d;
        FillRequest(record, &d);
        d.decision = "pending";
        d.requested_at = Str(record, "time");
        out.push_back(std::move(d));
        found = by_approval.emplace(id, out.size() - 1).first;
      }
      Decision& d = out[found->second];
      d.index = IndexOf(record);
      d.time = TimeOf(record);
      d.time_text = Str(record, "time");
      if (event == audit::kApprovalDecided) {
        if (d.terminal_id.empty()) d.terminal_id = Str(record, "terminal_id");
        d.decision = Str(record, "decision");
        d.approver = Str(record, "approver");
        d.surface = Str(record, "surface");
        d.scope = Str(record, "scope");
        d.note = Str(record, "note");
      }
    }
  }
  // session_id -> the terminal it ran in (command_started and command_exited say).
  std::map<std::string, std::string> ran_in;
  for (const json& record : records) {
    const std::string session = Str(record, "session_id");
    const std::string terminal = Str(record, "terminal_id");
    if (!session.empty() && !terminal.empty()) ran_in.emplace(session, terminal);
  }
  for (Decision& d : out) {
    if (!d.terminal_id.empty() || d.session_id.empty()) continue;
    if (auto it = ran_in.find(d.session_id); it != ran_in.end()) d.terminal_id = it->second;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Decision& a, const Decision& b) { return a.index < b.index; });
  return out;
}

absl::Status CheckDecisionFilter(const DecisionFilter& filter) {
  if (filter.decision.empty() || KnownDecision(filter.decision)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--decision ", filter.decision,
                   ": give allow, deny, ask, approved, denied, timed_out, cancelled or pending"));
}

std::vector<Decision> Filter(std::vector<Decision> decisions, const DecisionFilter& filter) {
  std::vector<Decision> kept;
  for (Decision& d : decisions) {
    if (!filter.agent.empty() && d.agent_id != filter.agent) continue;
    if (!filter.terminal.empty() && d.terminal_id != filter.terminal) continue;
    if (filter.decision == "ask" ? !d.asked
                                 : !filter.decision.empty() && d.decision != filter.decision) {
      continue;
    }
    if (filter.since && d.time < *filter.since) continue;
    if (filter.until && d.time > *filter.until) continue;
    kept.push_back(std::move(d));
  }
  if (filter.limit > 0 && kept.size() > filter.limit) {
    kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(filter.limit));
  }
  return kept;
}

std::string DecidedBy(const Decision& d) {
  if (!d.asked) {
    if (d.surface == "terminal_grant") return "approval for this terminal";
    return d.rule.empty() ? "policy" : absl::StrCat("rule ", d.rule);
  }
  if (d.decision == "pending") return "waiting for a person";
  if (d.decision == "timed_out") return "nobody (timed out)";
  // The broker cancels requests it can no longer serve (shutdown, closed terminal).
  if (d.approver == "broker" && d.surface == "broker") return "the broker";
  std::string by = d.approver.empty() ? "someone" : d.approver;
  if (!d.surface.empty()) absl::StrAppend(&by, " via ", d.surface);
  if (d.decision == "approved" && !d.scope.empty()) absl::StrAppend(&by, ", scope ", d.scope);
  return by;
}

json DecisionJson(const Decision& d) {
  json out = {{"index", d.index},
              {"time", d.time_text},
              {"agent_id", d.agent_id},
              {"terminal_id", d.terminal_id},
              {"session_id", d.session_id},
              {"trace_id", d.trace_id},
              {"kind", d.kind},
              {"command", d.command},
              {"decision", d.decision},
              {"asked", d.asked},
              {"rule", d.rule},
              {"surface", d.surface},
              {"decided_by", DecidedBy(d)},
              {"note", d.note}};
  if (d.asked) {
    out["approval_id"] = d.approval_id;
    out["approver"] = d.approver;
    out["scope"] = d.scope;
    out["requested_at"] = d.requested_at;
  }
  return out;
}

absl::StatusOr<Timeline> BuildTimeline(const std::vector<json>& records,
                                       const std::string& terminal_id) {
  // The sessions that ran (or were to run) in the terminal, and each trace's
  // request (command_requested has a trace_id but no session_id yet).
  std::set<std::string> sessions;
  std::map<std::string, std::string> requested_command;  // trace_id -> command
  bool named = false;
  for (const json& record : records) {
    if (Str(record, "event") == audit::kCommandRequested) {
      requested_command[Str(record, "trace_id")] = Str(record, "command");
    }
    if (Str(record, "terminal_id") != terminal_id) continue;
    named = true;
    if (std::string s = Str(record, "session_id"); !s.empty()) sessions.insert(s);
  }
  if (!named || terminal_id.empty()) {
    return absl::NotFoundError(absl::StrCat("no terminal ", terminal_id,
                                            " in the audit log (termbridge sessions and ",
                                            "termbridge recordings list name the terminals)"));
  }
  std::map<std::string, Decision> decision_of;  // session_id -> its decision
  for (Decision& d : Decisions(records)) {
    if (sessions.count(d.session_id)) decision_of[d.session_id] = std::move(d);
  }
  Timeline timeline;
  timeline.terminal_id = terminal_id;
  std::map<std::string, size_t> command_at;  // session_id -> position in entries
  for (const json& record : records) {
    const std::string event = Str(record, "event");
    const std::string session_id = Str(record, "session_id");
    const bool about_command =
        event == audit::kPolicyDecided || event == audit::kApprovalRequested ||
        event == audit::kApprovalDecided || event == audit::kCommandStarted ||
        event == audit::kCommandExited || event == audit::kCommandRefused;
    if (about_command && !session_id.empty() && sessions.count(session_id)) {
      auto [it, added] = command_at.emplace(session_id, timeline.entries.size());
      if (added) {
        TimelineEntry entry;
        entry.kind = "command";
        entry.index = IndexOf(record);
        entry.time = TimeOf(record);
        entry.time_text = Str(record, "time");
        entry.session_id = session_id;
        entry.trace_id = Str(record, "trace_id");
        entry.state = "judged";
        timeline.entries.push_back(std::move(entry));
      }
      TimelineEntry& c = timeline.entries[it->second];
      if (c.trace_id.empty()) c.trace_id = Str(record, "trace_id");
      if (std::string agent = Str(record, "agent_id"); c.from.empty() && !agent.empty()) {
        c.from = absl::StrCat("agent ", agent);
      }
      if (event == audit::kCommandStarted) {
        c.started = TimeOf(record);
        c.started_text = Str(record, "time");
        c.index = IndexOf(record);
        if (c.state != "ran") c.state = "running";
      } else if (event == audit::kCommandExited && !c.exited) {
        c.exited = TimeOf(record);
        c.state = "ran";
        c.exit_code = Int(record, "exit_code");
        c.signal = Int(record, "signal");
        c.completion = Str(record, "completion");
        if (auto out = record.find("output"); out != record.end() && out->is_object()) {
          if (auto from = Int(*out, "from"); from && *from >= 0) c.output_from = *from;
          if (auto to = Int(*out, "to"); to && *to >= 0) c.output_to = *to;
        }
      } else if (event == audit::kCommandRefused) {
        c.state = "refused";
        c.refused_code = Str(record, "code");
        c.detail = Str(record, "reason");
      }
      continue;
    }
    if (Str(record, "terminal_id") != terminal_id) continue;
    TimelineEntry entry;
    entry.index = IndexOf(record);
    entry.time = TimeOf(record);
    entry.time_text = Str(record, "time");
    if (event == audit::kTerminalOpened) {
      entry.kind = "opened";
      entry.from = absl::StrCat("agent ", Str(record, "agent_id"));
      entry.detail = absl::StrCat("shell ", Str(record, "shell"));
      if (std::string cwd = Str(record, "cwd"); !cwd.empty())
        absl::StrAppend(&entry.detail, " in ", cwd);
    } else if (event == audit::kTerminalClosed) {
      entry.kind = "closed";
      entry.detail = Str(record, "reason");
    } else if (event == audit::kInputAccepted || event == audit::kInputRefused ||
               event == audit::kInputDiscarded) {
      entry.kind = "input";
      const std::string role = Str(record, "role");
      const std::string surface = Str(record, "surface");
      entry.from = role == "operator" ? absl::StrCat("person (", surface, ")")
                   : role.empty()     ? ""
                                      : "agent";
      entry.bytes = static_cast<uint64_t>(std::max<int64_t>(0, Int(record, "bytes").value_or(0)));
      entry.detail = event == audit::kInputAccepted ? "accepted"
                     : event == audit::kInputRefused
                         ? absl::StrCat("refused: ", Str(record, "reason"))
                         : "left unread, discarded";
    } else if (event == audit::kLockChanged) {
      entry.kind = "lock";
      entry.from = absl::StrCat(Str(record, "by"), " (", Str(record, "surface"), ")");
      entry.detail = Str(record, "mode");
    } else if (event == audit::kRecordingGap) {
      entry.kind = "recording_gap";
      entry.detail = Str(record, "reason");
    } else {
      continue;
    }
    timeline.entries.push_back(std::move(entry));
  }
  for (TimelineEntry& entry : timeline.entries) {
    if (entry.kind != "command") continue;
    if (auto d = decision_of.find(entry.session_id); d != decision_of.end()) {
      entry.decision = d->second;
      entry.command = d->second.command;
      if (entry.state == "judged" && d->second.decision == "pending") entry.state = "pending";
      if (entry.state == "judged" &&
          (d->second.decision == "deny" || d->second.decision == "denied" ||
           d->second.decision == "timed_out" || d->second.decision == "cancelled")) {
        entry.state = "refused";
      }
    }
    if (entry.command.empty()) entry.command = requested_command[entry.trace_id];
  }
  std::stable_sort(
      timeline.entries.begin(), timeline.entries.end(),
      [](const TimelineEntry& a, const TimelineEntry& b) { return a.index < b.index; });
  return timeline;
}

json TimelineEntryJson(const TimelineEntry& e) {
  json out = {{"kind", e.kind}, {"index", e.index}, {"time", e.time_text}, {"from", e.from}};
  if (e.kind != "command") {
    if (e.kind == "input") out["bytes"] = e.bytes;
    out["detail"] = e.detail;
    return out;
  }
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  out["session_id"] = e.session_id;
  out["trace_id"] = e.trace_id;
  out["command"] = e.command;
  out["state"] = e.state;
  out["decision"] = e.decision ? DecisionJson(*e.decision) : json(nullptr);
  out["started"] = e.started ? json(e.started_text) : json(nullptr);
  out["duration_ms"] = e.started && e.exited
                           ? json(absl::ToInt64Milliseconds(*e.exited - *e.started))
                           : json(nullptr);
  out["exit_code"] = opt(e.exit_code);
  out["signal"] = opt(e.signal);
  out["completion"] = e.completion;
  out["output"] =
      e.output_from ? json{{"from", *e.output_from}, {"to", opt(e.output_to)}} : json(nullptr);
  out["refused_code"] = e.refused_code;
  out["detail"] = e.detail;
  return out;
}

}  // namespace termbridge::cli::history
