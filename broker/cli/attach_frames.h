// What termbridge attach and watch share about the Attach stream: the first
// frame (resume), the offset a new stream continues from, and the texts and
// JSON lines that frames other than output print as.
#ifndef TERMBRIDGE_BROKER_CLI_ATTACH_FRAMES_H_
#define TERMBRIDGE_BROKER_CLI_ATTACH_FRAMES_H_

#include <cstdint>
#include <string>

#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::cli {

using AttachStream = grpc::ClientReaderWriter<v1::AttachClientFrame, v1::AttachServerFrame>;

// JSON on one line; bytes that are not UTF-8 become U+FFFD.
std::string Dump(const nlohmann::json& j);

// "terminal t_1 exited (0)" or "terminal t_1 was killed (signal 9)".
std::string ExitText(const std::string& terminal_id, const v1::ExitInfo& exit);

// The JSON line for a frame other than output.
nlohmann::json FrameJson(const std::string& terminal_id, const v1::AttachServerFrame& frame);

// The first frame of an Attach stream: from byte `offset` of the terminal's
// output, or the oldest byte still kept when `offset` is -1.
v1::AttachClientFrame ResumeFrame(const std::string& terminal_id, int64_t offset,
                                  const std::string& viewer);

// Where a new stream resumes once `frame` was printed: after its output, or
// after a gap; `cursor` (the offset so far, -1 for none) for other frames.
int64_t CursorAfter(const v1::AttachServerFrame& frame, int64_t cursor);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_ATTACH_FRAMES_H_
