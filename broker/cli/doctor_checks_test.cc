// Unit tests of termbridge doctor's checks (doctor_checks.h) on set-ups made
// in temporary directories: bad modes, an invalid policy, an audit log that
// cannot be written or was edited, no display, container networks given by
// a fake podman, and certificates made with the openssl command.
#include "broker/cli/doctor_checks.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "broker/audit/audit_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace termbridge::doctor {
namespace {

using ::testing::HasSubstr;

class DoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = testing::TempDir() + "/doctor_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }

  const Finding* Find(const std::vector<Finding>& findings, const std::string& id) {
    for (const Finding& f : findings) {
      if (f.id == id) return &f;
    }
    ADD_FAILURE() << "no finding " << id;
    return nullptr;
  }

  std::string dir_;
};

constexpr char kToken[] = "0123456789abcdef0123456789abcdef\n";

// Runs `body` as a user who owns none of the files here: a child that drops
// to uid/gid 65534 when this test runs as root (root passes every permission
// check), else this user. Returns the body's result, -1 if the child failed.
int AsAnotherUser(const std::function<int()>& body) {
  if (geteuid() != 0) return body();
  pid_t child = fork();
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      _exit(100);
    }
    _exit(body());
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST_F(DoctorTest, AStateDirOpenToOthersIsAWarningWithTheChmod) {
  chmod(dir_.c_str(), 0755);
  Finding finding = CheckStateDir(dir_);
  EXPECT_EQ(finding.status, Status::kWarn);
  EXPECT_THAT(finding.message, HasSubstr("0755"));
  EXPECT_EQ(finding.fix, "chmod 700 " + dir_);

  chmod(dir_.c_str(), 0700);
  EXPECT_EQ(CheckStateDir(dir_).status, Status::kOk);
  EXPECT_EQ(CheckStateDir(dir_ + "/not-yet").status, Status::kOk);
  EXPECT_EQ(CheckStateDir(Write("file", "x")).status, Status::kFail);
}

TEST_F(DoctorTest, AWorldReadableTokenInTheStateDirIsAWarning) {
  chmod(dir_.c_str(), 0700);
  std::string token = Write("agent-token", kToken, 0644);
  SecretFileRules rules;
  rules.token = true;
  Finding finding = CheckSecretFile("credentials.agent_token", "agent token file", token, rules);
  EXPECT_EQ(finding.status, Status::kWarn);
  EXPECT_THAT(finding.message, HasSubstr("0644"));
  EXPECT_EQ(finding.fix, "chmod 600 " + token);

  chmod(token.c_str(), 0600);
  EXPECT_EQ(CheckSecretFile("t", "agent token file", token, rules).status, Status::kOk);
}

TEST_F(DoctorTest, AReadableTokenInsideAPrivateDirectoryIsFineWhenMadeForAContainer) {
  std::string token = Write("agent-token", kToken, 0644);
  SecretFileRules rules;
  rules.token = true;
  rules.required = true;
  rules.readable_in_private_dir = true;
  chmod(dir_.c_str(), 0700);
  EXPECT_EQ(CheckSecretFile("t", "agent token file", token, rules).status, Status::kOk);
  chmod(dir_.c_str(), 0755);
  EXPECT_EQ(CheckSecretFile("t", "agent token file", token, rules).status, Status::kWarn);
}

TEST_F(DoctorTest, AWritableShortOrMissingTokenFails) {
  SecretFileRules rules;
  rules.token = true;
  Finding writable = CheckSecretFile("t", "agent token file", Write("w", kToken, 0666), rules);
  EXPECT_EQ(writable.status, Status::kFail);
  EXPECT_THAT(writable.message, HasSubstr("can write it"));

  Finding short_token = CheckSecretFile("t", "agent token file", Write("s", "abc\n"), rules);
  EXPECT_EQ(short_token.status, Status::kFail);
  EXPECT_THAT(short_token.message, HasSubstr("fewer than 16"));

  // The default token is made by the broker; a named one must exist.
  EXPECT_EQ(CheckSecretFile("t", "agent token file", dir_ + "/none", rules).status, Status::kOk);
  rules.required = true;
  EXPECT_EQ(CheckSecretFile("t", "agent token file", dir_ + "/none", rules).status, Status::kFail);
}

