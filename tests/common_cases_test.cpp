// The C++ side over suites/data/common_cases.csv, the table python/tests/test_common_cases.py runs
// the Python floor (python/gpucts_common) over: file names, NCCL version codes, which file is NCCL,
// the message cut. Every row must give its expected answer on both sides, so the two rules cannot
// drift apart unnoticed. One case per row, named by its kind and line.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "matrix/csv.hpp"
#include "matrix/input.hpp"
#include "matrix/version.hpp"
#include "results/file_names.hpp"
#include "results/xml_escape.hpp"

namespace cts {
namespace {

constexpr const char* kTable = "common_cases.csv";
constexpr const char* kRefused = "!invalid";

struct Row {
  int line = 0;
  std::string kind, input, expected;  // as written in the table (escapes not yet decoded)
};
void PrintTo(const Row& r, std::ostream* os) {
  *os << "line " << r.line << ": " << r.kind << " " << excerpt(r.input, 60);
}

// The bytes of a UTF-8 character starting with `lead`.
std::size_t utf8_length(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

// A cell as bytes: \\, \n, \xHH, and \{N} (the preceding character or byte N times in all).
std::string decode_cell(const std::string& cell) {
  std::string out, last;
  for (std::size_t i = 0; i < cell.size();) {
    if (cell[i] != '\\') {
      last = cell.substr(i, utf8_length(static_cast<unsigned char>(cell[i])));
      out += last;
      i += last.size();
      continue;
    }
    const char next = i + 1 < cell.size() ? cell[i + 1] : '\0';
    if (next == '\\' || next == 'n') {
      last = next == 'n' ? "\n" : "\\";
      out += last;
      i += 2;
    } else if (next == 'x' && i + 3 < cell.size() && std::isxdigit(static_cast<unsigned char>(cell[i + 2])) &&
               std::isxdigit(static_cast<unsigned char>(cell[i + 3]))) {
      last = std::string(1, static_cast<char>(std::stoi(cell.substr(i + 2, 2), nullptr, 16)));
      out += last;
      i += 4;
    } else if (next == '{' && cell.find('}', i) != std::string::npos) {
      const std::size_t close = cell.find('}', i);
      const std::string digits = cell.substr(i + 2, close - i - 2);
      if (last.empty() || digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(digits) < 1)
        throw std::invalid_argument(cell + ": \\{N} needs a character before it and N >= 1");
      for (unsigned long k = 1; k < std::stoul(digits); ++k) out += last;
      i = close + 1;
    } else {
      throw std::invalid_argument(cell + ": unknown escape \\" + std::string(1, next));
    }
  }
  return out;
}

std::vector<Row> load_rows(std::string* error = nullptr) {
  const std::string path = test_data_file(kTable);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Row> rows;
  try {
    if (!in) throw MatrixError(path + ": cannot be read");
    for (const CsvRow& r : parse_csv(text.str(), path, {"kind", "input", "expected"}, {}).rows)
      rows.push_back({r.line, r.at("kind"), r.at("input"), r.at("expected")});
  } catch (const MatrixError& e) {
    if (error) *error = e.what();
    return {};
  }
  return rows;
}

// What the C++ side answers for one row; kRefused where it throws.
std::string answer(const std::string& kind, const std::string& input) {
  try {
    if (kind == "file_name") return file_name_for(input);
    if (kind == "nccl_version") return Version::from_code(std::stoll(input), VersionKind::Nccl).release_str();
    if (kind == "nccl_library") return is_nccl_library(input) ? "yes" : "no";
    if (kind == "message_cut") return cap_report_text(input);  // what the JUnit writer keeps of a message
  } catch (const std::invalid_argument&) {                     // file_name_for of an empty name
    return kRefused;
  } catch (const VersionError&) {
    return kRefused;
  }
  throw std::logic_error("unknown kind " + kind);
}

TEST(CommonCasesTable, ReadsWithEveryKind) {
  std::string error;
  const std::vector<Row> rows = load_rows(&error);
  ASSERT_FALSE(rows.empty()) << (error.empty() ? std::string(kTable) + ": no rows" : error);
  for (const char* kind : {"file_name", "nccl_version", "nccl_library", "message_cut"}) {
    int n = 0;
    for (const Row& r : rows) n += r.kind == kind;
    EXPECT_GT(n, 0) << "no " << kind << " row in " << kTable;
  }
}

TEST(CommonCasesTable, CellEscapes) {
  EXPECT_EQ(decode_cell(R"(a\{3}\n\\\xff\{2}é\{2})"),
            "aaa\n\\\xff\xff"
            "éé");
  for (const char* bad : {R"(\{2})", R"(a\q)", R"(a\{0})"})
    EXPECT_THROW(decode_cell(bad), std::invalid_argument) << bad;
}

class CommonCase : public ::testing::TestWithParam<Row> {};

TEST_P(CommonCase, AnswersAsTheTableSays) {
  const Row& r = GetParam();
  const std::string got = answer(r.kind, decode_cell(r.input));
  const std::string want = decode_cell(r.expected);
  if (got == want) return;
  // Answers run to 64 KiB: name where they part, not both in full.
  std::size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  ADD_FAILURE() << kTable << ":" << r.line << ": " << r.kind << " '" << excerpt(r.input, 80) << "': got "
                << got.size() << " bytes, expected " << want.size() << "; from byte " << at << " got '"
                << excerpt(got.substr(at), 80) << "', expected '" << excerpt(want.substr(at), 80) << "'";
}

INSTANTIATE_TEST_SUITE_P(Table, CommonCase, ::testing::ValuesIn(load_rows()),
                         [](const ::testing::TestParamInfo<Row>& p) {
                           return p.param.kind + "_line" + std::to_string(p.param.line);
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CommonCase);  // an unreadable table fails ReadsWithEveryKind

}  // namespace
}  // namespace cts
