// RenderScreen replays a terminal's output through libvterm (a real VT
// emulator) and returns what a person would see on the screen now: the
// grid of a full-screen program (top, vim, a TUI) instead of the escape
// sequences that drew it. Built on demand from the ring buffer, so it costs
// nothing while output streams; a ring that wrapped loses what was drawn
// before its oldest byte, which full-screen programs redraw anyway.
#ifndef TERMBRIDGE_BROKER_SESSION_SCREEN_H_
#define TERMBRIDGE_BROKER_SESSION_SCREEN_H_

#include <string>
#include <string_view>

namespace termbridge::session {

struct ScreenSnapshot {
  std::string text;  // rows joined by '\n', trailing blanks trimmed, trailing empty rows dropped
  int cols = 0;
  int rows = 0;
  int cursor_row = 0;  // 0-based
  int cursor_col = 0;
  bool alternate_screen = false;  // a full-screen program is showing its own screen
};

ScreenSnapshot RenderScreen(std::string_view bytes, int cols, int rows);

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_SCREEN_H_
