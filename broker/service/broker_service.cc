// The unary RPCs of termbridge.v1.TerminalBroker.
#include "broker/service/broker_service.h"

#include <openssl/crypto.h>
#include <signal.h>

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "broker/service/wire.h"
#include "broker/session/screen.h"
#include "common/contract/errors.h"
#include "common/contract/gui_unavailable.h"
#include "common/contract/request.h"
#include "re2/re2.h"
#include "spdlog/spdlog.h"

namespace termbridge::broker {
namespace {

using contract::ErrorCode;
using contract::MakeError;

constexpr uint32_t kProtocolVersion = v1::PROTOCOL_VERSION_CURRENT;

// The session's view first, then output: when the view says finished, the
// output read afterwards is complete.
template <typename Response>
void FillReadResult(const core::SessionRecord& record, uint64_t cursor, size_t max_bytes, bool tail,
                    v1::OutputFormat format, Response* response) {
  SessionView view = ViewSession(record);
  if (format == v1::OUTPUT_FORMAT_SCREEN) {
    // The whole terminal's screen, whatever the cursor: replay what the ring holds.
    session::OutputSlice all = record.terminal->Tail(std::numeric_limits<size_t>::max());
    auto [cols, rows] = record.terminal->Size();
    session::ScreenSnapshot screen = session::RenderScreen(all.data, cols, rows);
    response->set_session_id(record.session_id);
    response->set_terminal_id(record.terminal_id);
    *response->mutable_exit() = view.exit;
    v1::Output* out = response->mutable_output();
    out->set_text(std::move(screen.text));
    out->set_start(all.start);
    out->set_next_cursor(all.next);
    out->set_gap_bytes(all.gap);
    v1::Screen* s = out->mutable_screen();
    s->set_cols(screen.cols);
    s->set_rows(screen.rows);
    s->set_cursor_row(screen.cursor_row);
    s->set_cursor_col(screen.cursor_col);
    s->set_alternate_screen(screen.alternate_screen);
    return;
  }
  uint64_t from = tail ? std::max(view.begin, view.end > max_bytes ? view.end - max_bytes : 0)
                       : std::max(cursor, view.begin);
  session::OutputSlice slice;
  if (from < view.end) {
    slice = record.terminal->Read(from, std::min<uint64_t>(max_bytes, view.end - from));
    // A gap moves the slice on: it still ends where the session's output does.
    if (slice.next > view.end) {
      slice.start = std::min(slice.start, view.end);
      slice.data.resize(static_cast<size_t>(view.end - slice.start));
      slice.next = view.end;
    }
  } else {
    // Nothing (new) yet: report the position, and a gap if the cursor fell out of the ring.
    slice = record.terminal->Read(std::min(from, view.end), 0);
    slice.start = slice.next = std::max<uint64_t>(slice.start, std::min(from, view.end));
  }
  response->set_session_id(record.session_id);
  response->set_terminal_id(record.terminal_id);
  response->set_terminal_name(record.terminal_name);
  response->set_lock(std::string(session::LockModeName(record.terminal->lock())));
  *response->mutable_exit() = view.exit;
  FillOutput(std::move(slice), format, view.finished, view.end, response->mutable_output());
}

}  // namespace

BrokerService::BrokerService(ServiceOptions options, core::TerminalRegistry* registry)
    : options_(std::move(options)), registry_(registry) {}

absl::StatusOr<std::string> BrokerService::Authenticate(const grpc::ServerContextBase& context,
                                                        absl::string_view method) const {
  absl::StatusOr<std::string> identity = Identify(context);
  if (!identity.ok()) {
    spdlog::warn("event=auth_failed method={} peer={} reason=\"{}\"", std::string(method),
                 context.peer(), std::string(identity.status().message()));
    core::AuditAfterTheFact(options_.audit, audit::kAuthFailed,
                            {{"method", std::string(method)},
                             {"peer", context.peer()},
                             {"role", "agent"},
                             {"reason", std::string(identity.status().message())}});
  }
  return identity;
}

absl::StatusOr<std::string> BrokerService::Identify(const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  std::string bearer;
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "Bearer ";
    if (value.substr(0, kBearer.size()) != kBearer) {
      return absl::UnauthenticatedError("authorization must be 'Bearer <token>'");
    }
    bearer = std::string(value.substr(kBearer.size()));
    if (bearer.empty()) return absl::UnauthenticatedError("the Bearer token is empty");
  }
  // A client certificate the TLS layer verified names the agent when no token does.
  std::string certificate_name;
  if (std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
      auth != nullptr && auth->IsPeerAuthenticated()) {
    for (const grpc::string_ref& name : auth->FindPropertyValues("x509_common_name")) {
      certificate_name.assign(name.data(), name.size());
    }
  }
  if (options_.agents != nullptr) return options_.agents->Identify(bearer, certificate_name);
  const std::string& want = options_.agent_token;
  if (bearer.empty()) {
    return absl::UnauthenticatedError("missing authorization metadata (Bearer agent token)");
  }
  if (want.empty() || bearer.size() != want.size() ||
      CRYPTO_memcmp(bearer.data(), want.data(), want.size()) != 0) {
    return absl::UnauthenticatedError("unknown agent token");
  }
  return std::string("agent");
}

