#include "matrix/input.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cts {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Length of the well-formed UTF-8 sequence starting at p (n bytes left), 0 when there is none.
std::size_t utf8_sequence(const unsigned char* p, std::size_t n) {
  unsigned char c = p[0];
  auto cont = [&](std::size_t i) { return i < n && (p[i] & 0xC0) == 0x80; };
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;  // a continuation byte, or an overlong two-byte form
  if (c < 0xE0) return cont(1) ? 2 : 0;
  if (c < 0xF0) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // a UTF-16 surrogate
    return 3;
  }
  if (c < 0xF5) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// An iterative reader (no recursion: nesting costs heap, not stack) building nlohmann::json.
class JsonReader {
 public:
  JsonReader(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  nlohmann::json document() {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_space();
    if (pos_ >= s_.size()) fail("no JSON value (empty input)");
    nlohmann::json root;
    std::vector<nlohmann::json*> open;  // the arrays and objects not yet closed, innermost last
    std::string key;
    enum class Want { Value, FirstItemOrEnd, CommaOrEnd, FirstKeyOrEnd, Key } want = Want::Value;
    for (;;) {
      skip_space();
      if (pos_ >= s_.size()) {
        if (open.empty()) break;
        fail(std::string("unexpected end of input: ") +
             (open.back()->is_object() ? "an object" : "an array") + " is not closed (truncated?)");
      }
      char c = s_[pos_];
      if (want == Want::CommaOrEnd) {
        bool object = open.back()->is_object();
        if (c == ',') {
          ++pos_;
          want = object ? Want::Key : Want::Value;
          continue;
        }
        if (c == (object ? '}' : ']')) {
          ++pos_;
          open.pop_back();
          if (open.empty()) break;
          continue;
        }
        fail(std::string("expected ',' or '") + (object ? '}' : ']') + "', found " + what_is(c));
      }
      if (want == Want::FirstKeyOrEnd || want == Want::FirstItemOrEnd) {
        if (c == (want == Want::FirstKeyOrEnd ? '}' : ']')) {
          ++pos_;
          open.pop_back();
          if (open.empty()) break;
          want = Want::CommaOrEnd;
          continue;
        }
        want = want == Want::FirstKeyOrEnd ? Want::Key : Want::Value;
      }
      if (want == Want::Key) {
        if (c != '"') fail("expected a quoted object key, found " + what_is(c));
        std::size_t at = pos_;
        key = string();
        if (open.back()->contains(key))
          fail_at(at, "duplicate key \"" + excerpt(key, 60) + "\" in an object");
        skip_space();
        if (pos_ >= s_.size()) fail("unexpected end of input after an object key (truncated?)");
        if (s_[pos_] != ':') fail("expected ':' after an object key, found " + what_is(s_[pos_]));
        ++pos_;
        skip_space();
        if (pos_ >= s_.size()) fail("unexpected end of input: an object value is missing (truncated?)");
        c = s_[pos_];
      }
      // A value at pos_.
      nlohmann::json* slot = nullptr;
      if (open.empty())
        slot = &root;
      else if (open.back()->is_array())
        slot = &open.back()->emplace_back();
      else
        slot = &(*open.back())[key];
      if (c == '{' || c == '[') {
        if (static_cast<int>(open.size()) >= kMaxJsonDepth)
          fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        ++pos_;
        *slot = c == '{' ? nlohmann::json::object() : nlohmann::json::array();
        open.push_back(slot);
        want = c == '{' ? Want::FirstKeyOrEnd : Want::FirstItemOrEnd;
        continue;
      }
      *slot = scalar();
      if (open.empty()) break;
      want = Want::CommaOrEnd;
    }
    skip_space();
    if (pos_ < s_.size()) fail("content after the JSON value: " + what_is(s_[pos_]));
    return root;
  }

 private:
  std::string_view s_;
  const std::string& origin_;
  std::size_t pos_ = 0;

  [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
    std::size_t line = 1, line_start = 0;
    for (std::size_t i = 0; i < at && i < s_.size(); ++i)
      if (s_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    throw InputError(origin_ + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1) +
                     ": malformed JSON: " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  static std::string what_is(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x21 && u < 0x7F) return std::string("'") + c + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
    return buf;
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  unsigned hex4() {
    if (s_.size() - pos_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[pos_ + static_cast<std::size_t>(k)];
      int d = (h >= '0' && h <= '9')   ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (d < 0) fail("\\u must be followed by four hexadecimal digits");
      v = v * 16 + static_cast<unsigned>(d);
    }
    pos_ += 4;
    return v;
  }

  // At '"': the decoded string; pos_ ends after the closing quote.
  std::string string() {
    std::size_t open_at = pos_++;
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail_at(open_at, "unterminated string (truncated?)");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20)
        fail("control character " + what_is(static_cast<char>(c)) + " inside a string (write it escaped)");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) fail("unterminated escape (truncated?)");
        char e = s_[pos_++];
        switch (e) {
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case '/':
            out += '/';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'u': {
            unsigned long cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (s_.substr(pos_, 2) != "\\u")
                fail("a high surrogate \\u escape must be followed by a low one");
              pos_ += 2;
              unsigned long lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF)
                fail("a high surrogate \\u escape must be followed by a low one");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail("a low surrogate \\u escape without a high one");
            }
            append_utf8(out, cp);
            break;
          }
          default:
            fail("unknown escape \\" + std::string(what_is(e)));
        }
        continue;
      }
      std::size_t n =
          utf8_sequence(reinterpret_cast<const unsigned char*>(s_.data()) + pos_, s_.size() - pos_);
      if (n == 0) fail("invalid UTF-8 (" + what_is(static_cast<char>(c)) + ") inside a string");
      out.append(s_.data() + pos_, n);
      pos_ += n;
    }
  }

  nlohmann::json number() {
    std::size_t start = pos_;
    auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    bool negative = s_[pos_] == '-';
    if (negative) ++pos_;
    if (!digit()) fail("expected a digit in a number");
    if (s_[pos_] == '0') {
      ++pos_;
      if (digit()) fail("a number must not start with 0 (write 7, not 07)");
    } else {
      while (digit()) ++pos_;
    }
    bool integer = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digit()) fail("expected a digit after the decimal point");
      while (digit()) ++pos_;
      integer = false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) fail("expected a digit in the exponent");
      while (digit()) ++pos_;
      integer = false;
    }
    std::string token(s_.substr(start, pos_ - start));
    if (integer) {
      errno = 0;
      char* end = nullptr;
      if (negative) {
        long long v = std::strtoll(token.c_str(), &end, 10);
        if (errno != ERANGE) return nlohmann::json(static_cast<std::int64_t>(v));
      } else {
        unsigned long long v = std::strtoull(token.c_str(), &end, 10);
        if (errno != ERANGE) return nlohmann::json(static_cast<std::uint64_t>(v));
      }
      // Too large for 64 bits: a floating-point number, as nlohmann::json::parse makes it.
    }
    double d = std::strtod(token.c_str(), nullptr);
    if (!std::isfinite(d)) fail_at(start, "number " + excerpt(token, 40) + " is out of range");
    return nlohmann::json(d);
  }

  nlohmann::json scalar() {
    char c = s_[pos_];
    if (c == '"') return nlohmann::json(string());
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (const char* lit : {"true", "false", "null"}) {
      std::size_t n = std::strlen(lit);
      if (s_.substr(pos_, n) == lit) {
        pos_ += n;
        if (lit[0] == 't') return nlohmann::json(true);
        if (lit[0] == 'f') return nlohmann::json(false);
        return nlohmann::json(nullptr);
      }
    }
    fail("expected a JSON value, found " + what_is(c));
  }
};

}  // namespace