TEST_F(DoctorTest, AnUnreadableTokenFailsForAUserWhoCannotReadIt) {
  chmod(dir_.c_str(), 0755);
  std::string token = Write("agent-token", kToken, 0600);
  if (geteuid() != 0) chmod(token.c_str(), 0000);
  int result = AsAnotherUser([&] {
    Finding finding = CheckSecretFile("t", "agent token file", token, SecretFileRules{});
    return finding.status == Status::kFail && absl::StrContains(finding.message, "cannot read") &&
                   absl::StrContains(finding.message, "Permission denied")
               ? 0
               : 1;
  });
  EXPECT_EQ(result, 0);
}

TEST_F(DoctorTest, TokensDirFindsTheTokenOpenToOthers) {
  chmod(dir_.c_str(), 0700);
  std::filesystem::create_directory(dir_ + "/agents");
  chmod((dir_ + "/agents").c_str(), 0700);
  Write("agents/ci.token", kToken, 0644);
  EXPECT_EQ(CheckAgentTokensDir(dir_ + "/agents").status, Status::kOk);
  Write("agents/bad.token", kToken, 0666);
  Finding finding = CheckAgentTokensDir(dir_ + "/agents");
  EXPECT_EQ(finding.status, Status::kFail);
  EXPECT_THAT(finding.message, HasSubstr("bad.token"));
  EXPECT_EQ(CheckAgentTokensDir("").status, Status::kOk);
  EXPECT_EQ(CheckAgentTokensDir(dir_ + "/missing").status, Status::kFail);
}

TEST_F(DoctorTest, AnInvalidPolicyFileFailsNamingItsLine) {
  std::string path = Write("policy.toml", "version = 1\ndefault = \"sometimes\"\n");
  Finding finding = CheckPolicyFile(path);
  EXPECT_EQ(finding.status, Status::kFail);
  EXPECT_THAT(finding.message, HasSubstr("policy.toml"));
  EXPECT_THAT(finding.fix, HasSubstr("docs/operating.md#the-policy-file"));

  Write("policy.toml", "version = 1\ndefault = \"allow\"\n");
  Finding valid = CheckPolicyFile(path);
  EXPECT_EQ(valid.status, Status::kOk);
  EXPECT_THAT(valid.message, HasSubstr("default allow"));

  Finding missing = CheckPolicyFile(dir_ + "/none.toml");
  EXPECT_EQ(missing.status, Status::kOk);
  EXPECT_THAT(missing.message, HasSubstr("built-in"));

  chmod(path.c_str(), 0666);
  EXPECT_EQ(CheckPolicyFile(path).status, Status::kWarn);
}

TEST_F(DoctorTest, AnAuditLogThatCannotBeWrittenFails) {
  // A directory where the file should be: the broker cannot append.
  std::filesystem::create_directory(dir_ + "/audit.jsonl");
  std::vector<Finding> findings = CheckAuditLog(dir_ + "/audit.jsonl");
  EXPECT_EQ(Find(findings, "audit.writable")->status, Status::kFail);
  // Under a file that is not a directory.
  findings = CheckAuditLog(Write("plain", "x") + "/audit.jsonl");
  EXPECT_EQ(Find(findings, "audit.writable")->status, Status::kFail);
}

TEST_F(DoctorTest, AnAuditLogWithoutWritePermissionFails) {
  // Another user's log (or one made read-only): appending is refused.
  chmod(dir_.c_str(), 0755);
  std::string path = Write("audit.jsonl", "", 0644);
  if (geteuid() != 0) chmod(path.c_str(), 0400);
  int result = AsAnotherUser([&] {
    std::vector<Finding> findings = CheckAuditLog(path);
    for (const Finding& f : findings) {
      if (f.id == "audit.writable") {
        return f.status == Status::kFail &&
                       absl::StrContains(f.message, "cannot append to audit log") &&
                       absl::StrContains(f.message, "Permission denied")
                   ? 0
                   : 1;
      }
    }
    return 2;
  });
  EXPECT_EQ(result, 0);
}

