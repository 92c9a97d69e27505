// tb_parse_dump: what the policy's shell parser sees in command lines, for
// the differential check against a real shell parser
// (tests/security/parser_differential.test.mjs). Reads one JSON string per
// line on stdin (a command line), writes one JSON object per line: the
// simple commands found (argv, program, via, dynamic, opaque, note), the
// parse error and bound, and the decision of a policy that allows every
// program the parser found (with reads and writes anywhere), so the test
// can see whether a line the parsers disagree on would be allowed.
#include <iostream>
#include <set>
#include <string>

#include "common/policy/policy.h"
#include "nlohmann/json.hpp"

namespace {

using termbridge::policy::Action;
using termbridge::policy::ActionName;
using termbridge::policy::Decision;
using termbridge::policy::ParsedLine;
using termbridge::policy::Policy;
using termbridge::policy::SimpleCommand;

// Allow rules for every program of `p`: what a policy trusting exactly
// what the parser saw would allow.
std::string AllowingPolicy(const ParsedLine& p) {
  std::set<std::string> programs;
  for (const SimpleCommand& c : p.commands) {
    if (!c.program.empty()) programs.insert(c.program);
  }
  std::string toml = "version = 1\ndefault = \"ask\"\n";
  int n = 0;
  for (const std::string& program : programs) {
    toml += "\n[[rule]]\nid = \"seen-" + std::to_string(n++) +
            "\"\naction = \"allow\"\nprefix = " + nlohmann::json::array({program}).dump() +
            "\nwrites = true\nread_paths = [\"/**\"]\n";
  }
  return toml;
}

nlohmann::json Dump(const std::string& line) {
  ParsedLine p = termbridge::policy::ParseLine(line);
  nlohmann::json commands = nlohmann::json::array();
  for (const SimpleCommand& c : p.commands) {
    commands.push_back({{"argv", c.argv},
                        {"program", c.program},
                        {"via", c.via},
                        {"dynamic", c.dynamic},
                        {"opaque", c.opaque},
                        {"note", c.note}});
  }
  nlohmann::json out = {{"commands", commands},
                        {"error", p.error ? nlohmann::json(*p.error) : nlohmann::json()},
                        {"limit", p.limit}};
  auto policy = Policy::FromToml(AllowingPolicy(p), "parse_dump");
  if (!policy.ok()) {
    out["decision"] = {{"action", "error"}, {"reason", std::string(policy.status().message())}};
    return out;
  }
  Decision d = policy->Check(line);
  out["decision"] = {
      {"action", ActionName(d.action)}, {"rule_id", d.rule_id}, {"reason", d.reason}};
  return out;
}

}  // namespace

int main() {
  std::string record;
  while (std::getline(std::cin, record)) {
    nlohmann::json in = nlohmann::json::parse(record, nullptr, /*allow_exceptions=*/false);
    if (!in.is_string()) {
      std::cout << nlohmann::json({{"error", "input is not a JSON string"}}).dump() << "\n";
      continue;
    }
    std::cout << Dump(in.get<std::string>())
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  }
  return 0;
}
