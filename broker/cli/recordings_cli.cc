// termbridge recordings list|export and termbridge replay: what the broker
// recorded of each terminal (docs/operating.md, "Recordings"), as asciicast v2
// that asciinema plays, or played here in this terminal.
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/cli/cli_common.h"
#include "broker/cli/output_text.h"

namespace termbridge::cli {
namespace {

using nlohmann::json;

std::string SizeText(uint64_t bytes) {
  if (bytes < 10 * 1024) return absl::StrCat(bytes, " B");
  if (bytes < 10 * 1024 * 1024) return absl::StrCat(bytes / 1024, " KiB");
  return absl::StrCat(bytes / (1024 * 1024), " MiB");
}

int List(const CliOptions& options, std::ostream& out, std::ostream& err) {
  auto stub = Connect(options);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListRecordingsResponse response;
  grpc::Status status = stub->ListRecordings(&context, v1::ListRecordingsRequest(), &response);
  if (!status.ok()) return Fail(status, options, err);
  if (options.json) {
    json list = json::array();
    for (const v1::RecordingInfo& r : response.recordings()) {
      list.push_back({{"terminal_id", r.terminal_id()},
                      {"agent_id", r.agent_id()},
                      {"cwd", r.cwd()},
                      {"state", r.state()},
                      {"opened_at_unix_ms", r.opened_at_unix_ms()},
                      {"finished_at_unix_ms", r.finished_at_unix_ms()},
                      {"exit_code", r.exit_code()},
                      {"signal", r.signal()},
                      {"begin_offset", r.begin_offset()},
                      {"end_offset", r.end_offset()},
                      {"stored_bytes", r.stored_bytes()}});
    }
    out << json{{"recordings", list}, {"total_bytes", response.total_bytes()}}.dump() << "\n";
    return 0;
  }
  if (response.recordings().empty()) {
    out << "no recordings\n";
    return 0;
  }
  for (const v1::RecordingInfo& r : response.recordings()) {
    std::string state = r.state();
    if (r.state() == "finished") {
      state = r.signal() > 0 ? absl::StrCat("signal ", r.signal())
                             : absl::StrCat("exit ", r.exit_code());
    }
    out << r.terminal_id() << "  " << WhenText(r.opened_at_unix_ms()) << "  " << state << "  "
        << SizeText(r.end_offset()) << (r.begin_offset() > 0 ? " (start pruned)" : "") << "  "
        << r.agent_id() << "  " << r.cwd() << "\n";
  }
  out << "total on disk: " << SizeText(response.total_bytes()) << "\n";
  return 0;
}

// Streams the recording's asciicast lines to `sink`; false stops it.
int Fetch(const std::string& terminal_id, const CliOptions& options, std::ostream& err,
          const std::function<bool(const std::string&)>& sink) {
  auto stub = Connect(options);
  grpc::ClientContext context;  // no deadline: a long recording takes its time
  v1::ExportRecordingRequest request;
  request.set_terminal_id(terminal_id);
  auto reader = stub->ExportRecording(&context, request);
  v1::RecordingChunk chunk;
  bool stopped = false;
  while (!stopped && reader->Read(&chunk)) {
    stopped = !sink(chunk.asciicast());
  }
  if (stopped) {
    context.TryCancel();
    reader->Finish().ok();
    return 1;
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return Fail(status, options, err);
  return 0;
}

bool WriteAllTo(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

int Export(const std::string& terminal_id, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  int fd = STDOUT_FILENO;
  if (!options.output.empty() && options.output != "-") {
    fd = open(options.output.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      err << "termbridge: cannot create " << options.output << ": " << std::strerror(errno) << "\n";
      return 1;
    }
  }
  out.flush();
  bool write_failed = false;
  int rc = Fetch(terminal_id, options, err, [&](const std::string& lines) {
    write_failed = !WriteAllTo(fd, lines);
    return !write_failed;
  });
  if (fd != STDOUT_FILENO) close(fd);
  if (write_failed) {
    err << "termbridge: writing the recording failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (rc == 0 && fd != STDOUT_FILENO) {
    err << "recording of " << terminal_id << " written to " << options.output
        << " (asciicast v2: asciinema play " << options.output << ")\n";
  }
  return rc;
}

}  // namespace

int Recordings(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
               std::ostream& err) {
  if (args.size() == 2 && args[1] == "list") return List(options, out, err);
  if (args.size() == 3 && args[1] == "export") return Export(args[2], options, out, err);
  err << "usage: termbridge recordings list | recordings export <terminal_id> [--output FILE]\n";
  return 2;
}

int Replay(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  if (args.size() != 2) {
    err << "usage: termbridge replay <terminal_id> [--speed N] [--max-idle SECONDS]\n";
    return 2;
  }
  if (!(options.speed >= 0)) {
    err << "termbridge: --speed must be 0 (no waiting) or more\n";
    return 2;
  }
  out.flush();
  // The person's terminal gets what a viewer's would: nothing that makes it
  // answer or act (docs/security.md, "What a viewer's terminal answers").
  const bool to_terminal = isatty(STDOUT_FILENO) == 1;
  OutputGuard guard;
  std::string partial;  // a line cut between two chunks
  bool header = true;
  double last_t = 0;
  bool write_failed = false;
  int rc = Fetch(args[1], options, err, [&](const std::string& chunk) {
    partial += chunk;
    size_t start = 0;
    for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
      json line = json::parse(partial.begin() + start, partial.begin() + nl, nullptr, false);
      if (header) {
        header = false;
        continue;
      }
      if (!line.is_array() || line.size() != 3 || !line[0].is_number() || !line[1].is_string() ||
          !line[2].is_string()) {
        continue;
      }
      const double t = line[0].get<double>();
      if (options.speed > 0 && t > last_t) {
        double wait = (t - last_t) / options.speed;
        if (options.max_idle_s > 0) wait = std::min(wait, options.max_idle_s);
        absl::SleepFor(absl::Seconds(wait));
      }
      last_t = std::max(last_t, t);
      const std::string code = line[1].get<std::string>();
      const std::string data = line[2].get<std::string>();
      if (code == "o") {
        if (!WriteAllTo(STDOUT_FILENO, to_terminal ? guard.Add(data) : data)) {
          return !(write_failed = true);
        }
      } else if (code == "m") {
        err << "\r\n[termbridge replay: " << data << "]\r\n";
      }
    }
    partial.erase(0, start);
    return true;
  });
  if (to_terminal && isatty(STDIN_FILENO) == 1) {
    // Answers the terminal gave to what was played (a cursor position) are
    // not the person's typing: they do not reach the shell after us.
    tcdrain(STDOUT_FILENO);
    absl::SleepFor(absl::Milliseconds(50));
    tcflush(STDIN_FILENO, TCIFLUSH);
  }
  if (write_failed) return 1;
  return rc;
}

}  // namespace termbridge::cli