TEST_F(DoctorTest, TheAuditChainIsVerifiedAndAnEditedRecordFails) {
  const std::string path = dir_ + "/audit.jsonl";
  {
    absl::StatusOr<std::unique_ptr<audit::AuditLog>> log = audit::AuditLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(
          (*log)->Append(audit::kTerminalOpened, {{"terminal_id", absl::StrCat("t_", i)}}).ok());
    }
  }
  std::vector<Finding> findings = CheckAuditLog(path);
  EXPECT_EQ(Find(findings, "audit.writable")->status, Status::kOk);
  EXPECT_EQ(Find(findings, "audit.chain")->status, Status::kOk);
  EXPECT_THAT(Find(findings, "audit.chain")->message, HasSubstr("3 records"));

  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::ofstream(path, std::ios::trunc) << absl::StrReplaceAll(text, {{"t_1", "t_9"}});
  findings = CheckAuditLog(path);
  EXPECT_EQ(Find(findings, "audit.chain")->status, Status::kFail);
  EXPECT_THAT(Find(findings, "audit.chain")->message, HasSubstr("line 3"));
}

EnvLookup Env(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST_F(DoctorTest, NoDisplayMeansNoWindowAndSaysHowToGetOne) {
  // A termbridge CLI on PATH (the window runs `termbridge attach`).
  std::filesystem::create_directory(dir_ + "/bin");
  Write("bin/termbridge", "#!/bin/sh\n", 0755);
  ViewerInputs in;
  in.env = Env({{"PATH", dir_ + "/bin:/usr/bin:/bin"}});
  in.window_command = "auto";
  in.broker_running = true;
  std::vector<Finding> findings = CheckViewer(in);
  EXPECT_EQ(Find(findings, "viewer.display")->status, Status::kWarn);
  const Finding* window = Find(findings, "viewer.window");
  EXPECT_EQ(window->status, Status::kWarn);
  EXPECT_THAT(window->message, HasSubstr("no display"));
  EXPECT_THAT(window->fix, HasSubstr("import-environment DISPLAY"));
  // No window and no console: only watch shows terminals.
  EXPECT_EQ(Find(findings, "viewer.watch")->status, Status::kWarn);
  EXPECT_EQ(Find(findings, "viewer.console")->status, Status::kOk);
}

TEST_F(DoctorTest, ADisplayWithoutItsServerIsAWarningAndWithItOk) {
  ViewerInputs in;
  in.env = Env({{"DISPLAY", ":42"}, {"PATH", "/usr/bin:/bin"}});
  in.x11_socket_dir = dir_;
  in.window_command = "none";
  Finding display = *Find(CheckViewer(in), "viewer.display");
  EXPECT_EQ(display.status, Status::kWarn);
  EXPECT_THAT(display.message, HasSubstr("no X server socket"));

  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string path = dir_ + "/X42";
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(Find(CheckViewer(in), "viewer.display")->status, Status::kOk);
  close(fd);
}

TEST_F(DoctorTest, TheRunningBrokersWindowStateIsReported) {
  ViewerInputs in;
  in.env = Env({{"PATH", "/usr/bin:/bin"}});
  in.broker_running = true;
  in.broker_window_command = "";
  in.broker_window_unavailable = "windows are off (window_command = none)";
  Finding off = *Find(CheckViewer(in), "viewer.window");
  EXPECT_EQ(off.status, Status::kWarn);
  EXPECT_THAT(off.fix, HasSubstr("window_command = \"auto\""));

  in.broker_window_command = "/bin/sh -c {attach}";
  EXPECT_EQ(Find(CheckViewer(in), "viewer.window")->status, Status::kOk);
  in.broker_window_command = "no-such-terminal-program -e {attach}";
  EXPECT_EQ(Find(CheckViewer(in), "viewer.window")->status, Status::kWarn);
}

TEST_F(DoctorTest, AConsoleThatDoesNotAnswerFails) {
  ViewerInputs in;
  in.env = Env({});
  in.window_command = "none";
  in.broker_running = true;
  in.console = "127.0.0.1:45460";
  in.console_answers = false;
  std::vector<Finding> findings = CheckViewer(in);
  EXPECT_EQ(Find(findings, "viewer.console")->status, Status::kFail);
  in.console_answers = true;
  findings = CheckViewer(in);
  EXPECT_EQ(Find(findings, "viewer.console")->status, Status::kOk);
  EXPECT_EQ(Find(findings, "viewer.watch")->status, Status::kOk);
}

constexpr char kPodmanNetworks[] = R"([
  {"name": "podman", "driver": "bridge",
   "subnets": [{"subnet": "10.88.0.0/16", "gateway": "10.88.0.1"}]},
  {"name": "termbridge_default", "driver": "bridge",
   "subnets": [{"subnet": "10.89.0.0/24", "gateway": "10.89.0.1"}]}
])";

