// One precedence for every setting: flag > TERMBRIDGE_* environment > TOML
// file > default; bad input names the key (and the line, in the file).
#include "broker/server/broker_config.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace termbridge::broker {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string WriteToml(const std::string& content) {
  std::string path = ::testing::TempDir() + "/tb-config-XXXXXX";
  int fd = mkstemp(path.data());
  close(fd);
  std::ofstream(path) << content;
  return path;
}

TEST(BrokerConfigTest, DefaultsAreDocumentedValues) {
  auto config = ResolveConfig({}, "", FakeEnv({{"HOME", "/home/u"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->listen, std::vector<std::string>{"127.0.0.1:45459"});
  EXPECT_EQ(config->state_dir, "/home/u/.local/state/termbridge");
  EXPECT_EQ(config->operator_socket, "/home/u/.local/state/termbridge/operator.sock");
  EXPECT_EQ(config->ring_bytes, 8u << 20);
  EXPECT_EQ(config->max_terminals_per_agent, 16);
  EXPECT_EQ(config->max_input_bytes, 65536u);
}

TEST(BrokerConfigTest, FlagBeatsEnvironmentBeatsFile) {
  std::string file =
      WriteToml("ring_bytes = 10000\nmax_terminals_total = 5\nshell = \"/bin/sh\"\n");
  auto config = ResolveConfig(
      {{"ring_bytes", "30000"}}, file,
      FakeEnv({{"TERMBRIDGE_RING_BYTES", "20000"}, {"TERMBRIDGE_MAX_TERMINALS_TOTAL", "7"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->ring_bytes, 30000u);      // flag
  EXPECT_EQ(config->max_terminals_total, 7);  // environment over file
  EXPECT_EQ(config->shell, "/bin/sh");        // file over default
  EXPECT_EQ(config->config_file, file);
  std::remove(file.c_str());
}

TEST(BrokerConfigTest, ConfigFileFromEnvironmentAndListsAsArrays) {
  std::string file = WriteToml("cwd_roots = [\"/srv\", \"/home/u/src\"]\nenv_allow = [\"FOO\"]\n");
  auto config = ResolveConfig({}, "", FakeEnv({{"TERMBRIDGE_CONFIG", file}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->cwd_roots, (std::vector<std::string>{"/srv", "/home/u/src"}));
  EXPECT_EQ(config->env_allow, (std::vector<std::string>{"FOO"}));
  auto from_flag = ResolveConfig({{"cwd_roots", "/a, /b"}}, file, FakeEnv({}));
  ASSERT_TRUE(from_flag.ok());
  EXPECT_EQ(from_flag->cwd_roots, (std::vector<std::string>{"/a", "/b"}));
  std::remove(file.c_str());
}

TEST(BrokerConfigTest, BadFileNamesLineAndKey) {
  std::string syntax = WriteToml("listen = \"127.0.0.1:1\"\nring_bytes = = 3\n");
  auto a = ResolveConfig({}, syntax, FakeEnv({}));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find(":2:"), std::string::npos) << a.status();
  std::string unknown = WriteToml("\n\nlisten_port = 3\n");
  auto b = ResolveConfig({}, unknown, FakeEnv({}));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find(":3: listen_port: unknown setting"), std::string::npos)
      << b.status();
  std::string type = WriteToml("ring_bytes = \"big\"\n");
  auto c = ResolveConfig({}, type, FakeEnv({}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("ring_bytes: must be an integer"), std::string::npos);
  for (const std::string& f : {syntax, unknown, type}) std::remove(f.c_str());
  EXPECT_EQ(ResolveConfig({}, "/no/such.toml", FakeEnv({})).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(BrokerConfigTest, OutOfRangeValuesAreRejectedByName) {
  auto config = ResolveConfig({{"max_terminals_per_agent", "0"}}, "", FakeEnv({}));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("max_terminals_per_agent"), std::string::npos);
  EXPECT_FALSE(ResolveConfig({{"cwd_roots", "relative/dir"}}, "", FakeEnv({})).ok());
}

TEST(BrokerConfigTest, NonLoopbackNeedsTls) {
  auto plain = ResolveConfig({{"listen", "0.0.0.0:45459"}}, "", FakeEnv({}));
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kFailedPrecondition);
  auto half = ResolveConfig({{"listen", "0.0.0.0:1"}, {"tls_cert", "/c.pem"}}, "", FakeEnv({}));
  EXPECT_FALSE(half.ok());
  auto tls = ResolveConfig({{"listen", "0.0.0.0:1"}, {"tls_cert", "/c.pem"}, {"tls_key", "/k.pem"}},
                           "", FakeEnv({}));
  EXPECT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(ResolveConfig({{"listen", "127.0.0.5:1"}}, "", FakeEnv({})).ok());
  EXPECT_TRUE(ResolveConfig({{"listen", "[::1]:1"}}, "", FakeEnv({})).ok());
}

TEST(BrokerConfigTest, SeveralListenAddressesFromEveryLayer) {
  auto flag = ResolveConfig({{"listen", "127.0.0.1:0, [::1]:0"}}, "", FakeEnv({}));
  ASSERT_TRUE(flag.ok()) << flag.status();
  EXPECT_EQ(flag->listen, (std::vector<std::string>{"127.0.0.1:0", "[::1]:0"}));
  auto env = ResolveConfig({}, "", FakeEnv({{"TERMBRIDGE_LISTEN", "127.0.0.1:1,127.0.0.2:2"}}));
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->listen, (std::vector<std::string>{"127.0.0.1:1", "127.0.0.2:2"}));
  std::string array = WriteToml("listen = [\"127.0.0.1:3\", \"localhost:4\"]\n");
  auto from_array = ResolveConfig({}, array, FakeEnv({}));
  ASSERT_TRUE(from_array.ok()) << from_array.status();
  EXPECT_EQ(from_array->listen, (std::vector<std::string>{"127.0.0.1:3", "localhost:4"}));
  std::string one = WriteToml("listen = \"127.0.0.1:5\"\n");  // one string, as before
  auto from_string = ResolveConfig({}, one, FakeEnv({}));
  ASSERT_TRUE(from_string.ok()) << from_string.status();
  EXPECT_EQ(from_string->listen, std::vector<std::string>{"127.0.0.1:5"});
  std::string number = WriteToml("listen = [45459]\n");
  auto bad_item = ResolveConfig({}, number, FakeEnv({}));
  EXPECT_NE(bad_item.status().message().find("listen: items must be strings"), std::string::npos)
      << bad_item.status();
  for (const std::string& f : {array, one, number}) std::remove(f.c_str());
}

TEST(BrokerConfigTest, ABadListenAddressAmongSeveralIsNamed) {
  for (const char* bad : {"127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", ":1", "::1:1", "[::1:1",
                          "127.0.0.1:-1"}) {
    auto config = ResolveConfig({{"listen", absl::StrCat("127.0.0.1:0,", bad)}}, "", FakeEnv({}));
    ASSERT_FALSE(config.ok()) << bad;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(config.status().message().find(absl::StrCat("'", bad, "'")), std::string::npos)
        << config.status();
  }
  // Each address gets the TLS rule: one open address stops the start.
  auto open = ResolveConfig({{"listen", "127.0.0.1:0,0.0.0.0:45459"}}, "", FakeEnv({}));
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(open.status().message().find("non-loopback address 0.0.0.0:45459 without TLS"),
            std::string::npos)
      << open.status();
  auto tls = ResolveConfig(
      {{"listen", "127.0.0.1:0,0.0.0.0:1"}, {"tls_cert", "/c.pem"}, {"tls_key", "/k.pem"}}, "",
      FakeEnv({}));
  EXPECT_TRUE(tls.ok()) << tls.status();
  auto twice = ResolveConfig({{"listen", "127.0.0.1:7,127.0.0.1:7"}}, "", FakeEnv({}));
  EXPECT_NE(twice.status().message().find("'127.0.0.1:7' is given twice"), std::string::npos)
      << twice.status();
  EXPECT_TRUE(ResolveConfig({{"listen", "127.0.0.1:0,127.0.0.1:0"}}, "", FakeEnv({})).ok());
  auto none = ResolveConfig({{"listen", " , "}}, "", FakeEnv({}));
  EXPECT_NE(none.status().message().find("listen: no address"), std::string::npos) << none.status();
}

TEST(JoinRepeatedFlagTest, EveryOccurrenceJoinsAtTheFirst) {
  using Args = std::vector<std::string>;
  EXPECT_EQ(JoinRepeatedFlag(Args{"broker", "--listen", "a:1", "--state-dir", "/s", "--listen=b:2",
                                  "-listen", "c:3"},
                             "listen"),
            (Args{"broker", "--listen=a:1,b:2,c:3", "--state-dir", "/s"}));
  EXPECT_EQ(JoinRepeatedFlag(Args{"broker", "--ready-file", "r", "--listen=a:1"}, "listen"),
            (Args{"broker", "--ready-file", "r", "--listen=a:1"}));
  // Other flags and everything after "--" stay.
  EXPECT_EQ(JoinRepeatedFlag(Args{"broker", "--listenx=1", "--", "--listen", "z"}, "listen"),
            (Args{"broker", "--listenx=1", "--", "--listen", "z"}));
}

TEST(BrokerConfigTest, ConsoleStaysOnLoopback) {
  auto remote = ResolveConfig({{"console", "0.0.0.0:45460"}}, "", FakeEnv({}));
  ASSERT_FALSE(remote.ok());
  EXPECT_NE(remote.status().message().find("web console"), std::string::npos);
  auto local = ResolveConfig({{"console", "127.0.0.1:0"}}, "", FakeEnv({}));
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->console, "127.0.0.1:0");
}

TEST(BrokerConfigTest, RefusesToRunInAContainerUnlessForced) {
  std::string root_path = ::testing::TempDir() + "/tb-root-XXXXXX";
  ASSERT_NE(mkdtemp(root_path.data()), nullptr);
  const char* root = root_path.c_str();
  struct RemoveAtEnd {  // also when an assertion returns early
    std::string path;
    ~RemoveAtEnd() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } remove_root{root};
  auto config = ResolveConfig({}, "", FakeEnv({}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->allow_in_container);
  // A host: no marker file, no container variable, a plain cgroup.
  std::string proc = std::string(root) + "/proc/1";
  ASSERT_EQ(system(("mkdir -p " + proc + " " + root + "/run").c_str()), 0);
  std::ofstream(proc + "/cgroup") << "0::/user.slice/user-1000.slice/session-2.scope\n";
  EXPECT_TRUE(ContainerSigns(FakeEnv({}), root).empty());
  EXPECT_TRUE(RefuseInContainer(*config, ContainerSigns(FakeEnv({}), root)).ok());

  // Each sign alone is enough.
  EXPECT_EQ(ContainerSigns(FakeEnv({{"container", "podman"}}), root),
            std::vector<std::string>{"environment: container=podman"});
  std::ofstream(proc + "/cgroup") << "0::/system.slice/docker-0123abcd.scope\n";
  EXPECT_EQ(ContainerSigns(FakeEnv({}), root), std::vector<std::string>{"/proc/1/cgroup: docker"});
  std::ofstream(std::string(root) + "/run/.containerenv") << "";
  std::ofstream(std::string(root) + "/.dockerenv") << "";
  std::vector<std::string> signs = ContainerSigns(FakeEnv({}), root);
  EXPECT_EQ(signs.size(), 3u);

  absl::Status refused = RefuseInContainer(*config, signs);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("refusing to run inside a container (file: /run/.containerenv"),
            std::string::npos);
  EXPECT_NE(refused.message().find("--allow-in-container"), std::string::npos);

  // Forced by flag, environment or file, like every setting.
  auto forced = ResolveConfig({{"allow_in_container", "true"}}, "", FakeEnv({}));
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_TRUE(RefuseInContainer(*forced, signs).ok());
  auto by_env = ResolveConfig({}, "", FakeEnv({{"TERMBRIDGE_ALLOW_IN_CONTAINER", "1"}}));
  ASSERT_TRUE(by_env.ok()) << by_env.status();
  EXPECT_TRUE(by_env->allow_in_container);
  auto by_file = ResolveConfig({}, WriteToml("allow_in_container = true\n"), FakeEnv({}));
  ASSERT_TRUE(by_file.ok()) << by_file.status();
  EXPECT_TRUE(by_file->allow_in_container);
  auto bad = ResolveConfig({{"allow_in_container", "maybe"}}, "", FakeEnv({}));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("allow_in_container"), std::string::npos);
}

}  // namespace
}  // namespace termbridge::broker
