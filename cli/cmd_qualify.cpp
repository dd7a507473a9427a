// gpucts qualify: runs every suite this machine can run and writes the qualification bundle.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/args.hpp"
#include "cli/bundle_dir.hpp"
#include "cli/commands.hpp"
#include "cli/ctest_regex.hpp"
#include "cli/qualify_check.hpp"
#include "cli/qualify_load.hpp"
#include "cli/qualify_options.hpp"
#include "cli/qualify_run.hpp"
#include "cli/qualify_schedule.hpp"
#include "fixtures/probe/environment.hpp"
#include "fixtures/probe/gpu_requirement.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/simulated_hosts.hpp"
#include "matrix/input.hpp"
#include "matrix/matrix.hpp"
#include "matrix/nccl_defects.hpp"
#include "report/bundle.hpp"
#include "report/prometheus.hpp"
#include "report/run_notes.hpp"
#include "report/summary.hpp"
#include "report/verdict.hpp"
#include "results/file_names.hpp"
#include "results/terminal_text.hpp"

#ifndef GPUCTS_VERSION
#define GPUCTS_VERSION "0.0.0"
#endif
#ifndef GPUCTS_REVISION
#define GPUCTS_REVISION ""
#endif

namespace fs = std::filesystem;

namespace cts::cli {

const CommandSpec kQualifySpec = {
    {{"output", "DIR", "the bundle folder, new or empty (default: qualify-<UTC time>, as ci/qualify)"},
     {"build-dir", "DIR", "the build tree whose suites to run (default: the tree gpucts sits in)", Kind::dir},
     {"tests-json", "FILE", "an explicit suite list (ctest --show-only=json-v1 format)", Kind::file},
     repeatable({"label", "REGEX",
                 "only entries with a label matching it; repeated: every one must match (ctest -L)"}),
     {"exclude-label", "REGEX", "leave out entries with a label matching it (ctest -LE)"},
     {"tests", "REGEX", "only entries whose name matches it (ctest -R)"},
     {"exclude-tests", "REGEX", "leave out entries whose name matches it (ctest -E)"},
     {"timeout", "S", "deadline of each suite in seconds, 0 for none (default: its CTest TIMEOUT)",
      Kind::seconds},
     {"grace", "S", "seconds from SIGTERM to SIGKILL at a deadline or interrupt (default 10)", Kind::seconds},
     {"jobs", "N", "suites side by side, as ctest -j; perf suites always run alone (default 1)",
      Kind::positive},
     repeatable({"fingerprint", "FILE",
                 "a fingerprint probed elsewhere, checked with this host's (repeatable)", Kind::file}),
     {"python", "EXE", kPythonHelp},
     {"mpi-ranks", "N", "also probe N ranks under mpiexec, one fingerprint each (cross-host check)",
      Kind::positive},
     {"mpiexec-args", "ARGS", "extra mpiexec arguments for --mpi-ranks, e.g. '--host a,b'"},
     {"probe-rank-into", "DIR", "internal: the per-rank probe that --mpi-ranks runs"},
     {"level",
      "L",
      "quick, standard (default) or full, as dcgmi diag -r (docs/qualify.md)",
      {"quick", "standard", "full"}},
     {"expect-gpus", "N", "fail unless at least N GPUs are visible (default $GPUCTS_EXPECT_GPUS)",
      Kind::count},
     {"status-file", "FILE",
      "also write the verdict as one word (pass, waived, fail, no_gpu, not_run) for a node label"},
     {"prom", "FILE", "also write a node_exporter textfile: verdict, counts, 8 B latency and 1 GiB busbw"},
     repeatable({"accept-known", "ID[,ID]",
                 "waive failures (and check findings) of these nccl_defects.csv or torch_defects.csv ids: "
                 "verdict PASS (waived: ID)"})},
    {{"no-python", "do not probe torch and Lightning through python"},
     {"list", "print the selected suites and exit"},
     {"run-all", "run entries that need more GPUs than are visible"},
     {"strict-defects",
      "a known NCCL or torch defect matched by version alone is an error (see gpucts check)"}},
    "usage: gpucts qualify [OPTIONS]\n"
    "Runs every suite of this tree (a build tree through ctest's test list; an install tree through\n"
    "share/gpucts/tests.json and libexec/gpucts; or the list in --tests-json), one at a time, each in\n"
    "its own process group with its CTest TIMEOUT (or --timeout), and writes the bundle (docs/qualify.md):\n"
    "manifest.json, junit.xml, gtest/, journal/, logs/, rank-logs/, fingerprints/, check.json, check.txt,\n"
    "bandwidth/, summary.md, summary.html, plots/. SIGINT/SIGTERM stop the running suite and still write\n"
    "the bundle. An entry that needs more GPUs than are visible is reported as not run.\n"
    "Known NCCL and torch defects: a case of this run that reproduces one fails the run unless\n"
    "--accept-known names"
    " it; one that no case here could meet is listed, not judged.\n"
    "Exit status: 0 pass (or pass with waivers), 1 fail (or interrupted), 2 bad usage or bad input,\n"
    "3 no GPU visible: nothing failed but the GPU suites did not run, 4 not run: a selected suite that\n"
    "applies here did not run (a library it needs is absent) or nothing selected ran."};

namespace {

std::string clock_str(double s) {
  int t = static_cast<int>(s);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

// A selection pattern as CTest reads it (CMake's regular expressions, matched without recursion);
// a pattern CMake would refuse, or one too long or deep, is a usage error naming the option.
void check_regex(const std::string& opt, const std::string& text) {
  try {
    compile_ctest_regex("--" + opt, text);
  } catch (const CtestRegexError& e) {
    throw UsageError(e.what());
  }
}

// <dir>/<name>.json for a fingerprint given by the user: its file name made safe, and "-2", "-3" ...
// added where another one (this host's own) already has it.
std::string unused_path(const fs::path& dir, const std::string& file) {
  std::string stem =
      file_name_for(fs::path(file).stem().string().empty() ? file : fs::path(file).stem().string());
  fs::path p = dir / (stem + ".json");
  for (int k = 2; fs::exists(fs::symlink_status(p)); ++k)
    p = dir / (stem + "-" + std::to_string(k) + ".json");
  return p.string();
}

// Hidden mode run under mpiexec by --mpi-ranks: this rank's fingerprint into DIR.
int probe_rank_into(const std::string& dir, const ProbeOptions& po) {
  Fingerprint fp = probe_fingerprint(po);
  if (!fp.rank && launcher_rank() >= 0) fp.rank = launcher_rank();
  std::string name = file_name_for(fp.host.value_or("unknown-host")) + ".rank" +
                     std::to_string(fp.rank.value_or(std::max(launcher_rank(), 0))) + ".json";
  bundle::write_text((fs::path(dir) / name).string(), to_json(fp).dump(2) + "\n");
  return 0;
}

// Runs `mpiexec -n N ARGS <this gpucts> qualify --probe-rank-into DIR` with a deadline and loads
// what the ranks wrote. Returns "" or what went wrong (the run then fails on it; qualify goes on).
std::string probe_ranks(int ranks, const std::string& extra, const std::string& dir, const ProbeOptions& po,
                        std::vector<Fingerprint>* fps) {
  const char* env = std::getenv("GPUCTS_MPIEXEC");
  std::vector<std::string> cmd = {env && *env ? env : "mpiexec", "-n", std::to_string(ranks)};
  std::stringstream ss(extra);
  for (std::string w; ss >> w;) cmd.push_back(w);
  for (const std::string& w : {fs::read_symlink("/proc/self/exe").string(), std::string("qualify"),
                               std::string("--probe-rank-into"), dir})
    cmd.push_back(w);
  if (!po.python) cmd.push_back("--no-python");
  if (!po.python_exe.empty()) cmd.insert(cmd.end(), {"--python", po.python_exe});
  const std::string log = "logs/fingerprint_ranks.log";
  int rc = qualify::run_bounded(cmd, {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}, 180,
                                (fs::path(dir).parent_path() / log).string(), true);
  size_t wrote = 0;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().find(".rank") != std::string::npos) {
      try {
        fps->push_back(load_fingerprint_file(f.path().string()));
        ++wrote;
      } catch (const std::exception& e) {
        return std::string("a rank's fingerprint does not read: ") + e.what();
      }
    }
  const std::string how = rc < 0 ? "did not start or did not end (a deadline of 180 s, a signal)"
                                 : "ended with status " + std::to_string(rc);
  if (rc != 0)
    return cmd.front() + " " + how + "; " + std::to_string(wrote) + " of " + std::to_string(ranks) +
           " ranks wrote a fingerprint (see " + log + ")";
  if (wrote != static_cast<size_t>(ranks))
    return std::to_string(wrote) + " of " + std::to_string(ranks) + " ranks wrote a fingerprint (see " + log +
           ")";
  return "";
}

// --accept-known ID[,ID]: each must name a row of nccl_defects.csv or torch_defects.csv (a typo
// must not read as a waiver that covers nothing).
std::vector<std::string> accepted_defects(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::stringstream ss(v);
    for (std::string id; std::getline(ss, id, ',');) {
      if (id.empty()) continue;
      if (!find_defect(builtin_matrix(), id)) {
        std::string known;
        for (const auto* table : {&builtin_matrix().nccl_defects, &builtin_matrix().torch_defects})
          for (const auto& d : *table)
            if (known.find(d.id) == std::string::npos) known += (known.empty() ? "" : ", ") + d.id;
        throw UsageError("--accept-known '" + excerpt(id, 60) +
                         "': no such defect in nccl_defects.csv or torch_defects.csv (known: " + known + ")");
      }
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    }
  }
  return out;
}

void describe_waiver(bundle::Waiver& w) {
  if (const NcclDefect* d = find_defect(builtin_matrix(), w.id)) {
    w.title = d->title;
    w.link = d->link;
    w.fix = d->fix_hint();
  }
}

// What one qualification knows as it goes: its options, then what each step adds.
struct Run {
  // Options.
  std::optional<int> expect_gpus;
  std::vector<std::string> accepted;
  std::string out;
  double timeout = 0, grace = 10;
  int jobs = 1;  // suites side by side (--jobs)
  qualify::Selection sel;
  qualify::CheckedOptions checked;
  bool run_all = false;
  ProbeOptions probe;  // the python of the fingerprints, which the Python suites run too
  // The tree and its suites.
  qualify::Tree tree;
  std::string how;
  std::vector<qualify::TestEntry> selected;
  // The bundle being written.
  fs::path dir;
  std::vector<Fingerprint> fps;
  std::string host;
  bundle::Manifest m;
  std::vector<junit::Case> cases;
  int visible = 0;
  std::string no_gpu;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double since() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

std::optional<int> parse_expect_gpus(const Args& a) {
  std::optional<std::string> v = a.value("expect-gpus");
  const char* env = std::getenv("GPUCTS_EXPECT_GPUS");
  if (!v && env && *env) v = std::string(env);
  if (!v) return std::nullopt;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end || n < 0 || n > 4096)
    throw UsageError(std::string(a.value("expect-gpus") ? "--expect-gpus" : "GPUCTS_EXPECT_GPUS") + " '" +
                     *v + "': expected a number from 0 to 4096");
  return static_cast<int>(n);
}

// Step 1: every option checked before anything is written.
void read_options(const Args& a, Run& r) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  r.expect_gpus = parse_expect_gpus(a);
  // Every option that names an outside thing is refused now, before a folder or file exists.
  try {
    qualify::OptionValues ov;
    ov.output = a.value("output");
    ov.build_dir = a.value("build-dir");
    ov.tests_json = a.value("tests-json");
    ov.mpi_ranks = a.values("mpi-ranks");
    ov.levels = a.values("level");
    ov.fingerprints = a.values("fingerprint");
    ov.status_file = a.value("status-file");
    ov.prom = a.value("prom");
    r.checked = qualify::check_options(ov);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  r.accepted = accepted_defects(a.values("accept-known"));
  // As ci/qualify names it: qualify-<UTC time> in the current folder.
  r.out = a.value("output").value_or("qualify-" + bundle::utc_now_compact());
  r.timeout = a.number("timeout", 0);
  r.grace = a.number("grace", 10);
  r.jobs = static_cast<int>(a.number("jobs", 1));
  if (r.jobs > 64) throw UsageError("--jobs " + std::to_string(r.jobs) + ": at most 64 suites side by side");
  if (r.timeout < 0 || r.grace < 0 || r.timeout > 1e7 || r.grace > 1e7)
    throw UsageError("--timeout and --grace must be from 0 to 10000000 seconds");
  // These paths are recorded in the bundle's JSON (UTF-8): refused now, not when writing the manifest.
  for (const char* opt : {"output", "tests-json", "build-dir"})
    if (auto v = a.value(opt); v && !is_valid_utf8(*v))
      throw UsageError(std::string("--") + opt + " '" + excerpt(*v) +
                       "': not valid UTF-8 (the bundle records it in JSON)");
  r.sel.level = r.checked.level;
  r.sel.labels = a.values("label");
  r.sel.exclude_label = a.value("exclude-label");
  r.sel.tests = a.value("tests");
  r.sel.exclude_tests = a.value("exclude-tests");
  for (const char* opt : {"label", "exclude-label", "tests", "exclude-tests"})
    for (const auto& v : a.values(opt)) check_regex(opt, v);  // a bad expression is a usage error naming it
  r.run_all = a.flag("run-all");
  r.probe = python_probe_options(a);
  // The Python suites pick their interpreter by GPUCTS_PYTHON and run in other folders: the one
  // named here (--python, else GPUCTS_PYTHON) probes torch and is handed to them by an absolute
  // path, so the bundle's fingerprint names the torch its Python suites ran.
  if (const PythonChoice py = probe_python_choice(r.probe.python_exe); !py.chosen_by.empty())
    ::setenv("GPUCTS_PYTHON", py.exe.c_str(), 1);
}

// Step 2: the tree, its suites and the selection. Throws bundle::BundleError for a bad list.
void select_suites(const Args& a, Run& r) {
  std::vector<qualify::TestEntry> tests;
  if (auto tj = a.value("tests-json")) {
    // An explicit suite list (CTest --show-only=json-v1 format), commands run as written.
    r.tree.kind = "file";
    r.tree.root = *tj;
    tests = qualify::parse_ctest_json(bundle::read_text(*tj), *tj);
    // The GPUs each entry needs sit beside the list, as in an install tree's share/gpucts.
    qualify::apply_gpu_needs(tests, (fs::path(*tj).parent_path() / "gpucts_gpu_needs.txt").string());
    r.how = *tj;
  } else {
    r.tree = qualify::locate_tree(a.value("build-dir"));
    tests = qualify::discover(r.tree, &r.how);
  }
  r.selected = qualify::select_tests(tests, r.sel);
  if (r.selected.empty() && !a.flag("list")) {
    throw UsageError("no suite selected (" + qualify::describe(r.sel) + "; " + std::to_string(tests.size()) +
                     " found via " + r.how + ")");
  }
}

void print_list(const Run& r) {
  std::printf("# %s tree %s; suites from %s; level %s\n", r.tree.kind.c_str(), r.tree.root.c_str(),
              r.how.c_str(), qualify::level_name(r.sel.level));
  for (const auto& t : r.selected) {
    std::string labels;
    for (const auto& l : t.labels) labels += (labels.empty() ? "" : ",") + l;
    std::printf("%s\t%s\t%.0fs\t%d GPU(s)\n", t.name.c_str(), labels.c_str(), t.timeout_s, t.gpus);
  }
}

// Step 3: a new or empty folder only, claimed atomically: a bundle never mixes two runs.
void create_bundle_dir(Run& r) {
  try {
    r.dir = claim_bundle_dir(r.out, qualify::kBundleFolders);
  } catch (const BundleDirError& e) {
    throw UsageError(e.what());
  }
}

// The entry name, in the manifest and junit.xml, of a failed --mpi-ranks probe.
constexpr const char* kRankProbeEntry = "gpucts_mpi_ranks_probe";

// The N-rank probe that --mpi-ranks asked for, where it failed: a failed entry of its own with one
// error case, so the verdict fails on it (a cross-host check that never ran proves nothing).
void record_failed_rank_probe(Run& r, int ranks, const std::string& why) {
  bundle::SuiteRun s;
  s.name = kRankProbeEntry;
  s.command = {"mpiexec", "-n", std::to_string(ranks), "gpucts", "qualify", "--probe-rank-into"};
  s.status = bundle::SuiteStatus::failed;
  s.reason = "--mpi-ranks " + std::to_string(ranks) + ": " + why;
  s.log = "logs/fingerprint_ranks.log";
  s.cases_done = s.cases_total = 1;
  junit::Case c;
  c.binary = s.name;
  c.suite = "process";
  c.name = "probe";
  c.status = junit::Status::error;
  c.message = junit::one_line(s.reason);
  c.detail = s.reason;
  r.cases.push_back(std::move(c));
  r.m.suites.push_back(std::move(s));
}

// Step 4: this host's fingerprint first (it says what is being qualified even if a suite hangs),
// then the ranks' and the given ones. Returns 2 for a fingerprint file that cannot be read.
int take_fingerprints(const Args& a, Run& r) {
  Fingerprint self = probe_fingerprint(r.probe);
  r.fps = {self};
  r.host = self.host.value_or("unknown-host");
  bundle::write_text((r.dir / "fingerprints" / (file_name_for(r.host) + ".json")).string(),
                     to_json(self).dump(2) + "\n");
  if (r.checked.mpi_ranks) {
    const int n = *r.checked.mpi_ranks;
    std::string err = probe_ranks(n, a.value("mpiexec-args").value_or(""), (r.dir / "fingerprints").string(),
                                  r.probe, &r.fps);
    if (!err.empty()) {
      std::fprintf(stderr, "gpucts qualify: per-rank fingerprints: %s\n", terminal_safe(err).c_str());
      record_failed_rank_probe(r, n, err);
    }
  }
  for (const auto& f : a.values("fingerprint")) {
    try {
      Fingerprint fp = load_fingerprint_file(f);
      bundle::write_text(unused_path(r.dir / "fingerprints", fs::path(f).filename().string()),
                         to_json(fp).dump(2) + "\n");
      r.fps.push_back(std::move(fp));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpucts qualify: %s\n", terminal_safe(e.what(), 4096).c_str());
      return 2;
    }
  }
  return 0;
}

// The Python suites of the selection that cover the torch layer where libtorch is absent: those with
// enough GPUs here to run ("" when none).
std::string python_torch_cover(const Run& r) {
  std::string names;
  for (const auto& t : r.selected)
    if (t.kind() == qualify::SuiteKind::junit && (t.gpus <= r.visible || r.run_all) &&
        std::find(t.labels.begin(), t.labels.end(), "torch") != t.labels.end())
      names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

// Why an entry does not run here ("" when it runs), and whether it applies to this machine all the same.
std::string why_not_run(const Run& r, const qualify::TestEntry& t, const qualify::TestEntry& relocated,
                        const std::map<std::string, std::string>& built_against, bool* missed) {
  *missed = false;
  if (qualify::g_signal.load()) return "qualify was interrupted before this suite";
  if (t.gpus > r.visible && !r.run_all) return gpu_shortfall(t.gpus, r.visible, r.no_gpu);
  std::string why = qualify::unloadable_reason(relocated, built_against);
  if (why.empty()) return "";
  // A library of the build machine absent here. The torch layer may be covered by the Python suites.
  const bool torch = std::find(t.labels.begin(), t.labels.end(), "torch") != t.labels.end();
  if (const std::string cover = python_torch_cover(r); torch && !cover.empty())
    return why + "; the torch layer is covered by " + cover;
  *missed = true;
  return why;
}

// An entry whose result is its timing (label perf, or CTest's RUN_SERIAL) has the machine to itself.
bool runs_alone(const qualify::TestEntry& t) {
  return t.run_serial || std::find(t.labels.begin(), t.labels.end(), "perf") != t.labels.end();
}

// Step 5: every selected suite, up to --jobs side by side (each in its own staging folder and
// process group), with a progress line; the bundle lists them in the selection's order.
void run_suites(Run& r) {
  const bool tty = ::isatty(2) && r.jobs == 1;  // a line rewritten in place only for one suite at a time
  const auto built_against = qualify::read_built_against(qualify::built_against_file(r.tree));
  const size_t n = r.selected.size();
  std::vector<qualify::Outcome> outcomes(n);
  auto run_entry = [&](size_t i) {
    const auto& t = r.selected[i];
    const qualify::RunPaths p = qualify::run_paths(r.dir.string(), t.name);
    qualify::TestEntry e = qualify::relocate(t, r.tree, p);
    auto& run = outcomes[i].run;
    bool missed = false;
    if (std::string not_run = why_not_run(r, t, e, built_against, &missed); !not_run.empty()) {
      run.name = t.name;
      run.command = e.command;
      run.labels = t.labels;
      run.status = bundle::SuiteStatus::not_run;
      run.reason = not_run;
      run.gpus = t.gpus;
      run.missed = missed;
      std::fprintf(stderr, "[%zu/%zu] %s: not run: %s\n", i + 1, n, terminal_safe(t.name).c_str(),
                   terminal_safe(not_run).c_str());
      return;
    }
    if (r.timeout > 0) e.timeout_s = r.timeout;
    const std::string head =
        "[" + std::to_string(i + 1) + "/" + std::to_string(n) + "] " + terminal_safe(t.name);
    if (!tty) std::fprintf(stderr, "%s: started (timeout %.0f s)\n", head.c_str(), e.timeout_s);
    double last_line = 0;
    outcomes[i] = qualify::run_one(e, p, r.grace, [&](int done, int total, double el) {
      std::string cases_s =
          total ? std::to_string(done) + "/" + std::to_string(total) + " cases" : "starting";
      if (tty) {
        std::fprintf(stderr, "\r\033[K%s  %s  %s (total %s)", head.c_str(), cases_s.c_str(),
                     clock_str(el).c_str(), clock_str(r.since()).c_str());
      } else if (el - last_line >= 30) {  // logs: a line every 30 s, not a flood
        std::fprintf(stderr, "%s: %s, %s\n", head.c_str(), cases_s.c_str(), clock_str(el).c_str());
        last_line = el;
      }
    });
    const auto& outcome = outcomes[i];
    outcomes[i].run.gpus = t.gpus;
    auto c = junit::count(outcome.cases);
    std::fprintf(stderr, "%s%s: %s  %d passed, %d failed, %d errors, %d skipped  %s%s%s\n",
                 tty ? "\r\033[K" : "", head.c_str(), bundle::suite_status_name(outcome.run.status), c.passed,
                 c.failed, c.errors, c.skipped, clock_str(outcome.run.duration_s).c_str(),
                 outcome.run.reason.empty() ? "" : "  -- ", terminal_safe(outcome.run.reason).c_str());
  };
  qualify::run_side_by_side(
      n, r.jobs, [&](size_t i) { return runs_alone(r.selected[i]); }, run_entry);
  for (auto& o : outcomes) {
    r.cases.insert(r.cases.end(), o.cases.begin(), o.cases.end());
    r.m.suites.push_back(std::move(o.run));
  }
}

// What a later reader needs to decide and compare the bundle: recorded before the verdict.
void record_context(Run& r) {
  auto& m = r.m;
  m.gpucts_version = GPUCTS_VERSION;
  m.gpucts_revision = GPUCTS_REVISION;
  m.created = bundle::utc_now_iso();
  m.host = r.host;
  m.tree = r.tree.kind + ":" + r.tree.root;
  m.built_against = qualify::read_built_against(qualify::built_against_file(r.tree));
  m.gpus_visible = r.visible;
  m.gpus_expected = r.expect_gpus;
  m.no_gpu_detail = r.no_gpu;
  m.level = qualify::level_name(r.sel.level);
  m.selection = {{"labels", r.sel.labels}};
  if (r.sel.exclude_label) m.selection["exclude_label"] = *r.sel.exclude_label;
  if (r.sel.tests) m.selection["tests"] = *r.sel.tests;
  if (r.sel.exclude_tests) m.selection["exclude_tests"] = *r.sel.exclude_tests;
  m.accepted_known = r.accepted;
  m.settings = stack_settings_in_force();  // the NCCL_*/TORCH_* settings in force, NVLS state
  m.nccl_selected = std::any_of(r.selected.begin(), r.selected.end(),
                                [](const qualify::TestEntry& t) { return t.gpus > 0; });
}

std::vector<std::pair<std::string, bw::Run>> load_bandwidth(const fs::path& dir) {
  std::vector<std::pair<std::string, bw::Run>> runs;
  for (const auto& e : fs::directory_iterator(dir / "bandwidth"))
    if (e.path().extension() == ".json") {
      try {
        runs.emplace_back(e.path().stem().string(), bw::load_run_file(e.path().string()));
      } catch (const bw::BandwidthError& err) {
        std::fprintf(stderr, "gpucts qualify: %s (moved aside)\n", terminal_safe(err.what(), 4096).c_str());
        fs::rename(e.path(), e.path().string() + ".broken");
      }
    }
  return runs;
}

// Step 6: the check, the waivers, junit.xml, the one verdict, the manifest and the summary.
// Everything here writes files only; a second signal is ignored so that the bundle completes.
int finish(const Args& a, Run& r) {
  auto& m = r.m;
  m.interrupted = qualify::g_signal.load() != 0;
  m.elapsed_s = r.since();
  std::string check_text;
  CheckOptions check_opts;
  check_opts.strict_defects = a.flag("strict-defects");
  // The libtorch the C++ suites were built against ("libtorch 2.11.0"), checked for torch's defects too.
  if (auto lt = m.built_against.find("libtorch"); lt != m.built_against.end()) {
    check_opts.libtorch = Version::try_parse(lt->second.substr(lt->second.rfind(' ') + 1));
    check_opts.libtorch_has_nccl = m.built_against.count("libnccl") > 0;
  }
  const nlohmann::json check = qualify::check_json(r.fps, &check_text, check_opts);
  bundle::write_text((r.dir / "check.json").string(), check.dump(2) + "\n");
  bundle::write_text((r.dir / "check.txt").string(), check_text);
  const auto bwruns = load_bandwidth(r.dir);
  const verdict::Verdict v = verdict::decide({m, r.cases, check, bwruns});
  // junit.xml for CI servers: the cases as they ran, each one the verdict waived as a typed skip.
  const std::vector<junit::Case> shown = verdict::junit_cases(r.cases, v);
  std::map<std::string, junit::PropertyMap> per_binary;
  for (const auto& s : m.suites)
    if (!s.mode.empty()) per_binary[s.name][kSimulatedHostsProperty] = s.mode;
  bundle::write_text((r.dir / "junit.xml").string(),
                     junit::write(shown, "gpucts qualify " + r.host,
                                  bundle::junit_properties(to_json(r.fps.front())), per_binary));
  m.waivers = v.waivers;
  for (auto& w : m.waivers) describe_waiver(w);
  m.verdict = verdict::kind_name(v.kind);
  m.verdict_reason = v.reasons.empty() ? "" : v.reasons.front();
  bundle::write_text((r.dir / "manifest.json").string(), bundle::to_json(m).dump(2) + "\n");
  std::vector<std::string> warnings, notes;
  bundle::Bundle written;
  try {
    written = bundle::load(r.dir.string());  // reading it back proves it valid
    summary::write(written);
    warnings = summary::defect_warnings(written);
    notes = summary::run_mode_notes(written);
  } catch (const bundle::BundleError& e) {
    std::fprintf(stderr, "gpucts qualify: the bundle just written does not read back: %s\n",
                 terminal_safe(e.what(), 4096).c_str());
    return 2;
  }
  const auto n = junit::count(shown);
  int not_run = 0, waived = 0;
  for (const auto& s : m.suites) not_run += s.status == bundle::SuiteStatus::not_run;
  for (const auto& w : m.waivers) waived += w.cases;
  std::printf("%s: %s  (%d passed, %d failed, %d errors, %d skipped%s; %d of %zu suites not run%s) in %s\n",
              r.dir.c_str(), v.text().c_str(), n.passed, n.failed, n.errors, n.skipped - waived,
              waived ? (", " + std::to_string(waived) + " waived").c_str() : "", not_run, m.suites.size(),
              m.interrupted ? ", interrupted" : "", clock_str(m.elapsed_s).c_str());
  for (const auto& x : v.reasons) std::printf("  because: %s\n", terminal_safe(x).c_str());
  for (const auto& w : warnings) std::printf("  warning: %s\n", terminal_safe(w).c_str());
  for (const auto& x : notes) std::printf("  note: %s\n", x.c_str());
  std::printf("summary: %s\n", (r.dir / "summary.html").c_str());
  // Checked before the run (read_options); what still fails here, after the verdict was told, is
  // one line naming the option and file, exit 2 (a node label must not keep a stale word).
  const char* writing = "--status-file";
  try {
    if (auto f = a.value("status-file")) write_node_status(*f, m.verdict);
    writing = "--prom";
    if (auto f = a.value("prom")) bundle::write_text(*f, prometheus_text(written, m.verdict));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucts qualify: %s: %s\n", writing, terminal_safe(e.what(), 4096).c_str());
    return 2;
  }
  return v.exit_code();
}

}  // namespace

int cmd_qualify(const Args& a) {
  Run r;
  read_options(a, r);
  if (auto into = a.value("probe-rank-into")) return probe_rank_into(*into, r.probe);
  select_suites(a, r);  // a bad suite list: one line, exit 2 (app.cpp)
  if (a.flag("list")) {
    print_list(r);
    return 0;
  }
  create_bundle_dir(r);
  qualify::install_signal_handlers();
  std::fprintf(stderr, "gpucts qualify: level %s, %zu suite(s) from %s (%s tree %s) -> %s\n",
               qualify::level_name(r.sel.level), r.selected.size(), r.how.c_str(), r.tree.kind.c_str(),
               r.tree.root.c_str(), r.dir.c_str());
  if (int rc = take_fingerprints(a, r); rc != 0) return rc;
  r.visible = visible_gpu_count();
  r.no_gpu = no_gpu_reason();
  record_context(r);
  run_suites(r);
  if (r.expect_gpus && r.visible < *r.expect_gpus)
    std::fprintf(stderr, "gpucts qualify: expected at least %d GPU(s), %d visible\n", *r.expect_gpus,
                 r.visible);
  return finish(a, r);
}

}  // namespace cts::cli
