// Input to programs that run what they read asks; input to filters does not.
#include "broker/core/input_readers.h"

#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

TEST(InputReadersTest, ShellsPagersEditorsAndReplsRunTheirInput) {
  for (const char* p :
       {"bash",    "zsh",   "sh",     "less",          "more",         "man",         "vim.basic",
        "nvim",    "ed",    "emacs",  "python3",       "python3.11",   "perl",        "perl5.36",
        "node",    "irb",   "gdb",    "sqlite3",       "psql",         "ssh",         "xargs",
        "crontab", "dc",    "tmux",   "gdb-multiarch", "python3-dbg",  "ipython3.11", "vim.athena",
        "nvim-qt", "ksh93", "duckdb", "rlwrap",        "(unknown cat)"}) {
    EXPECT_TRUE(RunsCommandsFromInput(p)) << p;
  }
}

TEST(InputReadersTest, FiltersAndPlainProgramsDoNot) {
  for (const char* p : {"cat", "sleep", "grep", "sort", "wc", "head", "tee", "pythonic", "perlite",
                        "vimeo", "lessen", ""}) {
    EXPECT_FALSE(RunsCommandsFromInput(p)) << p;
  }
}

TEST(InputReadersTest, AnyReaderInTheForegroundGroupCounts) {
  EXPECT_EQ(CommandReader({"git", "less"}).value_or(""), "git");
  EXPECT_EQ(CommandReader({"cat", "less"}).value_or(""), "less");
  EXPECT_FALSE(CommandReader({"cat", "sleep"}).has_value());
  EXPECT_FALSE(CommandReader({}).has_value());
}

}  // namespace
}  // namespace termbridge::core
