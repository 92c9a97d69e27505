// Clean text is what a person would read on the screen, line by line.
#include "broker/session/clean_text.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

// The line as one string per cell, the plainest statement of what clean text
// does with a line (CleanTerminalText keeps bytes and glyph offsets instead):
// the two must agree on any input.
class CellLine {
 public:
  void Put(const std::string& glyph) {
    if (col_ < cells_.size()) {
      cells_[col_] = glyph;
    } else {
      cells_.resize(col_);
      cells_.push_back(glyph);
    }
    ++col_;
  }
  void Return() { col_ = 0; }
  void Back() {
    if (col_ > 0) --col_;
  }
  void Erase(int mode) {
    if (mode == 0 && col_ < cells_.size()) cells_.resize(col_);
    if (mode == 1) {
      for (size_t k = 0; k < col_ && k < cells_.size(); ++k) cells_[k] = " ";
    }
    if (mode == 2) cells_.clear();
  }
  std::string Take() {
    std::string out;
    for (const std::string& cell : cells_) out += cell;
    cells_.clear();
    col_ = 0;
    return out;
  }

 private:
  std::vector<std::string> cells_;
  size_t col_ = 0;
};

TEST(CleanTextTest, StripsColorsAndFoldsCrlf) {
  EXPECT_EQ(CleanTerminalText("\x1b[1;32mok\x1b[0m\r\nnext\r\n"), "ok\nnext\n");
}

TEST(CleanTextTest, CarriageReturnOverwritesLikeATerminal) {
  EXPECT_EQ(CleanTerminalText("10%\r50%\r100%\n"), "100%\n");
  EXPECT_EQ(CleanTerminalText("abcdef\rXY\n"), "XYcdef\n");
  EXPECT_EQ(CleanTerminalText("long line\r\x1b[Kshort\n"), "short\n");
}

TEST(CleanTextTest, DropsOscTitlesAndShellMarks) {
  EXPECT_EQ(CleanTerminalText("\x1b]0;title\x07"
                              "a\x1b]133;D;0\x1b\\b\n"),
            "ab\n");
}

TEST(CleanTextTest, BackspaceMovesLeft) { EXPECT_EQ(CleanTerminalText("abc\b\bX\n"), "aXc\n"); }

TEST(CleanTextTest, KeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(CleanTerminalText("h\xC3\xA9llo \xE2\x9C\x93\n"), "h\xC3\xA9llo \xE2\x9C\x93\n");
  EXPECT_EQ(CleanTerminalText("a\xFF"
                              "b"),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(CleanTextTest, SanitizeUtf8ReplacesOnlyInvalidSequences) {
  EXPECT_EQ(SanitizeUtf8("ok \xE2\x9C\x93"), "ok \xE2\x9C\x93");
  EXPECT_EQ(SanitizeUtf8("\xC0\x80x"), "\xEF\xBF\xBD\xEF\xBF\xBDx");
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace termbridge::session

namespace termbridge::session {
namespace {

// Random terminal output from pieces that move the cursor, erase, and write
// one- and multi-byte glyphs, checked against CellLine.
TEST(CleanTextTest, AgreesWithAOneCellPerGlyphModelOnRandomOutput) {
  struct Piece {
    std::string bytes;
    std::function<void(CellLine&, std::string&)> apply;
  };
  auto glyph = [](std::string g, std::string shown = "") {
    if (shown.empty()) shown = g;
    return Piece{g, [shown](CellLine& line, std::string&) { line.Put(shown); }};
  };
  std::vector<Piece> pieces = {
      glyph("a"),
      glyph("b"),
      glyph(" "),
      glyph("~"),
      glyph("\t"),
      glyph("\xC3\xA9"),
      glyph("\xE2\x82\xAC"),
      glyph("\xF0\x9F\x98\x80"),
      glyph("\xFF", "\xEF\xBF\xBD"),
      {"\r", [](CellLine& line, std::string&) { line.Return(); }},
      {"\b", [](CellLine& line, std::string&) { line.Back(); }},
      {"\n", [](CellLine& line, std::string& out) { out += line.Take() + "\n"; }},
      {"\x1b[K", [](CellLine& line, std::string&) { line.Erase(0); }},
      {"\x1b[1K", [](CellLine& line, std::string&) { line.Erase(1); }},
      {"\x1b[2K", [](CellLine& line, std::string&) { line.Erase(2); }},
      {"\x1b[31m", [](CellLine&, std::string&) {}},
      {"\x1b]0;t\x07", [](CellLine&, std::string&) {}},
      {"\x07", [](CellLine&, std::string&) {}},
  };
  std::mt19937 random(2026);
  for (int round = 0; round < 2000; ++round) {
    std::string raw;
    std::string expected;
    CellLine line;
    const int length = static_cast<int>(random() % 60);
    for (int k = 0; k < length; ++k) {
      // Mostly ASCII, as real output is.
      const Piece& piece = pieces[random() % 3 == 0 ? random() % pieces.size() : random() % 4];
      raw += piece.bytes;
      piece.apply(line, expected);
    }
    expected += line.Take();
    ASSERT_EQ(CleanTerminalText(raw), expected) << "round " << round;
  }
}

TEST(EndsMidLineTest, TextLeftOnTheLineAsksForANewline) {
  EXPECT_TRUE(EndsMidLine("tail-kept"));
  EXPECT_TRUE(EndsMidLine("line\r\nhalf"));
  EXPECT_TRUE(EndsMidLine("\xe2\x9c\x93"));            // a character that is not ASCII
  EXPECT_TRUE(EndsMidLine("done\x1b[0m"));             // a colour reset after the text
  EXPECT_TRUE(EndsMidLine("done\x1b]0;title\x07"));    // a window title after it
  EXPECT_TRUE(EndsMidLine("done\x1b]0;title\x1b\\"));  // ended by ST
  EXPECT_TRUE(EndsMidLine("\x1b[5;10Hmid"));
  EXPECT_TRUE(EndsMidLine("bold\x1b(B\x1b[m"));  // what tput sgr0 prints after the text
  EXPECT_TRUE(EndsMidLine("x\x1b#8"));
}

TEST(EndsMidLineTest, AFreshLineNeedsNone) {
  EXPECT_FALSE(EndsMidLine(""));
  EXPECT_FALSE(EndsMidLine("line\r\n"));
  EXPECT_FALSE(EndsMidLine("progress 100%\r"));
  EXPECT_FALSE(EndsMidLine("line\r\n\x1b[0m"));
  EXPECT_FALSE(EndsMidLine("screen\x1b[?1049l"));        // a full-screen program left
  EXPECT_FALSE(EndsMidLine("old\x1b[H\x1b[2J\x1b[3J"));  // clear
  EXPECT_FALSE(EndsMidLine("old\x1b[7;1H"));
  EXPECT_FALSE(EndsMidLine("old\x1b[G"));
  EXPECT_FALSE(EndsMidLine("old\x1b[2E"));
  EXPECT_FALSE(
      EndsMidLine("old\x1b"
                  "c"));  // reset
  EXPECT_FALSE(EndsMidLine("line\r\n\x1b(B\x1b[m"));
  EXPECT_FALSE(EndsMidLine("text in an OSC\r\n\x1b]0;half-a-title"));  // cut short
  EXPECT_FALSE(EndsMidLine("a\n\x1b[3"));                              // a CSI cut short
}

}  // namespace
}  // namespace termbridge::session
