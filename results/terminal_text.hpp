// The one place text from outside (host and GPU names, NCCL_* values, case names, messages read
// from journals, XML or logs) becomes safe to print on a terminal: nothing in it can move the
// cursor, clear the screen, start a line of its own or hide what follows.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace cts {

inline constexpr std::size_t kMaxTerminalText = 512;

// `outside` with every byte a terminal would act on shown as an escape: \n \r \t \0, other C0
// control bytes, DEL and ESC as \xNN, bytes that are not UTF-8 as \xNN, and the C1 controls and
// the Unicode line, paragraph and bidirectional controls as \u{NNNN}; printable ASCII and other
// valid UTF-8 unchanged. At most `max_bytes` bytes of result (a marker included): a longer text
// is cut at a character boundary and ends in "...[N more bytes]".
std::string terminal_safe(std::string_view outside, std::size_t max_bytes = kMaxTerminalText);

}  // namespace cts