absl::Status BrokerService::CheckClaim(const std::string& agent, const std::string& claimed,
                                       const grpc::ServerContextBase& context,
                                       absl::string_view method) const {
  if (claimed.empty() || claimed == agent) return absl::OkStatus();
  spdlog::warn("event=identity_mismatch method={} agent={} claimed=\"{}\" peer={}",
               std::string(method), agent, absl::CHexEscape(claimed), context.peer());
  core::AuditAfterTheFact(options_.audit, audit::kIdentityMismatch,
                          {{"method", std::string(method)},
                           {"agent_id", agent},
                           {"claimed_agent_id", claimed},
                           {"peer", context.peer()}});
  return MakeError(
      ErrorCode::kInvalidPayload,
      absl::StrCat("agent_id '", claimed, "' is not this agent: its credentials name '", agent,
                   "' (leave agent_id empty, or issue this agent its own token "
                   "with `termbridge agents add`)"),
      {{"field", "agent_id"}, {"agent_id", agent}});
}

// Authentication failures are plain UNAUTHENTICATED (no PM_TERM detail): the
// agent maps them to a configuration error it can explain. After it, `agent`
// is the caller's identity, and a request naming another agent is refused.
#define TB_AUTHENTICATE(context, request)                                                          \
  CallScope call_scope(this);                                                                      \
  absl::StatusOr<std::string> identity_or = Authenticate(*(context), __func__);                    \
  if (!identity_or.ok()) {                                                                         \
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,                                         \
                        std::string(identity_or.status().message()));                              \
  }                                                                                                \
  const std::string& agent = *identity_or;                                                         \
  call_scope.Bind(agent, context);                                                                 \
  /* A revocation between Authenticate and Bind ended no call: look again. */                      \
  if (absl::StatusOr<std::string> again = Identify(*(context)); !again.ok()) {                     \
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(again.status().message())); \
  }                                                                                                \
  if (absl::Status claim = CheckClaim(agent, (request)->agent_id(), *(context), __func__);         \
      !claim.ok()) {                                                                               \
    return ToGrpcStatus(*(context), claim);                                                        \
  }

