#include "results/terminal_text.hpp"

#include <algorithm>
#include <cstdio>

namespace cts {

namespace {

// Length of the UTF-8 sequence at s[i] and its code point, or 0 where it is not one (overlong
// forms, surrogates and values above U+10FFFF included).
std::size_t utf8_at(std::string_view s, std::size_t i, char32_t* cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (c >= 0xf5) n = 0;
  if (n == 0 || i + n > s.size()) return 0;
  char32_t v = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3f);
  }
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return n;
}

// Code points a terminal or a text layout acts on: C1 controls, line and paragraph separators,
// bidirectional embeddings, overrides and isolates.
bool is_format_control(char32_t v) {
  return (v >= 0x80 && v <= 0x9f) || v == 0x2028 || v == 0x2029 || (v >= 0x202a && v <= 0x202e) ||
         (v >= 0x2066 && v <= 0x2069) || v == 0x200e || v == 0x200f || v == 0x061c;
}

std::string escape_byte(unsigned char c) {
  switch (c) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\0':
      return "\\0";
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      return buf;
    }
  }
}

}  // namespace

std::string terminal_safe(std::string_view s, std::size_t max_bytes) {
  // Room kept for the marker a cut text ends in; the last boundary where it still fits is where a
  // cut happens.
  const std::size_t budget = std::string("...[ more bytes]").size() + std::to_string(s.size()).size();
  std::string out;
  std::size_t cut_out = 0, cut_in = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    if (out.size() <= max_bytes - std::min(max_bytes, budget)) cut_out = out.size(), cut_in = i;
    if (out.size() > max_bytes) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char32_t cp = 0;
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (std::size_t n = c >= 0x80 ? utf8_at(s, i, &cp) : 0) {
      if (is_format_control(cp)) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
        out += buf;
      } else {
        out.append(s.substr(i, n));
      }
      i += n;
    } else {
      out += escape_byte(c);
      ++i;
    }
  }
  if (i == s.size() && out.size() <= max_bytes) return out;
  out.resize(cut_out);
  return out + "...[" + std::to_string(s.size() - cut_in) + " more bytes]";
}

}  // namespace cts
