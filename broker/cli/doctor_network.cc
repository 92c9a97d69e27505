// termbridge doctor's view of the network from a container: which of podman
// and docker are here, the gateway addresses their bridge networks give the
// host (where an agent in a container reaches it), whether the broker's
// listen address covers them, and, on request, a probe from a tiny container.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "broker/cli/doctor_checks.h"

extern char** environ;

namespace termbridge::doctor {
namespace {

// Splits "host:port" (host may be "[v6]") into host without brackets and port.
std::pair<std::string, std::string> SplitHostPort(const std::string& host_port) {
  size_t colon = host_port.rfind(':');
  std::string host = colon == std::string::npos ? host_port : host_port.substr(0, colon);
  std::string port = colon == std::string::npos ? "" : host_port.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, port};
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

bool IsWildcardHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "*";
}

std::string FirstLine(const std::string& text) {
  std::string line(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

void AddPodmanNetworks(const std::string& json_text, ContainerTools* tools) {
  nlohmann::json networks = nlohmann::json::parse(json_text, nullptr, false);
  if (!networks.is_array()) {
    tools->notes.push_back("podman: `podman network ls --format json` printed no JSON list");
    return;
  }
  for (const nlohmann::json& network : networks) {
    if (!network.is_object()) continue;
    const nlohmann::json subnets = network.value("subnets", nlohmann::json::array());
    if (!subnets.is_array()) continue;
    for (const nlohmann::json& subnet : subnets) {
      if (!subnet.is_object() || !subnet.contains("gateway")) continue;
      tools->networks.push_back({"podman", network.value("name", ""), subnet.value("subnet", ""),
                                 subnet.value("gateway", "")});
    }
  }
}

void AddDockerBridge(const std::string& json_text, ContainerTools* tools) {
  nlohmann::json networks = nlohmann::json::parse(json_text, nullptr, false);
  if (!networks.is_array()) {
    tools->notes.push_back("docker: `docker network inspect bridge` printed no JSON list");
    return;
  }
  for (const nlohmann::json& network : networks) {
    if (!network.is_object() || !network.contains("IPAM")) continue;
    const nlohmann::json config = network["IPAM"].value("Config", nlohmann::json::array());
    if (!config.is_array()) continue;
    for (const nlohmann::json& entry : config) {
      if (!entry.is_object() || !entry.contains("Gateway")) continue;
      tools->networks.push_back({"docker", network.value("Name", "bridge"),
                                 entry.value("Subnet", ""), entry.value("Gateway", "")});
    }
  }
}

}  // namespace

absl::StatusOr<ProgramOutput> RunProgram(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  if (argv.empty()) return absl::InvalidArgumentError("no program");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::ErrnoToStatus(errno, "pipe");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::ErrnoToStatus(errno, "pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return spawned == ENOENT ? absl::NotFoundError(absl::StrCat(argv[0], " is not on PATH"))
                             : absl::ErrnoToStatus(spawned, absl::StrCat("cannot run ", argv[0]));
  }
  ProgramOutput output;
  const absl::Time deadline = absl::Now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    int wait_ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (wait_ms <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[8192];
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        std::string& sink = i == 0 ? output.out : output.err;
        if (sink.size() < (4 << 20)) sink.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(argv[0], " did not finish within ", absl::FormatDuration(timeout)));
  }
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

ContainerTools DiscoverContainerTools(const ProgramRunner& run,
                                      const std::function<bool(const std::string&)>& on_path) {
  ContainerTools tools;
  if (on_path("podman")) {
    tools.present.push_back("podman");
    absl::StatusOr<ProgramOutput> listed = run({"podman", "network", "ls", "--format", "json"});
    if (!listed.ok()) {
      tools.notes.push_back(absl::StrCat("podman: ", listed.status().message()));
    } else if (listed->exit_code != 0) {
      tools.notes.push_back(absl::StrCat("podman network ls: ", FirstLine(listed->err)));
    } else {
      AddPodmanNetworks(listed->out, &tools);
    }
  }
  if (on_path("docker")) {
    tools.present.push_back("docker");
    absl::StatusOr<ProgramOutput> inspected = run({"docker", "network", "inspect", "bridge"});
    if (!inspected.ok()) {
      tools.notes.push_back(absl::StrCat("docker: ", inspected.status().message()));
    } else if (inspected->exit_code != 0) {
      tools.notes.push_back(
          absl::StrCat("docker network inspect bridge: ", FirstLine(inspected->err)));
    } else {
      AddDockerBridge(inspected->out, &tools);
    }
  }
  return tools;
}

bool ListenCovers(const std::string& listen, const std::string& ip) {
  auto [host, port] = SplitHostPort(listen);
  if (IsWildcardHost(host) || host == ip) return true;
  in6_addr scratch;
  if (inet_pton(AF_INET, host.c_str(), &scratch) == 1 ||
      inet_pton(AF_INET6, host.c_str(), &scratch) == 1) {
    return false;  // another literal address
  }
  // A name: the addresses it resolves to.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  bool covers = false;
  for (addrinfo* a = found; a != nullptr && !covers; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* address =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, address, text, sizeof(text)) != nullptr && ip == text) {
      covers = true;
    }
  }
  freeaddrinfo(found);
  return covers;
}

