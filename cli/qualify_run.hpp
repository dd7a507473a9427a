// What `gpucts qualify` runs and how: the suite list (from a build tree through ctest, or from the
// install tree's share/gpucts/tests.json, both CTest's --show-only=json-v1 format), one child per
// suite in its own process group with a deadline, SIGINT/SIGTERM forwarded, and the case results
// gathered from its gtest XML or, when it died before writing that, from its journal.
#pragma once
#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/bundle.hpp"
#include "results/junit.hpp"

namespace cts::qualify {

// How an entry's results are read:
//   gtest        a GoogleTest binary (its command passes --gtest_* flags): its gtest XML, by case
//   junit        a suite that is not GoogleTest but writes its own JUnit where its command's
//                `--junit-output=PATH` says (the Python suites), and the same journal as the C++
//                suites, so a crash mid-run still leaves the finished cases: by case
//   exit_status  anything else (a `cmake -P` script, a shell check): one case, by exit status as CTest
enum class SuiteKind { gtest, junit, exit_status };
inline const std::string kJunitOutputFlag = "--junit-output=";

struct TestEntry {
  std::string name;
  std::vector<std::string> command;
  std::vector<std::string> labels{};
  std::vector<std::string> env{};  // NAME=VALUE, as CTest would set them
  double timeout_s = 600;
  std::string working_dir{};
  int skip_code = 77;
  int gpus = 0;  // GPUs the entry needs (gpucts_gpu_needs.txt), 0: none
  // CTest's own verdict rules, honoured as ctest would: PASS_REGULAR_EXPRESSION (the output must
  // match one; the exit status is then ignored), FAIL_REGULAR_EXPRESSION, WILL_FAIL.
  std::vector<std::string> pass_regex{}, fail_regex{};
  bool will_fail = false;
  bool run_serial = false;  // CTest's RUN_SERIAL: nothing runs beside it (qualify --jobs)
  SuiteKind kind() const;
};

struct Tree {
  std::string kind;        // "build" or "install"
  std::string root;        // build directory or install prefix
  std::string libexec;     // where the gpucts_* binaries are (install tree)
  std::string tests_json;  // install: share/gpucts/tests.json
};

// Finds the tree this gpucts runs from (or `build_dir` when given). Throws bundle::BundleError
// with what is missing.
Tree locate_tree(const std::optional<std::string>& build_dir);

// Reads CTest's --show-only=json-v1 document. `origin` names it in errors.
std::vector<TestEntry> parse_ctest_json(const std::string& text, const std::string& origin);
// The suites of a tree: build: `ctest --show-only=json-v1` there; install: tests.json with the
// build-tree paths of gpucts_* binaries rewritten to libexec/gpucts. Without either, every
// gpucts_* executable found, run plainly.
std::vector<TestEntry> discover(const Tree& t, std::string* how);

// The folders of a bundle that suites write into (and of each suite's staging folder).
inline const std::vector<std::string> kBundleFolders = {"gtest",        "journal",   "logs",
                                                        "fingerprints", "bandwidth", "rank-logs"};

struct RunPaths {
  std::string bundle;        // bundle root
  std::string xml_prefix;    // bundle/gtest/<name>   (gtest writes <name>.xml, MPI ranks may add a suffix)
  std::string journal_dir;   // bundle/journal
  std::string log;           // bundle/logs/<name>.log
  std::string bandwidth;     // bundle/bandwidth/<name> (the perf suite adds .json / .csv)
  std::string fingerprints;  // bundle/fingerprints
};

// How much a qualification runs, as `dcgmi diag -r` has levels:
//   quick     the entries labelled `quick` (the one-rank collectives with one size per (collective,
//             dtype, op): GPUCTS_COLL_SWEEP=smoke; the one-rank bandwidth at 3 points:
//             GPUCTS_BW_SWEEP=kQuickBandwidthSweep), after the check
//   standard  every entry of the stack (the default), without the simulated multi-rank ones
//   full      standard and the entries labelled `multi-rank-sim` (several ranks on one GPU)
// gpucts's own tests (`harness`, `self-test`, `install-only`) are in no level: a --label that names
// them asks.
enum class Level { quick, standard, full };
inline constexpr const char* kQuickLabel = "quick";
inline constexpr const char* kSimLabel = "multi-rank-sim";
inline constexpr const char* kQuickBandwidthSweep = "8,1M,1G";
// "quick", "standard", "full"; throws std::invalid_argument naming the levels.
Level parse_level(const std::string& text);
const char* level_name(Level l);

// What `gpucts qualify` selects: the level, then --label / --exclude-label / --tests /
// --exclude-tests as ctest -L/-LE/-R/-E (regular expressions, searched). A label outside the
// level (a harness label, multi-rank-sim below full) is still taken when --label names it.
struct Selection {
  Level level = Level::standard;
  std::vector<std::string> labels;  // every one must match a label of the entry (ctest -L, repeated)
  std::optional<std::string> exclude_label, tests, exclude_tests;
};
// The selected entries in their order, with the environment their level sets added (an entry's
// own value of the same variable is replaced). The expressions are CMake's (cli/ctest_regex.hpp);
// throws CtestRegexError naming the option for a bad or oversized one.
std::vector<TestEntry> select_tests(const std::vector<TestEntry>& all, const Selection& s);

// Reads "<test>=<n>" lines (the build's gpucts_gpu_needs.txt) into the entries' `gpus`.
void apply_gpu_needs(std::vector<TestEntry>& tests, const std::string& needs_file);

// The files of the suite `name` under `root` (a bundle, or a suite's staging folder of the same layout).
RunPaths run_paths(const std::string& root, const std::string& name);

// Rewrites the entry's output paths (gtest XML, journal, logs) into the bundle.
TestEntry relocate(const TestEntry& e, const Tree& t, const RunPaths& p);

struct Progress {
  std::string suite;
  int index = 0, count = 0;
  int cases_done = 0, cases_total = 0;
  double suite_elapsed_s = 0, total_elapsed_s = 0;
};

struct Outcome {
  bundle::SuiteRun run;
  std::vector<junit::Case> cases;
};

// Runs argv (PATH lookup) in its own process group with `env` added, stdout (and stderr when
// `with_stderr`) into output_file, killed at the deadline or on a signal to qualify.
// Returns the exit status, -1 when it did not exit normally.
int run_bounded(const std::vector<std::string>& argv, const std::vector<std::string>& env, double timeout_s,
                const std::string& output_file, bool with_stderr);

// Set by the signal handler of `gpucts qualify`; the runner forwards it to the child's group.
extern std::atomic<int> g_signal;
// Every signal whose default action would end qualify without a bundle: each is caught, stops the
// running suite and still writes the bundle, marked interrupted (SIGHUP: the terminal or ssh
// session went away). SIGPIPE is ignored. Only SIGKILL is left, and the children die with it
// (fixtures/probe/spawn.hpp: die_with_parent).
inline constexpr int kEndingSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
void install_signal_handlers();
// What reaches the suite's group for a signal qualify received: SIGINT as it is (a Ctrl-C), any
// other as SIGTERM, the signal every suite journals as an interruption.
int signal_to_forward(int received);

// Runs one suite to completion, deadline or interruption, and gathers its cases. The suite writes
// into a staging folder beside the bundle; once its process group and every process of its that
// left the group (found by its environment) are gone, what it wrote is copied into the bundle and
// the staging folder removed: nothing the suite started writes into the bundle afterwards.
Outcome run_one(const TestEntry& e, const RunPaths& p, double grace_s,
                const std::function<void(int done, int total, double elapsed)>& on_progress);

// Cases from the journals (report/journal_report.hpp); a case that started and never ended
// becomes an error naming how the process ended (`ending`). Used when gtest wrote no XML.
// `first_cause` receives the reader's first cause across ranks ("" when none).
std::vector<junit::Case> cases_from_journal(const std::vector<std::string>& journal_files,
                                            const std::string& binary, const std::string& ending,
                                            std::string* first_cause);

}  // namespace cts::qualify
