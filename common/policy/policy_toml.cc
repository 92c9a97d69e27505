// The policy file format (TOML), read by Policy::FromToml and written one
// rule at a time by RuleToToml. The format is documented in docs/operating.md
// ("The policy file"):
//
//   version = 1
//   default = "ask"          # allow | ask | deny, for commands no rule matches
//   builtin_deny = true      # false switches the built-in deny rules off, but
//                            # for broker-state and process-files (by id only)
//   disable_builtin = []     # or some ids: ["builtin.shutdown"]
//   default_rules = true     # the read-only allow rules of Policy::Default()
//   sensitive_paths = []     # more paths whose reads always ask (globs)
//   [[rule]]
//   id = "npm-test"          # optional; default "<file>:<line>"
//   action = "allow"         # allow | ask | deny
//   prefix = ["npm", "test"] # or exact = [...] or regex = "..." (RE2)
//   options = ["-s", "--set"]   # optional: only when one of these options is
//                               # given (getopt-style: -us, -s2020, --se=, --s)
//   writes = false           # allow rules only: may write files
//   write_paths = ["build/**"]  # with writes: only these files (globs)
//   read_paths = ["~/data/**"]  # allow rules only: where it may read
//                               # (default: the workspace)
//   within_workspace = true  # with read_paths: and inside the workspace too
//   cwd = ["~/src/app"]      # allow rules only: where the shell must run
//   expires = 2026-11-26T10:00:00Z  # skipped from then on (kept in the file)
//   reason = "tests are safe"
//
// Every error is InvalidArgument("<origin>:<line>: <reason>"). toml++ throws
// toml::parse_error; it is caught here and never leaves this file.
#include <toml++/toml.h>

#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/nesting/nesting.h"
#include "common/policy/builtin_rules.h"
#include "common/policy/options.h"
#include "common/policy/policy.h"
#include "common/policy/policy_internal.h"
#include "common/policy/shell_parser.h"
#include "common/policy/text.h"
#include "common/text/utf8.h"
#include "re2/re2.h"

