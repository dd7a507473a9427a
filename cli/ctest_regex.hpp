// Regular expressions as CMake and CTest read them (ctest -R/-L, PASS_REGULAR_EXPRESSION,
// FAIL_REGULAR_EXPRESSION): `^` and `$` (start and end of the text), `.` (any byte), `[...]` and
// `[^...]` with ranges (no escapes inside), `*` `+` `?`, `|`, `( )`, and `\c` for the character c.
// Matched by a state-set simulation (no backtracking, no recursion over the text): time is at most
// text length x program size and the stack does not grow with the text, so a 30 KB log against
// `(.|\n)*PASSED` or a 20,000-character name against `^(a|b)*$` takes milliseconds.
// Patterns are bounded: at most kMaxPatternChars characters and kMaxNesting levels of parentheses.
#pragma once
#include <bitset>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cts {

// A pattern that is not a CMake regular expression or is over a bound; what() is one line.
class CtestRegexError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class CtestRegex {
 public:
  static constexpr std::size_t kMaxPatternChars = 4096;
  static constexpr int kMaxNesting = 64;

  // Throws CtestRegexError naming what is wrong (not the pattern: the caller names the option).
  explicit CtestRegex(std::string_view pattern);
  // Whether the pattern matches anywhere in text (CTest searches, as regex_search).
  bool search(std::string_view text) const;

 private:
  enum class Op { byte, any, set, bol, eol, split, jump, match };
  struct Inst {
    Op op;
    unsigned char byte = 0;
    int set = -1;        // index into sets_
    int x = -1, y = -1;  // split / jump targets
  };
  std::vector<Inst> prog_;
  std::vector<std::bitset<256>> sets_;
  friend class CtestRegexCompiler;
};

// "--tests 'x(': unbalanced parentheses": the pattern compiled, or CtestRegexError naming `what`
// (an option or a property) with the first 80 characters of the pattern, terminal-safe.
CtestRegex compile_ctest_regex(const std::string& what, const std::string& pattern);

}  // namespace cts
