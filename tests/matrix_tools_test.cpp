// The matrix data is what its tools derive from the committed snapshots: matrix/tools/generate.py
// (offline) rewrites the generated CSVs byte for byte, a hand edit of one of them is caught with
// its file and line, and every row of every data file cites a source.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/csv.hpp"

namespace cts {
namespace {

namespace fs = std::filesystem;

const ScratchDir kScratch("matrix_tools");

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The tools sit beside the data in the source tree (matrix/tools next to matrix/data); an install
// tree ships the data only.
fs::path tools_dir() { return fs::path(matrix_data_dir()).parent_path() / "tools"; }

struct ToolRun {
  int rc = -1;
  std::string out;
};

ToolRun generate_check(const fs::path& data) {
  proc::Options o;
  o.err = proc::Output::Capture;
  o.timeout_s = 60;
  proc::Result r =
      proc::run({"python3", (tools_dir() / "generate.py").string(), "--check", "--data", data.string()}, o);
  return {r.exit_code.value_or(-1), r.output};
}

void require_tools() {
  if (!fs::exists(tools_dir() / "generate.py"))
    GTEST_SKIP() << "no matrix/tools beside " << matrix_data_dir()
                 << " (an install tree ships the data only)";
  if (!proc::run({"python3", "-c", "import sys; sys.exit(sys.version_info < (3, 8))"}).ok())
    GTEST_SKIP() << "python3 (3.8 or newer) is not on PATH: the generator cannot run";
}

TEST(MatrixTools, GeneratedFilesAreWhatTheSnapshotsGive) {
  require_tools();
  ToolRun r = generate_check(matrix_data_dir());
  EXPECT_EQ(r.rc, 0)
      << "regenerate with python3 matrix/tools/generate.py (and edit matrix/tools/curated, not the "
         "generated CSV):\n"
      << r.out;
  EXPECT_NE(r.out.find("generated files match"), std::string::npos) << r.out;
}

TEST(MatrixTools, HandEditOfAGeneratedFileIsCaught) {
  require_tools();
  const fs::path copy = fs::path(kScratch.path()) / "data";
  fs::create_directories(copy);
  for (const auto& e : fs::directory_iterator(matrix_data_dir()))
    fs::copy_file(e.path(), copy / e.path().filename());
  // NCCL_MIN_NRINGS is still read by the newest tag; marking it removed contradicts the source.
  std::string text = slurp(copy / "nccl_env.csv");
  const std::string row = "\nNCCL_MIN_NRINGS,2.3.5,,";
  auto at = text.find(row);
  ASSERT_NE(at, std::string::npos) << "nccl_env.csv has no NCCL_MIN_NRINGS row read since 2.3.5";
  text.replace(at, row.size(), "\nNCCL_MIN_NRINGS,2.3.5,2.5.6,");
  std::ofstream(copy / "nccl_env.csv", std::ios::binary) << text;
  const int line =
      1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at) + 1, '\n'));
  ToolRun r = generate_check(copy);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("nccl_env.csv:" + std::to_string(line) + ": differs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 6 generated files differ"), std::string::npos) << r.out;
}

// The header of a CSV of the matrix dialect (its first line that is no comment or blank).
std::vector<std::string> header_of(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) cols.push_back(c);
    return cols;
  }
  return {};
}

TEST(MatrixTools, EveryRowOfEveryDataFileCitesASource) {
  size_t files = 0, rows = 0;
  for (const auto& e : fs::directory_iterator(matrix_data_dir())) {
    if (e.path().extension() != ".csv") continue;
    const std::string name = e.path().filename().string(), text = slurp(e.path());
    auto cols = header_of(text);
    std::set<std::string> optional(cols.begin(), cols.end());
    optional.erase("source");
    CsvTable t = parse_csv(text, name, {"source"}, optional);  // throws when there is no source column
    ++files;
    for (const auto& r : t.rows) {
      ++rows;
      EXPECT_FALSE(r.at("source").empty()) << name << ":" << r.line << ": no source";
    }
  }
  EXPECT_GE(files, 11u) << "every matrix file (and bandwidth_thresholds.csv) is checked";
  EXPECT_GT(rows, 500u);
}

// Every variable NCCL reads (or documents) has the first release that reads it: from the tags, or
// for the two that no tag reads any more, from env.rst's "(since X".
TEST(MatrixTools, EveryNcclVariableHasItsFirstRelease) {
  const fs::path file = fs::path(matrix_data_dir()) / "nccl_env.csv";
  const std::string text = slurp(file);
  auto cols = header_of(text);
  std::set<std::string> optional(cols.begin(), cols.end());
  for (const char* c : {"name", "since", "until", "type", "source"}) optional.erase(c);
  CsvTable t = parse_csv(text, "nccl_env.csv", {"name", "since", "until", "type", "source"}, optional);
  size_t read = 0;
  for (const auto& r : t.rows) {
    const std::string& type = r.at("type");
    if (type == "notnccl" || type == "ignore") continue;  // read by no release, by definition
    ++read;
    EXPECT_FALSE(r.at("since").empty())
        << "nccl_env.csv:" << r.line << ": " << r.at("name") << " has no since";
  }
  EXPECT_GT(read, 250u);
}

}  // namespace
}  // namespace cts
