#include "cli/qualify_run.hpp"

#include "cli/ctest_regex.hpp"

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/simulated_hosts.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/input.hpp"
#include "results/file_names.hpp"
#include "results/journal_report.hpp"
#include "results/launch_causes.hpp"
#include "results/output_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#ifndef GPUCTS_CTEST_COMMAND
#define GPUCTS_CTEST_COMMAND "ctest"
#endif

namespace fs = std::filesystem;

namespace cts::qualify {

std::atomic<int> g_signal{0};

namespace {

void on_signal(int sig) { g_signal.store(sig); }

bool is_executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); }

// A short helper command (ctest --show-only) with a deadline, its stdout captured.
std::string capture(const std::vector<std::string>& argv, double timeout_s, int* rc) {
  proc::Options o;
  o.timeout_s = timeout_s;
  o.max_capture = kMaxInputBytes;
  o.interrupt = &g_signal;
  proc::Result r = proc::run(argv, o);
  *rc = r.ok() ? 0 : r.exit_code.value_or(-1);
  return r.ok() && !r.output_truncated ? r.output : std::string();
}

std::string signal_name(int sig) {
  const char* d = ::strsignal(sig);
  return std::string("signal ") + std::to_string(sig) + (d ? " (" + std::string(d) + ")" : "");
}

std::vector<std::string> files_with_prefix(const std::string& dir, const std::string& prefix,
                                           const std::string& ext) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.size() < prefix.size() + ext.size() || n.compare(0, prefix.size(), prefix) != 0 ||
        n.compare(n.size() - ext.size(), ext.size(), ext) != 0)
      continue;
    // Exactly "<prefix><ext>" or "<prefix>.rank<r><ext>": entry "v" never takes the files of "v.quick".
    std::string mid = n.substr(prefix.size(), n.size() - prefix.size() - ext.size());
    const bool rank_file =
        mid.size() > 5 && mid.compare(0, 5, ".rank") == 0 &&
        std::all_of(mid.begin() + 5, mid.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (mid.empty() || rank_file) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Journal progress: cases announced by program_start and ends seen so far (rank 0 or unranked).
struct JournalTail {
  std::string path;
  std::streamoff offset = 0;
  int total = 0, done = 0;
  std::string partial;
  void poll() {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    in.seekg(offset);
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    offset += static_cast<std::streamoff>(chunk.size());
    partial += chunk;
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      // A suite's own journal, but a line of the wrong shape must not stop qualify.
      std::string ev = j.contains("event") && j["event"].is_string() ? j["event"].get<std::string>() : "";
      if (ev == "program_start") {  // a rerun appends to the same journal: count the last program
        total = j.contains("cases") && j["cases"].is_number_integer() && j["cases"].get<long long>() >= 0 &&
                        j["cases"].get<long long>() < (1LL << 31)
                    ? static_cast<int>(j["cases"].get<long long>())
                    : 0;
        done = 0;
      } else if (ev == "end") {
        ++done;
      }
    }
  }
};

bool output_matches(const std::string& log, const std::vector<std::string>& patterns, std::string* which) {
  std::string text;
  try {
    text = bundle::read_text(log);
  } catch (const bundle::BundleError&) {
    return false;
  }
  for (const auto& pat : patterns) {
    try {
      if (CtestRegex(pat).search(text)) {
        *which = pat;
        return true;
      }
    } catch (const CtestRegexError&) {
      // A pattern CMake would refuse (or over the bounds) counts as no match.
    }
  }
  return false;
}

// CTest's verdict properties over the ending qualify saw (ctest's order: regexes, then WILL_FAIL).
// A deadline, interrupt or crash stays what it is.
void apply_ctest_rules(const TestEntry& e, const std::string& log, bundle::SuiteRun& r, std::string* ending) {
  if (r.status != bundle::SuiteStatus::passed && r.status != bundle::SuiteStatus::failed &&
      r.status != bundle::SuiteStatus::skipped)
    return;
  std::string which;
  if (!e.pass_regex.empty()) {
    if (output_matches(log, e.pass_regex, &which)) {
      r.status = bundle::SuiteStatus::passed;
      r.reason = "expected: the output matches PASS_REGULAR_EXPRESSION";
      ending->clear();
    } else {
      r.status = bundle::SuiteStatus::failed;
      *ending = "the output does not match PASS_REGULAR_EXPRESSION";
    }
  }
  if (!e.fail_regex.empty() && output_matches(log, e.fail_regex, &which)) {
    r.status = bundle::SuiteStatus::failed;
    *ending = "the output matches FAIL_REGULAR_EXPRESSION '" + which + "'";
  }
  if (e.will_fail && r.status != bundle::SuiteStatus::skipped) {
    bool was_pass = r.status == bundle::SuiteStatus::passed;
    r.status = was_pass ? bundle::SuiteStatus::failed : bundle::SuiteStatus::passed;
    if (was_pass) {
      *ending = "WILL_FAIL entry succeeded";
    } else {
      r.reason = "expected: a WILL_FAIL entry failed";
      ending->clear();
    }
  }
}

}  // namespace