namespace termbridge::policy {
namespace {

using internal::Append;
using internal::Cat;

// Far above any policy a person writes (a rule is about 200 bytes); the
// policy file reader (policy_file.cc) stops one byte past it.
constexpr size_t kMaxPolicyFileBytes = 4 << 20;

absl::Status Bad(std::string_view origin, const toml::source_region& where,
                 std::string_view reason) {
  return absl::InvalidArgumentError(Cat(origin, ":", where.begin.line, ": ", reason));
}

absl::Status ReadStrings(std::string_view origin, const toml::key& key, const toml::node& node,
                         std::vector<std::string>* out) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr) {
    return Bad(origin, key.source(), Cat(key.str(), " must be an array of strings"));
  }
  for (const toml::node& item : *arr) {
    const toml::value<std::string>* s = item.as_string();
    if (s == nullptr) {
      return Bad(origin, key.source(), Cat(key.str(), " must be an array of strings"));
    }
    out->push_back(s->get());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadString(std::string_view origin, const toml::key& key,
                                       const toml::node& node) {
  const toml::value<std::string>* s = node.as_string();
  if (s == nullptr) return Bad(origin, key.source(), Cat(key.str(), " must be a string"));
  return s->get();
}

absl::StatusOr<bool> ReadBool(std::string_view origin, const toml::key& key,
                              const toml::node& node) {
  const toml::value<bool>* b = node.as_boolean();
  if (b == nullptr) return Bad(origin, key.source(), Cat(key.str(), " must be true or false"));
  return b->get();
}

absl::StatusOr<Action> ReadAction(std::string_view origin, const toml::key& key,
                                  const toml::node& node) {
  absl::StatusOr<std::string> s = ReadString(origin, key, node);
  if (!s.ok()) return s.status();
  std::optional<Action> a = internal::ParseAction(*s);
  if (!a) {
    return Bad(origin, key.source(), Cat("unknown action \"", *s, "\" (use allow, ask or deny)"));
  }
  return *a;
}

// An offset date-time (expires = 2026-11-26T10:00:00Z) or the same as a
// string, in Unix seconds.
absl::StatusOr<int64_t> ReadExpiry(std::string_view origin, const toml::key& key,
                                   const toml::node& node) {
  constexpr std::string_view kWant =
      "expires must be a date and time with its offset (2026-11-26T10:00:00Z)";
  if (const toml::value<std::string>* s = node.as_string(); s != nullptr) {
    std::optional<int64_t> when = ParseExpiry(s->get());
    if (!when) return Bad(origin, key.source(), kWant);
    return *when;
  }
  const toml::value<toml::date_time>* dt = node.as_date_time();
  if (dt == nullptr || !dt->get().offset) return Bad(origin, key.source(), kWant);
  const toml::date_time& v = dt->get();
  struct tm tm {};
  tm.tm_year = v.date.year - 1900;
  tm.tm_mon = v.date.month - 1;
  tm.tm_mday = v.date.day;
  tm.tm_hour = v.time.hour;
  tm.tm_min = v.time.minute;
  tm.tm_sec = v.time.second;
  return static_cast<int64_t>(timegm(&tm)) - int64_t{v.offset->minutes} * 60;
}

// One [[rule]] table.
absl::StatusOr<Rule> ReadRule(std::string_view origin, const toml::table& t) {
  Rule rule;
  int line = static_cast<int>(t.source().begin.line);
  rule.origin = Cat(origin, ":", line);
  rule.id = Cat(internal::Basename(origin), ":", line);
  bool has_action = false;
  bool writes_set = false;
  const toml::key* write_paths_key = nullptr;
  const toml::key* read_paths_key = nullptr;
  const toml::key* cwd_key = nullptr;
  const toml::key* within_key = nullptr;
  std::vector<std::string> matchers;
  for (auto&& [key, node] : t) {
    std::string_view k = key.str();
    absl::Status st;
    if (k == "id") {
      absl::StatusOr<std::string> id = ReadString(origin, key, node);
      if (!id.ok()) return id.status();
      if (id->empty()) return Bad(origin, key.source(), "id must not be empty");
      rule.id = *id;
    } else if (k == "action") {
      absl::StatusOr<Action> a = ReadAction(origin, key, node);
      if (!a.ok()) return a.status();
      rule.action = *a;
      has_action = true;
    } else if (k == "exact" || k == "prefix") {
      matchers.push_back(std::string(k));
      rule.kind = k == "exact" ? MatchKind::kExact : MatchKind::kPrefix;
      if (absl::Status s = ReadStrings(origin, key, node, &rule.argv); !s.ok()) return s;
      if (rule.argv.empty()) return Bad(origin, key.source(), Cat(k, " must not be empty"));
    } else if (k == "regex") {
      matchers.push_back("regex");
      rule.kind = MatchKind::kRegex;
      absl::StatusOr<std::string> re = ReadString(origin, key, node);
      if (!re.ok()) return re.status();
      RE2::Options options;
      options.set_log_errors(false);
      RE2 compiled(*re, options);
      if (!compiled.ok()) {
        return Bad(origin, key.source(), Cat("bad regex: ", compiled.error()));
      }
      rule.pattern = *re;
    } else if (k == "options") {
      if (absl::Status s = ReadStrings(origin, key, node, &rule.options); !s.ok()) return s;
      for (const std::string& option : rule.options) {
        if (!internal::IsOptionName(option)) {
          return Bad(origin, key.source(), Cat("option \"", option, "\" is neither -x nor --name"));
        }
      }
    } else if (k == "writes") {
      absl::StatusOr<bool> w = ReadBool(origin, key, node);
      if (!w.ok()) return w.status();
      rule.writes = *w;
      writes_set = true;
    } else if (k == "write_paths") {
      if (absl::Status s = ReadStrings(origin, key, node, &rule.write_paths); !s.ok()) return s;
      write_paths_key = &key;
      for (const std::string& glob : rule.write_paths) {
        if (glob.empty()) return Bad(origin, key.source(), "write_paths must not hold \"\"");
      }
    } else if (k == "read_paths") {
      if (absl::Status s = ReadStrings(origin, key, node, &rule.read_paths); !s.ok()) return s;
      read_paths_key = &key;
      for (const std::string& glob : rule.read_paths) {
        if (glob.empty()) return Bad(origin, key.source(), "read_paths must not hold \"\"");
      }
    } else if (k == "cwd") {
      if (absl::Status s = ReadStrings(origin, key, node, &rule.cwd); !s.ok()) return s;
      cwd_key = &key;
      for (const std::string& dir : rule.cwd) {
        if (dir.empty() || (dir[0] != '/' && dir[0] != '~')) {
          return Bad(origin, key.source(),
                     Cat("cwd entry \"", dir, "\" must be absolute or start with ~"));
        }
      }
    } else if (k == "within_workspace") {
      absl::StatusOr<bool> w = ReadBool(origin, key, node);
      if (!w.ok()) return w.status();
      rule.within_workspace = *w;
      if (*w) within_key = &key;
    } else if (k == "expires") {
      absl::StatusOr<int64_t> when = ReadExpiry(origin, key, node);
      if (!when.ok()) return when.status();
      rule.expires_unix_s = *when;
    } else if (k == "reason") {
      absl::StatusOr<std::string> r = ReadString(origin, key, node);
      if (!r.ok()) return r.status();
      rule.reason = *r;
    } else {
      return Bad(origin, key.source(), Cat("unknown key \"", k, "\" in [[rule]]"));
    }
  }
  if (matchers.size() > 1) {
    return Bad(origin, t.source(),
               Cat("a rule has one matcher, this one has ", matchers[0], " and ", matchers[1]));
  }
  if (matchers.empty()) return Bad(origin, t.source(), "a rule needs exact, prefix or regex");
  if (!has_action) return Bad(origin, t.source(), "a rule needs an action");
  if (read_paths_key != nullptr && rule.action != Action::kAllow) {
    return Bad(origin, read_paths_key->source(), "read_paths is for allow rules");
  }
  if (cwd_key != nullptr && rule.action != Action::kAllow) {
    return Bad(origin, cwd_key->source(), "cwd is for allow rules");
  }
  if (within_key != nullptr && (rule.action != Action::kAllow || rule.read_paths.empty())) {
    return Bad(origin, within_key->source(), "within_workspace is for allow rules with read_paths");
  }
  if (write_paths_key != nullptr) {
    if (rule.action != Action::kAllow) {
      return Bad(origin, write_paths_key->source(), "write_paths is for allow rules");
    }
    if (writes_set && !rule.writes) {
      return Bad(origin, write_paths_key->source(), "write_paths with writes = false");
    }
    rule.writes = true;  // write_paths says which files, so it may write
  }
  return rule;
}

struct FileSettings {
  Action default_action = Action::kAsk;
  bool builtin_deny = true;
  bool default_rules = true;
  std::vector<std::string> disabled;
  std::vector<std::string> sensitive;
  std::vector<Rule> rules;
};

absl::Status ReadRules(std::string_view origin, const toml::key& key, const toml::node& node,
                       FileSettings* out) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr)
    return Bad(origin, key.source(), "rule must be an array of tables ([[rule]])");
  std::set<std::string> ids;
  for (const toml::node& item : *arr) {
    const toml::table* t = item.as_table();
    if (t == nullptr) return Bad(origin, item.source(), "rule must be a table ([[rule]])");
    absl::StatusOr<Rule> r = ReadRule(origin, *t);
    if (!r.ok()) return r.status();
    if (!ids.insert(r->id).second) {
      return Bad(origin, t->source(), Cat("duplicate rule id \"", r->id, "\""));
    }
    out->rules.push_back(*std::move(r));
  }
  return absl::OkStatus();
}

