#include "results/xml_escape.hpp"

#include <cstdint>
#include <cstdio>

#include "results/file_names.hpp"

namespace cts {

std::string xml_escape(const std::string& t) {
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(t[i]);
    switch (c) {
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '&':
        out += "&amp;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&apos;";
        continue;
      default:
        break;
    }
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') continue;
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // Keep a sequence only if it is shortest-form UTF-8 of a character XML 1.0 allows: not a
    // surrogate, not above U+10FFFF, not U+FFFE/U+FFFF. Anything else becomes '?'.
    const int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + static_cast<size_t>(len) <= t.size();
    std::uint32_t cp = ok ? (c & (0x7Fu >> len)) : 0;
    for (int k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(t[i + k]);
      ok = (b >> 6) == 0x2;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (!ok) {  // a stray or truncated byte
      out += '?';
      continue;
    }
    static constexpr std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kShortest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE ||
        cp == 0xFFFF) {
      out += '?';  // well-formed bytes of a character XML may not hold: one '?' for the sequence
      i += static_cast<size_t>(len) - 1;
      continue;
    }
    out.append(t, i, static_cast<size_t>(len));
    i += static_cast<size_t>(len) - 1;
  }
  return out;
}

std::string cap_report_text(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return text.substr(0, cut) + "\n[gpucts: message cut, " + std::to_string(text.size()) + " bytes in all]";
}

std::string cap_report_name(const std::string& name) {
  if (name.size() <= kMaxReportName) return name;
  std::size_t cut = kMaxReportName - 64;  // room for the note
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  char note[80];
  std::snprintf(note, sizeof note, " ...[%zu more bytes, #%016llx]", name.size() - cut,
                static_cast<unsigned long long>(stable_hash(name)));
  return name.substr(0, cut) + note;
}

}  // namespace cts
