// The operator's recording RPCs: list what broker/recording keeps and stream
// one recording as asciicast (docs/operating.md, "Recordings").
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "broker/core/terminal_registry.h"
#include "broker/recording/recording.h"
#include "broker/service/operator_common.h"
#include "broker/service/operator_service.h"

namespace termbridge::broker {
namespace {

// Lines are sent in chunks of about this many bytes.
constexpr size_t kChunkBytes = 64 << 10;

grpc::Status NoRecordings() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this broker does not record terminals (record = false)");
}

void Fill(const recording::RecordingInfo& info, v1::RecordingInfo* out) {
  out->set_terminal_id(info.terminal_id);
  out->set_agent_id(info.agent_id);
  out->set_cwd(info.cwd);
  out->set_shell(info.shell);
  out->set_opened_at_unix_ms(absl::ToUnixMillis(info.opened_at));
  out->set_state(info.live ? "live" : info.finished ? "finished" : "interrupted");
  if (info.finished) {
    out->set_finished_at_unix_ms(absl::ToUnixMillis(info.finished_at));
  }
  out->set_exit_code(info.exit_code);
  out->set_signal(info.term_signal);
  out->set_begin_offset(info.begin);
  out->set_end_offset(info.end);
  out->set_stored_bytes(info.stored);
}

}  // namespace

grpc::Status OperatorService::ListRecordings(grpc::ServerContext* context,
                                             const v1::ListRecordingsRequest* request,
                                             v1::ListRecordingsResponse* response) {
  TB_OPERATOR_ONLY(context);
  recording::RecordingStore* store = registry_->options().recordings;
  if (store == nullptr) return NoRecordings();
  for (const recording::RecordingInfo& info : store->List()) {
    Fill(info, response->add_recordings());
  }
  response->set_total_bytes(store->total_bytes());
  return grpc::Status::OK;
}

grpc::Status OperatorService::ExportRecording(grpc::ServerContext* context,
                                              const v1::ExportRecordingRequest* request,
                                              grpc::ServerWriter<v1::RecordingChunk>* writer) {
  TB_OPERATOR_ONLY(context);
  recording::RecordingStore* store = registry_->options().recordings;
  if (store == nullptr) return NoRecordings();
  v1::RecordingChunk chunk;
  bool sent = true;
  auto flush = [&] {
    const bool written = writer->Write(chunk);
    chunk.Clear();
    return written;
  };
  absl::Status status = store->Export(
      request->terminal_id(),
      [&](std::string_view line, std::optional<uint64_t> output_offset) {
        if (context->IsCancelled()) return sent = false;
        chunk.mutable_asciicast()->append(line.data(), line.size());
        if (output_offset) chunk.add_output_offsets(*output_offset);
        if (chunk.asciicast().size() >= kChunkBytes) sent = flush();
        return sent;
      },
      request->from_offset());
  if (!status.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                        std::string(status.message()));
  }
  if (sent && !chunk.asciicast().empty()) flush();
  return grpc::Status::OK;
}

}  // namespace termbridge::broker