ContainerTools FakePodman() {
  ProgramRunner run = [](const std::vector<std::string>& argv) -> absl::StatusOr<ProgramOutput> {
    if (argv[0] == "podman") return ProgramOutput{0, kPodmanNetworks, ""};
    return ProgramOutput{1, "",
                         "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"};
  };
  return DiscoverContainerTools(run, [](const std::string&) { return true; });
}

TEST(ContainerReachTest, GatewaysComeFromPodmanAndADockerWithoutDaemonIsANote) {
  ContainerTools tools = FakePodman();
  EXPECT_THAT(tools.present, ::testing::ElementsAre("podman", "docker"));
  ASSERT_EQ(tools.networks.size(), 2u);
  EXPECT_EQ(tools.networks[0].gateway, "10.88.0.1");
  EXPECT_EQ(tools.networks[1].name, "termbridge_default");
  ASSERT_EQ(tools.notes.size(), 1u);
  EXPECT_THAT(tools.notes[0], HasSubstr("Cannot connect"));
}

TEST(ContainerReachTest, ALoopbackListenIsUnreachableFromContainers) {
  Finding finding = CheckContainerReach({"127.0.0.1:45459"}, true, FakePodman(), nullptr);
  EXPECT_EQ(finding.status, Status::kWarn);
  EXPECT_THAT(finding.message, HasSubstr("cannot reach it"));
  EXPECT_THAT(finding.message, HasSubstr("10.88.0.1"));
  EXPECT_THAT(finding.fix, HasSubstr("0.0.0.0:45459"));
}

TEST(ContainerReachTest, AWildcardListenCoversEveryGatewayThatAnswers) {
  std::vector<std::string> probed;
  TcpProber answers = [&](const std::string& target) {
    probed.push_back(target);
    return absl::OkStatus();
  };
  Finding finding = CheckContainerReach({"0.0.0.0:40000"}, true, FakePodman(), answers);
  EXPECT_EQ(finding.status, Status::kOk) << finding.message;
  EXPECT_THAT(probed, ::testing::ElementsAre("10.88.0.1:40000", "10.89.0.1:40000"));

  TcpProber refuses = [](const std::string&) {
    return absl::UnavailableError("Connection refused");
  };
  finding = CheckContainerReach({"0.0.0.0:40000"}, true, FakePodman(), refuses);
  EXPECT_EQ(finding.status, Status::kWarn);
  EXPECT_THAT(finding.message, HasSubstr("Connection refused"));

  // A network with no container yet has no bridge address here: not a fault.
  TcpProber dormant = [](const std::string& target) {
    if (absl::StartsWith(target, "10.89.")) return absl::FailedPreconditionError("not here");
    return absl::OkStatus();
  };
  finding = CheckContainerReach({"0.0.0.0:40000"}, true, FakePodman(), dormant);
  EXPECT_EQ(finding.status, Status::kOk) << finding.message;
  EXPECT_THAT(finding.message, HasSubstr("not on this host yet (no container on the network): "
                                         "10.89.0.1"));
}

TEST(ContainerReachTest, LocalAddresses) {
  EXPECT_TRUE(IsLocalAddress("127.0.0.1"));
  EXPECT_FALSE(IsLocalAddress("192.0.2.254"));
}

TEST(ContainerReachTest, OneGatewayCoveredAndAnotherNotIsAWarning) {
  Finding finding = CheckContainerReach({"10.88.0.1:45459"}, false, FakePodman(), nullptr);
  EXPECT_EQ(finding.status, Status::kWarn);
  EXPECT_THAT(finding.message, HasSubstr("10.89.0.1"));
  EXPECT_THAT(finding.message, HasSubstr("covered: 10.88.0.1"));
}

TEST(ContainerReachTest, NoContainerToolsIsNotChecked) {
  ContainerTools none;
  EXPECT_EQ(CheckContainerReach({"127.0.0.1:1"}, true, none, nullptr).status, Status::kOk);
}

