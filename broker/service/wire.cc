// Wire conversions for the broker service.
#include "broker/service/wire.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "broker/service/broker_service.h"
#include "broker/service/errors.h"
#include "broker/session/clean_text.h"
#include "broker/session/shell_integration.h"
#include "common/contract/errors.h"
#include "common/text/utf8.h"

namespace termbridge::broker {

grpc::Status ToGrpcStatus(grpc::ServerContextBase& context, const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  contract::PmTermError error = ContractError(status);
  v1::ErrorDetail detail;
  detail.set_code(std::string(contract::CodeName(error.code)));
  detail.set_message(error.message);
  detail.set_details_json(
      error.details.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  context.AddTrailingMetadata(kErrorDetailKey, detail.SerializeAsString());
  auto code = static_cast<grpc::StatusCode>(contract::Spec(error.code).status_code);
  return grpc::Status(code, absl::StrCat(detail.code(), ": ", error.message));
}

void FillExit(const session::ExitState& state, v1::ExitInfo* out) {
  out->set_running(state.running);
  if (state.running) return;
  if (state.exit_code >= 0) out->set_exit_code(state.exit_code);
  if (state.term_signal > 0) out->set_signal(state.term_signal);
  out->set_exited_at_unix_ms(absl::ToUnixMillis(state.exited_at));
}

size_t CompletePrefix(std::string_view bytes, bool final) {
  if (final || bytes.empty()) return bytes.size();
  size_t end = bytes.size();
  // An escape sequence started in the last 64 bytes and not yet terminated.
  size_t esc = bytes.find_last_of('\x1b');
  if (esc != std::string_view::npos && bytes.size() - esc < 64) {
    std::string_view seq = bytes.substr(esc);
    bool complete = false;
    if (seq.size() >= 2) {
      char kind = seq[1];
      if (kind == '[') {
        for (size_t i = 2; i < seq.size(); ++i) {
          unsigned char c = seq[i];
          if (c >= 0x40 && c <= 0x7e) complete = true;
        }
      } else if (kind == ']' || kind == 'P' || kind == '_' || kind == '^' || kind == 'X') {
        complete = seq.find('\x07') != std::string_view::npos ||
                   seq.find("\x1b\\", 1) != std::string_view::npos;
      } else {
        complete = true;
      }
    }
    if (!complete) end = esc;
  }
  // A UTF-8 lead byte whose continuation bytes have not arrived yet.
  return text::CompleteUtf8Length(bytes.substr(0, end));
}

namespace {

// The length of the longest prefix of `bytes` that is well-formed UTF-8
// (text::Utf8SequenceLength), ASCII eight bytes at a time: terminal output is
// mostly ASCII, and a page of it is a megabyte.
size_t WellFormedPrefix(std::string_view bytes) {
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    uint64_t word;
    while (i + sizeof(word) <= n) {
      std::memcpy(&word, bytes.data() + i, sizeof(word));
      if ((word & 0x8080808080808080ULL) != 0) break;
      i += sizeof(word);
    }
    if (i == n) break;
    const size_t length = text::Utf8SequenceLength(bytes, i);
    if (length == 0) return i;
    i += length;
  }
  return n;
}

// session::SanitizeUtf8 of `bytes`, without its byte-by-byte copy of the
// well-formed prefix (usually all of it).
std::string ValidUtf8Text(std::string_view bytes) {
  const size_t valid = WellFormedPrefix(bytes);
  if (valid == bytes.size()) return std::string(bytes);
  std::string text(bytes.substr(0, valid));
  text += session::SanitizeUtf8(bytes.substr(valid));
  return text;
}

}  // namespace

void FillOutput(session::OutputSlice slice, v1::OutputFormat format, bool final,
                uint64_t end_offset, v1::Output* out) {
  bool reaches_end = slice.next >= end_offset;
  size_t keep = CompletePrefix(slice.data, final && reaches_end);
  slice.data.resize(keep);
  slice.next = slice.start + keep;
  out->set_start(slice.start);
  out->set_next_cursor(slice.next);
  out->set_gap_bytes(slice.gap);
  out->set_more(slice.next < end_offset);
  if (format == v1::OUTPUT_FORMAT_RAW) {
    out->set_text(ValidUtf8Text(slice.data));
    out->set_raw(std::move(slice.data));
  } else {
    out->set_text(session::CleanTerminalText(slice.data));
  }
}

SessionView ViewSession(const core::SessionRecord& record) {
  SessionView view;
  session::ExitState terminal_state = record.terminal->exit_state();
  std::optional<session::CommandState> command;
  if (record.tracker) command = record.tracker->Get(record.session_id);
  if (!command) {
    view.begin = record.start_offset;
    view.end = record.terminal->end_offset();
    view.finished = !terminal_state.running;
    FillExit(terminal_state, &view.exit);
    if (view.finished) view.exit.set_completion("process_exit");
    view.exit.set_secret_prompt(!view.finished && record.terminal->secret_prompt());
    return view;
  }
  view.begin = command->output_start;
  view.finished = command->finished;
  if (command->finished) {
    view.end = std::max(view.begin, command->end_offset.value_or(view.begin));
  } else if (command->completion.empty()) {
    view.end = view.begin;  // the shell has not started it yet: nothing of its own to show
  } else {
    view.end = record.terminal->end_offset();
    // The tracker hears of the shell's D mark after the reader thread has
    // put it in the stream (subscribers are told in batches): a signed D mark
    // already there ends the command's output, so a read in between does not
    // return the next prompt as the command's. Marks are kept under the
    // stream's lock, so one in [begin, end) is listed by now.
    uint64_t next_mark = 0;
    for (const session::ShellMark& mark : record.terminal->MarksSince(&next_mark)) {
      if (mark.kind == session::ShellMark::kCommandEnd && mark.offset >= view.begin &&
          mark.offset < view.end) {
        view.end = mark.offset;
        view.ending = true;
        break;
      }
    }
  }
  view.exit.set_running(!command->finished);
  if (command->finished) {
    if (command->exit_code >= 0) view.exit.set_exit_code(command->exit_code);
    if (command->term_signal > 0) view.exit.set_signal(command->term_signal);
    view.exit.set_completion(command->completion);
  }
  view.exit.set_secret_prompt(!command->finished && record.terminal->secret_prompt());
  return view;
}

void FillSessionInfo(const core::SessionRecord& record, v1::SessionInfo* out) {
  out->set_session_id(record.session_id);
  out->set_terminal_id(record.terminal_id);
  out->set_command(record.command);
  out->set_cwd(record.cwd);
  out->set_agent_id(record.agent_id);
  out->set_started_at_unix_ms(absl::ToUnixMillis(record.started_at));
  SessionView view = ViewSession(record);
  *out->mutable_exit() = view.exit;
  out->set_output_bytes(view.end - view.begin);
  out->set_viewers(record.terminal ? record.terminal->viewers() : 0);
  out->set_ring_resident_bytes(record.terminal ? record.terminal->ring_resident() : 0);
  out->set_lock(std::string(session::LockModeName(record.terminal ? record.terminal->lock()
                                                                  : session::LockMode::kShared)));
  out->set_name(record.terminal_name);
  out->set_person(record.person);
  if (record.tracker) {
    if (std::optional<int> code = record.tracker->LastExitCode()) out->set_last_exit_code(*code);
  }
  out->set_secret_prompt(record.terminal && record.terminal->exit_state().running &&
                         record.terminal->secret_prompt());
}

void FillApproval(const core::GateState& state, v1::ApprovalState* out) {
  out->set_state(state.state);
  out->set_approval_id(state.approval_id);
  out->set_rule(state.rule);
  out->set_reason(state.reason);
  out->set_decided_by(state.decided_by);
  out->set_surface(state.surface);
  out->set_note(state.note);
  out->set_scope(state.scope);
  out->set_grant_expires_at_unix_ms(state.grant_expires_at_unix_ms);
}

void FillApprovalEntry(const approval::Entry& entry, v1::Approval* out) {
  const approval::Request& r = entry.request;
  out->set_approval_id(entry.approval_id);
  out->set_kind(r.kind);
  out->set_command(r.command);
  out->set_cwd(r.cwd);
  for (const auto& [name, value] : r.env) (*out->mutable_env())[name] = value;
  out->set_lane(r.lane);
  out->set_agent_id(r.agent_id);
  out->set_terminal_id(r.terminal_id);
  out->set_session_id(r.session_id);
  out->set_trace_id(r.trace_id);
  out->set_request_id(r.request_id);
  for (const std::string& root : r.read_scope) out->add_read_scope(root);
  for (const std::string& read : r.reads) out->add_reads(read);
  FillApproval(core::CommandGate::StateOfEntry(entry), out->mutable_state());
  out->set_requested_at_unix_ms(absl::ToUnixMillis(entry.requested_at));
  out->set_expires_at_unix_ms(absl::ToUnixMillis(entry.expires_at));
}

}  // namespace termbridge::broker
