// The HTTP token file: created once (0600, 64 hex digits, in a new 0700
// directory), read back unchanged after, and a short token is refused.
#include "agent/mcp/http_token.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

namespace fs = std::filesystem;

class HttpTokenTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = testing::TempDir() + "tb-http-token-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string dir_;
};

TEST_F(HttpTokenTest, CreatedOnceWithMode0600ThenReadBack) {
  std::string path = dir_ + "/state/termbridge/agent-http-token";
  absl::StatusOr<HttpToken> first = LoadOrCreateHttpToken(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->created);
  EXPECT_EQ(first->token.size(), 64u);
  EXPECT_EQ(first->token.find_first_not_of("0123456789abcdef"), std::string::npos);
  struct stat sb;
  ASSERT_EQ(stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  ASSERT_EQ(stat((dir_ + "/state/termbridge").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0700u);

  absl::StatusOr<HttpToken> again = LoadOrCreateHttpToken(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->token, first->token);
  // Nothing but the token file is left behind.
  EXPECT_EQ(
      std::distance(fs::directory_iterator(dir_ + "/state/termbridge"), fs::directory_iterator()),
      1);
}

TEST_F(HttpTokenTest, AShortTokenIsRefused) {
  std::string path = dir_ + "/token";
  std::ofstream(path) << "short\n";
  absl::StatusOr<HttpToken> token = LoadOrCreateHttpToken(path);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(token.status().message().find("shorter than 16"), std::string::npos);
}

}  // namespace
}  // namespace termbridge::mcp