int run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s,
                const std::string& output_file, bool with_stderr) {
  proc::Options o;
  o.set_env = env;
  o.out = proc::Output::File;
  o.output_file = output_file;
  o.err = with_stderr ? proc::Output::File : proc::Output::Null;
  o.timeout_s = timeout_s;
  o.interrupt = &g_signal;
  proc::Result r = proc::run(argv, o);
  if (!r.started || r.timed_out || r.interrupted || !r.exit_code) return -1;
  return *r.exit_code;
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: sleeps wake up
  for (int sig : kEndingSignals) sigaction(sig, &sa, nullptr);
  // A closed terminal or pipe makes writes fail, never ends the run (children get the default back).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
  // Ranks whose launcher died come here, so the end of a suite waits for them too.
  proc::adopt_orphans();
}

int signal_to_forward(int received) { return received == SIGINT ? SIGINT : SIGTERM; }

Tree locate_tree(const std::optional<std::string>& build_dir) {
  Tree t;
  if (build_dir) {
    if (!fs::exists(fs::path(*build_dir) / "CTestTestfile.cmake"))
      throw bundle::BundleError(*build_dir + ": not a gpucts build tree (no CTestTestfile.cmake)");
    t.kind = "build";
    t.root = fs::canonical(*build_dir).string();
    return t;
  }
  fs::path exe = self_exe();
  fs::path bin = exe.parent_path();
  fs::path prefix = bin.parent_path();
  if (fs::exists(prefix / "share/gpucts/tests.json") || fs::is_directory(prefix / "libexec/gpucts")) {
    t.kind = "install";
    t.root = prefix.string();
    t.libexec = (prefix / "libexec/gpucts").string();
    t.tests_json = (prefix / "share/gpucts/tests.json").string();
    return t;
  }
  // Build tree: gpucts sits in <build>/cli/.
  if (fs::exists(prefix / "CTestTestfile.cmake")) {
    t.kind = "build";
    t.root = prefix.string();
    return t;
  }
  throw bundle::BundleError(
      "cannot tell where the suites are: " + exe.string() +
      " is neither in an install tree (../libexec/gpucts) nor in a build tree; pass --build-dir");
}

