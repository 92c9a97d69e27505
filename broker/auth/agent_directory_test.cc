// AgentDirectory: tokens name agents, revocation sticks across restarts.
#include "broker/auth/agent_directory.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace termbridge::broker::auth {
namespace {

class AgentDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "agentdirXXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    options_.store_path = dir_ + "/agents.json";
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::unique_ptr<AgentDirectory> Open() {
    absl::StatusOr<std::unique_ptr<AgentDirectory>> directory = AgentDirectory::Open(options_);
    EXPECT_TRUE(directory.ok()) << directory.status();
    return directory.ok() ? std::move(*directory) : nullptr;
  }

  std::string dir_;
  AgentDirectory::Options options_;
};

TEST_F(AgentDirectoryTest, IssuedTokenNamesItsAgentAndIsStoredHashedAndPrivate) {
  auto directory = Open();
  absl::StatusOr<std::string> token = directory->Add("alice");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*directory->Identify(*token, ""), "alice");
  std::ifstream in(options_.store_path);
  std::string store((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(store.find(*token), std::string::npos) << "the token itself must not be stored";
  struct stat st;
  ASSERT_EQ(stat(options_.store_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  // A second broker reading the same store knows alice.
  auto again = Open();
  EXPECT_EQ(*again->Identify(*token, ""), "alice");
}

TEST_F(AgentDirectoryTest, UnknownAndMissingCredentialsAreUnauthenticated) {
  auto directory = Open();
  EXPECT_TRUE(absl::IsUnauthenticated(directory->Identify("nope-nope-nope-nope", "").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(directory->Identify("", "").status()));
  // Certificates name agents only when the broker verifies them.
  EXPECT_TRUE(absl::IsUnauthenticated(directory->Identify("", "carol").status()));
}

TEST_F(AgentDirectoryTest, DuplicateAndBadNamesAreRefused) {
  auto directory = Open();
  ASSERT_TRUE(directory->Add("alice").ok());
  EXPECT_TRUE(absl::IsAlreadyExists(directory->Add("alice").status()));
  for (const char* bad : {"", "-x", ".x", "a/b", "a b", "a\nb",
                          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(directory->Add(bad).status())) << bad;
  }
}

TEST_F(AgentDirectoryTest, RevocationEndsEveryCredentialOfTheNameAndSurvivesRestart) {
  options_.tokens_dir = dir_ + "/tokens";
  ASSERT_EQ(mkdir(options_.tokens_dir.c_str(), 0700), 0);
  std::ofstream(options_.tokens_dir + "/bob.token") << "bob-token-0123456789\n";
  options_.shared_token = "shared-token-0123456789";
  auto directory = Open();
  std::string alice = *directory->Add("alice");
  EXPECT_EQ(*directory->Identify("bob-token-0123456789", ""), "bob");
  EXPECT_EQ(*directory->Identify("shared-token-0123456789", ""), "agent");

  ASSERT_TRUE(directory->Revoke("alice").ok());
  ASSERT_TRUE(directory->Revoke("bob").ok());
  absl::Status refused = directory->Identify(alice, "").status();
  EXPECT_TRUE(absl::IsUnauthenticated(refused));
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("revoked"));
  EXPECT_TRUE(absl::IsUnauthenticated(directory->Identify("bob-token-0123456789", "").status()));
  EXPECT_EQ(*directory->Identify("shared-token-0123456789", ""), "agent");

  // The token file is still there: a restarted broker still refuses it.
  auto restarted = Open();
  EXPECT_TRUE(absl::IsUnauthenticated(restarted->Identify(alice, "").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(restarted->Identify("bob-token-0123456789", "").status()));

  // Adding alice again issues a new token; the old one stays dead.
  std::string fresh = *restarted->Add("alice");
  EXPECT_EQ(*restarted->Identify(fresh, ""), "alice");
  EXPECT_TRUE(absl::IsUnauthenticated(restarted->Identify(alice, "").status()));
  EXPECT_TRUE(absl::IsNotFound(restarted->Revoke("nobody").status()));
}

TEST_F(AgentDirectoryTest, VerifiedCertificatesNameAgentsAndCanBeRevoked) {
  options_.certificates_name_agents = true;
  auto directory = Open();
  EXPECT_EQ(*directory->Identify("", "carol"), "carol");
  EXPECT_TRUE(absl::IsUnauthenticated(directory->Identify("", "bad name").status()));
  ASSERT_TRUE(directory->Revoke("carol").ok());
  EXPECT_TRUE(absl::IsUnauthenticated(directory->Identify("", "carol").status()));
  EXPECT_TRUE(absl::IsUnauthenticated(Open()->Identify("", "carol").status()));
}

TEST_F(AgentDirectoryTest, TwoAgentsWithOneTokenOrABadStoreFailToOpen) {
  options_.tokens_dir = dir_ + "/tokens";
  ASSERT_EQ(mkdir(options_.tokens_dir.c_str(), 0700), 0);
  std::ofstream(options_.tokens_dir + "/a.token") << "same-token-0123456789";
  std::ofstream(options_.tokens_dir + "/b.token") << "same-token-0123456789";
  EXPECT_FALSE(AgentDirectory::Open(options_).ok());
  std::remove((options_.tokens_dir + "/b.token").c_str());
  std::ofstream(options_.tokens_dir + "/short.token") << "short";
  EXPECT_FALSE(AgentDirectory::Open(options_).ok());
  std::remove((options_.tokens_dir + "/short.token").c_str());
  std::ofstream(options_.store_path) << "{not json";
  EXPECT_FALSE(AgentDirectory::Open(options_).ok());
}

}  // namespace
}  // namespace termbridge::broker::auth
