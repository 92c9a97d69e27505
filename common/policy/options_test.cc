// Options as the program's getopt sees them: the `options` rule field, the
// default ask rules written with it, and the built-in predicates that look
// for options. Every row is an argv a GNU program accepts (clusters, attached
// values, abbreviated long options, options after operands, `--` as a value)
// that a literal comparison used to miss.
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

SimpleCommand Argv(std::vector<std::string> argv) {
  SimpleCommand c;
  c.program = argv.empty() ? "" : argv[0];
  c.argv = std::move(argv);
  return c;
}

TEST(HasOption, ShortOptionsInClustersAndWithAttachedValues) {
  EXPECT_TRUE(HasOption(Argv({"date", "-s", "x"}), "-s"));
  EXPECT_TRUE(HasOption(Argv({"date", "-s2020-01-01"}), "-s"));
  EXPECT_TRUE(HasOption(Argv({"date", "-us", "2020-01-01"}), "-s"));
  EXPECT_TRUE(HasOption(Argv({"date", "-fs"}), "-s"));  // asking more is the safe side
  EXPECT_TRUE(HasOption(Argv({"tree", "-ofile"}), "-o"));
  EXPECT_FALSE(HasOption(Argv({"date", "-u"}), "-s"));
  EXPECT_FALSE(HasOption(Argv({"date", "s"}), "-s"));
  EXPECT_FALSE(HasOption(Argv({"date", "--set"}), "-s"));  // a long option is not a cluster
}

TEST(HasOption, LongOptionsByAnyPrefixAndWithValues) {
  EXPECT_TRUE(HasOption(Argv({"date", "--set=2020"}), "--set"));
  EXPECT_TRUE(HasOption(Argv({"date", "--se=2020-01-01"}), "--set"));
  EXPECT_TRUE(HasOption(Argv({"date", "--s", "2020"}), "--set"));
  EXPECT_TRUE(HasOption(Argv({"file", "--comp"}), "--compile"));
  EXPECT_FALSE(HasOption(Argv({"date", "--settle"}), "--set"));  // longer is another name
  EXPECT_FALSE(HasOption(Argv({"date", "--=x"}), "--set"));
  EXPECT_FALSE(HasOption(Argv({"date", "--"}), "--set"));
  EXPECT_FALSE(HasOption(Argv({"date", "--utc"}), "--set"));
}

TEST(HasOption, OptionsAfterOperandsCountAndDoubleDashEndsThem) {
  EXPECT_TRUE(HasOption(Argv({"rm", "/", "-r"}), "-r"));
  EXPECT_FALSE(HasOption(Argv({"rm", "--", "-r"}), "-r"));
  EXPECT_FALSE(HasOption(Argv({"rm", "x", "--", "--recursive"}), "--recursive"));
  // A `--` right after an option that may take a value is that value.
  EXPECT_TRUE(HasOption(Argv({"date", "-d", "--", "-s", "x"}), "-s"));
  EXPECT_TRUE(HasOption(Argv({"git", "log", "--grep", "--", "--output=x"}), "--output"));
  EXPECT_FALSE(HasOption(Argv({"git", "log", "--grep=a", "--", "--output=x"}), "--output"));
}

TEST(HasOption, MalformedOptionNamesMatchNothing) {
  SimpleCommand c = Argv({"x", "-a", "--all"});
  for (std::string_view bad : {"", "-", "--", "a", "-ab", "--a=b", "---"}) {
    EXPECT_FALSE(HasOption(c, bad)) << bad;
  }
}

struct Row {
  std::string_view line;
  Action action;
  std::string_view rule;
};

void ExpectRows(const Policy& policy, const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    Decision d = policy.Check(r.line);
    EXPECT_EQ(ActionName(d.action), ActionName(r.action)) << r.line << ": " << d.reason;
    EXPECT_EQ(d.rule_id, r.rule) << r.line << ": " << d.reason;
  }
}