std::vector<TestEntry> parse_ctest_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = parse_json(text, origin);
  } catch (const InputError& e) {
    throw bundle::BundleError(e.what());
  }
  if (!j.is_object() || !j.contains("tests") || !j["tests"].is_array())
    throw bundle::BundleError(origin + ": not CTest's --show-only=json-v1 output (no \"tests\" array)");
  // Every field is checked: a wrong type is bad input naming the entry, never a library message.
  auto strings = [&](const nlohmann::json& v, const std::string& where) {
    if (!v.is_array()) throw bundle::BundleError(origin + ": " + where + ": expected an array of strings");
    std::vector<std::string> out;
    for (const auto& x : v) {
      if (!x.is_string()) throw bundle::BundleError(origin + ": " + where + ": expected an array of strings");
      // A NUL would cut the argument or variable where the child receives it.
      if (x.get_ref<const std::string&>().find('\0') != std::string::npos)
        throw bundle::BundleError(origin + ": " + where + ": a NUL byte in a string");
      out.push_back(x.get<std::string>());
    }
    return out;
  };
  std::map<std::string, size_t> seen;  // name -> index: two entries on one name share every file
  std::vector<TestEntry> out;
  const auto& tests = j["tests"];
  for (size_t i = 0; i < tests.size(); ++i) {
    const auto& t = tests[i];
    const std::string at = "tests[" + std::to_string(i) + "]";
    if (!t.is_object()) throw bundle::BundleError(origin + ": " + at + ": expected an object");
    TestEntry e;
    if (t.contains("name") && !t["name"].is_string())
      throw bundle::BundleError(origin + ": " + at + ".name: expected a string");
    e.name = t.value("name", "");
    if (e.name.empty()) throw bundle::BundleError(origin + ": " + at + ".name: missing or empty");
    if (auto [it, fresh] = seen.emplace(e.name, i); !fresh)
      throw bundle::BundleError(origin + ": " + at + ".name '" + excerpt(e.name) +
                                "': also the name of tests[" + std::to_string(it->second) + "]");
    if (!t.contains("command") || !t["command"].is_array()) continue;  // CTest lists a test not built so
    // The name becomes GPUCTS_TEST_NAME, a file name (file_names.hpp) and a line on the terminal.
    if (!is_valid_utf8(e.name) || std::any_of(e.name.begin(), e.name.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
        }))
      throw bundle::BundleError(origin + ": " + at + ".name '" + excerpt(e.name) +
                                "': control characters or invalid UTF-8 in a test name");
    e.command = strings(t["command"], at + ".command");
    if (e.command.empty() || e.command[0].empty())
      throw bundle::BundleError(origin + ": " + at + ".command: empty");
    if (t.contains("properties") && t["properties"].is_array())
      for (size_t k = 0; k < t["properties"].size(); ++k) {
        const auto& p = t["properties"][k];
        const std::string pat = at + ".properties[" + std::to_string(k) + "]";
        if (!p.is_object() || (p.contains("name") && !p["name"].is_string()))
          throw bundle::BundleError(origin + ": " + pat + ": expected an object with a string name");
        std::string n = p.value("name", "");
        const auto& v = p.contains("value") ? p["value"] : nlohmann::json();
        const std::string where = pat + " (" + excerpt(n, 40) + ")";
        if (n == "LABELS")
          e.labels = strings(v, where);
        else if (n == "ENVIRONMENT")
          e.env = strings(v, where);
        else if (n == "PASS_REGULAR_EXPRESSION")
          e.pass_regex = strings(v, where);
        else if (n == "FAIL_REGULAR_EXPRESSION")
          e.fail_regex = strings(v, where);
        else if (n == "TIMEOUT") {
          if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
              v.get<double>() > 1e7)
            throw bundle::BundleError(origin + ": " + where + ": expected a number of seconds >= 0");
          if (v.get<double>() > 0) e.timeout_s = v.get<double>();  // 0: CTest's "no TIMEOUT of its own"
        } else if (n == "WORKING_DIRECTORY") {
          // Where it does not exist the entry fails to start, naming it (never run elsewhere).
          if (!v.is_string() || v.get<std::string>().empty() ||
              v.get<std::string>().find('\0') != std::string::npos)
            throw bundle::BundleError(origin + ": " + where + ": expected a folder name");
          e.working_dir = v.get<std::string>();
        } else if (n == "SKIP_RETURN_CODE") {
          if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 255)
            throw bundle::BundleError(origin + ": " + where + ": expected an exit status 0..255");
          e.skip_code = v.get<int>();
        } else if (n == "WILL_FAIL" && v.is_boolean()) {
          e.will_fail = v.get<bool>();
        } else if (n == "RUN_SERIAL" && v.is_boolean()) {
          e.run_serial = v.get<bool>();
        }
      }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<TestEntry> discover(const Tree& t, std::string* how) {
  if (t.kind == "build") {
    int rc = 0;
    std::string text = capture({GPUCTS_CTEST_COMMAND, "--show-only=json-v1", "--test-dir", t.root}, 120, &rc);
    if (rc == 0 && !text.empty()) {
      *how = std::string(GPUCTS_CTEST_COMMAND) + " --show-only=json-v1 --test-dir " + t.root;
      auto tests = parse_ctest_json(text, "ctest --show-only=json-v1");
      apply_gpu_needs(tests, t.root + "/gpucts_gpu_needs.txt");
      return tests;
    }
    *how = "ctest unavailable (" + std::string(GPUCTS_CTEST_COMMAND) + "): every gpucts_* binary under " +
           t.root + "/suites, run plainly";
  } else if (fs::exists(t.tests_json)) {
    *how = t.tests_json;
    auto tests = parse_ctest_json(bundle::read_text(t.tests_json), t.tests_json);
    apply_gpu_needs(tests, (fs::path(t.tests_json).parent_path() / "gpucts_gpu_needs.txt").string());
    return tests;
  } else {
    *how = "no " + t.tests_json + ": every gpucts_* binary in " + t.libexec + ", run plainly";
  }
  std::string dir = t.kind == "build" ? t.root + "/suites" : t.libexec;
  std::vector<TestEntry> out;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) {
      std::string n = e.path().filename().string();
      if (n.rfind("gpucts_", 0) == 0 && is_executable(e.path().string()))
        out.push_back({n, {e.path().string()}});
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

void apply_gpu_needs(std::vector<TestEntry>& tests, const std::string& needs_file) {
  std::ifstream in(needs_file);
  std::map<std::string, int> need;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(line.c_str() + eq + 1, &end, 10);
    if (end == line.c_str() + eq + 1 || *end || errno == ERANGE || n < 0 || n > 4096)
      throw bundle::BundleError(needs_file + ":" + std::to_string(line_no) + ": '" +
                                excerpt(line.substr(eq + 1), 40) + "' is not a GPU count");
    need[line.substr(0, eq)] = static_cast<int>(n);
  }
  for (auto& t : tests)
    if (auto it = need.find(t.name); it != need.end()) t.gpus = it->second;
}

namespace {
constexpr Level kLevels[] = {Level::quick, Level::standard, Level::full};
constexpr const char* kLevelNames[] = {"quick", "standard", "full"};  // in Level's order
}  // namespace

Level parse_level(const std::string& text) {
  for (Level l : kLevels)
    if (text == level_name(l)) return l;
  throw std::invalid_argument("level '" + text + "': expected quick, standard or full");
}

