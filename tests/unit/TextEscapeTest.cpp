// Unit tests of the one-line escaping of error messages and of the UTF-8
// check that keeps names writable to YAML and JSON (ember/TextEscape.h).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "ember/TextEscape.h"

namespace ember {
namespace {

constexpr size_t kValid = std::string_view::npos;

TEST(TextEscape, ControlBytesBecomeEscapes) {
  EXPECT_EQ(escapeControlChars("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(escapeControlChars(std::string("x\x01y\x7fz", 5)), "x\\x01y\\x7fz");
  EXPECT_EQ(escapeControlChars(std::string("\0", 1)), "\\x00");
}

TEST(TextEscape, Utf8IsKeptAndOtherBytesAreEscaped) {
  // é (2 bytes), € (3), 𝄞 (4) pass through.
  EXPECT_EQ(escapeControlChars("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
  // A lone continuation byte, a Latin-1 byte and a truncated sequence.
  EXPECT_EQ(escapeControlChars("a\xb6z"), "a\\xb6z");
  EXPECT_EQ(escapeControlChars("caf\xe9"), "caf\\xe9");
  EXPECT_EQ(escapeControlChars("\xe2\x82"), "\\xe2\\x82");
  // The result of escaping is always valid UTF-8.
  EXPECT_EQ(invalidUtf8Offset(escapeControlChars("\xff\xfe\xc0\x80\xed\xa0\x80")), kValid);
}

TEST(TextEscape, InvalidUtf8OffsetFollowsTheUnicodeTable) {
  EXPECT_EQ(invalidUtf8Offset(""), kValid);
  EXPECT_EQ(invalidUtf8Offset("/conv1/Conv"), kValid);
  EXPECT_EQ(invalidUtf8Offset("\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\xf4\x8f\xbf\xbf"),
            kValid);                                     // up to U+10FFFF
  EXPECT_EQ(invalidUtf8Offset("ab\xb6"), 2u);            // a continuation byte without a lead
  EXPECT_EQ(invalidUtf8Offset("a\xc0\x80"), 1u);         // overlong NUL
  EXPECT_EQ(invalidUtf8Offset("a\xe0\x80\x80"), 1u);     // overlong 3-byte form
  EXPECT_EQ(invalidUtf8Offset("\xed\xa0\x80"), 0u);      // a UTF-16 surrogate
  EXPECT_EQ(invalidUtf8Offset("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(invalidUtf8Offset("\xf5\x80\x80\x80"), 0u);  // no such lead byte
  EXPECT_EQ(invalidUtf8Offset("ok\xe2\x82"), 2u);        // truncated at the end
  EXPECT_EQ(invalidUtf8Offset("\xe2\x82\x41"), 0u);      // a continuation that is ASCII
}

TEST(TextEscape, YamlTextIsPrintableUtf8) {
  EXPECT_FALSE(bool(checkYamlText("a: b\r\n\tc: 'caf\xc3\xa9 \xe2\x80\xa8 \xef\xbb\xbf'\n", "f.yaml")));
  EXPECT_FALSE(bool(checkYamlText("nel: \xc2\x85\n", "f.yaml")));  // U+0085 is printable in YAML
  const auto message = [](std::string_view text) { return checkYamlText(text, "f.yaml").message(); };
  EXPECT_EQ(message(std::string_view("a: 1\nb: \0N\n", 11)),
            "f.yaml:2: character U+0000, which a YAML file may not hold");
  EXPECT_EQ(message("a: \x1b[0m\n"), "f.yaml:1: character U+001B, which a YAML file may not hold");
  EXPECT_EQ(message("a: \x7f\n"), "f.yaml:1: character U+007F, which a YAML file may not hold");
  EXPECT_EQ(message("a: \xc2\x9b\n"), "f.yaml:1: character U+009B, which a YAML file may not hold");
  EXPECT_EQ(message("a: \xef\xbf\xbe\n"), "f.yaml:1: character U+FFFE, which a YAML file may not hold");
  // Found by fuzz_quant_profile: yaml-cpp read "c\r\r\n" as "c\r" and wrote it back as "c\r\n".
  EXPECT_EQ(message("a: 1\r\nb: c\r\r\n"),
            "f.yaml:2: a carriage return without a line feed, which yaml-cpp misreads");
  EXPECT_EQ(message("a: c\r"), "f.yaml:1: a carriage return without a line feed, which yaml-cpp misreads");
  EXPECT_EQ(message("\n\na: \xb6\n"),
            "f.yaml:3: not valid UTF-8 (byte 0xb6), which a YAML file may not hold");
}

TEST(TextEscape, OneLineErrorEscapesTheMessage) {
  Error e = oneLineError(Error::make("f.yaml: name 'a\nb\xb6'"));
  EXPECT_EQ(e.message(), "f.yaml: name 'a\\nb\\xb6'");
  EXPECT_FALSE(bool(oneLineError(Error::success())));
}

}  // namespace
}  // namespace ember
