// termbridge approvals history and termbridge history <terminal>: find the
// audit log's files in the state dir (the live audit.jsonl and logrotate's
// rotated files beside it), read them (audit_history.h) and print for a
// person, or JSON with --json. A line that is not a record is skipped and
// counted in one warning; a log that cannot be read is one message and exit
// 1 (docs/operating.md#history).
#include "broker/cli/history_cli.h"

#include <optional>
#include <string_view>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/cli/audit_history.h"
#include "common/text/utf8.h"
#include "common/text/visible.h"
#include "nlohmann/json.hpp"

namespace termbridge::cli {
namespace {

using nlohmann::json;

// The longest command a text line shows, in bytes of its visible form.
constexpr size_t kMaxShownCommand = 200;

struct Loaded {
  std::vector<std::string> files;
  history::AuditRecords audit;
};

// Reads the state dir's audit log; prints the error and returns nullopt when
// it cannot.
std::optional<Loaded> Load(const CliOptions& options, std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> files =
      history::FindAuditFiles(options.state_dir + "/audit.jsonl");
  if (!files.ok()) {
    err << "termbridge: " << files.status().message() << "\n";
    return std::nullopt;
  }
  absl::StatusOr<history::AuditRecords> audit = history::ReadAuditRecords(*files);
  if (!audit.ok()) {
    err << "termbridge: " << audit.status().message() << "\n";
    return std::nullopt;
  }
  if (audit->skipped_lines > 0) {
    err << "termbridge: warning: skipped " << audit->skipped_lines
        << " line(s) of the audit log that are not records (termbridge audit verify says "
           "where)\n";
  }
  return Loaded{*std::move(files), *std::move(audit)};
}

std::string LocalTime(absl::Time t) {
  if (t == absl::InfinitePast()) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", t, absl::LocalTimeZone());
}

// The command with control characters made visible, abridged to one line.
std::string Shown(const std::string& command) {
  std::string visible = text::Visible(command);
  if (visible.size() <= kMaxShownCommand) return visible;
  return absl::StrCat(std::string(text::CutAtCharBoundary(visible, kMaxShownCommand)), "... (",
                      command.size(), " bytes; --json has it whole)");
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

void PrintDecision(const history::Decision& d, std::ostream& out) {
  out << absl::StrFormat("%-19s  %-12s  %-28s  %-9s  %-28s  %s", LocalTime(d.time),
                         text::Visible(OrDash(d.agent_id)), text::Visible(OrDash(d.terminal_id)),
                         d.decision, text::Visible(history::DecidedBy(d)), Shown(d.command));
  if (d.kind != "command") out << "  [" << text::Visible(d.kind) << "]";
  // The policy's reason repeats the rule for an allow; a note from a person
  // and the reason for a refusal are worth the space.
  if (!d.note.empty() && (d.asked || d.decision != "allow")) out << "  # " << text::Visible(d.note);
  out << "\n";
}

std::string Result(const history::TimelineEntry& c) {
  std::string result;
  if (c.state == "ran") {
    result = c.exit_code ? absl::StrCat("exit ", *c.exit_code)
             : c.signal  ? absl::StrCat("signal ", *c.signal)
                         : "ended";
    if (c.started && c.exited) {
      absl::StrAppend(
          &result, " after ",
          absl::FormatDuration(absl::Trunc(*c.exited - *c.started, absl::Milliseconds(1))));
    }
  } else if (c.state == "running") {
    result = "no exit recorded (running, or ended with the broker)";
  } else if (c.state == "refused") {
    result = c.refused_code.empty() ? "not run" : absl::StrCat("not run (", c.refused_code, ")");
  } else {
    result = c.state;
  }
  return result;
}

void PrintEntry(const history::TimelineEntry& e, std::ostream& out) {
  out << absl::StrFormat("%-19s  %-16s  ", LocalTime(e.time), text::Visible(OrDash(e.from)));
  if (e.kind != "command") {
    out << e.kind;
    if (e.kind == "input") out << " " << e.bytes << " bytes";
    if (!e.detail.empty()) out << ": " << text::Visible(e.detail);
    out << "\n";
    return;
  }
  out << "$ " << Shown(e.command) << "\n";
  std::string decided = e.decision ? absl::StrCat(e.decision->decision, " by ",
                                                  text::Visible(history::DecidedBy(*e.decision)))
                                   : "no decision recorded";
  out << "    " << decided << "; " << Result(e);
  if (e.output_from) {
    out << "; output bytes " << *e.output_from << ".." << (e.output_to ? *e.output_to : 0);
  }
  out << "; session " << e.session_id << "\n";
  if (!e.detail.empty()) out << "    " << text::Visible(e.detail) << "\n";
}

}  // namespace

int ApprovalsHistory(const std::vector<std::string>& args, const CliOptions& options,
                     const HistoryOptions& flags, std::ostream& out, std::ostream& err) {
  if (args.size() != 2) {
    err << "usage: termbridge approvals history [--agent A] [--terminal T] [--decision "
           "allow|deny|ask|approved|denied|timed_out] [--since 2h|RFC3339] [--until ...] "
           "[--limit N] [--json]\n";
    return 2;
  }
  history::DecisionFilter filter;
  filter.agent = flags.agent;
  filter.terminal = flags.terminal;
  filter.decision = flags.decision;
  if (flags.limit < 0) {
    err << "termbridge: --limit " << flags.limit << ": give a count of 0 or more\n";
    return 2;
  }
  filter.limit = static_cast<size_t>(flags.limit);
  const absl::Time now = absl::Now();
  for (auto [text, flag, slot] : {std::tuple{&flags.since, "since", &filter.since},
                                  std::tuple{&flags.until, "until", &filter.until}}) {
    if (text->empty()) continue;
    absl::StatusOr<absl::Time> when = history::ParseWhen(*text, now, flag);
    if (!when.ok()) {
      err << "termbridge: " << when.status().message() << "\n";
      return 2;
    }
    *slot = *when;
  }
  if (absl::Status s = history::CheckDecisionFilter(filter); !s.ok()) {
    err << "termbridge: " << s.message() << "\n";
    return 2;
  }
  std::optional<Loaded> loaded = Load(options, err);
  if (!loaded) return 1;
  std::vector<history::Decision> decisions =
      history::Filter(history::Decisions(loaded->audit.records), filter);
  if (options.json) {
    json list = json::array();
    for (const history::Decision& d : decisions) list.push_back(history::DecisionJson(d));
    out << json{{"decisions", list},
                {"files", loaded->files},
                {"skipped_lines", loaded->audit.skipped_lines}}
               .dump()
        << "\n";
    return 0;
  }
  if (decisions.empty()) {
    out << "no decisions in the audit log match\n";
    return 0;
  }
  out << absl::StrFormat("%-19s  %-12s  %-28s  %-9s  %-28s  %s\n", "TIME", "AGENT", "TERMINAL",
                         "DECISION", "DECIDED BY", "COMMAND");
  for (const history::Decision& d : decisions) PrintDecision(d, out);
  return 0;
}

int TerminalHistory(const std::vector<std::string>& args, const CliOptions& options,
                    std::ostream& out, std::ostream& err) {
  if (args.size() != 2) {
    err << "usage: termbridge history <terminal> [--json]\n";
    return 2;
  }
  std::optional<Loaded> loaded = Load(options, err);
  if (!loaded) return 1;
  absl::StatusOr<history::Timeline> timeline =
      history::BuildTimeline(loaded->audit.records, args[1]);
  if (!timeline.ok()) {
    err << "termbridge: " << text::Visible(std::string(timeline.status().message())) << "\n";
    return 1;
  }
  if (options.json) {
    json entries = json::array();
    for (const history::TimelineEntry& e : timeline->entries) {
      entries.push_back(history::TimelineEntryJson(e));
    }
    out << json{{"terminal_id", timeline->terminal_id},
                {"entries", entries},
                {"files", loaded->files},
                {"skipped_lines", loaded->audit.skipped_lines}}
               .dump()
        << "\n";
    return 0;
  }
  out << "terminal " << text::Visible(timeline->terminal_id)
      << " (output offsets are bytes of its recording: termbridge recordings export)\n";
  for (const history::TimelineEntry& e : timeline->entries) PrintEntry(e, out);
  return 0;
}

}  // namespace termbridge::cli