const char* level_name(Level l) { return kLevelNames[static_cast<int>(l)]; }

namespace {

bool any_label_matches(const std::vector<std::string>& labels, const CtestRegex& re) {
  for (const auto& l : labels)
    if (re.search(l)) return true;
  return false;
}

bool has_label(const TestEntry& t, const char* label) {
  return std::find(t.labels.begin(), t.labels.end(), label) != t.labels.end();
}

}  // namespace

std::vector<TestEntry> select_tests(const std::vector<TestEntry>& all, const Selection& s) {
  std::vector<CtestRegex> labels;
  std::optional<CtestRegex> exclude_label, tests, exclude_tests;
  for (const auto& l : s.labels) labels.push_back(compile_ctest_regex("--label", l));
  if (s.exclude_label) exclude_label.emplace(compile_ctest_regex("--exclude-label", *s.exclude_label));
  if (s.tests) tests.emplace(compile_ctest_regex("--tests", *s.tests));
  if (s.exclude_tests) exclude_tests.emplace(compile_ctest_regex("--exclude-tests", *s.exclude_tests));
  auto keep = [&](const TestEntry& t) {
    // Labels outside the level are taken only when --label names them: `--label cpu` does not
    // pull a self-test or a test of gpucts itself (`harness`) in through its other labels.
    bool outside = false, asked = false;
    for (const auto& l : t.labels)
      if (l == "self-test" || l == "install-only" || l == "harness" ||
          (l == kSimLabel && s.level != Level::full)) {
        outside = true;
        for (const auto& re : labels) asked |= re.search(l);
      }
    if (outside && !asked) return false;
    if (s.level == Level::quick && !has_label(t, kQuickLabel)) return false;
    for (const auto& re : labels)
      if (!any_label_matches(t.labels, re)) return false;
    if (exclude_label && any_label_matches(t.labels, *exclude_label)) return false;
    if (tests && !tests->search(t.name)) return false;
    if (exclude_tests && exclude_tests->search(t.name)) return false;
    return true;
  };
  std::vector<TestEntry> out;
  for (const auto& t : all)
    if (keep(t)) out.push_back(t);
  if (s.level == Level::quick) {
    const std::map<std::string, std::string> set = {{"GPUCTS_COLL_SWEEP", "smoke"},
                                                    {"GPUCTS_BW_SWEEP", kQuickBandwidthSweep}};
    for (auto& t : out) {
      std::vector<std::string> env;
      for (const auto& kv : t.env)
        if (!set.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
      for (const auto& [k, v] : set) env.push_back(k + "=" + v);
      t.env = env;
    }
  }
  return out;
}

RunPaths run_paths(const std::string& root, const std::string& name) {
  const fs::path dir = root;
  const std::string fname = file_name_for(name);  // any name from outside stays in the folder
  RunPaths p;
  p.bundle = root;
  p.xml_prefix = (dir / "gtest" / fname).string();
  p.journal_dir = (dir / "journal").string();
  p.log = (dir / "logs" / (fname + ".log")).string();
  p.bandwidth = (dir / "bandwidth" / fname).string();
  p.fingerprints = (dir / "fingerprints").string();
  return p;
}

TestEntry relocate(const TestEntry& e, const Tree& t, const RunPaths& p) {
  TestEntry r = e;
  r.command.clear();
  bool has_xml = false;
  for (const auto& a : e.command) {
    if (a.rfind("--gtest_output=", 0) == 0) {
      r.command.push_back("--gtest_output=xml:" + p.xml_prefix + ".xml");
      has_xml = true;
      continue;
    }
    if (a.rfind(kJunitOutputFlag, 0) == 0) {
      r.command.push_back(kJunitOutputFlag + p.xml_prefix + ".xml");
      continue;
    }
    std::string base = fs::path(a).filename().string();
    if (t.kind == "install" && base.rfind("gpucts_", 0) == 0 && a.find('/') != std::string::npos &&
        fs::exists(fs::path(t.libexec) / base)) {
      r.command.push_back((fs::path(t.libexec) / base).string());  // build-tree path -> libexec/gpucts
      continue;
    }
    r.command.push_back(a);
  }
  if (e.kind() == SuiteKind::gtest && !has_xml)
    r.command.push_back("--gtest_output=xml:" + p.xml_prefix + ".xml");
  std::map<std::string, std::string> set = {
      {"GPUCTS_TEST_NAME", e.name},
      {"GPUCTS_JOURNAL_DIR", p.journal_dir},
      {"GPUCTS_LOG_DIR", p.bundle + "/rank-logs"},
      {"TEST_PREMATURE_EXIT_FILE", p.journal_dir + "/" + file_name_for(e.name) + ".premature"},
      {"GPUCTS_BW_OUTPUT", p.bandwidth},
      {"GPUCTS_FINGERPRINT_DIR", p.fingerprints},
  };
  std::vector<std::string> env;
  for (const auto& kv : e.env) {
    std::string k = kv.substr(0, kv.find('='));
    if (!set.count(k)) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  r.env = env;
  return r;
}

std::vector<junit::Case> cases_from_journal(const std::vector<std::string>& files, const std::string& binary,
                                            const std::string& ending, std::string* first) {
  // The journals are read by the harness's own reader (report/journal_report.hpp), which merges
  // ranks and names the first cause; only how qualify ended the process is added here.
  TestRun run;
  run.test = binary;
  for (const auto& f : files) {
    int rank = -1;
    auto at = f.rfind(".rank");
    if (at != std::string::npos) {
      long v = std::strtol(f.c_str() + at + 5, nullptr, 10);
      rank = v >= 0 && v <= INT_MAX ? static_cast<int>(v) : -1;
    }
    run.ranks.push_back(parse_journal(f, rank, bundle::read_text(f)));
  }
  std::sort(run.ranks.begin(), run.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  Cause c = first_cause(run);
  if (first) *first = c.found ? c.summary() : "";
  if (run.ranks.empty()) return {};
  auto cases =
      junit::read(xml::parse(journals_to_junit({run}), binary + " journals"), binary + " journals", binary);
  for (auto& k : cases) {
    k.binary = binary;
    if (k.status == junit::Status::error) {
      k.message = junit::one_line("did not finish: " + ending + "; " + k.message);
      k.detail = k.message;
    }
  }
  return cases;
}

namespace {

// Case times from the journal of rank 0 (or of the one process), finer than gtest's milliseconds.
void set_case_times(std::vector<junit::Case>& cases, const std::string& journal_dir,
                    const std::string& test) {
  for (const auto& f : files_with_prefix(journal_dir, file_name_for(test), ".jsonl")) {
    const std::string name = fs::path(f).filename().string();
    if (name != file_name_for(test) + ".jsonl" && name != file_name_for(test) + ".rank0.jsonl") continue;
    try {
      set_journal_times(cases, parse_journal(f, -1, bundle::read_text(f)));
    } catch (const std::exception&) {
      // An unreadable journal leaves gtest's times.
    }
  }
}

}  // namespace

namespace {

using bundle::SuiteStatus;
using junit::Status;

// A case that stands for the whole process: how it ended, where no case of its own says so.
junit::Case process_case(const std::string& binary, const char* name, const std::string& why, double time_s) {
  junit::Case c;
  c.binary = binary;
  c.suite = "process";
  c.name = name;
  c.status = Status::error;
  c.message = junit::one_line(why);
  c.detail = why;
  c.time_s = time_s;
  return c;
}

// Step 1: stale results of an earlier run must not pass for this one's (only this entry's files).
void clear_stale_results(const TestEntry& e, const RunPaths& p) {
  const std::string xml_dir = fs::path(p.xml_prefix).parent_path().string();
  for (const auto& f : files_with_prefix(xml_dir, fs::path(p.xml_prefix).filename().string(), ".xml"))
    fs::remove(f);
  for (const auto& f : files_with_prefix(p.journal_dir, file_name_for(e.name), ".jsonl")) fs::remove(f);
}

// How the process ended, as qualify saw it (before CTest's rules and the cases are read).
struct Ending {
  SuiteStatus status = SuiteStatus::passed;
  std::string text;  // "" for a plain exit 0 or skip
  std::optional<int> exit_code, signal;
  double duration_s = 0;
  int cases_total = 0;  // as the journal announced them
};

// Step 2: runs the entry in its own process group (a deadline or ^C reaches mpiexec and every
// rank; no shell: argv as recorded) and waits for it, its deadline or an interrupt.
std::optional<Ending> supervise(const TestEntry& e, const RunPaths& p, const std::string& exe, double grace_s,
                                const std::function<void(int, int, double)>& on_progress,
                                std::string* spawn_error) {
  proc::Options so;
  so.set_env = e.env;
  so.working_dir = e.working_dir;
  so.out = so.err = proc::Output::File;
  so.output_file = p.log;
  std::vector<std::string> argv = e.command;
  argv[0] = exe;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = proc::start(argv, so, spawn_error);
  if (pid < 0) return std::nullopt;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  Ending end;
  int status = 0;
  bool stopped = false;
  // Ends the suite's whole process group and waits until no member is left, so nothing of it
  // writes into the bundle after qualify has moved on.
  auto stop_group = [&](int first_signal) {
    stopped = true;
    const proc::GroupEnd g = proc::end_group(pid, first_signal, grace_s, false);
    if (g.leader_status) status = *g.leader_status;
  };
  JournalTail tail;
  double last_report = -1;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (int sig = g_signal.load()) {
      end.status = SuiteStatus::interrupted;
      end.text = "qualify was interrupted by " + signal_name(sig) + "; forwarded to the suite";
      stop_group(signal_to_forward(sig));
      break;
    }
    if (elapsed() > e.timeout_s) {
      end.status = SuiteStatus::timeout;
      end.text = "timed out after " + std::to_string(static_cast<int>(e.timeout_s)) +
                 " s (SIGTERM, then SIGKILL after " + std::to_string(static_cast<int>(grace_s)) + " s)";
      stop_group(SIGTERM);
      break;
    }
    if (elapsed() - last_report >= 0.5) {
      if (tail.path.empty())
        for (const auto& f : files_with_prefix(p.journal_dir, file_name_for(e.name), ".jsonl"))
          if (tail.path.empty() || f.find(".rank0.") != std::string::npos) tail.path = f;
      if (!tail.path.empty()) tail.poll();
      on_progress(tail.done, tail.total, elapsed());
      last_report = elapsed();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The leader exited by itself: what it left running in its group (a rank, a helper) ends too.
  if (!stopped) proc::end_group(pid, SIGTERM, grace_s, true);
  end.duration_s = elapsed();
  if (!tail.path.empty()) tail.poll();
  end.cases_total = tail.total;
  if (WIFEXITED(status)) end.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) end.signal = WTERMSIG(status);
  if (stopped) return end;
  if (end.signal) {
    end.status = SuiteStatus::crashed;
    end.text = "killed by " + signal_name(*end.signal);
  } else if (*end.exit_code == 0) {
    end.status = SuiteStatus::passed;
  } else if (*end.exit_code == e.skip_code) {
    end.status = SuiteStatus::skipped;
  } else {
    end.status = SuiteStatus::failed;
    end.text = "the process exited with status " + std::to_string(*end.exit_code);
  }
  return end;
}

// Step 3a: an entry that writes no results of its own (a `cmake -P` script, a shell check) is one
// case carrying its ending, as CTest judges it.
void judge_by_exit_status(const TestEntry& e, const std::string& ending, Outcome& o) {
  auto& r = o.run;
  const Status st = r.status == SuiteStatus::passed    ? Status::passed
                    : r.status == SuiteStatus::skipped ? Status::skipped
                                                       : Status::error;
  std::string why = !ending.empty() ? ending : r.reason;
  if (st == Status::skipped && why.empty()) why = "exited with the skip code " + std::to_string(e.skip_code);
  if (st == Status::error && why.empty()) why = std::string("ended ") + bundle::suite_status_name(r.status);
  junit::Case c;
  c.binary = e.name;
  c.suite = "ctest";
  c.name = e.name;
  c.status = st;
  c.message = junit::one_line(why);
  c.detail = why;
  c.time_s = r.duration_s;
  o.cases.push_back(c);
  if (st == Status::error && r.reason.empty()) r.reason = why;
}

// Step 3b: the cases of an entry that writes its own JUnit (GoogleTest's XML, or the JUnit of a
// suite that is not GoogleTest): from its XML when every file is there and well-formed, otherwise
// from its journal. Under MPI rank 0 writes <name>.xml with the verdict reduced over ranks, the
// others <name>.rank<r>.xml: the cases come from rank 0's file, every file is kept and validated.
void read_own_results(const TestEntry& e, const RunPaths& p, const std::string& ending, Outcome& o) {
  auto& r = o.run;
  const std::string xml_dir = fs::path(p.xml_prefix).parent_path().string();
  auto xmls = files_with_prefix(xml_dir, fs::path(p.xml_prefix).filename().string(), ".xml");
  std::string primary = p.xml_prefix + ".xml", xml_problem;
  if (!fs::exists(primary) && fs::exists(p.xml_prefix + ".rank0.xml")) primary = p.xml_prefix + ".rank0.xml";
  bool have_primary = false;
  for (const auto& f : xmls) {
    try {
      auto cs = junit::read_file(f, e.name);
      if (f == primary) {
        o.cases = std::move(cs);
        have_primary = true;
        const auto props = junit::properties(xml::parse_file(f));
        if (auto it = props.find(kSimulatedHostsProperty); it != props.end()) r.mode = it->second;
      }
      r.xml.push_back(fs::relative(f, p.bundle).string());
    } catch (const xml::XmlError& err) {
      xml_problem = err.what();
      fs::rename(f, f + ".broken");  // kept for a person, but out of the bundle's readable set
    }
  }
  if (!have_primary && xml_problem.empty()) xmls.clear();
  const bool ended_early = bundle::ended_early(r.status);
  if (!xmls.empty() && xml_problem.empty() && r.status != SuiteStatus::timeout &&
      r.status != SuiteStatus::interrupted) {
    if (r.status == SuiteStatus::failed || r.status == SuiteStatus::crashed) {
      const bool any_fail = std::any_of(o.cases.begin(), o.cases.end(),
                                        [](const junit::Case& c) { return junit::failing(c.status); });
      // The cases saw no failure but the process did not succeed (teardown crash, ranks disagreeing).
      if (!any_fail)
        o.cases.push_back(process_case(e.name, "exit", "all cases passed, but " + ending, r.duration_s));
      r.reason = ending;
    }
    return;
  }
  // No readable results: the journal says which cases finished and which one was running.
  o.cases.clear();
  r.xml.clear();
  r.synthesized = true;
  std::string how =
      ending.empty() ? "exited with status " + std::to_string(r.exit_code.value_or(-1)) : ending;
  if (!xml_problem.empty())
    how += "; its results XML is unreadable: " + xml_problem;
  else if (xmls.empty())
    how += " without writing its results XML";
  // A launcher that failed before any test process ran says why in the suite's log.
  if (xmls.empty())
    if (const std::string why = launcher_cause(file_tail(p.log, 64 * 1024)); !why.empty()) how += ": " + why;
  std::string cause;
  o.cases = cases_from_journal(files_with_prefix(p.journal_dir, file_name_for(e.name), ".jsonl"), e.name, how,
                               &cause);
  r.reason = how + (cause.empty() ? "" : "; first cause: " + cause);
  const bool died = r.status != SuiteStatus::passed && r.status != SuiteStatus::skipped;
  const bool open_case = std::any_of(o.cases.begin(), o.cases.end(),
                                     [](const junit::Case& c) { return c.status == Status::error; });
  // Nothing was running when it died (or no journal): one error case carries the ending.
  if ((died || ended_early) && !open_case) o.cases.push_back(process_case(e.name, "exit", how, r.duration_s));
  // Exit 0 without results, or with results it could not read, is not a pass.
  if (r.status == SuiteStatus::passed) {
    r.status = SuiteStatus::failed;
    if (!open_case) o.cases.push_back(process_case(e.name, "exit", how, r.duration_s));
  }
}

// Step 4: an entry that passes by failing (a PASS_REGULAR_EXPRESSION or WILL_FAIL self-test): its
// failures are the expectation, and its XML leaves a CI server's **/*.xml glob.
void apply_expected_failures(const RunPaths& p, Outcome& o) {
  auto& r = o.run;
  if (r.reason.rfind("expected", 0) != 0) return;
  for (auto& c : o.cases)
    if (junit::failing(c.status)) {
      c.status = Status::passed;
      c.message = junit::one_line(r.reason + ": " + c.message);
    }
  for (auto& x : r.xml) {
    const fs::path from = fs::path(p.bundle) / x;
    if (from.extension() != ".xml") continue;
    fs::path to = from;
    to.replace_extension(".expected-failures.junit");
    std::error_code ec;
    fs::rename(from, to, ec);
    if (!ec) x = fs::relative(to, p.bundle).string();
  }
}

// A folder of one suite run beside the bundle (or, where the folder above the bundle is not
// writable, in the temporary folder), with the bundle's layout: the suite's processes write only
// there. Removed when this goes, after collect_into() has copied what the suite left.
struct Staging {
  std::string root;
  explicit Staging(const std::string& bundle) {
    const fs::path b = fs::path(bundle).lexically_normal();
    std::string tmpl = (b.parent_path() / ("." + b.filename().string() + ".suite-XXXXXX")).string();
    std::error_code ec;
    if (!::mkdtemp(tmpl.data())) {
      const int beside = errno;
      tmpl = (fs::temp_directory_path(ec) / "gpucts-suite-XXXXXX").string();
      if (!::mkdtemp(tmpl.data()))
        throw std::runtime_error("cannot create a staging folder beside " + bundle + ": " +
                                 std::strerror(beside) +
                                 ", nor in the temporary folder: " + std::strerror(errno));
    }
    root = tmpl;
    for (const auto& sub : kBundleFolders) fs::create_directories(fs::path(root) / sub, ec);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }

  // Every regular file the suite left, copied to the same place in the bundle: a copy, so that a
  // process still holding a file open writes into the staging folder, never into the bundle. Links
  // and other non-files are left out. Returns what could not be copied ("" when nothing).
  std::string collect_into(const std::string& bundle) const {
    std::string failed;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_symlink() || !it->is_regular_file()) continue;
      const fs::path to = fs::path(bundle) / fs::relative(it->path(), root);
      try {
        fs::create_directories(to.parent_path());
        copy_file_atomic(it->path().string(), to.string());
      } catch (const std::exception& x) {
        failed += (failed.empty() ? "" : "; ") + std::string(x.what());
      }
    }
    return failed;
  }
};

// The processes that carry `mark` (NAME=VALUE) in their environment, other than this one.
std::vector<pid_t> processes_marked(const std::string& mark) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
    if (pid == ::getpid()) continue;
    std::ifstream in(d.path() / "environ", std::ios::binary);  // another user's: unreadable, skipped
    for (std::string kv; std::getline(in, kv, '\0');)
      if (kv == mark) {
        out.push_back(pid);
        break;
      }
  }
  return out;
}

