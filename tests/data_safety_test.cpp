// The user's data, end to end: `gpucts campaign` never deletes or reuses what it did not write at
// OUT/nccl-<version>. Runs gpucts beside this binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"
#include "results/junit.hpp"
#include "results/output_file.hpp"
#include "results/xml.hpp"
#include "results/xml_escape.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

std::string gpucts() { return find_beside("gpucts").value_or(""); }

#define REQUIRE_CLI() \
  if (gpucts().empty()) GTEST_SKIP() << "gpucts not found beside " << self_exe()

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// Every entry under `root` with what it holds (a link as "-> target"): what must not change.
std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_symlink())
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
    else
      out[rel] = it->is_regular_file() ? slurp(it->path()) : "(folder)";
  }
  return out;
}

// gpucts with `args`: its exit status, its output and error in *out.
int run_gpucts(std::vector<std::string> args, std::string* out, double timeout_s = 120) {
  args.insert(args.begin(), gpucts());
  int rc = -1;
  *out = proc::output_of(args, &rc, {}, timeout_s);
  return rc;
}

nlohmann::json suite_list(const std::string& name, const std::vector<std::string>& command,
                          const std::vector<std::string>& env = {}) {
  nlohmann::json entry = {
      {"name", name},
      {"command", command},
      {"properties", {{{"name", "TIMEOUT"}, {"value", 60}}, {{"name", "LABELS"}, {"value", {"cpu"}}}}}};
  if (!env.empty()) entry["properties"].push_back({{"name", "ENVIRONMENT"}, {"value", env}});
  return {{"kind", "ctestInfo"}, {"tests", {entry}}};
}

// ---------------------------------------------------------------------------------------------
// gpucts campaign: OUT/nccl-<version> is deleted or reused only where gpucts qualify wrote it.

TEST(Campaign, NeverDeletesOrReusesWhatItDidNotWriteAtAReleaseFolder) {
  REQUIRE_CLI();
  ScratchDir tmp("data-safety");
  const fs::path root = tmp.path(), store = root / "store", out = root / "out", at = out / "nccl-2.28.9";
  // The release's library in the store (any whole shared object will do), so that only the folder
  // stands between the campaign and a run.
  fs::create_directories(store / "2.28.9" / "lib");
  fs::create_symlink(self_exe(), store / "2.28.9" / "lib" / "libnccl.so.2");
  put(root / "elsewhere" / "keep.txt", "not the campaign's\n");
  const std::vector<std::pair<std::string, std::function<void()>>> planted = {
      {"a file", [&] { put(at, "the user's notes\n"); }},
      {"a folder", [&] { put(at / "notes.txt", "the user's notes\n"); }},
      {"another manifest", [&] { put(at / "manifest.json", R"({"schema": "someone.else/1"})"); }},
      {"a link", [&] { fs::create_symlink(root / "elsewhere", at); }}};
  for (const auto& [what, plant] : planted)
    for (bool resume : {false, true}) {
      fs::remove_all(out);
      fs::create_directories(out);
      plant();
      const auto before = files_under(root);
      std::vector<std::string> args = {"campaign", "--nccl",     "2.28.9",  "--store",        store.string(),
                                       "--output", out.string(), "--tests", "^no_such_entry$"};
      if (resume) args.push_back("--resume");
      std::string text;
      const std::string label = what + (resume ? " with --resume" : "");
      EXPECT_EQ(run_gpucts(args, &text), 2) << label << "\n" << text;
      EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << label << "\n" << text;
      EXPECT_NE(text.find(at.string()), std::string::npos) << label << "\n" << text;
      EXPECT_EQ(files_under(root), before) << label << ": something changed\n" << text;
    }
  // A bundle gpucts qualify wrote is the campaign's: --resume reads it back and leaves it as it was.
  fs::remove_all(out);
  fs::create_directories(out);
  put(root / "tests.json", suite_list("true", {"/bin/true"}).dump());
  std::string text;
  ASSERT_EQ(run_gpucts({"qualify", "--no-python", "--tests-json", (root / "tests.json").string(), "--output",
                        at.string()},
                       &text),
            0)
      << text;
  const auto bundle = files_under(at);
  // (Read back, it holds no NCCL of a CPU machine: a problem of the report, exit 1, not a refusal.)
  EXPECT_EQ(run_gpucts({"campaign", "--nccl", "2.28.9", "--store", store.string(), "--output", out.string(),
                        "--resume"},
                       &text),
            1)
      << text;
  EXPECT_NE(text.find(at.string()), std::string::npos) << text;
  EXPECT_EQ(files_under(at), bundle) << text;
}

}  // namespace
}  // namespace cts
