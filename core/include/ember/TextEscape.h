// Keeping error messages on one line and names writable: names and keys
// quoted in a message come from user files and may hold newlines, control
// bytes or bytes that are not UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ember/Error.h"

namespace ember {

/// `text` with '\n', '\r', '\t' written as those escapes and every other
/// control byte (and DEL), and every byte that is not part of well-formed
/// UTF-8, as \xNN; printable ASCII and UTF-8 sequences are kept.
std::string escapeControlChars(std::string_view text);

/// The offset of the first byte of `text` that is not part of well-formed
/// UTF-8 (Unicode's table 3-7: no overlong forms, surrogates or code points
/// past U+10FFFF), or std::string_view::npos. YAML and JSON files hold only
/// UTF-8, so a name that fails cannot be written to them and read back.
size_t invalidUtf8Offset(std::string_view text);

/// Success, or an error "ORIGIN:LINE: ..." when `text` is not what a YAML
/// file may hold: well-formed UTF-8 of printable characters, tab and line
/// breaks (YAML 1.2's c-printable), with every CR followed by LF. Every YAML
/// reader calls it before yaml-cpp sees the text: yaml-cpp reads a NUL
/// followed by a letter as an escape and keeps a lone CR in a plain scalar,
/// and a name with other bytes would not survive a write and read.
Error checkYamlText(std::string_view text, const std::string& origin);

/// The same Error with its message passed through escapeControlChars, for
/// parsers to apply once at their API boundary.
Error oneLineError(const Error& error);

}  // namespace ember