TEST(DefaultOptionRules, AskForEveryFormOfAWritingOption) {
  ExpectRows(Policy::Default(), {
                                    {"date -s2020-01-01", Action::kAsk, "default.date-set"},
                                    {"date -us 2020-01-01", Action::kAsk, "default.date-set"},
                                    {"date --se=2020-01-01", Action::kAsk, "default.date-set"},
                                    {"date --s 2020-01-01", Action::kAsk, "default.date-set"},
                                    {"date 2020-01-01 --set", Action::kAsk, "default.date-set"},
                                    {"date -d -- -s 2020-01-01", Action::kAsk, "default.date-set"},
                                    {"date 010100002020", Action::kAsk, "default.date-set-operand"},
                                    {"date 01010000.30", Action::kAsk, "default.date-set-operand"},
                                    {"date -u", Action::kAllow, "default.date"},
                                    {"date +%s", Action::kAllow, "default.date"},
                                    {"date -d yesterday +%F", Action::kAllow, "default.date"},
                                    {"tree -ofile", Action::kAsk, "default.tree-output"},
                                    {"tree -aR -H .", Action::kAsk, "default.tree-output"},
                                    {"tree -a", Action::kAllow, "default.tree"},
                                    {"file --comp -m magic", Action::kAsk, "default.file-compile"},
                                    {"file -zC -m magic", Action::kAsk, "default.file-compile"},
                                    {"file -z x", Action::kAsk, ""},  // -z runs gzip and its kin
                                    {"ps eww", Action::kAsk, "default.ps-environment"},
                                    {"ps aux e", Action::kAsk, "default.ps-environment"},
                                    {"ps -ef", Action::kAsk, "builtin.process-listing"},
                                    {"ps aux", Action::kAsk, "builtin.process-listing"},
                                    // BSD q PIDLIST selects processes by pid, as p does.
                                    {"ps q1 -o pid,args", Action::kAsk, "builtin.process-listing"},
                                    {"ps q 1", Action::kAsk, "builtin.process-listing"},
                                    {"ps -o pid,args", Action::kAllow, "default.ps"},
                                });
}

TEST(DefaultOptionRules, GitWritingOptionsAskUnderAnOperatorAllow) {
  absl::StatusOr<Policy> p = Policy::FromToml(R"(
[[rule]]
id = "git"
action = "allow"
prefix = ["git"]
)",
                                              "t.toml");
  ASSERT_TRUE(p.ok()) << p.status();
  ExpectRows(*p, {
                     {"git diff --out=patch.txt", Action::kAsk, "default.git-output"},
                     {"git log -p --o /tmp/x", Action::kAsk, "default.git-output"},
                     {"git log --ext", Action::kAsk, "default.git-ext-diff"},
                     {"git blame -- --output=x", Action::kAllow, "git"},
                 });
}

TEST(BuiltinOptions, RmRecursiveAndNoPreserveRootInEveryForm) {
  ExpectRows(Policy::Default(), {
                                    {"rm --rec -f /", Action::kDeny, "builtin.rm-root"},
                                    {"rm --recursive=x /", Action::kDeny, "builtin.rm-root"},
                                    {"rm / -r", Action::kDeny, "builtin.rm-root"},
                                    {"rm -fr /", Action::kDeny, "builtin.rm-root"},
                                    {"rm --no-preserve x", Action::kDeny, "builtin.rm-root"},
                                    {"rm --no x", Action::kDeny, "builtin.rm-root"},
                                    {"rm x -- -r /", Action::kAsk, ""},  // -r is a file name there
                                    // After -f, `--` could be -f's value as far as we know.
                                    {"rm -f -- -r /", Action::kDeny, "builtin.rm-root"},
                                });
}

TEST(BuiltinOptions, ExemptionsCountOnlyWhenSurelyGiven) {
  ExpectRows(Policy::Default(),
             {
                 {"wipefs --no-act /dev/sda", Action::kAsk, ""},
                 {"wipefs -n /dev/sda", Action::kAsk, ""},
                 {"wipefs --no /dev/sda", Action::kDeny, "builtin.disk-format"},
                 {"wipefs -an /dev/sda", Action::kDeny, "builtin.disk-format"},
                 {"wipefs -a /dev/sda -- -n", Action::kDeny, "builtin.disk-format"},
                 {"fdisk -l /dev/sda", Action::kAsk, ""},
                 {"fdisk -ul /dev/sda", Action::kDeny, "builtin.disk-format"},
                 {"fdisk --li /dev/sda", Action::kDeny, "builtin.disk-format"},
                 {"sfdisk -l /dev/sda", Action::kAsk, ""},
                 {"sfdisk -l --delete /dev/sda 1", Action::kDeny, "builtin.disk-format"},
                 {"sfdisk --list --del /dev/sda", Action::kDeny, "builtin.disk-format"},
                 {"sgdisk --pri /dev/sda", Action::kDeny, "builtin.disk-format"},
                 {"parted -l", Action::kAsk, ""},
             });
}