absl::Status ReadTopLevel(std::string_view origin, const toml::table& root, FileSettings* out) {
  for (auto&& [key, node] : root) {
    std::string_view k = key.str();
    if (k == "version") {
      const toml::value<int64_t>* v = node.as_integer();
      if (v == nullptr || v->get() != 1) return Bad(origin, key.source(), "version must be 1");
    } else if (k == "default") {
      absl::StatusOr<Action> a = ReadAction(origin, key, node);
      if (!a.ok()) return a.status();
      out->default_action = *a;
    } else if (k == "builtin_deny" || k == "default_rules") {
      absl::StatusOr<bool> b = ReadBool(origin, key, node);
      if (!b.ok()) return b.status();
      (k == "builtin_deny" ? out->builtin_deny : out->default_rules) = *b;
    } else if (k == "disable_builtin") {
      if (absl::Status s = ReadStrings(origin, key, node, &out->disabled); !s.ok()) return s;
      for (const std::string& id : out->disabled) {
        if (internal::FindBuiltin(id) == nullptr) {
          return Bad(origin, key.source(), Cat("unknown built-in rule \"", id, "\""));
        }
      }
    } else if (k == "sensitive_paths") {
      if (absl::Status s = ReadStrings(origin, key, node, &out->sensitive); !s.ok()) return s;
      for (const std::string& p : out->sensitive) {
        if (p.empty()) return Bad(origin, key.source(), "sensitive_paths must not hold \"\"");
      }
    } else if (k == "rule") {
      if (absl::Status s = ReadRules(origin, key, node, out); !s.ok()) return s;
    } else {
      return Bad(origin, key.source(), Cat("unknown key \"", k, "\""));
    }
  }
  return absl::OkStatus();
}

void AppendTomlString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = text::Utf8SequenceLength(s, i);
    if (len == 0) {
      out->append("\\uFFFD");  // TOML strings are UTF-8; a stray byte cannot be kept
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[8];
          snprintf(hex, sizeof(hex), "\\u%04x", c);
          out->append(hex);
        } else {
          out->append(s.substr(i, len));
        }
    }
    i += len;
  }
  out->push_back('"');
}

}  // namespace