namespace {

// ReadOutput and Terminate name a session or a terminal; naming neither is a
// bad request, not an unknown id.
absl::Status RequireTarget(const std::string& session_id, const std::string& terminal_id) {
  if (!session_id.empty() || !terminal_id.empty()) return absl::OkStatus();
  return MakeError(ErrorCode::kInvalidPayload, "target needs a session_id or a terminal_id",
                   {{"field", "target"}});
}

// A part of a request over max_input_bytes.
absl::Status OverInputLimit(const char* what, size_t bytes, size_t limit, const char* field) {
  return MakeError(
      ErrorCode::kInvalidPayload,
      absl::StrCat("the ", what, " is ", bytes, " bytes; the broker accepts at most ", limit),
      {{"field", field}, {"limit", "max_input_bytes"}, {"value", limit}});
}

}  // namespace

grpc::Status BrokerService::Handshake(grpc::ServerContext* context,
                                      const v1::HandshakeRequest* request,
                                      v1::HandshakeResponse* response) {
  TB_AUTHENTICATE(context, request);
  if (request->protocol_version() != kProtocolVersion) {
    return ToGrpcStatus(
        *context,
        MakeError(ErrorCode::kGuiUnavailable,
                  absl::StrCat("protocol version mismatch: agent speaks ",
                               request->protocol_version(), ", broker speaks ", kProtocolVersion),
                  {{"reason", contract::gui_unavailable::kVersionMismatch},
                   {"agent_protocol_version", request->protocol_version()},
                   {"broker_protocol_version", kProtocolVersion}}));
  }
  response->set_protocol_version(kProtocolVersion);
  response->set_broker_instance_id(options_.broker_instance_id);
  response->set_runtime_session_id(contract::NewId("rs_"));
  response->set_broker_version(options_.version);
  response->set_agent_id(agent);
  for (const char* capability : {"execute", "read_output", "terminate", "list", "attach",
                                 "output.clean", "output.raw", "policy", "approvals"}) {
    response->add_capabilities(capability);
  }
  for (const std::string& capability : options_.extra_capabilities) {
    response->add_capabilities(capability);
  }
  if (options_.policy != nullptr) {
    response->set_policy_json(options_.policy->Current()->ToJson().dump());
    response->set_policy_generation(options_.policy->generation());
  }
  v1::Limits* limits = response->mutable_limits();
  limits->set_ring_bytes(registry_->options().ring_bytes);
  limits->set_max_terminals(registry_->options().max_terminals_per_agent);
  limits->set_max_input_bytes(options_.max_input_bytes);
  limits->set_max_read_bytes(options_.max_read_bytes);
  limits->set_max_wait_ms(options_.max_wait_ms);
  spdlog::info("event=handshake agent={} trace_id={} runtime_session_id={}", agent,
               request->trace_id(), response->runtime_session_id());
  return grpc::Status::OK;
}

