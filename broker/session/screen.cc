// Screen snapshots through libvterm.
#include "broker/session/screen.h"

#include <memory>
#include <vector>

#include "common/text/utf8.h"

extern "C" {
#include <vterm.h>
}

namespace termbridge::session {
namespace {

struct VTermDeleter {
  void operator()(VTerm* vt) const { vterm_free(vt); }
};

int AltScreenSetting(VTermProp prop, VTermValue* val, void* user) {
  if (prop == VTERM_PROP_ALTSCREEN) *static_cast<bool*>(user) = val->boolean;
  return 1;
}

}  // namespace

ScreenSnapshot RenderScreen(std::string_view bytes, int cols, int rows) {
  ScreenSnapshot snapshot;
  snapshot.cols = cols > 0 ? cols : 80;
  snapshot.rows = rows > 0 ? rows : 24;
  std::unique_ptr<VTerm, VTermDeleter> vt(vterm_new(snapshot.rows, snapshot.cols));
  vterm_set_utf8(vt.get(), 1);
  VTermScreen* screen = vterm_obtain_screen(vt.get());
  VTermScreenCallbacks callbacks = {};
  callbacks.settermprop = AltScreenSetting;
  vterm_screen_set_callbacks(screen, &callbacks, &snapshot.alternate_screen);
  vterm_screen_enable_altscreen(screen, 1);
  vterm_screen_reset(screen, 1);
  vterm_input_write(vt.get(), bytes.data(), bytes.size());
  vterm_screen_flush_damage(screen);

  std::vector<std::string> lines;
  for (int row = 0; row < snapshot.rows; ++row) {
    std::string line;
    for (int col = 0; col < snapshot.cols;) {
      VTermScreenCell cell;
      VTermPos pos{row, col};
      if (!vterm_screen_get_cell(screen, pos, &cell)) break;
      if (cell.chars[0] == 0) {
        line.push_back(' ');
      } else {
        for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i] != 0; ++i) {
          text::AppendUtf8(cell.chars[i], &line);
        }
      }
      col += cell.width > 0 ? cell.width : 1;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) snapshot.text.push_back('\n');
    snapshot.text += lines[i];
  }
  VTermState* state = vterm_obtain_state(vt.get());
  VTermPos cursor;
  vterm_state_get_cursorpos(state, &cursor);
  snapshot.cursor_row = cursor.row;
  snapshot.cursor_col = cursor.col;
  return snapshot;
}

}  // namespace termbridge::session
