// ParseGitConfig against the forms git accepts (and the ones it refuses):
// header styles, case, keys on the header line, bare keys, comments, quotes,
// escapes, continuation lines, CRLF and a BOM.
#include "common/workdir/git_config_syntax.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace termbridge::workdir {
namespace {

std::vector<std::string> Names(std::string_view text) {
  auto entries = ParseGitConfig(text);
  EXPECT_TRUE(entries.ok()) << entries.status();
  std::vector<std::string> names;
  if (entries.ok()) {
    for (const auto& e : *entries) names.push_back(e.Name());
  }
  return names;
}

GitConfigEntry Only(std::string_view text) {
  auto entries = ParseGitConfig(text);
  EXPECT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ(entries.ok() ? entries->size() : 0u, 1u);
  return entries.ok() && entries->size() == 1 ? (*entries)[0] : GitConfigEntry{};
}

TEST(GitConfigSyntaxTest, SectionAndKeyNamesAreLowercased) {
  GitConfigEntry e = Only("[Core]\n\tFSMonitor = touch /tmp/x\n");
  EXPECT_EQ(e.section, "core");
  EXPECT_EQ(e.key, "fsmonitor");
  EXPECT_FALSE(e.has_subsection);
  EXPECT_EQ(e.value, "touch /tmp/x");
  EXPECT_EQ(e.line, 2);
}

TEST(GitConfigSyntaxTest, QuotedSubsectionKeepsCaseAndEscapes) {
  GitConfigEntry e = Only("[Filter \"My\\\"Drv\"]\n  Clean = x\n");
  EXPECT_EQ(e.section, "filter");
  EXPECT_TRUE(e.has_subsection);
  EXPECT_EQ(e.subsection, "My\"Drv");
  EXPECT_EQ(e.Name(), "filter.My\"Drv.clean");
}

TEST(GitConfigSyntaxTest, OldDottedSubsectionIsLowercased) {
  EXPECT_EQ(Names("[Remote.Origin]\nURL = u\n"), std::vector<std::string>{"remote.origin.url"});
  EXPECT_EQ(Names("[a.B.c]\nd = 1\n"), std::vector<std::string>{"a.b.c.d"});
}

TEST(GitConfigSyntaxTest, KeyOnTheHeaderLine) {
  EXPECT_EQ(Names("[core] fsmonitor = x\n[pager]log=y"),
            (std::vector<std::string>{"core.fsmonitor", "pager.log"}));
}

TEST(GitConfigSyntaxTest, BareKeyIsBooleanTrue) {
  GitConfigEntry e = Only("[core]\n\tbare\n");
  EXPECT_TRUE(e.bare);
  EXPECT_EQ(e.value, "");
  EXPECT_TRUE(Only("[core]\n\tbare").bare);  // at the end of the file
}

TEST(GitConfigSyntaxTest, CommentsAndQuotes) {
  auto entries = ParseGitConfig(
      "# top\n; also\n[core] ; after header\n"
      "\teditor = \"vim # not a comment\" # a comment\n"
      "\tpager = less ; a comment\n"
      "\tx = \"a\" b \"c\"  \n");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].value, "vim # not a comment");
  EXPECT_EQ((*entries)[0].line, 4);
  EXPECT_EQ((*entries)[1].value, "less");
  EXPECT_EQ((*entries)[2].value, "a b c");
}

TEST(GitConfigSyntaxTest, ContinuationLinesAndEscapes) {
  auto entries = ParseGitConfig("[core]\n\tfsmonitor = tou\\\nch /tmp/\\\n  x\n\tk = a\\tb\\n\n");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].value, "touch /tmp/  x");
  EXPECT_EQ((*entries)[0].line, 2);
  EXPECT_EQ((*entries)[1].line, 5);
  EXPECT_EQ((*entries)[1].value, "a\tb\n");
}

TEST(GitConfigSyntaxTest, CrlfAndBom) {
  EXPECT_EQ(Names("\xef\xbb\xbf[core]\r\n\tpager = less\r\n"),
            std::vector<std::string>{"core.pager"});
}

TEST(GitConfigSyntaxTest, KeyBeforeAnySectionHasNoSection) {
  GitConfigEntry e = Only("pager = less\n");
  EXPECT_EQ(e.section, "");
  EXPECT_EQ(e.Name(), "pager");
}

TEST(GitConfigSyntaxTest, RefusesWhatGitRefuses) {
  for (const char* bad :
       {"[core\n", "[core \"x]\n", "[core x]\n", "[]\n", "[core]\n1key = v\n",
        "[core]\nk = \"open\n", "[core]\nk = \\q\n", "[core]\nk # c\n", "[core]\nk v\n"}) {
    EXPECT_FALSE(ParseGitConfig(bad).ok()) << bad;
  }
  auto s = ParseGitConfig("[core]\n\tok = 1\n\t-bad = 2\n");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "line 3: bad config line");
}

}  // namespace
}  // namespace termbridge::workdir
