// Kebab-case flags reach absl under their snake_case names.
#include "common/cli/flags.h"

#include "gtest/gtest.h"

namespace termbridge::cli {
namespace {

TEST(FlagsTest, KebabNamesBecomeSnakeAndValuesStay) {
  const char* argv[] = {"bin",  "--ready-file=/tmp/a-b", "--state-dir",
                        "/x-y", "-agent-id=a-1",         "pos-arg",
                        "--",   "--not-a-flag"};
  auto out = NormalizeFlagSpelling(8, const_cast<char**>(argv));
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(out[1], "--ready_file=/tmp/a-b");
  EXPECT_EQ(out[2], "--state_dir");
  EXPECT_EQ(out[3], "/x-y");
  EXPECT_EQ(out[4], "-agent_id=a-1");
  EXPECT_EQ(out[5], "pos-arg");
  EXPECT_EQ(out[7], "--not-a-flag");
}

}  // namespace
}  // namespace termbridge::cli
