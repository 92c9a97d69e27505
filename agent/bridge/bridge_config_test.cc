// Tests for adapter mode resolution and the bridge inputs (docs/CONTRACT.md
// "Environment variables"), and for the local launch's failure.
#include "agent/bridge/bridge_config.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agent/bridge/broker_launcher.h"
#include "common/contract/errors.h"
#include "common/contract/gui_unavailable.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace termbridge::bridge {
namespace {

using contract::ErrorCode;

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(BridgeConfigTest, DefaultsToLocalLoopbackWithContractDefaults) {
  auto config = ResolveBridgeConfig(Env({{"HOME", "/home/u"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, AdapterMode::kLocal);
  EXPECT_EQ(config->mode_source, "default");
  EXPECT_EQ(config->hosts, std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(config->port, 45459);
  EXPECT_EQ(config->connect_timeout_ms, 3000);
  EXPECT_EQ(config->request_timeout_ms, 30000);
  EXPECT_EQ(config->token_file, "/home/u/.local/state/termbridge/agent-token");
}

TEST(BridgeConfigTest, ContainerSignalSelectsTheBridgeWithAliasOrder) {
  auto config = ResolveBridgeConfig(
      Env({{"PM_RUNNING_IN_CONTAINER", "true"}, {"TERMBRIDGE_BRIDGE_TOKEN_FILE", "/run/tok"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, AdapterMode::kContainerBridge);
  EXPECT_EQ(config->mode_source, "PM_RUNNING_IN_CONTAINER");
  ASSERT_GE(config->hosts.size(), 2u);
  EXPECT_EQ(config->hosts[0], "host.containers.internal");
  EXPECT_EQ(config->hosts[1], "host.docker.internal");
}

TEST(BridgeConfigTest, PrecedenceIsRequestThenConfigThenContainerSignal) {
  auto env = Env({{"PM_RUNNING_IN_CONTAINER", "true"},
                  {"PM_TERM_ADAPTER_MODE", "local"},
                  {"TERMBRIDGE_BRIDGE_TOKEN_FILE", "/run/tok"}});
  auto from_config = ResolveBridgeConfig(env);
  ASSERT_TRUE(from_config.ok());
  EXPECT_EQ(from_config->mode, AdapterMode::kLocal);
  EXPECT_EQ(from_config->mode_source, "PM_TERM_ADAPTER_MODE");
  auto from_request = ResolveBridgeConfig(env, "container_bridge");
  ASSERT_TRUE(from_request.ok());
  EXPECT_EQ(from_request->mode, AdapterMode::kContainerBridge);
  EXPECT_EQ(from_request->mode_source, "request");
}

TEST(BridgeConfigTest, ExplicitAliasesAreTriedFirst) {
  auto config =
      ResolveBridgeConfig(Env({{"PM_TERM_ADAPTER_MODE", "container_bridge"},
                               {"PM_INTERACTIVE_TERMINAL_HOST_ALIAS", "a.example"},
                               {"PM_INTERACTIVE_TERMINAL_HOST_FALLBACK_ALIAS", "b.example"},
                               {"TERMBRIDGE_BRIDGE_TOKEN_FILE", "/run/tok"}}));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->hosts[0], "a.example");
  EXPECT_EQ(config->hosts[1], "b.example");
}

TEST(BridgeConfigTest, UnknownOverrideIsInvalidPayload) {
  auto config = ResolveBridgeConfig(Env({{"PM_TERM_ADAPTER_MODE", "teleport"}}));
  EXPECT_EQ(contract::FromStatus(config.status()).code, ErrorCode::kInvalidPayload);
}

TEST(BridgeConfigTest, ContainerBridgeWithoutItsInputsIsInvalidMode) {
  auto no_token = ResolveBridgeConfig(Env({{"PM_TERM_ADAPTER_MODE", "container_bridge"}}));
  EXPECT_EQ(contract::FromStatus(no_token.status()).code, ErrorCode::kInvalidMode);
  auto bad_port = ResolveBridgeConfig(Env({{"PM_TERM_ADAPTER_MODE", "container_bridge"},
                                           {"PM_INTERACTIVE_TERMINAL_HOST_PORT", "http"},
                                           {"TERMBRIDGE_BRIDGE_TOKEN_FILE", "/run/tok"}}));
  EXPECT_EQ(contract::FromStatus(bad_port.status()).code, ErrorCode::kInvalidMode);
}

TEST(BridgeConfigTest, MalformedTimeoutsNameTheVariable) {
  auto config = ResolveBridgeConfig(Env({{"PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS", "-5"}}));
  auto error = contract::FromStatus(config.status());
  EXPECT_EQ(error.code, ErrorCode::kInvalidPayload);
  EXPECT_EQ(error.details["field"], "PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS");
}

TEST(BridgeConfigTest, TermbridgeNamesWinOverTheirDeprecatedSpelling) {
  auto config = ResolveBridgeConfig(Env({{"HOME", "/home/u"},
                                         {"TERMBRIDGE_BRIDGE_TOKEN_FILE", "/new/tok"},
                                         {"PM_INTERACTIVE_TERMINAL_TOKEN_FILE", "/old/tok"},
                                         {"TERMBRIDGE_BRIDGE_TLS_CA_FILE", "/new/ca.pem"},
                                         {"TERMBRIDGE_BRIDGE_TLS_SERVER_NAME", "broker.test"},
                                         {"TERMBRIDGE_BRIDGE_TLS_CERT_FILE", "/new/c.pem"},
                                         {"TERMBRIDGE_BRIDGE_TLS_KEY_FILE", "/new/c.key"},
                                         {"TERMBRIDGE_BRIDGE_LAUNCH", "1"},
                                         {"TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS", "900"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->token_file, "/new/tok");
  EXPECT_EQ(config->tls_ca_file, "/new/ca.pem");
  EXPECT_EQ(config->tls_server_name, "broker.test");
  EXPECT_EQ(config->tls_cert_file, "/new/c.pem");
  EXPECT_EQ(config->tls_key_file, "/new/c.key");
  EXPECT_TRUE(config->launch);
  EXPECT_EQ(config->spawn_timeout_ms, 900);
}

// Existing deployments keep working: each deprecated name is still read, and
// the process says once on stderr which name to use instead.
TEST(BridgeConfigTest, DeprecatedNamesStillWorkAndWarnOnce) {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  auto env = Env({{"HOME", "/home/u"},
                  {"PM_INTERACTIVE_TERMINAL_TOKEN_FILE", "/old/tok"},
                  {"PM_INTERACTIVE_TERMINAL_TLS_CA_FILE", "/old/ca.pem"},
                  {"PM_INTERACTIVE_TERMINAL_TLS_SERVER_NAME", "old.test"},
                  {"PM_INTERACTIVE_TERMINAL_TLS_CERT_FILE", "/old/c.pem"},
                  {"PM_INTERACTIVE_TERMINAL_TLS_KEY_FILE", "/old/c.key"},
                  {"PM_INTERACTIVE_TERMINAL_LAUNCH", "1"},
                  {"PM_INTERACTIVE_TERMINAL_SPAWN_TIMEOUT_MS", "700"}});
  auto first = ResolveBridgeConfig(env);
  auto second = ResolveBridgeConfig(env);
  spdlog::set_default_logger(previous);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->token_file, "/old/tok");
  EXPECT_EQ(first->tls_ca_file, "/old/ca.pem");
  EXPECT_EQ(first->tls_server_name, "old.test");
  EXPECT_EQ(first->tls_cert_file, "/old/c.pem");
  EXPECT_EQ(first->tls_key_file, "/old/c.key");
  EXPECT_TRUE(first->launch);
  EXPECT_EQ(first->spawn_timeout_ms, 700);
  EXPECT_EQ(second->token_file, "/old/tok");
  for (const RenamedSetting& renamed : kRenamedSettings) {
    std::string line = absl::StrCat("name=", renamed.deprecated, " use=", renamed.name);
    size_t at = log.str().find(line);
    EXPECT_NE(at, std::string::npos) << line << "\n" << log.str();
    EXPECT_EQ(log.str().find(line, at + 1), std::string::npos) << "warned twice: " << line;
  }
}

TEST(BridgeConfigTest, ABadValueNamesTheVariableItCameFrom) {
  auto old_name = ResolveBridgeConfig(
      Env({{"HOME", "/home/u"}, {"PM_INTERACTIVE_TERMINAL_SPAWN_TIMEOUT_MS", "30001"}}));
  EXPECT_EQ(contract::FromStatus(old_name.status()).details["field"],
            "PM_INTERACTIVE_TERMINAL_SPAWN_TIMEOUT_MS");
  auto new_name =
      ResolveBridgeConfig(Env({{"HOME", "/home/u"}, {"TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS", "99"}}));
  EXPECT_EQ(contract::FromStatus(new_name.status()).details["field"],
            "TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS");
  auto half_mtls = ResolveBridgeConfig(
      Env({{"HOME", "/home/u"}, {"PM_INTERACTIVE_TERMINAL_TLS_CERT_FILE", "/old/c.pem"}}));
  auto error = contract::FromStatus(half_mtls.status());
  EXPECT_EQ(error.code, ErrorCode::kInvalidPayload);
  EXPECT_EQ(error.details["field"], "TERMBRIDGE_BRIDGE_TLS_KEY_FILE");
}

TEST(BridgeConfigTest, DefaultGatewayIsReadFromTheRouteTable) {
  std::string path = ::testing::TempDir() + "/route";
  std::ofstream(path) << "Iface\tDestination\tGateway\tFlags\n"
                         "eth0\t0000580A\t00000000\t0001\n"
                         "eth0\t00000000\t0100580A\t0003\n";
  EXPECT_EQ(DefaultGateway(path), "10.88.0.1");
  EXPECT_EQ(DefaultGateway("/nonexistent"), "");
}

}  // namespace
TEST(BridgeConfigTest, LaunchIsOptInAndTheBinaryMustBeAbsolute) {
  auto plain = ResolveBridgeConfig(Env({{"HOME", "/home/u"}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->launch);
  EXPECT_EQ(plain->spawn_timeout_ms, 8000);
  auto bundled =
      ResolveBridgeConfig(Env({{"HOME", "/home/u"},
                               {"PM_TERM_ADAPTER_MODE", "bundled"},
                               {"PM_INTERACTIVE_TERMINAL_BINARY", "/opt/tb/termbridge-broker"},
                               {"TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS", "30000"},
                               {"PATH", "/usr/bin:/bin"}}));
  ASSERT_TRUE(bundled.ok()) << bundled.status();
  EXPECT_TRUE(bundled->launch);
  EXPECT_EQ(bundled->state_dir, "/home/u/.local/state/termbridge");
  EXPECT_EQ(bundled->spawn_timeout_ms, 30000);
  std::vector<BrokerCandidate> candidates =
      BrokerCandidates(*bundled, "/opt/tb/bin/termbridge-agent");
  std::vector<std::string> order;
  for (const auto& c : candidates) order.push_back(c.source + " " + c.path);
  EXPECT_EQ(order,
            (std::vector<std::string>{
                "configured /opt/tb/termbridge-broker", "bundled /opt/tb/bin/termbridge-broker",
                "bundled /opt/tb/bin/../broker/termbridge-broker",
                "PATH /usr/bin/termbridge-broker", "PATH /bin/termbridge-broker"}));
  auto relative = ResolveBridgeConfig(
      Env({{"HOME", "/home/u"}, {"PM_INTERACTIVE_TERMINAL_BINARY", "bin/termbridge-broker"}}));
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.status().message().find("absolute"), std::string::npos);
  auto too_long = ResolveBridgeConfig(
      Env({{"HOME", "/home/u"}, {"TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS", "30001"}}));
  EXPECT_FALSE(too_long.ok());
}

TEST(BrokerLauncherTest, NoCandidateGivesGuiUnavailableListingWhatWasTried) {
  BridgeConfig config;
  config.state_dir = "/nonexistent-tb-state";
  config.spawn_timeout_ms = 200;
  auto launched = LaunchBroker(config, {{"configured", "/nonexistent/termbridge-broker"}});
  ASSERT_FALSE(launched.ok());
  EXPECT_NE(launched.status().message().find("none could be started"), std::string::npos);
  contract::PmTermError error = contract::FromStatus(launched.status());
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], contract::gui_unavailable::kLaunchFailed);
  EXPECT_EQ(error.details["candidates_tried"][0]["path"], "/nonexistent/termbridge-broker");
}

}  // namespace termbridge::bridge
