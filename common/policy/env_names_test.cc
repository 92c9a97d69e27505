// The environment variables an agent may set unseen, and their values.
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

TEST(EnvNameHarmless, LocaleAndDisplayNamesOnlyByDefault) {
  for (const char* name :
       {"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR", "COLUMNS", "LINES"}) {
    EXPECT_TRUE(EnvNameHarmless(name, {})) << name;
  }
  for (const char* name : {"PATH", "LD_PRELOAD", "GIT_DIR", "PAGER", "LOCPATH", "TZDIR", "",
                           "LANGX", "lang", "BASH_ENV"}) {
    EXPECT_FALSE(EnvNameHarmless(name, {})) << name;
  }
}

TEST(EnvNameHarmless, OperatorNamesExactlyOrByPrefixPattern) {
  std::vector<std::string> allowed = {"DEBUG", "MYAPP_*"};
  EXPECT_TRUE(EnvNameHarmless("DEBUG", allowed));
  EXPECT_TRUE(EnvNameHarmless("MYAPP_LEVEL", allowed));
  EXPECT_TRUE(EnvNameHarmless("MYAPP_", allowed));
  EXPECT_FALSE(EnvNameHarmless("DEBUGGER", allowed));
  EXPECT_FALSE(EnvNameHarmless("MYAPP", allowed));
  EXPECT_FALSE(EnvNameHarmless("PATH", allowed));
}

TEST(EnvNameHarmless, GitRepositoryNamesNeverEvenWhenAnOperatorAllowsThem) {
  // They move the repository git reads (and its config) where the read
  // scope does not look.
  for (const char* name :
       {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0", "GIT_CONFIG_PARAMETERS"}) {
    EXPECT_FALSE(EnvNameHarmless(name, {"GIT_*"})) << name;
    EXPECT_FALSE(EnvNameHarmless(name, {"*"})) << name;
    EXPECT_FALSE(EnvNameHarmless(name, {name})) << name;
  }
  EXPECT_TRUE(EnvNameHarmless("GIT_AUTHOR_NAME", {"GIT_*"}));
  Policy p = Policy::Default();
  EXPECT_EQ(p.Check("GIT_DIR=/elsewhere/.git git log -p").action, Action::kAsk);
  EXPECT_EQ(p.Check("env GIT_COMMON_DIR=/elsewhere git log").action, Action::kAsk);
}

TEST(EnvValueProblem, RefusesControlsLengthAndPaths) {
  EXPECT_FALSE(EnvValueProblem("LANG", "C.UTF-8"));
  EXPECT_FALSE(EnvValueProblem("LANGUAGE", "de:en"));
  EXPECT_FALSE(EnvValueProblem("TZ", "Europe/Paris"));
  EXPECT_FALSE(EnvValueProblem("TZ", ":Europe/Paris"));
  EXPECT_FALSE(EnvValueProblem("TZ", "UTC0"));
  EXPECT_FALSE(EnvValueProblem("TZ", ":/usr/share/zoneinfo/UTC"));
  EXPECT_FALSE(EnvValueProblem("COLUMNS", "120"));
  EXPECT_TRUE(EnvValueProblem("LANG", std::string("C\0x", 3)));
  EXPECT_TRUE(EnvValueProblem("COLUMNS", "1\n2"));
  EXPECT_TRUE(EnvValueProblem("COLUMNS", "\x1b[2J"));
  EXPECT_TRUE(EnvValueProblem("NO_COLOR", std::string(4097, 'x')));
  EXPECT_FALSE(EnvValueProblem("NO_COLOR", std::string(4096, 'x')));
  EXPECT_TRUE(EnvValueProblem("LANG", "/tmp/evil"));
  EXPECT_TRUE(EnvValueProblem("LC_ALL", "../../tmp/x"));
  EXPECT_TRUE(EnvValueProblem("LANGUAGE", "en:/tmp/x"));
  EXPECT_TRUE(EnvValueProblem("TZ", ":/etc/shadow"));
  EXPECT_TRUE(EnvValueProblem("TZ", "/etc/shadow"));
  EXPECT_TRUE(EnvValueProblem("TZ", ":/usr/share/zoneinfo/../../../etc/shadow"));
  EXPECT_TRUE(EnvValueProblem("TZ", "../../../etc/shadow"));
}

// In Big5 the bytes e4 b8 a5 5c are a valid UTF-8 character and a
// backslash to the parser, one character to bash: `echo X\; touch c` ran
// touch. Only locales that read as UTF-8 (or ASCII) pass.
TEST(EnvValueProblem, OnlyUtf8OrAsciiLocales) {
  for (const char* ok :
       {"C", "POSIX", "", "C.UTF-8", "C.utf8", "en_US.UTF-8", "de_DE.utf8@euro", "zh_TW.UTF-8"}) {
    EXPECT_FALSE(EnvValueProblem("LC_ALL", ok)) << ok;
    EXPECT_FALSE(EnvValueProblem("LANG", ok)) << ok;
  }
  for (const char* bad : {"zh_TW.big5", "zh_TW", "zh_CN.GBK", "zh_CN.GB18030", "ja_JP.SJIS",
                          "ja_JP.sjis", "en_US", "en_US.ISO-8859-1", "zh_HK.BIG5-HKSCS",
                          // glibc reads a '.' after '@' as part of the modifier: no codeset.
                          "zh_TW@x.utf8", "zh_TW@.UTF-8", "zh_TW.big5@x.utf8"}) {
    EXPECT_TRUE(EnvValueProblem("LC_ALL", bad)) << bad;
    EXPECT_TRUE(EnvValueProblem("LC_CTYPE", bad)) << bad;
    EXPECT_TRUE(EnvValueProblem("LANG", bad)) << bad;
  }
  EXPECT_FALSE(EnvValueProblem("LANGUAGE", "zh_TW:en"));  // message catalogs only
  Policy p = Policy::Default();
  EXPECT_EQ(p.Check("LC_ALL=zh_TW.big5 ls").action, Action::kAsk);
  EXPECT_EQ(p.Check("LC_ALL=C.UTF-8 ls").action, Action::kAllow);
}

TEST(EnvAssignments, AllowRulesSkipUnsoundLocaleValues) {
  Policy p = Policy::Default();
  EXPECT_EQ(p.Check("LANG=C ls").action, Action::kAllow);
  EXPECT_EQ(p.Check("TZ=UTC date").action, Action::kAllow);
  EXPECT_EQ(p.Check("LANG=/tmp/evil ls").action, Action::kAsk);
  EXPECT_EQ(p.Check("TZ=:/etc/shadow date").action, Action::kAsk);
  EXPECT_EQ(p.Check("LC_ALL+=/x ls").action, Action::kAsk);
  EXPECT_EQ(p.Check("env LOCPATH=/tmp ls").action, Action::kAsk);
}

}  // namespace
}  // namespace termbridge::policy