absl::StatusOr<Policy> Policy::FromToml(std::string_view text, std::string_view origin) {
  // Bounded before toml++ sees the text: it recurses on dotted keys and
  // table headers without a limit ("a.b.b.b..." 100,000 long overflowed the
  // broker's stack), and a huge file is no policy anyone wrote.
  if (text.size() > kMaxPolicyFileBytes) {
    return absl::InvalidArgumentError(
        Cat(origin, ": the policy file is larger than ", kMaxPolicyFileBytes, " bytes"));
  }
  if (nesting::TomlNestsDeeperThan(text)) {
    return absl::InvalidArgumentError(Cat(origin, ": tables, keys and arrays nest deeper than ",
                                          nesting::kMaxTomlDepth, " levels"));
  }
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& err) {
    return absl::InvalidArgumentError(
        Cat(origin, ":", err.source().begin.line, ": ", err.description()));
  }
  FileSettings settings;
  if (absl::Status s = ReadTopLevel(origin, root, &settings); !s.ok()) return s;
  std::vector<Rule> rules;
  if (settings.default_rules) rules = internal::DefaultRules();
  rules.insert(rules.end(), settings.rules.begin(), settings.rules.end());
  std::vector<std::string> disabled = settings.disabled;
  // "*" leaves the ids listed too: they switch off the built-ins "*" does not.
  if (!settings.builtin_deny) disabled.push_back("*");
  return Assemble(std::move(rules), settings.default_action, std::move(disabled),
                  std::move(settings.sensitive));
}

std::string RuleToToml(const Rule& rule) {
  std::string out = "[[rule]]\n";
  auto field = [&out](std::string_view key, std::string_view value) {
    Append(&out, key, " = ");
    AppendTomlString(value, &out);
    out.push_back('\n');
  };
  // key = ["a", "b"]; nothing when `values` is empty and `keep_empty` unset.
  auto list = [&out](std::string_view key, const std::vector<std::string>& values,
                     bool keep_empty = false) {
    if (values.empty() && !keep_empty) return;
    Append(&out, key, " = [");
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out.append(", ");
      AppendTomlString(values[i], &out);
    }
    out.append("]\n");
  };
  if (!rule.id.empty()) field("id", rule.id);
  field("action", ActionName(rule.action));
  if (rule.kind == MatchKind::kRegex) {
    field("regex", rule.pattern);
  } else {
    list(rule.kind == MatchKind::kPrefix ? "prefix" : "exact", rule.argv, true);
  }
  list("options", rule.options);
  if (rule.writes) out.append("writes = true\n");
  list("write_paths", rule.write_paths);
  list("read_paths", rule.read_paths);
  if (rule.within_workspace) out.append("within_workspace = true\n");
  list("cwd", rule.cwd);
  if (rule.expires_unix_s != 0) Append(&out, "expires = ", FormatExpiry(rule.expires_unix_s), "\n");
  if (!rule.reason.empty()) field("reason", rule.reason);
  return out;
}

absl::StatusOr<std::vector<Rule>> RulesFromToml(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxPolicyFileBytes) {
    return absl::InvalidArgumentError(Cat(origin, ": larger than ", kMaxPolicyFileBytes, " bytes"));
  }
  if (nesting::TomlNestsDeeperThan(text)) {
    return absl::InvalidArgumentError(Cat(origin, ": tables, keys and arrays nest deeper than ",
                                          nesting::kMaxTomlDepth, " levels"));
  }
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& err) {
    return absl::InvalidArgumentError(
        Cat(origin, ":", err.source().begin.line, ": ", err.description()));
  }
  FileSettings settings;
  for (auto&& [key, node] : root) {
    if (key.str() != "rule") {
      return Bad(origin, key.source(),
                 Cat("only [[rule]] tables belong here, not \"", key.str(), "\""));
    }
    if (absl::Status s = ReadRules(origin, key, node, &settings); !s.ok()) return s;
  }
  if (settings.rules.empty()) {
    return absl::InvalidArgumentError(Cat(origin, ": no [[rule]] table"));
  }
  // A rule without an id of its own gets one from its caller.
  const toml::array* tables = root["rule"].as_array();
  for (size_t i = 0; tables != nullptr && i < tables->size(); ++i) {
    const toml::table* t = (*tables)[i].as_table();
    if (t != nullptr && !t->contains("id")) settings.rules[i].id.clear();
  }
  return settings.rules;
}

}  // namespace termbridge::policy
