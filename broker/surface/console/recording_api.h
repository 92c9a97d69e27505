// The console's routes over one terminal's recording, read through the
// broker's ExportRecording stream (never its files; recording_search.h
// walks the export):
//   GET /api/recordings/cast?terminal_id=T[&at=N]
//     -> {"terminal_id","asciicast","offsets":[...],"first_offset","end_offset","truncated"}
//     The recording as asciicast v2 (the header line, then one event per
//     line) and, per event, its offset in the output stream. With `at`, a
//     window for replaying output byte N: it begins up to 2 MiB of output
//     before N (a marker event says what was left out). At most 32 MiB of
//     asciicast and offsets; `truncated` says the end was cut. At most two
//     load at once (503 otherwise).
//   GET /api/recordings/search?terminal_id=T&q=TEXT[&from=N]
//     -> {"terminal_id","query","matches":[{"offset","end","seconds","time_unix_ms","line",
//         "column","length"}],"stopped","scanned_to","scanned_bytes","end_offset"}
//     TEXT found literally, ASCII case-insensitively, in the output with
//     escape sequences removed, from output byte N (default 0) on. At most
//     200 matches and 128 MiB of output per answer, within a minute:
//     `stopped` is "matches", "bytes" or "time" when a limit ended it (""
//     when the whole recording was read), and a search from `scanned_to`
//     goes on. At most two searches
//     run at once (503 otherwise).
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_RECORDING_API_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_RECORDING_API_H_

#include <string_view>

#include "broker/surface/console/console_context.h"
#include "broker/surface/console/operator_api.h"

namespace termbridge::console {

// Whether `path` is one of the recording routes above (GET only).
bool IsRecordingPath(std::string_view path);

// Answers a GET of a recording route through `reply`.
void HandleRecording(ConsoleContext* context, std::string_view path, std::string_view query,
                     ApiReply reply);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_RECORDING_API_H_