grpc::Status BrokerService::Execute(grpc::ServerContext* context, const v1::ExecuteRequest* request,
                                    v1::ExecuteResponse* response) {
  TB_AUTHENTICATE(context, request);
  const std::string& trace_id = request->correlation().trace_id();
  if (!request->open_only() && request->command().empty()) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInvalidPayload, "command is required",
                                            {{"field", "execution.command"}}));
  }
  size_t input_bytes = request->command().size();
  for (const std::string& arg : request->args()) input_bytes += arg.size() + 1;
  if (input_bytes > options_.max_input_bytes) {
    return ToGrpcStatus(*context, OverInputLimit("command line", input_bytes,
                                                 options_.max_input_bytes, "execution.command"));
  }
  // The environment goes to exec too; the kernel refuses oversized strings
  // (E2BIG), which would surface as an internal error after the audit record.
  size_t env_bytes = 0;
  for (const auto& [key, value] : request->env()) env_bytes += key.size() + value.size() + 2;
  if (env_bytes > options_.max_input_bytes) {
    return ToGrpcStatus(*context, OverInputLimit("environment", env_bytes, options_.max_input_bytes,
                                                 "execution.env"));
  }
  std::vector<std::string> env_names;
  for (const auto& [key, value] : request->env()) env_names.push_back(key);
  nlohmann::json requested = {
      {"agent_id", agent},
      {"trace_id", trace_id},
      {"request_id", request->correlation().request_id()},
      {"command", request->command()},
      {"args", std::vector<std::string>(request->args().begin(), request->args().end())},
      {"cwd", request->cwd()},
      {"env_names", env_names},
      {"terminal_id", request->terminal_id()},
      {"open_only", request->open_only()}};
  if (absl::Status s = core::Audit(options_.audit, audit::kCommandRequested, requested); !s.ok()) {
    return ToGrpcStatus(*context, s);
  }
  core::ExecuteRequest params;
  params.agent_id = agent;
  params.command = request->command();
  params.args.assign(request->args().begin(), request->args().end());
  params.cwd = request->cwd();
  for (const auto& [key, value] : request->env()) params.env.emplace_back(key, value);
  params.terminal_id = request->terminal_id();
  params.open_only = request->open_only();
  params.terminal_name = request->terminal_name();
  params.lane = request->lane().empty() ? "interactive" : request->lane();
  params.trace_id = trace_id;
  params.request_id = request->correlation().request_id();
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(std::min(request->wait_ms(), options_.max_wait_ms));
  // No command reaches a terminal without the gate's judgement: a broker
  // wired without one refuses (there is no unchecked path).
  if (options_.gate == nullptr) {
    return ToGrpcStatus(*context, absl::InternalError("the broker has no command gate"));
  }
  absl::StatusOr<core::SessionRecord> record;
  {
    absl::StatusOr<core::GateOutcome> outcome =
        options_.gate->Execute(params, deadline - absl::Now());
    if (!outcome.ok()) {
      spdlog::warn("event=execute_refused trace_id={} status=\"{}\"", trace_id,
                   outcome.status().ToString());
      return ToGrpcStatus(*context, outcome.status());
    }
    FillApproval(outcome->gate, response->mutable_approval());
    if (!outcome->record) {
      // Still waiting for a person (or for its start): the agent polls the session.
      response->set_session_id(outcome->session_id);
      response->set_terminal_id(outcome->terminal_id);
      response->mutable_exit()->set_running(true);
      spdlog::info("event=execute_pending trace_id={} session_id={} approval={}", trace_id,
                   outcome->session_id, outcome->gate.state);
      return grpc::Status::OK;
    }
    record = *outcome->record;
  }
  spdlog::info("event=execute trace_id={} request_id={} session_id={} terminal_id={}", trace_id,
               request->correlation().request_id(), record->session_id, record->terminal_id);
  absl::Duration left = deadline - absl::Now();
  if (left > absl::ZeroDuration() && !request->open_only()) {
    if (record->tracker) {
      record->tracker->WaitFinished(record->session_id, left);
    } else {
      record->terminal->WaitForExit(left);
    }
  }
  size_t max_bytes = request->max_bytes() == 0
                         ? options_.default_read_bytes
                         : std::min(request->max_bytes(), options_.max_read_bytes);
  v1::ReadOutputResponse read;
  FillReadResult(*record, record->start_offset, max_bytes, false, request->format(), &read);
  response->set_session_id(record->session_id);
  response->set_terminal_id(record->terminal_id);
  *response->mutable_exit() = read.exit();
  *response->mutable_output() = read.output();
  response->set_terminal_name(read.terminal_name());
  response->set_lock(read.lock());
  response->mutable_exit()->set_closed_reason(registry_->ClosedReason(record->terminal_id));
  return grpc::Status::OK;
}

// A reader that has caught up with a command printing at full speed would
// get its output a PTY read (a few KiB) per call, and spend on calls the CPU
// the command needs. So while the command runs and less than a page
// (`want` bytes past `from`) is there, the read gathers more: it looks every
// kGatherStep, for at most kGatherWindow, and stops at a page, at the end of
// the command, or after kGatherQuietSteps looks that found nothing new.
// Output that stops comes at most kGatherQuietSteps * kGatherStep later.
constexpr absl::Duration kGatherStep = absl::Milliseconds(1);
constexpr int kGatherQuietSteps = 3;
constexpr absl::Duration kGatherWindow = absl::Milliseconds(10);