bool IsLocalAddress(const std::string& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool local = false;
  for (ifaddrs* entry = list; entry != nullptr && !local; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* address =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<sockaddr_in6*>(entry->ifa_addr)->sin6_addr);
    local = inet_ntop(family, address, text, sizeof(text)) != nullptr && ip == text;
  }
  freeifaddrs(list);
  return local;
}

absl::Status TcpProbe(const std::string& host_port, absl::Duration timeout) {
  auto [host, port] = SplitHostPort(host_port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int err = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); err != 0) {
    return absl::NotFoundError(absl::StrCat(host, ": ", gai_strerror(err)));
  }
  absl::Status result = absl::UnavailableError("no address");
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd pfd = {fd, POLLOUT, 0};
      int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
      socklen_t len = sizeof(err);
      if (ready <= 0) {
        err = ETIMEDOUT;
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
    }
    close(fd);
    if (err == 0) {
      result = absl::OkStatus();
      break;
    }
    result = absl::ErrnoToStatus(err, absl::StrCat("connect to ", host_port));
  }
  freeaddrinfo(found);
  return result;
}

Finding CheckContainerReach(const std::vector<std::string>& listen, bool port_known,
                            const ContainerTools& tools, const TcpProber& probe) {
  const std::string id = "container_reach";
  const std::string listen_text = absl::StrJoin(listen, ", ");
  const std::string notes =
      tools.notes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(tools.notes, "; "), ")");
  if (tools.present.empty()) {
    return {id, Status::kOk, "neither podman nor docker is here: not checked", ""};
  }
  if (tools.networks.empty()) {
    return {id, Status::kOk,
            absl::StrCat(absl::StrJoin(tools.present, " and "),
                         " here, but no bridge network could be read: not checked", notes),
            ""};
  }
  bool all_loopback = true;
  for (const std::string& address : listen) {
    if (!IsLoopbackHost(SplitHostPort(address).first)) all_loopback = false;
  }
  auto describe = [](const ContainerNetwork& n) {
    return absl::StrCat(n.gateway, " (", n.tool, " network ", n.name, ")");
  };
  std::vector<std::string> gateways;
  for (const ContainerNetwork& n : tools.networks) gateways.push_back(describe(n));
  std::string example_port = listen.empty() ? "" : SplitHostPort(listen.front()).second;
  if (example_port.empty() || example_port == "0") example_port = "45459";
  if (all_loopback) {
    return {id, Status::kWarn,
            absl::StrCat("the broker listens on ", listen_text,
                         " only: an agent in a container cannot reach it; containers reach this "
                         "host at ",
                         absl::StrJoin(gateways, ", ")),
            absl::StrCat("if an agent runs in a container, listen on 0.0.0.0:", example_port,
                         " (or the gateway, ", tools.networks.front().gateway, ":", example_port,
                         ") with tls_cert and tls_key "
                         "(docs/operating.md#broker-on-a-laptop--agent-in-compose); an agent on "
                         "this host needs nothing")};
  }
  std::vector<std::string> reached, uncovered, silent, dormant;
  for (const ContainerNetwork& n : tools.networks) {
    std::string covering;
    for (const std::string& address : listen) {
      if (ListenCovers(address, n.gateway)) {
        covering = address;
        break;
      }
    }
    if (covering.empty()) {
      uncovered.push_back(describe(n));
      continue;
    }
    if (!port_known || !probe) {
      reached.push_back(describe(n));
      continue;
    }
    const std::string target = absl::StrCat(
        n.gateway.find(':') != std::string::npos ? absl::StrCat("[", n.gateway, "]") : n.gateway,
        ":", SplitHostPort(covering).second);
    if (absl::Status probed = probe(target); probed.ok()) {
      reached.push_back(describe(n));
    } else if (absl::IsFailedPrecondition(probed)) {
      dormant.push_back(n.gateway);
    } else {
      silent.push_back(absl::StrCat(describe(n), ": ", probed.message()));
    }
  }
  if (!silent.empty()) {
    return {id, Status::kWarn,
            absl::StrCat("the broker's listen address (", listen_text,
                         ") covers these gateways but does not answer there from this host: ",
                         absl::StrJoin(silent, "; ")),
            "check that the gateway address exists here (`ip -4 addr`; podman makes its bridge "
            "with the first container on it) and that no firewall drops it"};
  }
  if (!uncovered.empty()) {
    return {id, Status::kWarn,
            absl::StrCat(
                "containers reach this host at ", absl::StrJoin(uncovered, ", "),
                ", which the broker's listen address (", listen_text, ") does not cover",
                reached.empty() ? "" : absl::StrCat("; covered: ", absl::StrJoin(reached, ", "))),
            absl::StrCat("listen on 0.0.0.0:", example_port,
                         " (or each gateway) with TLS, or point the agent at an address the "
                         "broker listens on (TERMBRIDGE_HOST_ALIAS)")};
  }
  std::string dormant_text;
  if (!dormant.empty()) {
    dormant_text = absl::StrCat("; not on this host yet (no container on the network): ",
                                absl::StrJoin(dormant, ", "));
  }
  if (reached.empty()) {
    return {id, Status::kOk,
            absl::StrCat("the broker's listen address (", listen_text,
                         ") covers the container gateways", dormant_text, notes),
            ""};
  }
  return {id, Status::kOk,
          absl::StrCat("containers reach the broker (", listen_text, ") at ",
                       absl::StrJoin(reached, ", "),
                       port_known ? ", each answering from this host" : "", dormant_text, notes),
          ""};
}

