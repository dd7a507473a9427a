// Reading what comes from outside (fingerprints, journals, JUnit, suite lists, bundles, CSV):
//  - files: a regular file up to a size limit, or a pipe/FIFO that must deliver its end within a
//    deadline; a device (/dev/zero), a directory or a socket is refused, never read until memory
//    runs out or waited on for ever;
//  - JSON: one strict reader for every JSON input: no duplicate keys, nesting at most
//    kMaxJsonDepth deep, numbers in range, valid UTF-8, and errors as "origin:line:column: what"
//    on one short line (never the input itself echoed back at length);
//  - text for messages: one line, printable, capped.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cts {

// Bad input. what() is one line naming the origin (file, and line/column or field where known).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;  // 256 MiB
inline constexpr double kPipeInputTimeoutS = 60;

// The whole content of `path`. A regular file larger than `max_bytes` is refused before it is
// read; a FIFO or pipe (`<(command)`) is read until its end, at most `max_bytes` and
// `pipe_timeout_s`; anything else (a device, a directory, a socket) is refused.
std::string read_input_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes,
                            double pipe_timeout_s = kPipeInputTimeoutS);

inline constexpr int kMaxJsonDepth = 256;

// Parses one JSON document strictly (RFC 8259 with the limits above; a leading UTF-8 BOM is
// skipped). Non-negative integers become unsigned numbers and negative ones signed, as
// nlohmann::json::parse makes them. Throws InputError("origin:line:column: what").
nlohmann::json parse_json(std::string_view text, const std::string& origin);

// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
// `bad_at` receives the offset of the first bad byte.
bool is_valid_utf8(std::string_view s, std::size_t* bad_at = nullptr);
// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
std::string to_valid_utf8(std::string_view s);
// `s` with every byte that is not part of a well-formed UTF-8 sequence written as \xNN (lower-case
// hex, as Python's "backslashreplace"): two byte strings that differ stay different when shown.
std::string escape_invalid_utf8(std::string_view s);
// Appends code point `cp` as UTF-8 (the JSON and XML readers decode escapes with it).
void append_utf8(std::string& out, unsigned long cp);

// `s` for a one-line message: control characters and invalid bytes shown as '?', at most `max`
// bytes, with "... (N bytes)" when cut.
std::string excerpt(std::string_view s, std::size_t max = 120);

}  // namespace cts