static void GatherOutput(const core::SessionRecord& record, uint64_t from, size_t want,
                         absl::Time deadline) {
  const absl::Time until = std::min(deadline, absl::Now() + kGatherWindow);
  int quiet = 0;
  for (uint64_t end = from; end < from + want && quiet < kGatherQuietSteps;) {
    if (absl::Now() + kGatherStep > until) return;
    absl::SleepFor(kGatherStep);
    const uint64_t now_end = record.terminal->end_offset();
    quiet = now_end == end ? quiet + 1 : 0;
    if (SessionView view = ViewSession(record); view.finished || view.ending) return;
    end = now_end;
  }
}

// Waits, bounded by wait_ms, for what the read asked for; returns how the
// wait ended ("output", "exited", "idle", "matched" or "timeout").
// `page_bytes`: the most the read returns.
static absl::StatusOr<std::string> WaitForRead(const core::SessionRecord& record, uint64_t cursor,
                                               const v1::ReadOutputRequest& request,
                                               uint32_t wait_ms, size_t page_bytes) {
  const std::string until = request.until().empty() ? "output" : request.until();
  const absl::Time deadline = absl::Now() + absl::Milliseconds(wait_ms);
  if (ViewSession(record).finished) return std::string("exited");
  if (until == "output") {
    // Unread output answers at once, or once a page of it is there while the
    // command runs (GatherOutput). The session can finish
    // without a new byte (its end mark was already read), which wakes no
    // output waiter: wait in slices and look again. The wait is for the
    // terminal's next byte, taken before the view: before the shell has
    // started the command, the terminal has bytes past the session's end
    // (the prompt, the marks) that must not end the wait again and again.
    constexpr absl::Duration kFinishPoll = absl::Milliseconds(50);
    constexpr absl::Duration kEndingPoll = absl::Milliseconds(2);  // its D mark is in
    for (;;) {
      const uint64_t terminal_end = record.terminal->end_offset();
      SessionView view = ViewSession(record);
      if (view.finished) return std::string("exited");
      if (cursor < view.end) {
        if (view.end - cursor < page_bytes && !view.ending) {
          GatherOutput(record, record.terminal->end_offset(), page_bytes - (view.end - cursor),
                       deadline);
        }
        return std::string("output");
      }
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return std::string("timeout");
      const absl::Duration slice = view.ending ? kEndingPoll : kFinishPoll;
      if (record.terminal->WaitForOutput(std::max(cursor, terminal_end), std::min(left, slice))) {
        if (record.terminal->end_offset() == terminal_end &&
            !record.terminal->exit_state().running) {
          return std::string("exited");  // woken by the exit: no byte will come
        }
      }
    }
  }
  if (until == "exit") {
    for (;;) {
      if (ViewSession(record).finished) return std::string("exited");
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return std::string("timeout");
      bool ended = record.tracker && !record.session_id.empty()
                       ? record.tracker->WaitFinished(record.session_id, left)
                       : record.terminal->WaitForExit(left);
      if (ended) return std::string("exited");
    }
  }
  if (until == "idle") {
    absl::Duration idle = absl::Milliseconds(request.idle_ms() == 0 ? 500 : request.idle_ms());
    for (;;) {
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return std::string("timeout");
      uint64_t end = record.terminal->end_offset();
      if (!record.terminal->WaitForOutput(end, std::min(idle, left))) {
        return std::string(left >= idle ? "idle" : "timeout");
      }
      if (ViewSession(record).finished) return std::string("exited");
    }
  }
  if (until == "match") {
    re2::RE2 pattern(request.match(), re2::RE2::Quiet);
    if (!pattern.ok()) {
      return contract::MakeError(contract::ErrorCode::kInvalidPayload,
                                 "match is not a valid RE2 regex: " + pattern.error(),
                                 {{"field", "match"}});
    }
    // Each byte is scanned once, in slices, with the end of the previous
    // slice kept in front of the next so that a match across the seam is
    // found (up to kMatchOverlap bytes of it before the seam).
    constexpr size_t kMatchSlice = 1 << 20;
    constexpr size_t kMatchOverlap = 64 << 10;
    uint64_t scanned = cursor;
    std::string carry;
    for (;;) {
      session::OutputSlice slice = record.terminal->Read(scanned, kMatchSlice);
      if (slice.gap > 0) carry.clear();  // bytes lost from the ring cannot match
      if (!slice.data.empty()) {
        std::string window = carry + slice.data;
        if (re2::RE2::PartialMatch(window, pattern)) return std::string("matched");
        carry = window.substr(window.size() - std::min(window.size(), kMatchOverlap));
        scanned = slice.next;
        continue;  // more may be there already
      }
      scanned = slice.next;
      if (ViewSession(record).finished) return std::string("exited");
      absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return std::string("timeout");
      record.terminal->WaitForOutput(scanned, left);
    }
  }
  return contract::MakeError(contract::ErrorCode::kInvalidPayload,
                             "until must be output, exit, idle or match", {{"field", "until"}});
}