TEST(ContainerReachTest, ListenCovers) {
  EXPECT_TRUE(ListenCovers("0.0.0.0:1", "10.88.0.1"));
  EXPECT_TRUE(ListenCovers("[::]:1", "10.88.0.1"));
  EXPECT_TRUE(ListenCovers("10.88.0.1:1", "10.88.0.1"));
  EXPECT_FALSE(ListenCovers("127.0.0.1:1", "10.88.0.1"));
  EXPECT_FALSE(ListenCovers("10.89.0.1:1", "10.88.0.1"));
  EXPECT_FALSE(ListenCovers("localhost:1", "10.88.0.1"));
}

TEST(ContainerReachTest, TheProbeContainerRunsAnImageAlreadyPresentAndReportsAFailure) {
  std::vector<std::vector<std::string>> ran;
  ProgramRunner run = [&](const std::vector<std::string>& argv) -> absl::StatusOr<ProgramOutput> {
    ran.push_back(argv);
    if (argv[1] == "image") {
      return ProgramOutput{argv[3] == "docker.io/library/debian:bookworm-slim" ? 0 : 1, "", ""};
    }
    return ProgramOutput{0, "reached host.containers.internal\nfailed 10.88.0.1\n", ""};
  };
  ContainerTools tools;
  tools.present = {"podman"};
  tools.networks = {{"podman", "podman", "10.88.0.0/16", "10.88.0.1"}};
  Finding finding = ProbeFromContainer("40000", tools, run);
  EXPECT_EQ(finding.status, Status::kFail);
  EXPECT_THAT(finding.message, HasSubstr("failed 10.88.0.1:40000"));
  const std::vector<std::string>& container = ran.back();
  EXPECT_THAT(container, ::testing::Contains("--pull=never"));
  EXPECT_THAT(container, ::testing::Contains("docker.io/library/debian:bookworm-slim"));
  EXPECT_EQ(container.back(), "10.88.0.1");
}

