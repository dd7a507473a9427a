// No function of report/*.cpp is longer than 100 lines: the document builders stay split by section.
// A small scanner finds the function bodies at namespace scope by matching braces, with comments,
// string, character and raw string literals taken out first; a lambda or a brace-initialized value
// inside a body is part of that body. The scanner is tested on hand-made sources before it judges
// the real ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cts {
namespace {

constexpr int kMaxLines = 100;

struct Body {
  std::string name;  // the identifier before the parameter list ("build", "Story::lines")
  int first = 0;     // line of the opening brace
  int lines = 0;     // from the opening brace to the closing one, both included
};

// `src` with comments and the contents of string, character and raw string literals blanked
// (newlines kept, so that line numbers stay), and preprocessor lines emptied.
std::string blank_literals(const std::string& src) {
  std::string out;
  out.reserve(src.size());
  size_t i = 0;
  auto keep_newlines = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < src.size(); ++k)
      if (src[k] == '\n') out += '\n';
  };
  bool line_start = true;
  while (i < src.size()) {
    const char c = src[i];
    if (line_start && c == '#') {  // a preprocessor line (with its continuations)
      while (i < src.size() && !(src[i] == '\n' && src[i - 1] != '\\')) ++i;
      continue;
    }
    if (c == '\n') {
      out += c;
      ++i;
      line_start = true;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) line_start = false;
    if (src.compare(i, 2, "//") == 0) {
      while (i < src.size() && src[i] != '\n') ++i;
      continue;
    }
    if (src.compare(i, 2, "/*") == 0) {
      const size_t end = src.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? src.size() : end + 2;
      keep_newlines(i, stop);
      i = stop;
      continue;
    }
    const bool after_word =
        i > 0 && (std::isalnum(static_cast<unsigned char>(src[i - 1])) || src[i - 1] == '_');
    if (c == 'R' && i + 1 < src.size() && src[i + 1] == '"' && !after_word) {  // R"delim( ... )delim"
      const size_t open = src.find('(', i + 2);
      if (open != std::string::npos) {
        const std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
        const size_t end = src.find(close, open + 1);
        const size_t stop = end == std::string::npos ? src.size() : end + close.size();
        out += "\"\"";
        keep_newlines(i, stop);
        i = stop;
        continue;
      }
    }
    // A quote after a digit is a digit separator (1'000), not a character literal.
    const bool separator = c == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(src[i - 1]));
    if (c == '"' || (c == '\'' && !separator)) {
      size_t k = i + 1;
      while (k < src.size() && src[k] != c && src[k] != '\n') k += src[k] == '\\' ? 2 : 1;
      out += c;
      out += c;
      i = k + 1;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

// The name (with its qualifiers) just before the first '(' of `head`: "build", "Story::lines",
// "operator==".
std::string name_of(const std::string& head) {
  size_t end = head.find('(');
  while (end > 0 && std::isspace(static_cast<unsigned char>(head[end - 1]))) --end;
  size_t begin = end;
  auto part_of_name = [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) ||
           std::string("_:~=!<>+-*/%^&|[]").find(ch) != std::string::npos;
  };
  while (begin > 0 && part_of_name(head[begin - 1])) --begin;
  return head.substr(begin, end - begin);
}

bool has_word(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left =
        at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
    const size_t after = at + word.size();
    const bool right = after >= text.size() ||
                       !(std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_');
    if (left && right) return true;
  }
  return false;
}

// The first word of a declaration, after any "template <...>" before it.
std::string first_word(const std::string& head) {
  size_t i = head.find_first_not_of(" \t\n");
  if (i != std::string::npos && head.compare(i, 8, "template") == 0) {
    int angle = 0;
    for (i += 8; i < head.size(); ++i) {
      if (head[i] == '<') ++angle;
      if (head[i] == '>' && --angle == 0) break;
    }
    i = head.find_first_not_of(" \t\n", i + 1);
  }
  if (i == std::string::npos) return "";
  size_t end = i;
  while (end < head.size() && (std::isalnum(static_cast<unsigned char>(head[end])) || head[end] == '_'))
    ++end;
  return head.substr(i, end - i);
}

// Where `head` assigns ('=' that is not part of ==, !=, <=, >= or an operator's name), npos if nowhere.
size_t assignment_at(const std::string& head) {
  for (size_t at = head.find('='); at != std::string::npos; at = head.find('=', at + 1)) {
    const char before = at ? head[at - 1] : ' ', after = at + 1 < head.size() ? head[at + 1] : ' ';
    if (after == '=' || before == '=' || before == '!' || before == '<' || before == '>') continue;
    const size_t op = head.rfind("operator", at);
    if (op != std::string::npos && head.find_first_not_of(" =!<>+-*/%^&|", op + 8) >= at) continue;
    return at;
  }
  return std::string::npos;
}

// What a brace at namespace scope opens, from the text since the previous ';', '{' or '}'.
enum class Opens { scope, function, other };
Opens classify(const std::string& head) {
  if (has_word(head, "namespace") || (has_word(head, "extern") && head.find("\"\"") != std::string::npos))
    return Opens::scope;
  const std::string word = first_word(head);
  if (word == "class" || word == "struct" || word == "union" || word == "enum") return Opens::other;
  const size_t call = head.find('(');
  if (call == std::string::npos) return Opens::other;  // e.g. "const Table kRows{"
  if (assignment_at(head) < call)
    return Opens::other;  // a brace-initialized value, or a lambda held in a variable
  return Opens::function;
}

