// ShellState from listings as bash writes them, and what a change means for
// a line's programs (PATH lookups against real files).
#include "broker/core/shell_state.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

namespace fs = std::filesystem;

constexpr char kFresh[] =
    "path /usr/bin:/bin\n"
    "opts braceexpand:emacs:hashall checkwinsize:promptvars\n"
    "__tb_load () \n"
    "{ \n"
    "    __tb_loaded=1\n"
    "}\n"
    "declare -x HOME=\"/root\"\n"
    "declare -x PWD=\"/srv\"\n"
    "enable echo\n"
    "enable printf\n";

ShellState Parse(const std::string& text) {
  absl::StatusOr<ShellState> state = ParseShellState(text);
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *state : ShellState{};
}

TEST(ShellStateTest, ReadsTheListingsBashWrites) {
  ShellState s = Parse(std::string(kFresh) +
                       "alias ll='ls -l'\n"
                       "trap -- 'echo x' DEBUG\n"
                       "builtin hash -p /tmp/evil ls\n"
                       "path /forged\n");
  EXPECT_EQ(s.path, "/usr/bin:/bin");  // the first path line is the shell's
  EXPECT_EQ(s.aliases.count("ll"), 1u);
  // Functions, exports (not PWD) and the rest are kept in order.
  EXPECT_EQ(s.functions.at("__tb_load"), "{ \n    __tb_loaded=1\n}\n");
  EXPECT_EQ(s.rest, (std::vector<std::string>{"declare -x HOME=\"/root\"", "path /forged"}));
  EXPECT_EQ(s.traps.size(), 1u);
  EXPECT_EQ(s.hashed.at("ls"), "/tmp/evil");
  EXPECT_EQ(s.builtins.count("enable echo"), 1u);
  // Cut short or empty: what the shell would run cannot be known.
  EXPECT_FALSE(ParseShellState("").ok());
  EXPECT_FALSE(ParseShellState("path /usr/bin\n").ok());
}

TEST(ShellStateTest, AChangeThatTouchesTheLineIsNamed) {
  const ShellState fresh = Parse(kFresh);
  EXPECT_EQ(ShellStateProblem(fresh, fresh, {"ls", "cat"}, "/"), std::nullopt);
  auto problem = [&](const std::string& extra, std::vector<std::string> programs) {
    return ShellStateProblem(fresh, Parse(std::string(kFresh) + extra), programs, "/").value_or("");
  };
  EXPECT_NE(problem("alias cat='rm -rf ~'\n", {"cat"}).find("`cat` is an alias"),
            std::string::npos);
  // Any alias: one can name a reserved word the line holds (`{`, `then`).
  EXPECT_NE(problem("alias {='touch x; {'\n", {"cat"}).find("an alias was set"), std::string::npos);
  EXPECT_NE(
      problem("cat () \n{ \n    touch x\n}\n", {"ls", "cat"}).find("`cat` is a shell function"),
      std::string::npos);
  EXPECT_NE(problem("printf () \n{ \n    true\n}\n", {"ls"}).find("a function `printf`"),
            std::string::npos);  // a builtin's name: the shell's hooks call it
  EXPECT_EQ(problem("deactivate () \n{ \n    true\n}\n", {"ls"}), "");  // a venv's
  EXPECT_NE(problem("__tb_load () \n{ \n    evil\n}\n", {"ls"}).find("its own hook"),
            std::string::npos);
  EXPECT_NE(problem("declare -x GIT_PAGER=\"sh x\"\n", {"git"}).find("GIT_PAGER"),
            std::string::npos);
  EXPECT_EQ(problem("declare -x PWD=\"/elsewhere\"\ndeclare -x LANG=\"C\"\n", {"ls"}), "");
  EXPECT_NE(problem("trap -- 'x' DEBUG\n", {"true"}).find("a trap was set"), std::string::npos);
  EXPECT_NE(problem("enable -n echo\n", {"true"}).find("builtins were changed"), std::string::npos);
  EXPECT_NE(problem("builtin hash -p /tmp/evil/ls ls\n", {"ls"}).find("`ls` is hashed to"),
            std::string::npos);
  ShellState options = fresh;
  options.options = "braceexpand:emacs:hashall checkwinsize:extglob:promptvars";
  EXPECT_NE(ShellStateProblem(fresh, options, {"true"}, "/").value_or("").find("+extglob"),
            std::string::npos);
}

TEST(ShellStateTest, PathMattersOnlyWhereItFindsAnotherFile) {
  std::string tmpl = (fs::temp_directory_path() / "tb-shellstate-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  fs::create_directories(dir + "/venv/bin");
  fs::create_directories(dir + "/sys");
  for (const char* file : {"/venv/bin/tool", "/sys/tool", "/sys/other"}) {
    std::ofstream(dir + file) << "#!/bin/sh\n";
    fs::permissions(dir + file, fs::perms::owner_all);
  }
  fs::create_symlink(dir + "/sys/other", dir + "/venv/bin/other");  // same file: as before
  ShellState fresh = Parse(kFresh);
  fresh.path = dir + "/sys";
  ShellState activated = fresh;
  activated.path = "venv/bin:" + dir + "/sys";  // relative: from the cwd
  EXPECT_EQ(ShellStateProblem(fresh, activated, {"other"}, dir), std::nullopt);
  std::string tool = ShellStateProblem(fresh, activated, {"tool"}, dir).value_or("");
  EXPECT_NE(tool.find("PATH was changed, and `tool` runs " + dir + "/venv/bin/tool"),
            std::string::npos)
      << tool;
  // Builtins and paths are not looked up.
  EXPECT_EQ(ShellStateProblem(fresh, activated, {"echo", dir + "/venv/bin/tool"}, dir),
            std::nullopt);
  fs::remove_all(dir);
}

TEST(ShellStateTest, ProgramOfSkipsAssignmentsAndQuotes) {
  EXPECT_EQ(ProgramOf("LANG=C ls -l"), "ls");
  EXPECT_EQ(ProgramOf("'l's x"), "ls");
  EXPECT_EQ(ProgramOf("\\cat"), "cat");
  EXPECT_EQ(ProgramOf(""), "");
}

}  // namespace
}  // namespace termbridge::core