TEST(RunProgramTest, CapturesOutputsAndExitCodeAndKillsWhatOverruns) {
  absl::StatusOr<ProgramOutput> out =
      RunProgram({"sh", "-c", "echo out; echo err >&2; exit 3"}, absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->exit_code, 3);
  EXPECT_EQ(out->out, "out\n");
  EXPECT_EQ(out->err, "err\n");
  EXPECT_EQ(RunProgram({"no-such-program-here"}, absl::Seconds(1)).status().code(),
            absl::StatusCode::kNotFound);
  absl::Time start = absl::Now();
  EXPECT_EQ(RunProgram({"sleep", "30"}, absl::Milliseconds(200)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

// Certificates from the openssl command: `openssl ca -selfsign` sets any
// validity window, so an expired one is made as it would be found.
class TlsTest : public DoctorTest {
 protected:
  // Makes <name>.pem and <name>.key with `san` valid from `start` to `end`
  // (YYYYMMDDHHMMSSZ).
  void MakeCert(const std::string& name, const std::string& san, const std::string& start,
                const std::string& end) {
    std::ofstream(dir_ + "/ca.cnf") << "[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\n"
                                       "new_certs_dir = .\nserial = serial\ndefault_md = sha256\n"
                                       "policy = p\ncopy_extensions = copy\n[p]\n"
                                       "commonName = supplied\n";
    std::ofstream(dir_ + "/index.txt", std::ios::trunc);
    std::ofstream(dir_ + "/serial") << "01\n";
    std::string script = absl::StrCat(
        "cd '", dir_, "' && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes ",
        "-keyout ", name, ".key -out ", name, ".csr -subj /CN=broker -addext 'subjectAltName=", san,
        "' && openssl ca -batch -config ca.cnf -selfsign -keyfile ", name, ".key -in ", name,
        ".csr -out ", name, ".pem -startdate ", start, " -enddate ", end, " >/dev/null 2>&1");
    ASSERT_EQ(std::system(script.c_str()), 0) << script;
  }
  TlsInputs Inputs(const std::string& name, std::vector<std::string> names) {
    TlsInputs in;
    in.cert = dir_ + "/" + name + ".pem";
    in.key = dir_ + "/" + name + ".key";
    in.names = std::move(names);
    return in;
  }
};

TEST_F(TlsTest, AValidCertificateWithTheNamesPasses) {
  MakeCert("good", "DNS:host.containers.internal,IP:10.88.0.1", "20200101000000Z",
           "20991231000000Z");
  std::vector<Finding> findings =
      CheckTls(Inputs("good", {"host.containers.internal", "10.88.0.1"}));
  for (const Finding& f : findings) EXPECT_EQ(f.status, Status::kOk) << f.id << ": " << f.message;
  EXPECT_THAT(Find(findings, "tls.names")->message, HasSubstr("IP:10.88.0.1"));
}

TEST_F(TlsTest, AnExpiredCertificateFails) {
  MakeCert("old", "DNS:host.containers.internal", "20200101000000Z", "20200102000000Z");
  Finding finding = *Find(CheckTls(Inputs("old", {"host.containers.internal"})), "tls.certificate");
  EXPECT_EQ(finding.status, Status::kFail);
  EXPECT_THAT(finding.message, HasSubstr("expired on Jan  2 00:00:00 2020 GMT"));
  EXPECT_THAT(finding.fix, HasSubstr("make-credentials.sh"));
}

TEST_F(TlsTest, ACertificateThatExpiresSoonIsAWarning) {
  std::string end =
      absl::FormatTime("%Y%m%d%H%M%SZ", absl::Now() + absl::Hours(24 * 5), absl::UTCTimeZone());
  MakeCert("soon", "DNS:host.containers.internal", "20200101000000Z", end);
  Finding finding = *Find(CheckTls(Inputs("soon", {})), "tls.certificate");
  EXPECT_EQ(finding.status, Status::kWarn);
  EXPECT_THAT(finding.message, HasSubstr("expires on"));
}

TEST_F(TlsTest, ACertificateWithoutANameAgentsUseFails) {
  MakeCert("wrong", "DNS:broker.example.internal,IP:192.0.2.10", "20200101000000Z",
           "20991231000000Z");
  Finding finding =
      *Find(CheckTls(Inputs("wrong", {"host.containers.internal", "192.0.2.10", "10.88.0.1"})),
            "tls.names");
  EXPECT_EQ(finding.status, Status::kFail);
  EXPECT_THAT(finding.message, HasSubstr("lacks host.containers.internal, 10.88.0.1,"));
  EXPECT_THAT(finding.message, HasSubstr("DNS:broker.example.internal, IP:192.0.2.10"));
}

TEST_F(TlsTest, AKeyOfAnotherCertificateFails) {
  MakeCert("one", "DNS:a.test", "20200101000000Z", "20991231000000Z");
  MakeCert("two", "DNS:a.test", "20200101000000Z", "20991231000000Z");
  TlsInputs in = Inputs("one", {"a.test"});
  in.key = dir_ + "/two.key";
  Finding finding = *Find(CheckTls(in), "tls.key");
  EXPECT_EQ(finding.status, Status::kFail);
  EXPECT_THAT(finding.message, HasSubstr("does not belong"));
}

TEST(TlsNamesTest, NamesFollowTheListenAddressAndContainers) {
  EXPECT_THAT(TlsNamesFor({"0.0.0.0:45459"}, true, {}),
              ::testing::ElementsAre("host.containers.internal"));
  EXPECT_THAT(TlsNamesFor({"10.88.0.1:45459"}, false, {"broker.test"}),
              ::testing::ElementsAre("10.88.0.1", "broker.test"));
  EXPECT_THAT(TlsNamesFor({"127.0.0.1:45459"}, true, {}), ::testing::ElementsAre("127.0.0.1"));
}

TEST(ReportTest, JsonHasEveryCheckAndOkIsFalseWhenOneFailed) {
  std::vector<Finding> findings = {{"a", Status::kOk, "fine", ""},
                                   {"b", Status::kWarn, "hmm", "do x"}};
  nlohmann::json report = ReportJson(findings);
  EXPECT_TRUE(report["ok"].get<bool>());
  ASSERT_EQ(report["checks"].size(), 2u);
  EXPECT_EQ(report["checks"][1]["status"], "warn");
  EXPECT_EQ(report["checks"][1]["fix"], "do x");
  findings.push_back({"c", Status::kFail, "broken", "fix it"});
  EXPECT_FALSE(ReportJson(findings)["ok"].get<bool>());
  EXPECT_EQ(ReportText(findings),
            "ok    a  fine\nwarn  b  hmm\n      fix: do x\nfail  c  broken\n      fix: fix it\n");
}

}  // namespace
}  // namespace termbridge::doctor