// Every function body at namespace scope of `src`, in order.
std::vector<Body> function_bodies(const std::string& src) {
  const std::string text = blank_literals(src);
  std::vector<Body> out;
  // What each open brace opened; a function's first line and name where it opened a function.
  struct Open {
    Opens what;
    int line;
    std::string name;
  };
  std::vector<Open> stack;
  std::string head;
  int line = 1, parens = 0;
  auto in_function = [&] {
    return std::any_of(stack.begin(), stack.end(), [](const Open& o) { return o.what != Opens::scope; });
  };
  for (char c : text) {
    if (c == '\n') ++line;
    if (in_function()) {
      if (c == '{') stack.push_back({Opens::other, line, ""});
      if (c == '}') {
        const Open o = stack.back();
        stack.pop_back();
        if (o.what == Opens::function) out.push_back({o.name, o.line, line - o.line + 1});
        head.clear();
      }
      continue;
    }
    if (c == '(') ++parens;
    if (c == ')') parens = std::max(0, parens - 1);
    if (c == '{' && parens == 0) {
      const Opens what = classify(head);
      stack.push_back({what, line, what == Opens::function ? name_of(head) : ""});
      head.clear();
    } else if (c == '}' && !stack.empty()) {
      stack.pop_back();
      head.clear();
    } else if (c == ';' && parens == 0) {
      head.clear();
    } else {
      head += c;
    }
  }
  return out;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string lines_of(int n, const std::string& line) {
  std::string s;
  for (int i = 0; i < n; ++i) s += line + "\n";
  return s;
}

TEST(FunctionBodies, FindsEachFunctionAtNamespaceScopeWithItsLength) {
  const std::string src =
      "#include <x>\n"                             // 1
      "namespace cts::report {\n"                  // 2
      "namespace {\n"                              // 3
      "const std::vector<int> kTable = {1, 2};\n"  // 4: a value, not a function
      "struct Row {\n"                             // 5: a type
      "  int f() const { return 1; }\n"            // 6: inside a type: not at namespace scope
      "};\n"                                       // 7
      "int small(int x) { return x; }\n"           // 8
      "}  // namespace\n"                          // 9
      "std::string Story::lines() const {\n"       // 10
      "  auto f = [](int y) { return y + 1; };\n"  // 11: a lambda is part of the body
      "  return \"}\";\n"                          // 12: a brace in a string
      "}\n"                                        // 13
      "}  // namespace cts::report\n";             // 14
  const auto bodies = function_bodies(src);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0].name, "small");
  EXPECT_EQ(bodies[0].first, 8);
  EXPECT_EQ(bodies[0].lines, 1);
  EXPECT_EQ(bodies[1].name, "Story::lines");
  EXPECT_EQ(bodies[1].first, 10);
  EXPECT_EQ(bodies[1].lines, 4);
}

// Types, values and operators at namespace scope: only the functions are bodies.
TEST(FunctionBodies, TypesAndValuesAreNotFunctions) {
  const std::string src =
      "template <class T>\n"
      "struct Box : Base<T> {\n"
      "  T v{};\n"
      "};\n"
      "enum class Kind { a, b };\n"
      "const std::map<std::string, int> kIds = {{\"a\", 1}};\n"
      "auto held = [](int x) { return x; };\n"
      "extern \"C\" {\n"
      "int c_api(void) { return 0; }\n"
      "}\n"
      "bool operator==(const Box<int>& a, const Box<int>& b) { return a.v == b.v; }\n";
  const auto bodies = function_bodies(src);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0].name, "c_api");
  EXPECT_EQ(bodies[1].name, "operator==");
}

// Braces in strings, characters, raw strings and comments neither end a body nor open one.
TEST(FunctionBodies, LiteralsAndCommentsDoNotCount) {
  const std::string src =
      "void f() {\n"
      "  const char* a = \"{{{ \\\" }\";\n"
      "  char b = '}', c = '\\'';\n"
      "  int d = 1'000'000;\n"
      "  auto e = R\"x(} \" {)x\";\n"
      "  // }}}\n"
      "  /* {\n"
      "  } */\n"
      "}\n"
      "void g() {}\n";
  const auto bodies = function_bodies(src);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0].name, "f");
  EXPECT_EQ(bodies[0].lines, 9);
  EXPECT_EQ(bodies[1].name, "g");
  EXPECT_EQ(bodies[1].first, 10);
}

// A body of 101 lines full of lambdas and nested blocks is one function of 101 lines.
TEST(FunctionBodies, ALongBodyWithLambdasIsOneFunction) {
  const std::string src = "doc::Doc build(const Bundle& b) {\n" +
                          lines_of(33, "  auto l = [&](int x) { if (x) { return \"}\"; } return \"{\"; };") +
                          lines_of(33, "  for (int i = 0; i < 3; ++i) {") + lines_of(33, "  }") + "}\n";
  const auto bodies = function_bodies(src);
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(bodies[0].name, "build");
  EXPECT_EQ(bodies[0].lines, 101);
}

TEST(FunctionLength, NoFunctionOfReportIsOverAHundredLines) {
  namespace fs = std::filesystem;
  const fs::path report = fs::path(GPUCTS_SOURCE_DIR) / "report";
  ASSERT_TRUE(fs::is_directory(report)) << report;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(report))
    if (e.path().extension() == ".cpp") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << report;
  int functions = 0;
  for (const auto& f : files)
    for (const auto& b : function_bodies(read(f))) {
      ++functions;
      EXPECT_LE(b.lines, kMaxLines) << "report/" << f.filename().string() << ":" << b.first << ": " << b.name
                                    << " is " << b.lines << " lines: split it (at most " << kMaxLines << ")";
    }
  EXPECT_GT(functions, 50) << "the scanner found too few functions in report/: it has lost its way";
}

}  // namespace
}  // namespace cts
