// The nesting bounds: deep JSON and TOML are caught before parsing, what is
// inside strings and comments is not counted, and what passes parses.
#include "common/nesting/nesting.h"

#include <toml++/toml.h>

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::nesting {
namespace {

std::string Repeat(std::string_view part, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += part;
  return out;
}

TEST(JsonDepthTest, CountsOnlyNestingOutsideStrings) {
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_TRUE(JsonNestsDeeperThan(R"({"a":[1,{"b":[]}]})", 3));
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"s":"[[[[[[[[[[\"[[[["})", 1));
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"s":"\\"}  )", 1));
  EXPECT_FALSE(JsonNestsDeeperThan("[[]][[]][[]]", 2));
  EXPECT_TRUE(JsonNestsDeeperThan(std::string(kMaxJsonDepth + 1, '['), kMaxJsonDepth));
  EXPECT_FALSE(JsonNestsDeeperThan(std::string(kMaxJsonDepth, '['), kMaxJsonDepth));
  EXPECT_TRUE(JsonNestsDeeperThan(std::string(200000, '[') + std::string(200000, ']')));
}

TEST(JsonDepthTest, WhatPassesParses) {
  std::string deepest = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  ASSERT_FALSE(JsonNestsDeeperThan(deepest));
  EXPECT_FALSE(nlohmann::json::parse(deepest, nullptr, false).is_discarded());
}

TEST(TomlDepthTest, CountsHeadersDottedKeysAndContainers) {
  EXPECT_FALSE(TomlNestsDeeperThan("a = 1\nb = \"x\"\n", 1));
  EXPECT_TRUE(TomlNestsDeeperThan("a.b = 1\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("a.b = 1\n", 2));
  EXPECT_TRUE(TomlNestsDeeperThan("[a.b]\nc.d = 1\n", 3));
  EXPECT_FALSE(TomlNestsDeeperThan("[a.b]\nc.d = 1\n", 4));
  EXPECT_FALSE(TomlNestsDeeperThan("[[rule]]\nprefix = [\"npm\", \"test\"]\n", 3));
  EXPECT_TRUE(TomlNestsDeeperThan("[[rule]]\nprefix = [\"npm\", \"test\"]\n", 2));
  EXPECT_TRUE(TomlNestsDeeperThan("a = [[1]]\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("a = [[1]]\n", 2));
  EXPECT_TRUE(TomlNestsDeeperThan("a = { b = { c.d = 1 } }\n", 3));
  EXPECT_FALSE(TomlNestsDeeperThan("a = { b = { c.d = 1 } }\n", 4));
  EXPECT_FALSE(TomlNestsDeeperThan("a = [{ b = 1 }, { c = 2 }]\nd = 3\n", 3));
  // A header after a value line starts again from its own depth.
  EXPECT_FALSE(TomlNestsDeeperThan("[a.b.c]\nx = 1\n[d]\ny = 2\n", 4));
}

TEST(TomlDepthTest, IgnoresStringsAndComments) {
  EXPECT_FALSE(TomlNestsDeeperThan("a = \"[[[[{{{{a.b.c.d\"\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("a = '[[[[\\'\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("a = \"\"\"\n[[[[\nx.y.z = 1\n\"\"\"\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("a = '''\n[x.y.z]\n'''\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("# [a.b.c.d]\na = 1 # [[[[\n", 1));
  EXPECT_FALSE(TomlNestsDeeperThan("\"a.b.c\" = 1\n'd.e' = 2\n", 1));
  EXPECT_TRUE(TomlNestsDeeperThan("\"a\".'b'.c = 1\n", 2));
}

// Each of these overflowed toml++'s stack (SIGSEGV) at 100,000.
TEST(TomlDepthTest, CatchesWhatCrashesTheParser) {
  const size_t n = 100000;
  EXPECT_TRUE(TomlNestsDeeperThan("a" + Repeat(".b", n) + " = 1\n"));
  EXPECT_TRUE(TomlNestsDeeperThan("[a" + Repeat(".b", n) + "]\nx = 1\n"));
  EXPECT_TRUE(TomlNestsDeeperThan("[[a" + Repeat(" . b", n) + "]]\n"));
  EXPECT_TRUE(TomlNestsDeeperThan("a = " + Repeat("{b=", n) + "1" + Repeat("}", n) + "\n"));
  EXPECT_TRUE(TomlNestsDeeperThan("a = " + Repeat("[", n) + Repeat("]", n) + "\n"));
  EXPECT_TRUE(TomlNestsDeeperThan("a = { " + Repeat("b.", n) + "c = 1 }\n"));
}

TEST(TomlDepthTest, WhatPassesParses) {
  // As deep as allowed in every way the depth grows, then parsed for real.
  std::string keys = "a" + Repeat(".b", kMaxTomlDepth - 1) + " = 1\n";
  std::string header = "[a" + Repeat(".b", kMaxTomlDepth - 2) + "]\nx = 1\n";
  std::string arrays = "a = " + Repeat("[", kMaxTomlDepth - 1) + Repeat("]", kMaxTomlDepth - 1);
  for (const std::string& text : {keys, header, arrays}) {
    ASSERT_FALSE(TomlNestsDeeperThan(text)) << text.substr(0, 40);
    EXPECT_NO_THROW(toml::parse(text)) << text.substr(0, 40);
  }
}

}  // namespace
}  // namespace termbridge::nesting