grpc::Status BrokerService::ReadOutput(grpc::ServerContext* context,
                                       const v1::ReadOutputRequest* request,
                                       v1::ReadOutputResponse* response) {
  TB_AUTHENTICATE(context, request);
  if (absl::Status target = RequireTarget(request->session_id(), request->terminal_id());
      !target.ok()) {
    return ToGrpcStatus(*context, target);
  }
  const std::string& agent_id = agent;
  absl::StatusOr<core::SessionRecord> record =
      !request->session_id().empty() ? registry_->FindSession(request->session_id(), agent_id)
                                     : registry_->FindTerminal(request->terminal_id(), agent_id);
  if (!record.ok() && !request->session_id().empty() && options_.gate != nullptr) {
    // Not started: waiting for a person, or ended by a decision.
    absl::StatusOr<core::GateOutcome> outcome =
        options_.gate->Lookup(request->session_id(), agent_id);
    if (!outcome.ok()) return ToGrpcStatus(*context, outcome.status());
    if (!outcome->record) {
      response->set_session_id(outcome->session_id);
      response->set_terminal_id(outcome->terminal_id);
      response->mutable_exit()->set_running(true);
      FillApproval(outcome->gate, response->mutable_approval());
      return grpc::Status::OK;
    }
    record = *outcome->record;
    // Started in a terminal that changed hands since: not the agent's now.
    if (absl::StatusOr<core::SessionRecord> holder =
            registry_->FindTerminal(record->terminal_id, "");
        holder.ok() && holder->agent_id != agent_id) {
      return ToGrpcStatus(*context, MakeError(ErrorCode::kNotFound, "unknown session_id",
                                              {{"session_id", request->session_id()}}));
    }
  }
  if (!record.ok()) return ToGrpcStatus(*context, record.status());
  if (options_.gate != nullptr && !request->session_id().empty()) {
    if (std::optional<core::GateState> gate = options_.gate->StateOf(request->session_id())) {
      FillApproval(*gate, response->mutable_approval());
    }
  }
  uint64_t cursor = request->has_cursor() ? request->cursor() : record->start_offset;
  cursor = std::max(cursor, record->start_offset);
  uint32_t wait_ms = std::min(request->wait_ms(), options_.max_wait_ms);
  size_t max_bytes = request->max_bytes() == 0
                         ? options_.default_read_bytes
                         : std::min(request->max_bytes(), options_.max_read_bytes);
  if (wait_ms > 0 && !request->tail()) {
    absl::StatusOr<std::string> waited = WaitForRead(*record, cursor, *request, wait_ms, max_bytes);
    if (!waited.ok()) return ToGrpcStatus(*context, waited.status());
    response->set_wait_result(*waited);
  }
  FillReadResult(*record, cursor, max_bytes, request->tail(), request->format(), response);
  response->mutable_exit()->set_closed_reason(registry_->ClosedReason(record->terminal_id));
  return grpc::Status::OK;
}

