// The console's access rules: the operator token, the cookie derived from
// it, and which browser origins may talk to the console.
#include "broker/surface/console/access.h"

#include "gtest/gtest.h"

namespace termbridge::console {
namespace {

TEST(TokenMatches, OnlyTheExactTokenMatches) {
  EXPECT_TRUE(TokenMatches("s3cret-token", "s3cret-token"));
  EXPECT_FALSE(TokenMatches("s3cret-token", "s3cret-tokeN"));
  EXPECT_FALSE(TokenMatches("s3cret-token", "s3cret-toke"));
  EXPECT_FALSE(TokenMatches("s3cret-token", "s3cret-token2"));
  EXPECT_FALSE(TokenMatches("s3cret-token", ""));
  EXPECT_FALSE(TokenMatches("", ""));  // no token configured never matches
}

TEST(BearerToken, ParsesTheScheme) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer   abc  "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), std::nullopt);
  EXPECT_EQ(BearerToken("Bearer"), std::nullopt);
  EXPECT_EQ(BearerToken(""), std::nullopt);
}

TEST(CookieValue, FindsTheNamedCookie) {
  EXPECT_EQ(CookieValue("a=1; tb_console_80=xyz; b=2", "tb_console_80"), "xyz");
  EXPECT_EQ(CookieValue("tb_console_80=\"q\"", "tb_console_80"), "q");
  EXPECT_EQ(CookieValue("tb_console_801=xyz", "tb_console_80"), std::nullopt);
  EXPECT_EQ(CookieValue("", "tb_console_80"), std::nullopt);
}

// A page on another port of localhost is "same-site" (its <img src> sends
// the cookie and no Origin): refused; the console's page and the person's
// own navigation are not, nor is a client that sends no such header.
TEST(FetchSiteAllowed, OnlyTheConsolesOwnPageOrThePerson) {
  EXPECT_TRUE(FetchSiteAllowed(std::nullopt));
  EXPECT_TRUE(FetchSiteAllowed("same-origin"));
  EXPECT_TRUE(FetchSiteAllowed("none"));
  EXPECT_TRUE(FetchSiteAllowed(" Same-Origin "));
  EXPECT_FALSE(FetchSiteAllowed("same-site"));
  EXPECT_FALSE(FetchSiteAllowed("cross-site"));
  EXPECT_FALSE(FetchSiteAllowed(""));
  EXPECT_FALSE(FetchSiteAllowed("same-origin, cross-site"));
}

TEST(OwnOrigins, LoopbackHasItsThreeSpellings) {
  EXPECT_EQ(OwnOrigins("127.0.0.1", 45460),
            (std::vector<std::string>{"http://127.0.0.1:45460", "http://localhost:45460",
                                      "http://[::1]:45460"}));
  EXPECT_EQ(OwnOrigins("0.0.0.0", 8).size(), 3u);
  EXPECT_EQ(OwnOrigins("10.0.0.5", 8), (std::vector<std::string>{"http://10.0.0.5:8"}));
  EXPECT_EQ(OwnOrigins("fd00::1", 8), (std::vector<std::string>{"http://[fd00::1]:8"}));
}

class ConsoleAccessTest : public ::testing::Test {
 protected:
  ConsoleAccess access_{"tok-123", "127.0.0.1", 45460, {"https://Console.Example.org/"}};
};

TEST_F(ConsoleAccessTest, BearerTokenAuthorizes) {
  EXPECT_TRUE(access_.Authorized("Bearer tok-123", ""));
  EXPECT_FALSE(access_.Authorized("Bearer tok-124", ""));
  EXPECT_FALSE(access_.Authorized("", ""));
}

TEST_F(ConsoleAccessTest, WrongBearerIsNotRescuedByTheCookie) {
  std::string cookie = access_.SetCookieHeader();
  cookie = cookie.substr(0, cookie.find(';'));
  EXPECT_TRUE(access_.Authorized("", cookie));
  EXPECT_FALSE(access_.Authorized("Bearer wrong", cookie));
}

TEST_F(ConsoleAccessTest, CookieIsDerivedNotTheToken) {
  std::string header = access_.SetCookieHeader();
  EXPECT_EQ(header.find("tok-123"), std::string::npos);
  EXPECT_NE(header.find("tb_console_45460="), std::string::npos);
  EXPECT_NE(header.find("HttpOnly"), std::string::npos);
  EXPECT_NE(header.find("SameSite=Strict"), std::string::npos);
  EXPECT_FALSE(access_.Authorized("", "tb_console_45460=tok-123"));
  // Another console's cookie (another token) does not open this one.
  ConsoleAccess other("tok-999", "127.0.0.1", 45460, {});
  std::string foreign = other.SetCookieHeader();
  EXPECT_FALSE(access_.Authorized("", foreign.substr(0, foreign.find(';'))));
}

TEST_F(ConsoleAccessTest, QueryTokenChecksTheToken) {
  EXPECT_TRUE(access_.TokenValid("tok-123"));
  EXPECT_FALSE(access_.TokenValid("tok-12"));
}

TEST_F(ConsoleAccessTest, OriginRules) {
  EXPECT_TRUE(access_.OriginAllowed(std::nullopt));  // not a browser
  EXPECT_TRUE(access_.OriginAllowed("http://127.0.0.1:45460"));
  EXPECT_TRUE(access_.OriginAllowed("http://LOCALHOST:45460"));
  EXPECT_TRUE(access_.OriginAllowed("https://console.example.org"));
  EXPECT_FALSE(access_.OriginAllowed("http://127.0.0.1:8080"));  // another local page
  EXPECT_FALSE(access_.OriginAllowed("http://evil.example"));
  EXPECT_FALSE(access_.OriginAllowed("null"));
  EXPECT_FALSE(access_.OriginAllowed(""));
}

}  // namespace
}  // namespace termbridge::console
