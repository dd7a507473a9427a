#include "results/file_names.hpp"

#include <cstdint>
#include <cstdio>

namespace cts {

namespace {

bool kept(char c, bool first) {
  if (c == '.') return !first;  // "." and ".." never; no hidden files either
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::uint64_t stable_hash(std::string_view text) { return fnv1a(text); }

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string file_name_for(std::string_view outside) {
  if (outside.empty()) throw std::invalid_argument("an empty name cannot name a file");
  std::string out;
  out.reserve(outside.size());
  for (std::size_t i = 0; i < outside.size(); ++i) {
    char c = outside[i];
    if (kept(c, i == 0)) {
      out += c;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  if (out.size() > kMaxFileNameStem) {
    char hash[20];
    std::snprintf(hash, sizeof hash, "~%016llx", static_cast<unsigned long long>(fnv1a(outside)));
    std::size_t keep = kMaxFileNameStem - 17;
    if (out[keep - 1] == '%')
      keep -= 1;  // never cut an escape in two
    else if (out[keep - 2] == '%')
      keep -= 2;
    out = out.substr(0, keep) + hash;
  }
  return out;
}

std::string name_of_file(std::string_view f) {
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '%' && i + 2 < f.size() && hex_value(f[i + 1]) >= 0 && hex_value(f[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(f[i + 1]) * 16 + hex_value(f[i + 2]));
      i += 2;
    } else {
      out += f[i];
    }
  }
  return out;
}

}  // namespace cts