grpc::Status BrokerService::Terminate(grpc::ServerContext* context,
                                      const v1::TerminateRequest* request,
                                      v1::TerminateResponse* response) {
  TB_AUTHENTICATE(context, request);
  if (absl::Status target = RequireTarget(request->session_id(), request->terminal_id());
      !target.ok()) {
    return ToGrpcStatus(*context, target);
  }
  const std::string& agent_id = agent;
  absl::StatusOr<core::SessionRecord> record =
      !request->session_id().empty() ? registry_->FindSession(request->session_id(), agent_id)
                                     : registry_->FindTerminal(request->terminal_id(), agent_id);
  if (!record.ok()) return ToGrpcStatus(*context, record.status());
  if (!request->session_id().empty()) {
    // A command: SIGINT to the terminal's foreground job (the command, not
    // the shell), then escalate to closing the terminal if it ignores it.
    if (!ViewSession(*record).finished) {
      // Repeat: a command that only just started may not own the terminal's
      // foreground yet, and the shell ignores the first SIGINT then.
      bool stopped = false;
      for (int attempt = 0; attempt < 4 && !stopped; ++attempt) {
        record->terminal->Interrupt(SIGINT).IgnoreError();
        stopped = record->tracker
                      ? record->tracker->WaitFinished(record->session_id, absl::Milliseconds(500))
                      : record->terminal->WaitForExit(absl::Milliseconds(500));
      }
      if (!stopped) registry_->CloseTerminal(record->terminal_id, agent_id).IgnoreError();
    }
  } else if (absl::Status closed = registry_->CloseTerminal(record->terminal_id, agent_id);
             !closed.ok()) {
    return ToGrpcStatus(*context, closed);
  }
  spdlog::info("event=terminate trace_id={} session_id={} terminal_id={}",
               request->correlation().trace_id(), request->session_id(), record->terminal_id);
  response->set_session_id(record->session_id);
  response->set_terminal_id(record->terminal_id);
  *response->mutable_exit() = ViewSession(*record).exit;
  return grpc::Status::OK;
}

grpc::Status BrokerService::ProposeRule(grpc::ServerContext* context,
                                        const v1::ProposeRuleRequest* request,
                                        v1::ProposeRuleResponse* response) {
  TB_AUTHENTICATE(context, request);
  if (request->argv().empty() || request->argv(0).empty()) {
    return ToGrpcStatus(
        *context, MakeError(ErrorCode::kInvalidPayload, "a proposed rule needs a command (argv)",
                            {{"field", "rule"}}));
  }
  if (options_.approvals == nullptr || options_.policy == nullptr) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInternal, "this broker has no policy"));
  }
  // A person reads every proposal: it must fit on their screen, and an
  // agent's flood of them stays small (docs/limits.md).
  std::vector<std::string> argv(request->argv().begin(), request->argv().end());
  if (absl::Status fits = approval::CheckProposal(argv, request->reason(),
                                                  options_.approvals->options().proposal_limits);
      !fits.ok()) {
    return ToGrpcStatus(*context, fits);
  }
  approval::Request ask;
  ask.kind = "policy_change";
  ask.argv = argv;
  ask.command = absl::StrJoin(argv, " ");
  ask.agent_id = agent;
  ask.trace_id = request->correlation().trace_id();
  ask.request_id = request->correlation().request_id();
  ask.lane = "headless";
  ask.reason = request->reason().empty()
                   ? absl::StrCat("the agent proposes allowing `", ask.command, "`")
                   : request->reason();
  policy::PolicyFile* policy = options_.policy;
  absl::StatusOr<approval::Entry> entry =
      options_.approvals->Submit(ask, [policy, argv](const approval::Entry& decided) {
        if (decided.state != approval::State::kApproved) return;
        policy::Rule rule;
        rule.action = policy::Action::kAllow;
        rule.kind = policy::MatchKind::kPrefix;
        rule.argv = argv;
        rule.reason = absl::StrCat("proposed by ", decided.request.agent_id, ", approved by ",
                                   decided.approver);
        if (absl::Status s = policy->AppendRules({rule}); !s.ok()) {
          spdlog::error("event=policy_append_failed approval_id={} status=\"{}\"",
                        decided.approval_id, s.ToString());
        }
      });
  if (!entry.ok()) return ToGrpcStatus(*context, entry.status());
  absl::StatusOr<approval::Entry> waited = options_.approvals->Wait(
      entry->approval_id, absl::Milliseconds(std::min(request->wait_ms(), options_.max_wait_ms)));
  FillApproval(core::CommandGate::StateOfEntry(waited.ok() ? *waited : *entry),
               response->mutable_approval());
  return grpc::Status::OK;
}

