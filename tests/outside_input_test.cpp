// Text from outside the harness: CMake's regular expressions matched in time and stack bounded
// by the pattern (cli/ctest_regex.hpp), and text made safe and short for a terminal
// (results/terminal_text.hpp).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "cli/ctest_regex.hpp"
#include "results/bundle_paths.hpp"
#include "results/terminal_text.hpp"

#include <filesystem>
#include <fstream>
#include "fixtures/probe/paths.hpp"
#include "tests/cpu_seconds.hpp"

namespace cts {
namespace {

bool matches(const std::string& pattern, const std::string& text) { return CtestRegex(pattern).search(text); }

TEST(CtestRegex, CMakeSyntax) {
  EXPECT_TRUE(matches("PASSED", "[  PASSED  ] 3 tests"));
  EXPECT_FALSE(matches("^PASSED", "[  PASSED  ]"));
  EXPECT_TRUE(matches("tests\\.$", "3 tests."));
  EXPECT_FALSE(matches("tests\\.$", "3 testsx"));
  EXPECT_TRUE(matches("a.c", "a\nc"));  // '.' is any byte, newline included, as in CMake
  EXPECT_TRUE(matches("^gpucts_(collectives|bandwidth)_w[0-9]+$", "gpucts_bandwidth_w12"));
  EXPECT_FALSE(matches("^gpucts_(collectives|bandwidth)_w[0-9]+$", "gpucts_bandwidth_w"));
  EXPECT_TRUE(matches("[^a-z]", "abc1"));
  EXPECT_FALSE(matches("[^a-z]", "abc"));
  EXPECT_TRUE(matches("[]x]", "]"));
  EXPECT_TRUE(matches("[a-]", "-"));
  EXPECT_TRUE(matches("colou?r", "color"));
  EXPECT_TRUE(matches("ab+c", "abbbc"));
  EXPECT_FALSE(matches("ab+c", "ac"));
  EXPECT_TRUE(matches("", "anything"));
  EXPECT_TRUE(matches("x|", "y"));  // an empty alternative matches the empty string
  EXPECT_TRUE(matches("\\(1\\)", "f(1)"));
  EXPECT_TRUE(matches("(a*)*b", "aaab"));
  EXPECT_TRUE(matches("^$", ""));
  EXPECT_TRUE(matches(std::string("a\0b", 3), std::string("xa\0b", 4)));
}

TEST(CtestRegex, RefusesWhatCMakeRefusesAndWhatIsOverTheBounds) {
  for (const char* bad : {"(", ")", "a(b", "[a", "*a", "a**", "a+?", "\\", "[z-a]"})
    EXPECT_THROW(CtestRegex{bad}, CtestRegexError) << bad;
  EXPECT_THROW(CtestRegex(std::string(CtestRegex::kMaxPatternChars + 1, 'a')), CtestRegexError);
  const std::string nest =
      std::string(CtestRegex::kMaxNesting, '(') + "a" + std::string(CtestRegex::kMaxNesting, ')');
  EXPECT_TRUE(CtestRegex(nest).search("a"));
  EXPECT_THROW(CtestRegex("(" + nest + ")"), CtestRegexError);
  try {
    compile_ctest_regex("--tests", "\x1b[2J(");
    ADD_FAILURE() << "accepted";
  } catch (const CtestRegexError& e) {
    const std::string w = e.what();
    EXPECT_EQ(w.find('\x1b'), std::string::npos) << w;
    EXPECT_NE(w.find("--tests '\\x1b[2J('"), std::string::npos) << w;
  }
}

// std::regex recursed once per byte here and overflowed the stack; this is linear.
TEST(CtestRegex, LongTextsNeitherCrashNorTakeLong) {
  const double t0 = cts::test::cpu_seconds();
  std::string log;
  while (log.size() < 30000) log += "[ RUN      ] Case.x\n[       OK ] Case.x (1 ms)\n";
  EXPECT_FALSE(matches("(.|\n)*PASSED", log));
  EXPECT_TRUE(matches("(.|\n)*PASSED", log + "[  PASSED  ] 1 test.\n"));
  std::string big(1 << 20, 'a');  // std::regex overflowed its stack at tens of KB
  EXPECT_TRUE(matches("^(a|b)*$", big));
  EXPECT_FALSE(matches("^(a|b)*$", big + "c"));
  EXPECT_FALSE(matches("(a|aa)*c", big));  // exponential for a backtracking matcher
  EXPECT_LT(cts::test::cpu_seconds() - t0, 30);
}

TEST(TerminalSafe, ControlBytesAreShownAsEscapes) {
  EXPECT_EQ(terminal_safe("gpu-node-07"), "gpu-node-07");
  EXPECT_EQ(terminal_safe("a\nALL CHECKS PASSED"), "a\\nALL CHECKS PASSED");
  EXPECT_EQ(terminal_safe("\x1b[2J\r"), "\\x1b[2J\\r");
  EXPECT_EQ(terminal_safe(std::string("a\0b", 3)), "a\\0b");
  EXPECT_EQ(terminal_safe("\x7f\x01\t"), "\\x7f\\x01\\t");
  EXPECT_EQ(terminal_safe("H100 \xc3\xa9"), "H100 \xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(terminal_safe("\xff\xc3"), "\\xff\\xc3");          // not UTF-8
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\u{009b}2J");  // C1 CSI
  EXPECT_EQ(terminal_safe("a\xe2\x80\xae"
                          "b"),
            "a\\u{202e}b");                                     // right-to-left override
  EXPECT_EQ(terminal_safe("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");  // overlong form
}

TEST(TerminalSafe, LongTextIsCutWithAMarker) {
  const std::string big(50 << 20, 'x');
  const std::string s = terminal_safe(big, 100);
  EXPECT_LE(s.size(), 100u);
  EXPECT_NE(s.find("more bytes]"), std::string::npos) << s;
  EXPECT_EQ(s.rfind("xxxx", 0), 0u);
  const std::string esc = terminal_safe(std::string(1000, '\n'), 64);
  EXPECT_LE(esc.size(), 64u);
  EXPECT_EQ(esc.find("\\n\\"), 0u);
  EXPECT_EQ(esc.find("\\...["), std::string::npos) << esc;                      // never half an escape
  EXPECT_EQ(terminal_safe(std::string(100, 'y'), 100), std::string(100, 'y'));  // exactly the bound
}

// A manifest's XML path, a fingerprint or a bandwidth file is read inside its bundle only.
TEST(InsideBundle, NeverLeavesTheBundle) {
  namespace fs = std::filesystem;
  ScratchDir tmp("bundle-paths");
  const fs::path b = fs::path(tmp.path()) / "bundle";
  fs::create_directories(b / "gtest");
  fs::create_directories(b / "fingerprints");
  std::ofstream(b / "gtest" / "x.xml") << "<x/>";
  fs::create_symlink("/etc/hostname", b / "fingerprints" / "host.json");
  fs::create_symlink(b / "gtest", b / "linked");
  std::string why;
  EXPECT_EQ(inside_bundle(b.string(), "gtest/x.xml", &why), (b / "gtest" / "x.xml").string()) << why;
  for (const char* bad : {"/etc/hostname", "../bundle/gtest/x.xml", "gtest/../../x", "fingerprints/host.json",
                          "linked/x.xml", "gtest/none.xml", ""}) {
    EXPECT_FALSE(inside_bundle(b.string(), bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

}  // namespace
}  // namespace cts
