// The qualification bundle: the folder `gpucts qualify` writes and `gpucts report` reads.
//
//   manifest.json       schema "gpucts.bundle/1", gpucts version, verdict, one entry per suite run
//   junit.xml           every case of every binary, merged (synthesized cases for binaries that died)
//   gtest/<test>*.xml   each binary's own gtest XML (one per rank under MPI)
//   journal/<test>*.jsonl, logs/<test>.log   the append-only case journal and the output of each binary
//   fingerprints/*.json the environment fingerprint of each host and rank (gpucts.fingerprint/1)
//   check.json          the `gpucts check` result, or {"available": false, "reason": ...}
//   bandwidth/<test>.json, .csv   the perf suite's points (gpucts.bandwidth/1)
//   summary.md, summary.html      verdict first, failures, skips by reason, environment, plots
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/bandwidth.hpp"
#include "results/junit.hpp"

namespace cts::bundle {

inline constexpr const char* kBundleSchema = "gpucts.bundle/1";

// Bad input: not a bundle, truncated or malformed file, wrong schema. Message is one line.
class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a suite entry ended. The manifest keeps the strings ("passed", "not_run", ...):
// suite_status_name() writes them and parse_suite_status() reads them.
enum class SuiteStatus { passed, failed, skipped, timeout, interrupted, crashed, not_run };
const char* suite_status_name(SuiteStatus s);
std::optional<SuiteStatus> parse_suite_status(const std::string& text);
// crashed, timeout, interrupted: the suite did not finish, whatever its cases said.
inline bool ended_early(SuiteStatus s) {
  return s == SuiteStatus::crashed || s == SuiteStatus::timeout || s == SuiteStatus::interrupted;
}

struct SuiteRun {
  std::string name;                  // CTest entry name, e.g. gpucts_collectives_np2
  std::vector<std::string> command;  // as run
  std::vector<std::string> labels;
  SuiteStatus status = SuiteStatus::not_run;
  std::optional<int> exit_code, signal;
  double duration_s = 0;
  std::vector<std::string> xml;  // bundle-relative
  std::string log;               // bundle-relative
  std::string reason;            // why not run / how it ended, for a person
  bool synthesized = false;      // its cases came from the journal, not from gtest XML
  int cases_total = 0, cases_done = 0;
  // What kind of run its results are, where that bounds what they prove ("2 simulated hosts on one
  // GPU over NCCL's socket transport: ..."): the binary's gpucts.simulated_hosts property.
  std::string mode;
  int gpus = 0;         // GPUs the entry needs
  bool missed = false;  // not_run, though it applies to this machine (a library it needs is absent)
};

// A known upstream defect accepted with `qualify --accept-known ID`: the failures it explains are
// recorded as they ran and waived by the verdict (report/verdict.hpp), never dropped.
struct Waiver {
  std::string id;  // nccl_defects.csv or torch_defects.csv id, e.g. nccl-1950, torch-190745
  std::string title, link, fix;
  int cases = 0;     // failed cases it waived
  int findings = 0;  // check findings it waived (nccl-known-defect, torch-known-defect)
};

struct Manifest {
  std::string schema = kBundleSchema;
  std::string gpucts_version;
  std::string created;  // ISO 8601 UTC
  std::string host;
  std::string tree;  // "build:/path" or "install:/prefix"
  std::string
      verdict;  // report/verdict.hpp's decide() as qualify wrote it: pass | waived | fail | no_gpu | not_run
  std::string verdict_reason;               // its first reason (the summary and `gpucts report` decide again)
  std::vector<std::string> accepted_known;  // --accept-known as given
  std::vector<Waiver> waivers;              // accepted defects that waived something
  // Whether the selection ran NCCL suites (an entry needing a GPU); recorded for a reader. A known
  // defect is judged by its severity alone: an error only under --strict-defects, whatever ran.
  bool nccl_selected = true;
  bool interrupted = false;
  double elapsed_s = 0;
  // What a later reader needs to decide the bundle again, and to compare it with another.
  int gpus_visible = -1;  // -1: not recorded (a bundle of an older gpucts)
  std::optional<int> gpus_expected;
  std::string no_gpu_detail;  // why no GPU is visible, in words
  std::string level;          // quick | standard | full
  nlohmann::json selection =
      nlohmann::json::object();  // {"labels": [...], "exclude_label": ..., "tests": ..., ...}
  std::string gpucts_revision;   // git describe of the gpucts that ran, "" where unknown
  nlohmann::json settings = nlohmann::json::object();  // NCCL_*/TORCH_* in force, NVLS state
  // What the suites were linked against ("libtorch" -> "libtorch 2.11.0", from the build's
  // gpucts_built_against.txt); empty where not recorded (a bundle of an older gpucts).
  std::map<std::string, std::string> built_against;
  std::vector<SuiteRun> suites;
};
nlohmann::json to_json(const Manifest& m);
Manifest manifest_from_json(const nlohmann::json& j, const std::string& origin);

struct Bundle {
  std::string dir;
  Manifest manifest;
  std::vector<junit::Case> cases;
  std::vector<std::pair<std::string, nlohmann::json>> fingerprints;  // file name -> JSON
  nlohmann::json check;                                              // check.json as written
  std::vector<std::pair<std::string, bw::Run>> bandwidth;            // test name -> run
};

// check.json as `gpucts check --json` writes it (or {"available": false, "reason": ...}): every
// field the summary and the verdict read has its type. Throws BundleError("origin: field: ...").
nlohmann::json check_from_json(const nlohmann::json& j, const std::string& origin);

// `dir`/`relative` for reading, where it lies inside the bundle: a relative path without "..", no
// symbolic link on the way, and its real path under the bundle's. Else BundleError("DIR: RELATIVE:
// refused, not read: a symbolic link: ...") (or "...: no such file: ..."): a file that leads out of
// the bundle is never read. Every reader of a bundle's files opens them through it.
std::string bundle_file(const std::string& dir, const std::string& relative);

// Reads and validates a whole bundle; throws BundleError("DIR: ...") naming the bad file (a file
// refused by bundle_file among them). The cases
// are read as they ran: a waived failure that junit.xml shows as a skip is a failure again.
Bundle load(const std::string& dir);

// A fingerprint as "what" -> "value" rows for the environment tables (driver, CUDA, NCCL, ...).
std::vector<std::pair<std::string, std::string>> environment_rows(const nlohmann::json& fingerprint);
// The stack's versions as JUnit testsuite properties (gpucts.driver, gpucts.cuda_runtime,
// gpucts.nccl_runtime, gpucts.nccl_header, gpucts.torch, ...), from one fingerprint's rows.
std::map<std::string, std::string> junit_properties(const nlohmann::json& fingerprint);
// Every host/rank's rows merged (a value that differs between fingerprints shows each with its label),
// with the libtorch the C++ suites were linked against beside the python's torch.
std::vector<std::pair<std::string, std::string>> environment(const Bundle& b);

// "nccl-1950,nccl-788" -> its ids (the value of gpucts.known_defect and gpucts.waived).
std::vector<std::string> split_ids(const std::string& s);
// The defect id an nccl-known-defect (nccl_defects.csv) or torch-known-defect (torch_defects.csv)
// finding cites, "" for other findings.
std::string defect_of_finding(const nlohmann::json& finding);

// The waiver of `id` in `waivers`, added (with no counts) where there is none yet.
Waiver& waiver_for(std::vector<Waiver>& waivers, const std::string& id);

// Helpers shared by the writers.
std::string read_text(const std::string& path);                     // throws BundleError
void write_text(const std::string& path, const std::string& text);  // throws BundleError
std::string utc_now_iso();
std::string utc_now_compact();  // 20261203T220144Z, as ci/qualify names its bundle

}  // namespace cts::bundle
