// Text made safe for a terminal before kern prints it: names, fields and
// source lines come from user files and may hold control bytes or ANSI
// escapes, which must show as visible characters, never act on the terminal.
#pragma once

#include <string>
#include <string_view>

namespace kern {

/// Where the text goes: a source line keeps a tab as one space (so the caret
/// under it stays aligned, diagnostic.cpp); a whole message (several lines,
/// maybe indented) keeps newlines and tabs as they are; a name shows every
/// control character, "␊" and "␉" included.
enum class TerminalText { kSourceLine, kMessage, kName };

/// `text` with what a terminal would act on replaced the way rustc's emitter
/// prints source lines (rustc_errors `OUTPUT_REPLACEMENTS`): the C0 controls
/// U+0000–U+001F and DEL become their Unicode control pictures (ESC U+001B is
/// "␛", so "\x1b[31m" prints as "␛[31m"), U+200D (zero-width joiner) is
/// dropped, and the bidirectional controls U+202A–U+202E and U+2066–U+2069
/// become U+FFFD. Beyond rustc (whose input is always valid UTF-8): the C1
/// controls U+0080–U+009F (U+009B is a one-byte CSI on some terminals) and
/// every byte sequence that is not UTF-8 become U+FFFD (one per bad lead
/// byte or run of stray continuation bytes). Each UTF-8 character becomes at
/// most one character, so a caret counted in characters stays under the
/// right one (up to the first bytes that are not UTF-8). Text without such
/// characters is returned unchanged.
std::string terminal_safe(std::string_view text, TerminalText where = TerminalText::kName);

}  // namespace kern
