// Narrowing an "always" approval (docs/operating.md, "Grants"): a person may
// write their own version of the rules RulesToAllow proposed, but only one
// that matches nothing the proposal would not. Each candidate must sit inside
// some proposed rule on every axis a rule matches on (program and argv,
// options, writes, reads, cwd, expiry), judged for any command, cwd and files
// on disk, not only this request's; and together they must still allow this
// request. What cannot be shown to be narrower (a regex, a relative path, an
// escaped glob) is refused, so a pasted or mistaken rule never broadens.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/policy/policy.h"
#include "common/policy/policy_internal.h"
#include "common/policy/read_scope.h"
#include "common/policy/text.h"
#include "re2/re2.h"

namespace termbridge::policy {
namespace {

using internal::Cat;
using internal::Join;

std::string Words(const std::vector<std::string>& words) {
  return Cat("[", Join(words, ", "), "]");
}

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

bool AnyGlobWithin(const std::string& inner, const std::vector<std::string>& outers) {
  for (const std::string& outer : outers) {
    if (internal::GlobWithin(inner, outer)) return true;
  }
  return false;
}

// A write glob that names one file (no * ? [ \), covered by `outers`; or
// one of them exactly.
bool WriteGlobWithin(const std::string& inner, const std::vector<std::string>& outers) {
  if (Contains(outers, inner)) return true;
  if (inner.find_first_of("*?[\\") != std::string::npos) return false;
  RE2::Options options;
  options.set_log_errors(false);
  RE2 covered(internal::WritePathsRegex(outers), options);
  return covered.ok() && internal::WritePathCovered(covered, inner);
}

// Why `c` may match a command, cwd, read or write that `p` would not; ""
// when it cannot.
std::string Wider(const Rule& c, const Rule& p) {
  if (p.kind == MatchKind::kRegex) {
    if (c.kind != MatchKind::kRegex || c.pattern != p.pattern) {
      return "the proposed rule is a regex, and only that same regex can be shown to be narrower";
    }
  } else if (c.kind == MatchKind::kRegex) {
    return "a regex can match commands an argv rule does not (use exact or prefix)";
  } else if (c.argv.empty() || c.argv[0] != p.argv[0]) {
    return Cat("it names the program ", c.argv.empty() ? "(none)" : c.argv[0], ", not ", p.argv[0]);
  } else if (p.kind == MatchKind::kExact) {
    if (c.kind == MatchKind::kPrefix) {
      return Cat("prefix ", Words(c.argv), " matches more arguments than the proposed exact ",
                 Words(p.argv));
    }
    if (c.argv != p.argv) {
      return Cat("exact ", Words(c.argv), " is not the proposed ", Words(p.argv));
    }
  } else if (c.argv.size() < p.argv.size() ||
             !std::equal(p.argv.begin(), p.argv.end(), c.argv.begin())) {
    return Cat(Words(c.argv), " does not start with the proposed prefix ", Words(p.argv));
  }
  if (!p.options.empty()) {
    if (c.options.empty()) return Cat("it drops the proposed options ", Words(p.options));
    for (const std::string& o : c.options) {
      if (!Contains(p.options, o)) {
        return Cat("option ", o, " is not one of the proposed ", Words(p.options));
      }
    }
  }
  if (c.writes) {
    if (!p.writes) return "it may write files, and the proposed rule may not";
    if (!p.write_paths.empty()) {
      if (c.write_paths.empty()) {
        return Cat("it may write any file, and the proposed rule only ", Words(p.write_paths));
      }
      for (const std::string& w : c.write_paths) {
        if (!WriteGlobWithin(w, p.write_paths)) {
          return Cat("it may write ", w, ", which the proposed write_paths ", Words(p.write_paths),
                     " do not cover");
        }
      }
    }
  }
  if (p.read_paths.empty()) {
    if (!c.read_paths.empty() && !c.within_workspace) {
      return Cat("read_paths ", Words(c.read_paths),
                 " replace the workspace, where the proposed rule reads; add "
                 "within_workspace = true to read only where both allow");
    }
  } else {
    if (c.read_paths.empty()) {
      return Cat("it reads in the workspace, and the proposed rule only in ", Words(p.read_paths));
    }
    for (const std::string& r : c.read_paths) {
      if (!AnyGlobWithin(r, p.read_paths)) {
        return Cat("read_paths entry ", r, " is not inside the proposed ", Words(p.read_paths),
                   " (entries must be absolute or ~, without ..)");
      }
    }
    if (p.within_workspace && !c.within_workspace) return "it drops within_workspace";
  }
  if (!p.cwd.empty()) {
    if (c.cwd.empty()) return Cat("it runs anywhere, and the proposed rule only in ", Words(p.cwd));
    for (const std::string& d : c.cwd) {
      if (!AnyGlobWithin(d, p.cwd)) {
        return Cat("cwd entry ", d, " is not inside the proposed ", Words(p.cwd));
      }
    }
  }
  if (p.expires_unix_s != 0 && (c.expires_unix_s == 0 || c.expires_unix_s > p.expires_unix_s)) {
    return Cat("it outlives the proposed expiry ", FormatExpiry(p.expires_unix_s));
  }
  return "";
}

}  // namespace

absl::Status CheckNarrowing(const Policy& policy, std::string_view line,
                            const CheckContext& context, const std::vector<Rule>& proposed,
                            const std::vector<Rule>& candidate) {
  if (candidate.empty()) return absl::FailedPreconditionError("no rule was given");
  if (proposed.empty()) {
    return absl::FailedPreconditionError(
        "\"always\" proposes no rule for this request, so no rule can narrow it");
  }
  for (const Rule& c : candidate) {
    if (c.action != Action::kAllow) {
      return absl::FailedPreconditionError(Cat("rule ", c.id, " is a ", ActionName(c.action),
                                               " rule; only allow rules narrow an approval"));
    }
    std::string why;
    bool inside = false;
    for (const Rule& p : proposed) {
      std::string wider = Wider(c, p);
      if (wider.empty()) {
        inside = true;
        break;
      }
      // The reason against the proposed rule for the same program reads best.
      bool same_program = c.kind != MatchKind::kRegex && p.kind != MatchKind::kRegex &&
                          !c.argv.empty() && c.argv[0] == p.argv[0];
      if (why.empty() || same_program) why = Cat(wider, " (proposed rule ", p.id, ")");
    }
    if (!inside) {
      return absl::FailedPreconditionError(
          Cat("rule ", c.id, " allows more than \"always\" proposed: ", why));
    }
  }
  absl::StatusOr<Policy> with = policy.WithRules(candidate);
  if (!with.ok()) return absl::FailedPreconditionError(with.status().message());
  Decision d = with->Check(line, context);
  if (d.action != Action::kAllow) {
    return absl::FailedPreconditionError(
        Cat("the rules do not allow this request, so approving it always would not "
            "run it without asking next time: ",
            d.reason));
  }
  return absl::OkStatus();
}

}  // namespace termbridge::policy
