// The nesting bound: deep arrays and objects are caught before parsing,
// brackets inside strings are not counted.
#include "agent/mcp/json_depth.h"

#include <string>

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

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

}  // namespace
}  // namespace termbridge::mcp