TEST(BuiltinOptions, ValuesHiddenBehindAbbreviationsAndClusters) {
  ExpectRows(Policy::Default(),
             {
                 {"systemctl --prop x reboot", Action::kDeny, "builtin.shutdown"},
                 {"systemctl -Hhost --no-wall reboot", Action::kDeny, "builtin.shutdown"},
                 {"systemctl status sshd", Action::kAsk, ""},
                 {"install -m4755 x /tmp/x", Action::kDeny, "builtin.setuid"},
                 {"install -sm 4755 x /tmp/x", Action::kDeny, "builtin.setuid"},
                 {"install --mo=4755 x /tmp/x", Action::kDeny, "builtin.setuid"},
                 {"install --mo 4755 x /tmp/x", Action::kDeny, "builtin.setuid"},
                 {"install -m 0755 x /tmp/x", Action::kAsk, ""},
                 {"chmod --ref=/etc/passwd -R /", Action::kDeny, "builtin.chmod-root"},
                 {"chmod --rec 777 /etc", Action::kDeny, "builtin.chmod-root"},
                 {"mv --t=/tmp /etc", Action::kDeny, "builtin.mv-root"},
                 {"kill -9 -01", Action::kDeny, "builtin.kill-all"},
                 {"kill -9 ' -1'", Action::kDeny, "builtin.kill-all"},
                 {"kill -9 -10", Action::kAsk, ""},
                 {"badblocks -nsv /dev/sdb", Action::kDeny, "builtin.disk-format"},
             });
}

TEST(RuleOptions, TomlJsonAndRuleToTomlCarryThem) {
  absl::StatusOr<Policy> p = Policy::FromToml(R"(
[[rule]]
id = "no-force"
action = "deny"
prefix = ["git", "push"]
options = ["-f", "--force"]
)",
                                              "t.toml");
  ASSERT_TRUE(p.ok()) << p.status();
  for (std::string_view line :
       {"git push -f", "git push origin main --forc", "git push -uf o m", "git push --force=yes"}) {
    EXPECT_EQ(p->Check(line).rule_id, "no-force") << line;
  }
  EXPECT_NE(p->Check("git push origin main").rule_id, "no-force");
  EXPECT_NE(p->Check("git push -- -f").rule_id, "no-force");

  absl::StatusOr<Policy> back = Policy::FromJson(p->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Check("git push --fo").rule_id, "no-force");

  const Rule* rule = nullptr;
  for (const Rule& r : p->rules()) {
    if (r.id == "no-force") rule = &r;
  }
  ASSERT_NE(rule, nullptr);
  std::string toml = RuleToToml(*rule);
  EXPECT_NE(toml.find("options = [\"-f\", \"--force\"]"), std::string::npos) << toml;
  absl::StatusOr<Policy> again = Policy::FromToml(toml, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Check("git push -vf").rule_id, "no-force");
}

TEST(RuleOptions, MalformedOptionsAreRejected) {
  for (std::string_view bad : {"f", "-ab", "--", "--a=b", "-"}) {
    std::string text =
        "[[rule]]\naction = \"deny\"\nprefix = [\"x\"]\noptions = [\"" + std::string(bad) + "\"]\n";
    absl::StatusOr<Policy> p = Policy::FromToml(text, "t.toml");
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("t.toml:4"), std::string_view::npos);
    }
  }
  nlohmann::json j = Policy::Default().ToJson();
  j["rules"].push_back({{"id", "x"},
                        {"action", "deny"},
                        {"match", "prefix"},
                        {"argv", {"x"}},
                        {"options", {"nope"}}});
  EXPECT_FALSE(Policy::FromJson(j).ok());
}

}  // namespace
}  // namespace termbridge::policy
