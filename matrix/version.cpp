#include "matrix/version.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <sstream>

#include "matrix/input.hpp"

namespace cts {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

[[noreturn]] void fail(std::string_view text, const std::string& why) {
  // Quoted short and on one line: a version field can hold anything a file or option gave.
  throw VersionError("invalid version '" + excerpt(text) + "': " + why);
}

// Reads digits at pos; returns false if none.
bool read_number(std::string_view s, size_t& pos, long& out) {
  size_t start = pos;
  long long v = 0;
  while (pos < s.size() && is_digit(s[pos])) {
    const int d = s[pos] - '0';
    if (v > (LONG_MAX - d) / 10) return false;  // checked before it overflows, not after
    v = v * 10 + d;
    ++pos;
  }
  if (pos == start) return false;
  out = static_cast<long>(v);
  return true;
}

bool starts_with_at(std::string_view s, size_t pos, std::string_view word) {
  if (s.size() - pos < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[pos + i])) != word[i]) return false;
  return true;
}

int pre_rank(const std::string& label) {  // dev handled separately
  if (label == "a") return 1;
  if (label == "b") return 2;
  if (label == "rc") return 3;
  return 4;  // final
}

// NCCL's and cuDNN's codes: 1000*major + 100*minor + patch below 10000 (NCCL up to 2.8, cuDNN up
// to 8), 10000*major + 100*minor + patch from there.
std::vector<long> split_code(long long code) {
  const long long major_unit = code < 10000 ? 1000 : 10000;
  return {static_cast<long>(code / major_unit), static_cast<long>((code % major_unit) / 100),
          static_cast<long>(code % 100)};
}

}  // namespace

Version Version::from_code(long long code, VersionKind kind) {
  if (code < 0) throw VersionError("invalid version code " + std::to_string(code) + ": negative");
  // A packed code has a major of two digits at most (CUDA 13, NCCL 2, cuDNN 9): a larger one is
  // garbage that would print as a version ("NCCL 922337203685477.58.7").
  constexpr long long kMaxCode = 1000000;  // 10000*major + ... with major < 100
  if (kind != VersionKind::Generic && kind != VersionKind::TorchNccl && code >= kMaxCode)
    throw VersionError("invalid version code " + std::to_string(code) + ": above " +
                       std::to_string(kMaxCode - 1) + " (a major of more than two digits)");
  Version v;
  switch (kind) {
    case VersionKind::Generic:
      v.release = {static_cast<long>(code)};
      break;
    case VersionKind::Cuda:
      if (code < 1000)
        throw VersionError("invalid CUDA version code " + std::to_string(code) +
                           ": expected 1000*major + 10*minor");
      v.release = {static_cast<long>(code / 1000), static_cast<long>((code % 1000) / 10)};
      break;
    case VersionKind::Nccl:
      if (code < 1000) throw VersionError("invalid NCCL version code " + std::to_string(code));
      v.release = split_code(code);  // 1000*major + 100*minor + patch up to 2.8.x
      break;
    case VersionKind::Cudnn:
      if (code < 1000) throw VersionError("invalid cuDNN version code " + std::to_string(code));
      v.release = split_code(code);  // 1000*major + 100*minor + patch in cuDNN 8 and older
      break;
    case VersionKind::TorchNccl:
      v.release = {static_cast<long>(code >> 32), static_cast<long>((code >> 16) & 0xffff),
                   static_cast<long>(code & 0xffff)};
      if (v.release[0] == 0 || v.release[0] > 99)
        throw VersionError("invalid packed NCCL version " + std::to_string(code) + ": major " +
                           std::to_string(v.release[0]) + " is not 1 to 99");
      break;
  }
  v.raw = v.release_str();  // a code from an API is recorded as people write it ("13.0")
  return v;
}

