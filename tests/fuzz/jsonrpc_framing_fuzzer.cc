// Fuzzes the agent's stdio JSON-RPC framing (agent/mcp/stdio_transport.cc)
// end to end: the input is what a client writes on stdin, served by an
// McpServer with the real tool definitions and handlers that answer at once.
// Besides crashes, it checks what a client relies on: every line the agent
// writes is a JSON-RPC 2.0 object (or, answering a 2025-03-26 batch, a
// non-empty array of them), and every non-empty line that is not JSON
// gets exactly one -32700 reply. Each line is also given to the pieces the
// transport uses before parsing: IdScanner (the same id whatever the chunking,
// and the id a real parser finds) and JsonNestsDeeperThan (the depth a real
// parser measures).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "agent/mcp/id_scanner.h"
#include "agent/mcp/json_depth.h"
#include "agent/mcp/mcp_server.h"
#include "agent/mcp/protocol.h"
#include "agent/mcp/stdio_transport.h"
#include "agent/mcp/terminal_tools.h"
#include "nlohmann/json.hpp"

namespace {

using nlohmann::json;
using termbridge::mcp::IdScanner;

[[noreturn]] void Fail(const char* what, std::string_view line) {
  std::fprintf(stderr, "jsonrpc_framing: %s\nline: %.*s\n", what, static_cast<int>(line.size()),
               line.data());
  std::abort();
}

// The deepest nesting of a valid JSON text, measured by nlohmann's SAX parser
// (which keeps its own stack, so deep input is safe); -1 when invalid.
class DepthMeter : public json::json_sax_t {
 public:
  int max = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return Open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Open() {
    if (++depth_ > max) max = depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  int depth_ = 0;
};

int MeasuredDepth(std::string_view line) {
  DepthMeter meter;
  if (!json::sax_parse(line.begin(), line.end(), &meter)) return -1;
  return meter.max;
}

// IdScanner's contract on one line.
void CheckIdScanner(std::string_view line, int depth) {
  IdScanner whole;
  whole.Feed(line);
  // The same bytes in pieces whose sizes come from the bytes themselves.
  IdScanner pieces;
  size_t at = 0;
  while (at < line.size()) {
    size_t n = 1 + static_cast<unsigned char>(line[at]) % 7;
    if (n > line.size() - at) n = line.size() - at;
    pieces.Feed(line.substr(at, n));
    at += n;
  }
  if (whole.id() != pieces.id()) Fail("IdScanner depends on how the bytes are chunked", line);

  // Against a real parse: a valid object without escapes (an escaped key is
  // never taken for "id", by design) whose id is a short string or a number.
  if (depth < 0 || depth > static_cast<int>(termbridge::mcp::kMaxJsonDepth)) return;
  if (line.find('\\') != std::string_view::npos) return;
  json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) return;
  auto it = message.find("id");
  if (it == message.end()) return;
  if (it->is_string() && it->get_ref<const std::string&>().size() + 2 >= 1024) return;
  if (!it->is_string() && !it->is_number()) return;
  if (whole.id() != *it) Fail("IdScanner found another id than the parser", line);
}

void CheckDepth(std::string_view line, int depth) {
  if (depth < 0) return;  // only valid JSON has a depth to compare with
  for (size_t max : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, termbridge::mcp::kMaxJsonDepth}) {
    if (termbridge::mcp::JsonNestsDeeperThan(line, max) != (depth > static_cast<int>(max))) {
      Fail("JsonNestsDeeperThan disagrees with the parser's depth", line);
    }
  }
}

termbridge::mcp::ToolResult Answer(const json& arguments, const termbridge::mcp::CallContext&) {
  return {json{{"ok", true}, {"arguments", arguments}}, false};
}

// Waits (up to 5 s) until no tool handler thread is left: they are detached
// by design (tool_call.h), and one still ending when the input is done would
// be reported as a leak of the request it holds.
void AwaitHandlerThreads() {
  for (int tries = 0; tries < 5000; ++tries) {
    bool any = false;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      if (std::getline(comm, name) && name == "tb-mcp-handler") any = true;
    }
    if (!any) return;
    usleep(1000);
  }
}

std::string ReadAll(int fd) {
  std::string out;
  lseek(fd, 0, SEEK_SET);
  char buffer[65536];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) out.append(buffer, n);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  // What the transport does per line: split on '\n', drop one trailing '\r'.
  size_t unparsable = 0;
  for (size_t start = 0; start <= input.size();) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    std::string_view line = input.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    start = end + 1;
    if (line.empty()) continue;
    // nlohmann's parser ends the text at a NUL byte; the transport refuses
    // such a line as a whole, and the scanners read past the NUL by design.
    bool nul = line.find('\0') != std::string_view::npos;
    int depth = nul ? -1 : MeasuredDepth(line);
    if (!nul) {
      CheckIdScanner(line, depth);
      CheckDepth(line, depth);
    }
    if (depth < 0 && !termbridge::mcp::JsonNestsDeeperThan(line)) ++unparsable;
  }

  int in = memfd_create("stdin", 0);
  int out = memfd_create("stdout", 0);
  if (in < 0 || out < 0) std::abort();
  for (size_t done = 0; done < size;) {
    ssize_t n = write(in, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  lseek(in, 0, SEEK_SET);
  {
    termbridge::mcp::ServerOptions options;
    options.progress_heartbeat = absl::ZeroDuration();
    options.ask_client_timeout = absl::Milliseconds(1);
    // A new server per input (initialize and setLevel leave state in it);
    // the tool definitions are built once.
    static const auto* tools =
        new std::vector<termbridge::mcp::Tool>{termbridge::mcp::InteractiveTerminalTool(Answer),
                                               termbridge::mcp::HeadlessTerminalTool(Answer)};
    termbridge::mcp::McpServer server("termbridge-agent", "0.1.0", *tools, options);
    termbridge::mcp::RunStdio(server, in, out, /*max_concurrent=*/2);
  }
  AwaitHandlerThreads();
  std::string written = ReadAll(out);
  close(in);
  close(out);

  size_t parse_errors = 0;
  for (size_t start = 0; start < written.size();) {
    size_t end = written.find('\n', start);
    if (end == std::string::npos) Fail("the last reply does not end with a newline", written);
    std::string_view line(written.data() + start, end - start);
    start = end + 1;
    json reply = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (reply.is_array()) {  // a batch's replies: never -32700 (the line parsed)
      if (reply.empty()) Fail("the agent wrote an empty batch reply", line);
      for (const json& element : reply) {
        if (!element.is_object() || element.value("jsonrpc", json()) != "2.0") {
          Fail("a batch reply holds something other than a JSON-RPC 2.0 object", line);
        }
      }
      continue;
    }
    if (!reply.is_object() || reply.value("jsonrpc", json()) != "2.0") {
      Fail("a line the agent wrote is not a JSON-RPC 2.0 object", line);
    }
    if (reply.contains("error") && reply["error"].is_object() &&
        reply["error"].value("code", json()) == termbridge::mcp::kParseError) {
      ++parse_errors;
    }
  }
  if (parse_errors != unparsable) Fail("not one -32700 reply per line that is not JSON", input);
  return 0;
}
