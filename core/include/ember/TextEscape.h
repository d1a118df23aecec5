// Keeping error messages on one line: names and keys quoted in a message come
// from user files and may hold newlines or control bytes.
#pragma once

#include <string>
#include <string_view>

#include "ember/Error.h"

namespace ember {

/// `text` with '\n', '\r', '\t' written as those escapes and every other
/// control byte (and DEL) as \xNN; printable and UTF-8 bytes are kept.
std::string escapeControlChars(std::string_view text);

/// The same Error with its message passed through escapeControlChars, for
/// parsers to apply once at their API boundary.
Error oneLineError(const Error& error);

}  // namespace ember