Finding ProbeFromContainer(const std::string& port, const ContainerTools& tools,
                           const ProgramRunner& run) {
  const std::string id = "container_reach.probe";
  const char* kImages[] = {"localhost/termbridge-agent:latest",
                           "docker.io/library/debian:bookworm-slim"};
  // Tries each host given after the port with bash's /dev/tcp, as an agent would.
  const std::string script =
      "for h in \"$@\"; do if timeout 3 bash -c \"exec 3<>/dev/tcp/$h/$0\" 2>/dev/null; "
      "then echo \"reached $h\"; else echo \"failed $h\"; fi; done";
  std::vector<std::string> results;
  bool failed = false;
  bool probed = false;
  for (const std::string& tool : tools.present) {
    const ContainerNetwork* network = nullptr;
    for (const ContainerNetwork& n : tools.networks) {
      if (n.tool == tool && (network == nullptr || n.name == "podman" || n.name == "bridge")) {
        network = &n;
      }
    }
    if (network == nullptr) continue;
    std::string image;
    for (const char* candidate : kImages) {
      absl::StatusOr<ProgramOutput> exists = tool == "podman"
                                                 ? run({"podman", "image", "exists", candidate})
                                                 : run({"docker", "image", "inspect", candidate});
      if (exists.ok() && exists->exit_code == 0) {
        image = candidate;
        break;
      }
    }
    if (image.empty()) {
      results.push_back(absl::StrCat(tool,
                                     ": no image to probe with (localhost/termbridge-agent "
                                     "or debian:bookworm-slim) is present; none is pulled"));
      continue;
    }
    std::vector<std::string> argv = {tool,        "run",         "--rm",         "--pull=never",
                                     "--network", network->name, "--entrypoint", "bash",
                                     image,       "-c",          script,         port};
    if (tool == "podman") argv.push_back("host.containers.internal");
    argv.push_back(network->gateway);
    absl::StatusOr<ProgramOutput> ran = run(argv);
    probed = true;
    if (!ran.ok() || ran->exit_code != 0) {
      failed = true;
      results.push_back(absl::StrCat(
          tool, " run ", image,
          " failed: ", ran.ok() ? FirstLine(ran->err) : std::string(ran.status().message())));
      continue;
    }
    for (absl::string_view line : absl::StrSplit(ran->out, '\n', absl::SkipEmpty())) {
      if (absl::StartsWith(line, "failed ") && absl::EndsWith(line, network->gateway)) {
        failed = true;
      }
      results.push_back(absl::StrCat(tool, " network ", network->name, ": ", line, ":", port));
    }
  }
  if (!probed) {
    return {id, Status::kWarn,
            absl::StrCat("no container was run: ", results.empty() ? "no container network known"
                                                                   : absl::StrJoin(results, "; ")),
            "build the agent image (`podman-compose build agent`) and run doctor again with "
            "--probe-container"};
  }
  if (failed) {
    return {id, Status::kFail, absl::StrJoin(results, "; "),
            "a container cannot reach the broker's port at the gateway: listen on 0.0.0.0 (with "
            "TLS) and check the host firewall (`nft list ruleset`)"};
  }
  return {id, Status::kOk, absl::StrJoin(results, "; "), ""};
}

}  // namespace termbridge::doctor