std::string read_input_file(const std::string& path, std::size_t max_bytes, double pipe_timeout_s) {
  if (path.empty()) throw InputError("an empty file name");
  if (path.find('\0') != std::string::npos)
    throw InputError(excerpt(path) + ": a file name cannot contain NUL");
  Fd f;
  // O_NONBLOCK: opening a FIFO that has no writer must not block; the deadline below bounds it.
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (f.fd < 0) throw InputError(path + ": cannot open for reading: " + errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(path + ": cannot stat: " + errno_text(errno));
  std::string out;
  char buf[65536];
  if (S_ISREG(st.st_mode)) {
    if (static_cast<unsigned long long>(st.st_size) > max_bytes)
      throw InputError(path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                       std::to_string(max_bytes) + " this input may have");
    ::fcntl(f.fd, F_SETFL, ::fcntl(f.fd, F_GETFL) & ~O_NONBLOCK);
    out.reserve(static_cast<std::size_t>(st.st_size));
    for (;;) {
      ssize_t n = ::read(f.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw InputError(path + ": read error: " + errno_text(errno));
      if (n == 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      if (out.size() > max_bytes)  // it grew while being read
        throw InputError(path + ": more than the " + std::to_string(max_bytes) +
                         " bytes this input may have");
    }
    return out;
  }
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory, not a file");
  if (!S_ISFIFO(st.st_mode))
    throw InputError(path + ": not a regular file or a pipe (a device or a socket): refused");
  // A pipe or FIFO: read until its writer closes it, within the size limit and the deadline.
  using Clock = std::chrono::steady_clock;
  auto until = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(pipe_timeout_s));
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0)
      throw InputError(path + ": a pipe that did not end within " +
                       std::to_string(static_cast<int>(pipe_timeout_s)) + " s (a FIFO with no writer?)");
    pollfd p{f.fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw InputError(path + ": poll: " + errno_text(errno));
    if (r == 0) continue;
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) throw InputError(path + ": read error: " + errno_text(errno));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes)
      throw InputError(path + ": more than the " + std::to_string(max_bytes) + " bytes this input may have");
  }
  return out;
}

nlohmann::json parse_json(std::string_view text, const std::string& origin) {
  return JsonReader(text, origin).document();
}

bool is_valid_utf8(std::string_view s, std::size_t* bad_at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence(p + i, s.size() - i);
    if (n == 0) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence(p + i, s.size() - i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

std::string escape_invalid_utf8(std::string_view s) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence(p + i, s.size() - i);
    if (n == 0) {
      static const char hex[] = "0123456789abcdef";
      out += {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

std::string excerpt(std::string_view s, std::size_t max) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t i = 0;
  while (i < s.size() && out.size() < max) {
    std::size_t n = utf8_sequence(p + i, s.size() - i);
    if (n == 0 || (n == 1 && (p[i] < 0x20 || p[i] == 0x7F))) {
      out += '?';
      ++i;
      continue;
    }
    if (out.size() + n > max) break;
    out.append(s.data() + i, n);
    i += n;
  }
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace cts