grpc::Status BrokerService::GetAgentPolicy(grpc::ServerContext* context,
                                           const v1::AgentPolicyRequest* request,
                                           v1::GetPolicyResponse* response) {
  TB_AUTHENTICATE(context, request);
  if (options_.policy == nullptr) return grpc::Status::OK;
  // The rules and their generation, never the host path or its errors.
  response->set_policy_json(options_.policy->Current()->ToJson().dump());
  response->set_generation(options_.policy->generation());
  return grpc::Status::OK;
}

grpc::Status BrokerService::List(grpc::ServerContext* context, const v1::ListRequest* request,
                                 v1::ListResponse* response) {
  TB_AUTHENTICATE(context, request);
  for (const core::SessionRecord& record : registry_->List(agent)) {
    FillSessionInfo(record, response->add_sessions());
  }
  // Its terminals, those a person handed it included (found by their ids).
  for (const core::SessionRecord& record : registry_->ListTerminals()) {
    if (record.agent_id == agent) FillSessionInfo(record, response->add_terminals());
  }
  return grpc::Status::OK;
}

BrokerService::CallScope::CallScope(BrokerService* service) : service_(service) {
  absl::MutexLock lock(&service_->in_flight_mu_);
  ++service_->in_flight_;
}

BrokerService::CallScope::~CallScope() {
  if (context_ != nullptr) {
    absl::MutexLock lock(&service_->calls_mu_);
    auto [begin, end] = service_->calls_.equal_range(agent_);
    for (auto it = begin; it != end; ++it) {
      if (it->second == context_) {
        service_->calls_.erase(it);
        break;
      }
    }
  }
  absl::MutexLock lock(&service_->in_flight_mu_);
  --service_->in_flight_;
}

void BrokerService::CallScope::Bind(const std::string& agent, grpc::ServerContextBase* context) {
  agent_ = agent;
  context_ = context;
  absl::MutexLock lock(&service_->calls_mu_);
  service_->calls_.emplace(agent, context);
}

size_t BrokerService::EndCallsOf(const std::string& agent) {
  absl::MutexLock lock(&calls_mu_);
  size_t ended = 0;
  auto [begin, end] = calls_.equal_range(agent);
  for (auto it = begin; it != end; ++it, ++ended) it->second->TryCancel();
  return ended;
}

size_t BrokerService::OpenCallsOf(const std::string& agent) const {
  absl::MutexLock lock(&calls_mu_);
  return calls_.count(agent);
}

bool BrokerService::WaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&in_flight_mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(in_flight_mu_) { return in_flight_ == 0; };
  return in_flight_mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

}  // namespace termbridge::broker
