// The Attach stream's frames for termbridge attach and watch (attach_frames.h).
#include "broker/cli/attach_frames.h"

#include "absl/strings/str_cat.h"
#include "broker/cli/cli_common.h"

namespace termbridge::cli {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string ExitText(const std::string& terminal_id, const v1::ExitInfo& exit) {
  if (exit.has_signal()) {
    return absl::StrCat("terminal ", terminal_id, " was killed (signal ", exit.signal(), ")");
  }
  return absl::StrCat("terminal ", terminal_id, " exited (",
                      exit.has_exit_code() ? exit.exit_code() : -1, ")");
}

json FrameJson(const std::string& terminal_id, const v1::AttachServerFrame& frame) {
  json j = {{"terminal_id", terminal_id}};
  switch (frame.frame_case()) {
    case v1::AttachServerFrame::kGap:
      j["type"] = "gap";
      j["from"] = frame.gap().from();
      j["to"] = frame.gap().to();
      break;
    case v1::AttachServerFrame::kNotice:
      j["type"] = "notice";
      j["text"] = frame.notice().text();
      break;
    case v1::AttachServerFrame::kExited:
      j["type"] = "exited";
      j["exit"] = ExitJson(frame.exited());
      break;
    default:
      j["type"] = "unknown";
  }
  return j;
}

v1::AttachClientFrame ResumeFrame(const std::string& terminal_id, int64_t offset,
                                  const std::string& viewer) {
  v1::AttachClientFrame frame;
  v1::AttachClientFrame::Resume* resume = frame.mutable_resume();
  resume->set_terminal_id(terminal_id);
  if (offset < 0) {
    resume->set_from_start(true);
  } else {
    resume->set_offset(static_cast<uint64_t>(offset));
  }
  resume->set_viewer(viewer);
  return frame;
}

int64_t CursorAfter(const v1::AttachServerFrame& frame, int64_t cursor) {
  if (frame.has_output()) {
    return static_cast<int64_t>(frame.output().offset() + frame.output().data().size());
  }
  if (frame.has_gap()) return static_cast<int64_t>(frame.gap().to());
  return cursor;
}

}  // namespace termbridge::cli