Version Version::parse(std::string_view s, VersionKind kind) {
  if (s.empty()) fail(s, "empty");
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c))) fail(s, "contains whitespace");

  // A bare integer is a packed code for the kinds that have one.
  if (std::all_of(s.begin(), s.end(), is_digit)) {
    if (s.size() > 18) fail(s, "number too large");
    long long code = std::stoll(std::string(s));
    Version v = (kind == VersionKind::Generic) ? from_code(code, kind) : [&] {
      try {
        return from_code(code, kind);
      } catch (const VersionError& e) {
        fail(s, e.what());
      }
    }();
    v.raw = std::string(s);
    return v;
  }

  Version v;
  v.raw = std::string(s);
  size_t pos = 0;
  if (!is_digit(s[0])) fail(s, "must start with a digit");
  long n = 0;
  if (!read_number(s, pos, n)) fail(s, "bad number");
  v.release.push_back(n);
  while (pos < s.size() && s[pos] == '.' && pos + 1 < s.size() && is_digit(s[pos + 1])) {
    ++pos;
    if (!read_number(s, pos, n)) fail(s, "bad number");
    v.release.push_back(n);
  }
  // NCCL and CUDA versions have three parts at most (2.28.3, 12.4.1); drivers, cuDNN (9.1.0.70)
  // and PEP 440 releases seen in the stack four. More is a typo or garbage, not a version.
  const size_t max_parts =
      (kind == VersionKind::Nccl || kind == VersionKind::Cuda || kind == VersionKind::TorchNccl) ? 3 : 4;
  if (v.release.size() > max_parts)
    fail(s, std::to_string(v.release.size()) + " release numbers, at most " + std::to_string(max_parts) +
                " expected");
  // PEP 440 pre-release: a0, b1, rc2, alpha, beta (optionally after '.' or '-'? keep strict: direct).
  auto parse_pre = [&](std::string_view word, const char* label) {
    if (!starts_with_at(s, pos, word)) return false;
    size_t p = pos + word.size();
    long num = 0;
    size_t q = p;
    if (q < s.size() && is_digit(s[q])) read_number(s, q, num);
    pos = q;
    v.pre_label = label;
    v.pre_number = num;
    return true;
  };
  if (pos < s.size() && !(s[pos] == '.' || s[pos] == '-' || s[pos] == '+')) {
    if (!(parse_pre("rc", "rc") || parse_pre("alpha", "a") || parse_pre("beta", "b") || parse_pre("a", "a") ||
          parse_pre("b", "b") || parse_pre("c", "rc")))
      fail(s, "unexpected '" + std::string(1, s[pos]) + "' after the release number");
  }
  while (pos < s.size() && s[pos] == '.') {
    if (starts_with_at(s, pos + 1, "post")) {
      pos += 5;
      long num = 0;
      read_number(s, pos, num);
      v.post = num;
    } else if (starts_with_at(s, pos + 1, "dev")) {
      pos += 4;
      long num = 0;
      read_number(s, pos, num);
      v.dev = num;
    } else {
      fail(s, "unexpected text after '.'");
    }
  }
  if (pos < s.size() && s[pos] == '-') {
    ++pos;
    long num = 0;
    if (!read_number(s, pos, num)) fail(s, "expected a package revision number after '-'");
    v.package_revision = num;
  }
  if (pos < s.size() && s[pos] == '+') {
    ++pos;
    if (pos == s.size()) fail(s, "empty local label after '+'");
    size_t start = pos;
    while (pos < s.size() && (is_alnum(s[pos]) || s[pos] == '.' || s[pos] == '_' || s[pos] == '-')) ++pos;
    v.local = std::string(s.substr(start, pos - start));
    if (v.local.front() == '.' || v.local.back() == '.') fail(s, "malformed local label");
  }
  if (pos != s.size()) fail(s, "unexpected '" + std::string(s.substr(pos)) + "'");
  return v;
}

std::optional<Version> Version::try_parse(std::string_view text, VersionKind kind, std::string* error) {
  try {
    return parse(text, kind);
  } catch (const VersionError& e) {
    if (error) *error = e.what();
    return std::nullopt;
  }
}

std::optional<Version> Version::build_cuda() const {
  if (local.rfind("cuda", 0) != 0) return std::nullopt;
  return try_parse(local.substr(4));
}

std::optional<Version> Version::torch_cuda_tag() const {
  // "cu130" -> 13.0, "cu118" -> 11.8, "cu121" -> 12.1
  if (local.size() < 5 || local.rfind("cu", 0) != 0 || local.rfind("cuda", 0) == 0) return std::nullopt;
  std::string digits = local.substr(2);
  // "cu" and three or four digits; stol of "cu99999999999999999999" threw out_of_range.
  if (digits.size() > 4 || !std::all_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
  Version v;
  v.release = {std::stol(digits.substr(0, digits.size() - 1)), std::stol(digits.substr(digits.size() - 1))};
  v.raw = v.release_str();
  return v;
}

int Version::compare_release(const Version& o, size_t precision) const {
  size_t n = std::min(precision, std::max(release.size(), o.release.size()));
  for (size_t i = 0; i < n; ++i) {
    long a = component(i), b = o.component(i);
    if (a != b) return a < b ? -1 : 1;
  }
  return 0;
}

int Version::compare(const Version& o) const {
  if (int c = compare_release(o)) return c;
  // dev-only release (no pre, no post) sorts below its pre-releases; simplified PEP 440 key.
  auto key = [](const Version& v) {
    int r = pre_rank(v.pre_label);
    if (v.dev && v.pre_label.empty() && !v.post) r = 0;
    return r;
  };
  if (int a = key(*this), b = key(o); a != b) return a < b ? -1 : 1;
  if (pre_number != o.pre_number) return pre_number < o.pre_number ? -1 : 1;
  long pa = post.value_or(-1), pb = o.post.value_or(-1);
  if (pa != pb) return pa < pb ? -1 : 1;
  // Within the same pre/post, a .devN sorts below the version without it.
  long da = dev.value_or(LONG_MAX), db = o.dev.value_or(LONG_MAX);
  if (da != db) return da < db ? -1 : 1;
  long ra = package_revision.value_or(-1), rb = o.package_revision.value_or(-1);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (local != o.local) {
    if (local.empty()) return -1;
    if (o.local.empty()) return 1;
    return local < o.local ? -1 : 1;
  }
  return 0;
}

std::string Version::release_str(size_t precision) const {
  std::ostringstream os;
  size_t n = std::min(precision, release.size());
  for (size_t i = 0; i < std::max<size_t>(n, precision == static_cast<size_t>(-1) ? n : precision); ++i) {
    if (i) os << '.';
    os << component(i);
  }
  return os.str();
}

std::string Version::str() const {
  std::string s = release_str();
  if (!pre_label.empty()) s += pre_label + std::to_string(pre_number);
  if (post) s += ".post" + std::to_string(*post);
  if (dev) s += ".dev" + std::to_string(*dev);
  if (package_revision) s += "-" + std::to_string(*package_revision);
  if (!local.empty()) s += "+" + local;
  return s;
}

long Version::nccl_code() const {
  long ma = major(), mi = minor(), pa = patch();
  if (ma <= 2 && mi <= 8) return ma * 1000 + mi * 100 + pa;
  return ma * 10000 + mi * 100 + pa;
}

}  // namespace cts