// Processes of the suite that left its process group (setsid, a daemon, an MPI rank its launcher put
// in a group of its own) outlive the end of the group: found by the suite's own environment (its
// staging journal folder, unique to this run) and killed, again until none is left or 5 s have
// passed (one that cannot be killed writes only into the staging folder).
void end_strays(const std::string& mark) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::set<pid_t> killed;
  for (;;) {
    for (pid_t pid : processes_marked(mark)) {
      ::kill(pid, SIGKILL);
      killed.insert(pid);
    }
    // Those handed to this process (adopt_orphans) are reaped here; others' parents reap theirs.
    for (auto it = killed.begin(); it != killed.end();) {
      const pid_t w = ::waitpid(*it, nullptr, WNOHANG);
      it = w == *it || (w < 0 && errno == ECHILD) ? killed.erase(it) : std::next(it);
    }
    if ((killed.empty() && processes_marked(mark).empty()) || std::chrono::steady_clock::now() > until)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

SuiteKind TestEntry::kind() const {
  for (const auto& a : command) {
    if (a.rfind("--gtest_", 0) == 0) return SuiteKind::gtest;
    if (a.rfind(kJunitOutputFlag, 0) == 0) return SuiteKind::junit;
  }
  return SuiteKind::exit_status;
}

namespace {

// A suite that cannot start is a failure of the tree under qualification, never "not run".
void cannot_start(const TestEntry& e, const std::string& why, Outcome& o) {
  o.run.status = SuiteStatus::failed;
  o.run.reason = why;
  o.cases.push_back(process_case(e.name, "start", why, 0));
  o.run.cases_done = o.run.cases_total = 1;
}

// Runs the suite `e` (its paths `p`, in its staging folder), ends every process it started and
// judges it from what it left there.
void run_in(const TestEntry& e, const RunPaths& p, double grace_s,
            const std::function<void(int, int, double)>& on_progress, Outcome& o) {
  auto& r = o.run;
  // The launcher as recorded (an mpiexec path from the build machine), else its name on PATH.
  const auto exe = e.command.empty() ? std::nullopt : find_program(e.command[0]);
  if (!exe)
    return cannot_start(
        e, e.command.empty() ? "empty command" : "cannot start: " + e.command[0] + " not found", o);
  std::string spawn_error;
  const auto end = supervise(e, p, *exe, grace_s, on_progress, &spawn_error);
  end_strays("GPUCTS_JOURNAL_DIR=" + p.journal_dir);
  if (!end) return cannot_start(e, "cannot start " + *exe + ": " + spawn_error, o);
  r.status = end->status;
  r.duration_s = end->duration_s;
  r.exit_code = end->exit_code;
  r.signal = end->signal;
  std::string ending = end->text;
  apply_ctest_rules(e, p.log, r, &ending);
  if (e.kind() == SuiteKind::exit_status) {
    judge_by_exit_status(e, ending, o);
    r.cases_done = r.cases_total = 1;
    return;
  }
  read_own_results(e, p, ending, o);
  if (r.status == SuiteStatus::passed && o.cases.empty()) {
    // A suite that ran no case proved nothing: not a pass.
    const std::string why = "exited with status 0 but ran no case";
    r.status = SuiteStatus::failed;
    r.reason = r.reason.empty() ? why : r.reason + "; " + why;
    o.cases.push_back(process_case(e.name, "exit", r.reason, r.duration_s));
  }
  apply_expected_failures(p, o);
  if (!r.synthesized) set_case_times(o.cases, p.journal_dir, e.name);
  r.cases_done = junit::count(o.cases).total();
  r.cases_total = std::max(end->cases_total, r.cases_done);
  if (r.status == SuiteStatus::skipped && r.reason.empty()) r.reason = "every case skipped";
}

}  // namespace

Outcome run_one(const TestEntry& e, const RunPaths& p, double grace_s,
                const std::function<void(int, int, double)>& on_progress) {
  Outcome o;
  auto& r = o.run;
  r.name = e.name;
  r.command = e.command;
  r.labels = e.labels;
  r.log = fs::relative(p.log, p.bundle).string();
  clear_stale_results(e, p);
  // The suite's processes write into a staging folder of their own; the bundle gets copies of what
  // they left only once every one of them is gone, so nothing they started writes into it later.
  std::optional<Staging> stage;
  try {
    stage.emplace(p.bundle);
  } catch (const std::exception& x) {
    cannot_start(e, x.what(), o);
    return o;
  }
  const RunPaths staged = run_paths(stage->root, e.name);
  run_in(relocate(e, Tree{}, staged), staged, grace_s, on_progress, o);
  if (const std::string failed = stage->collect_into(p.bundle); !failed.empty())
    r.reason +=
        (r.reason.empty() ? "" : "; ") + std::string("results not collected into the bundle: ") + failed;
  return o;
}

}  // namespace cts::qualify
