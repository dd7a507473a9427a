// gpucts campaign: the same suites against several NCCL releases (one `gpucts qualify` bundle per
// release, each run with that release's libnccl.so.2 first on LD_LIBRARY_PATH), then one report
// with a column per release (campaign.hpp); or, with --bisect, the first release where one case
// starts to fail.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/ctest_regex.hpp"
#include "cli/qualify_run.hpp"
#include "matrix/input.hpp"
#include "report/campaign.hpp"
#include "results/junit.hpp"
#include "results/terminal_text.hpp"

namespace fs = std::filesystem;

namespace cts::cli {

const CommandSpec kCampaignSpec = {
    {repeatable({"nccl", "VERSION[,VERSION...]", "the NCCL releases to run (repeatable)"}),
     {"output", "DIR", "the campaign folder: a bundle per release and the report"},
     {"store", "DIR", "where releases' libraries are ($GPUCTS_NCCL_CACHE, else ~/.cache/gpucts/nccl)"},
     {"fetch", "CMD", "run `CMD VERSION STORE` to fetch a release missing from the store"},
     {"build", "CMD", "run `CMD VERSION STORE` to build a release neither stored nor fetched"},
     {"build-dir", "DIR", "the build tree whose suites to run (default: the tree gpucts sits in)", Kind::dir},
     {"label", "REGEX", "only entries with a label matching it (default 'single-gpu|perf')"},
     {"exclude-label", "REGEX", "leave out entries with a label matching it (default 'torch|self-test')"},
     {"tests", "REGEX", "only entries whose name matches it (ctest -R)"},
     {"exclude-tests", "REGEX", "leave out entries whose name matches it (ctest -E)"},
     {"timeout", "S", "seconds per release, 0 for no limit (default 900)", Kind::seconds},
     repeatable({"env", "NAME=VALUE", "set a variable in every release's run (repeatable)"}),
     {"bisect", "[BINARY/]SUITE.CASE", "find the first release where this case changes"},
     {"good", "VERSION", "with --bisect: a release where the case passes"},
     {"bad", "VERSION", "with --bisect: a release where the case fails"},
     {"stop-after", "S", "start no release once S seconds have passed (0: no budget)", Kind::seconds},
     {"ranks", "N", "the multi-process collectives with N ranks as simulated hosts", Kind::positive}},
    {{"no-probe", "skip cases the matrix marks unsupported instead of running them to be rejected"},
     {"resume", "reuse the bundles of releases already in the campaign folder"}},
    "usage: gpucts campaign --nccl VERSION[,VERSION...] --output DIR [--store DIR] [--fetch CMD] [--build "
    "CMD]\n"
    "                       [--build-dir DIR] [--label REGEX] [--exclude-label REGEX] [--tests REGEX]\n"
    "                       [--exclude-tests REGEX] [--timeout S] [--stop-after S] [--env NAME=VALUE]...\n"
    "                       [--no-probe] [--resume] [--ranks N]\n"
    "       gpucts campaign --bisect [BINARY/]SUITE.CASE --good VERSION --bad VERSION --output DIR\n"
    "                       [--nccl VERSION,...] [--store DIR] [--fetch CMD] [--build CMD] [--build-dir "
    "DIR]\n"
    "Runs the suites of this tree once per NCCL release and writes DIR/nccl-<version>/ (a qualification\n"
    "bundle) for each, then DIR/campaign.md, campaign.html, campaign.json and plots/: a column per release,\n"
    "pass/fail/skip per collective x dtype x op, every behaviour that changes between adjacent releases "
    "with\n"
    "the first release where it changed, bandwidth at 1 GiB and 8 B latency, and each matrix claim against\n"
    "what the runs saw (disagreements first).\n"
    "A release's library is <store>/<version>/lib/libnccl.so.2 (store: --store, $GPUCTS_NCCL_CACHE, or\n"
    "~/.cache/gpucts/nccl; ci/fetch_nccl_wheels fills it). Where that is missing, an archive\n"
    "<store>/nccl-<version>*.tar.xz (ci/nccl_prune pack) is unpacked into the store; else `CMD VERSION "
    "STORE`\n"
    "of --fetch, then of --build, is run to make it (timed as fetch or build in the report).\n"
    "Default selection: --label 'single-gpu|perf' --exclude-label 'torch|self-test' (torch brings its own\n"
    "NCCL; the self-tests check gpucts, not the release).\n"
    "--ranks N: the multi-process collectives with N ranks on one GPU as simulated hosts (each its own\n"
    "NCCL_HOSTID, NCCL's socket transport): the entry gpucts_mp_collectives_sim<N> instead of the default\n"
    "selection, so multi-rank behaviour is compared across releases too (not bandwidth).\n"
    "Cases the matrix marks unsupported are run and must be rejected (GPUCTS_PROBE_UNSUPPORTED=1), so the\n"
    "report can hold nccl_ops.csv against each release; --no-probe skips them instead.\n"
    "--resume reuses DIR/nccl-<version>/ bundles already there (without it they are run again). Anything\n"
    "else at DIR/nccl-<version> (not a bundle of gpucts qualify) is never deleted: refused, exit 2.\n"
    "--timeout: seconds per release (default 900).\n"
    "--stop-after S: start no release once S seconds have passed (the rest are listed as not run).\n"
    "--bisect runs one case (binary default gpucts_collectives) on releases between --good (where it "
    "passes)\n"
    "and --bad (where it fails), from --nccl or else every release in the store, and names the first "
    "failing\n"
    "release, or, where --good is the newer one (a fix), the first passing release (DIR/bisect.md).\n"
    "Exit status: 0 every release ran on the library asked for (bisect: found), 1 otherwise, 2 bad usage."};

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::stringstream ss(v);
    for (std::string x; std::getline(ss, x, ',');)
      if (!x.empty()) out.push_back(x);
  }
  return out;
}

// --nccl values: each a release, none twice (two runs would share nccl-<version>/).
std::vector<std::string> checked_versions(const std::vector<std::string>& values) {
  std::vector<std::string> out = split_list(values);
  std::vector<Version> seen;
  for (const auto& v : out) {
    auto pv = Version::try_parse(v, VersionKind::Nccl);
    if (!pv) throw UsageError("--nccl '" + excerpt(v, 60) + "' is not a version");
    if (std::find(seen.begin(), seen.end(), *pv) != seen.end())
      throw UsageError("--nccl '" + excerpt(v, 60) + "' given twice");
    seen.push_back(*pv);
  }
  return out;
}

std::string default_store() {
  if (const char* e = std::getenv("GPUCTS_NCCL_CACHE"); e && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/gpucts/nccl";
}

fs::path lib_of(const fs::path& store, const std::string& v) { return store / v / "lib" / "libnccl.so.2"; }

// Whether `path` is a whole ELF shared object: a regular file with the ELF magic, ET_DYN, and its
// section header table inside the file (a cut library ends before its section headers).
bool is_whole_shared_object(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const auto size = fs::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  unsigned char h[64] = {};
  if (ec || !in.read(reinterpret_cast<char*>(h), sizeof h)) return false;
  if (h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F' || h[4] != 2 || h[5] != 1) return false;
  auto u = [&](int at, int n) {
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | h[at + k];
    return v;
  };
  if (u(16, 2) != 3) return false;  // e_type ET_DYN
  const std::uint64_t shoff = u(40, 8), shentsize = u(58, 2), shnum = u(60, 2);
  return shoff > 0 && shoff <= size && shnum * shentsize <= size - shoff;
}

// Runs a shell command with a deadline; its output goes to `log`.
// --fetch/--build CMD is a shell command the user wrote; the version and the store reach it as
// its arguments $1 and $2, never spliced into the text.
int run_user_command(const std::string& cmd, const std::string& version, const std::string& store,
                     const std::string& log, double timeout_s) {
  return qualify::run_bounded({"/bin/sh", "-c", cmd + " \"$1\" \"$2\"", "gpucts-campaign", version, store},
                              {}, timeout_s, log, true);
}

struct Fetcher {
  fs::path store;
  std::string fetch_cmd, build_cmd;
  fs::path logs;

  // Unpacks into a folder of its own, checks the library, then renames <v>/ into the store: a cut
  // or wrong archive leaves nothing in the store for a later campaign to load.
  std::string unpack(const fs::path& archive, const std::string& v, campaign::Timing& t) const {
    const auto t0 = Clock::now();
    const std::string log = (logs / ("unpack-" + v + ".log")).string();
    // A fresh folder of a random name (mkdtemp): nothing already in the store is emptied or reused.
    std::string tmpl = (store / (".unpack-" + v + "-XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) return "cannot unpack into " + store.string() + ": " + std::strerror(errno);
    const fs::path tmp = tmpl;
    std::error_code ec;
    const int rc =
        qualify::run_bounded({"tar", "-xf", archive.string(), "-C", tmp.string()}, {}, 600, log, true);
    t.unpack = seconds_since(t0);
    t.how = "archive " + archive.filename().string();
    std::string problem;
    if (rc != 0)
      problem = "unpacking " + archive.string() + " failed (status " + std::to_string(rc) + ", " + log + ")";
    else if (!is_whole_shared_object(lib_of(tmp, v)))
      problem = archive.string() + " holds no whole " + v + "/lib/libnccl.so.2 (an ELF shared object)";
    else if (::renameat2(AT_FDCWD, (tmp / v).c_str(), AT_FDCWD, (store / v).c_str(), RENAME_NOREPLACE) != 0 &&
             !is_whole_shared_object(lib_of(store, v)))
      problem = "cannot move " + v + " into " + store.string() + ": " + std::strerror(errno) + " (a folder " +
                v + " without a whole library is in the way; remove it)";
    fs::remove_all(tmp, ec);
    return problem;
  }

  // Makes <store>/<v>/lib/libnccl.so.2 exist; fills `t` with where the time went. "" or what failed.
  std::string ensure(const std::string& v, campaign::Timing& t) const {
    if (is_whole_shared_object(lib_of(store, v))) {
      t.how = "store " + (store / v).string();
      return "";
    }
    std::error_code ec;
    fs::create_directories(store, ec);
    // An archive made by ci/nccl_prune pack: nccl-<v>-sm90.tar.xz holding <v>/lib/libnccl.so.2.
    for (const auto& e : fs::directory_iterator(store, ec)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("nccl-" + v + "-", 0) != 0 && f.rfind("nccl-" + v + ".tar", 0) != 0) continue;
      if (f.find(".tar") == std::string::npos) continue;
      // A FIFO or device would block tar (or feed it forever): only a regular file is an archive.
      if (!fs::is_regular_file(e.path(), ec))
        return "archive " + e.path().string() + " is not a regular file";
      return unpack(e.path(), v, t);
    }
    std::string tried;
    for (int k = 0; k < 2; ++k) {
      const std::string& cmd = k == 0 ? fetch_cmd : build_cmd;
      const char* what = k == 0 ? "fetch" : "build";
      if (cmd.empty()) continue;
      const auto t0 = Clock::now();
      const std::string log = (logs / (std::string(what) + "-" + v + ".log")).string();
      const int rc = run_user_command(cmd, v, store.string(), log, 3600);
      (k == 0 ? t.fetch : t.build) = seconds_since(t0);
      t.how = std::string(what) + ": " + cmd;
      if (rc == 0 && is_whole_shared_object(lib_of(store, v))) return "";
      tried += std::string(tried.empty() ? "" : "; ") + what + " failed (status " + std::to_string(rc) +
               ", " + log + ")";
    }
    if (!tried.empty()) return "NCCL " + v + ": " + tried;
    if (fs::exists(lib_of(store, v)))
      return "NCCL " + v + ": " + lib_of(store, v).string() + " is not a whole ELF shared object (remove it)";
    return "NCCL " + v + " is not in " + store.string() + " (no " + v + "/lib/libnccl.so.2, no nccl-" + v +
           "*.tar.xz; fill it with ci/fetch_nccl_wheels " + v + ", or pass --fetch/--build)";
  }
};

std::vector<std::string> child_env(const fs::path& libdir, bool probe,
                                   const std::vector<std::string>& extra) {
  std::string ld = libdir.string();
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) ld += std::string(":") + old;
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + ld};
  if (probe) env.push_back("GPUCTS_PROBE_UNSUPPORTED=1");
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Versions in the store (folders with a library, or archives), sorted.
std::vector<std::string> store_versions(const fs::path& store) {
  std::vector<Version> vs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(store, ec)) {
    std::string f = e.path().filename().string();
    std::string v;
    if (fs::exists(e.path() / "lib" / "libnccl.so.2"))
      v = f;
    else if (f.rfind("nccl-", 0) == 0 && f.find(".tar") != std::string::npos) {
      v = f.substr(5, f.find_first_of("-", 5) == std::string::npos
                          ? f.find(".tar") - 5
                          : std::min(f.find('-', 5), f.find(".tar")) - 5);
    }
    if (auto pv = Version::try_parse(v, VersionKind::Nccl))
      if (std::find(vs.begin(), vs.end(), *pv) == vs.end()) vs.push_back(*pv);
  }
  std::sort(vs.begin(), vs.end());
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.release_str());
  return out;
}

// Why the campaign may neither delete nor reuse what is at `dir` (OUT/nccl-<version>): "" where
// nothing is there or it is a bundle gpucts qualify wrote (a folder, not a link, holding a
// manifest.json of the bundle schema). Anything else (a user's file or folder, a link, a bundle
// that never got its manifest) is not the campaign's to remove.
std::string not_a_campaign_bundle(const fs::path& dir) {
  struct stat st {};
  const std::string shown = terminal_safe(dir.string(), 1024);
  if (::lstat(dir.c_str(), &st) != 0) return errno == ENOENT ? "" : shown + ": " + std::strerror(errno);
  const std::string keep = " (not deleting it: move it away or choose another --output)";
  if (S_ISLNK(st.st_mode)) return shown + " is a symbolic link, not a bundle of gpucts qualify" + keep;
  if (!S_ISDIR(st.st_mode)) return shown + " exists and is not a bundle of gpucts qualify" + keep;
  const fs::path manifest = dir / "manifest.json";
  try {
    if (::lstat(manifest.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) throw bundle::BundleError("no file");
    bundle::manifest_from_json(parse_json(bundle::read_text(manifest.string()), manifest.string()),
                               manifest.string());
  } catch (const std::exception&) {
    return shown + " exists and holds no manifest.json of gpucts qualify (schema " +
           std::string(bundle::kBundleSchema) + ")" + keep;
  }
  return "";
}

// One --bisect: the case, the releases between --good and --bad, what each run gave.
struct Bisect {
  std::string binary = "gpucts_collectives", spec;  // the entry, and SUITE.CASE in it
  campaign::BisectState st;
  qualify::TestEntry entry;
  std::vector<std::string> lines;  // one per release run, for bisect.md
};

// [BINARY/]SUITE.CASE of --bisect.
void bisect_case(const Args& a, Bisect& b) {
  b.spec = *a.value("bisect");
  if (auto slash = b.spec.find('/'); slash != std::string::npos) {
    b.binary = b.spec.substr(0, slash);
    b.spec = b.spec.substr(slash + 1);
  }
  if (b.spec.find('.') == std::string::npos)
    throw UsageError("--bisect '" + excerpt(b.spec, 60) + "': expected [BINARY/]SUITE.CASE");
}

// --good and --bad of --bisect: two different releases.
std::pair<Version, Version> bisect_ends(const Args& a) {
  auto good = a.value("good"), bad = a.value("bad");
  if (!good || !bad) throw UsageError("--bisect needs --good VERSION and --bad VERSION");
  auto release = [](const char* opt, const std::string& v) {
    if (auto pv = Version::try_parse(v, VersionKind::Nccl)) return *pv;
    throw UsageError(std::string("--") + opt + " '" + excerpt(v, 60) + "' is not a version");
  };
  const Version vg = release("good", *good), vb = release("bad", *bad);
  if (vg == vb) throw UsageError("--good and --bad name the same release");
  return {vg, vb};
}

// The releases from --good to --bad (both ends always), from --nccl or else the store, oldest first.
void bisect_releases(const Args& a, const fs::path& store, Bisect& b) {
  const auto [vg, vb] = bisect_ends(a);
  // good older than bad: a regression, find the first failing release; newer: a fix, the first passing.
  const Version lo = vg < vb ? vg : vb, hi = vg < vb ? vb : vg;
  std::vector<std::string> cands = split_list(a.values("nccl"));
  if (cands.empty()) cands = store_versions(store);
  std::vector<Version> vs;
  for (const auto& c : cands) {
    Version v = Version::parse(c, VersionKind::Nccl);
    if (v >= lo && v <= hi && std::find(vs.begin(), vs.end(), v) == vs.end()) vs.push_back(v);
  }
  for (const Version& end : {lo, hi})
    if (std::find(vs.begin(), vs.end(), end) == vs.end()) vs.push_back(end);
  std::sort(vs.begin(), vs.end());
  for (const auto& v : vs) b.st.versions.push_back(v.release_str());
  if (!(vg < vb)) {
    b.st.old_cls = "fail";
    b.st.new_cls = "pass";
  }
}

void bisect_entry(const Args& a, Bisect& b) {
  std::string how;
  bool found = false;
  for (const auto& t : qualify::discover(qualify::locate_tree(a.value("build-dir")), &how))
    if (t.name == b.binary) {
      b.entry = t;
      found = true;
    }
  if (!found) throw UsageError("no suite entry named " + b.binary + " in " + how);
}

// Runs the case on release i: its outcome ("pass", "fail", "skip", "absent") and a line for the report.
void bisect_run(const Args& a, const Fetcher& f, const fs::path& out, Bisect& b, std::size_t i) {
  const std::string& v = b.st.versions[i];
  campaign::Timing t;
  std::string err = f.ensure(v, t);
  if (!err.empty()) {
    b.lines.push_back(v + ": not run: " + err);
    b.st.outcome[i] = "absent";
    return;
  }
  const std::string xml = (out / ("bisect-" + v + ".xml")).string();
  std::vector<std::string> cmd = b.entry.command;
  cmd.push_back("--gtest_filter=" + b.spec);
  cmd.push_back("--gtest_output=xml:" + xml);
  std::vector<std::string> env = b.entry.env;
  auto extra = child_env(lib_of(f.store, v).parent_path(), false, a.values("env"));
  env.insert(env.end(), extra.begin(), extra.end());
  const auto t0 = Clock::now();
  const int rc =
      qualify::run_bounded(cmd, env, b.entry.timeout_s, (out / ("bisect-" + v + ".log")).string(), true);
  std::string cls = "absent", msg;
  try {
    for (const auto& c : junit::read_file(xml, b.binary))
      if (c.suite + "." + c.name == b.spec) {
        cls = campaign::status_class(c.status);
        msg = junit::clean_message(c.message);
      }
  } catch (const std::exception& e) {
    msg = std::string("no result: ") + e.what();
  }
  if (cls == "absent" && rc != 0 && rc != 77) cls = "fail";  // the binary died before writing its XML
  b.st.outcome[i] = cls;
  char buf[64];
  std::snprintf(buf, sizeof buf, " (%.1f s, exit %d)", seconds_since(t0), rc);
  b.lines.push_back(v + ": " + cls + buf + (msg.empty() ? "" : ": " + msg));
  std::fprintf(stderr, "gpucts campaign: bisect %s on NCCL %s: %s%s\n", b.spec.c_str(), v.c_str(),
               cls.c_str(), buf);
}

// Both ends first; where they are as --good and --bad say, halves the range until one release is
// the first changed. The verdict line and the exit status.
std::pair<std::string, int> bisect_search(const Args& a, const Fetcher& f, const fs::path& out, Bisect& b) {
  campaign::BisectState& st = b.st;
  bisect_run(a, f, out, b, 0);
  bisect_run(a, f, out, b, st.versions.size() - 1);
  const std::string& first_cls = st.outcome[0];
  const std::string& last_cls = st.outcome[st.versions.size() - 1];
  if (first_cls != st.old_cls || last_cls != st.new_cls)
    return {"cannot bisect: " + b.spec + " is " + first_cls + " on " + st.versions.front() + " and " +
                last_cls + " on " + st.versions.back() + " (expected " + st.old_cls + ", then " + st.new_cls +
                ")",
            1};
  while (auto nx = st.next()) bisect_run(a, f, out, b, *nx);
  auto first = st.first_changed();
  std::size_t last_old = 0;
  for (const auto& [i, cls] : st.outcome)
    if (cls == st.old_cls && first && i < *first) last_old = i;
  const char* now = st.new_cls == "fail" ? "failing" : "passing";
  const char* before = st.new_cls == "fail" ? "passing" : "failing";
  std::string verdict = first ? std::string("first ") + now + " release: " + st.versions[*first] + " (last " +
                                    before + ": " + st.versions[last_old] + ")"
                              : "no release found where it changed";
  if (first && *first > last_old + 1)
    verdict += "; the releases between could not decide (skipped or not run)";
  return {verdict, first ? 0 : 1};
}

void write_bisect_report(const Bisect& b, const std::string& verdict, const fs::path& out) {
  std::string md = "# gpucts bisect: " + b.binary + "/" + b.spec + "\n\n**" + verdict +
                   "**\n\n| release | outcome |\n| --- | --- |\n";
  for (std::size_t i = 0; i < b.st.versions.size(); ++i) {
    auto it = b.st.outcome.find(i);
    md += "| " + b.st.versions[i] + " | " +
          (it == b.st.outcome.end() ? std::string("not needed") : it->second) + " |\n";
  }
  md += "\n";
  for (const auto& l : b.lines) md += "- " + l + "\n";
  bundle::write_text((out / "bisect.md").string(), md);
  std::printf("%s\n%s\n", verdict.c_str(), (out / "bisect.md").c_str());
}

int bisect(const Args& a, const Fetcher& f, const fs::path& out, Bisect& b) {
  const auto [verdict, rc] = bisect_search(a, f, out, b);
  write_bisect_report(b, verdict, out);
  return rc;
}

// --ranks N: the simulated-host entry of N ranks, which must exist in the tree (nullopt without it).
std::optional<std::string> simulated_entry(const Args& a) {
  auto r = a.value("ranks");
  if (!r) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(r->c_str(), &end, 10);
  if (r->empty() || !end || *end || n < 2 || n > 4096)
    throw UsageError("--ranks '" + *r + "': expected a number of ranks from 2 to 4096");
  const std::string name = "gpucts_mp_collectives_sim" + std::to_string(n);
  std::string how, have;
  for (const auto& t : qualify::discover(qualify::locate_tree(a.value("build-dir")), &how)) {
    if (t.name == name) return name;
    if (t.name.rfind("gpucts_mp_collectives_sim", 0) == 0 && t.name.find('_', 25) == std::string::npos)
      have += (have.empty() ? "" : ", ") + t.name.substr(25);
  }
  throw UsageError(
      "--ranks " + *r + ": no entry " + name + " in " + how +
      (have.empty() ? " (this tree has no simulated-host entries)" : " (ranks there: " + have + ")"));
}

// One campaign run: the options as read, and what each release left.
struct Campaign {
  std::vector<std::string> versions;
  fs::path out;
  Fetcher fetcher;
  double timeout = 900, stop_after = 0;
  double run_limit = 0;                  // seconds per release; infinity for --timeout 0
  std::optional<std::string> sim_entry;  // --ranks N: the simulated-host entry
  std::optional<Bisect> bisect;          // --bisect: the case, its releases and entry
  Clock::time_point started;
  std::string self;  // this gpucts, run as `gpucts qualify` once per release
  std::vector<campaign::Release> releases;
  std::vector<std::string> failed;
};

// Every option checked (each mode's own too) before DIR/logs is made; the store and its commands.
Campaign campaign_options(const Args& a) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  auto out_opt = a.value("output");
  if (!out_opt) throw UsageError("--output DIR is required");
  for (const auto& e : a.values("env"))
    if (e.find('=') == std::string::npos || e.front() == '=')
      throw UsageError("--env '" + excerpt(e, 60) + "': expected NAME=VALUE");
  if (out_opt->empty()) throw UsageError("--output '': names no folder");
  Campaign c;
  c.timeout = a.number("timeout", 900);
  c.stop_after = a.number("stop-after", 0);
  if (c.timeout < 0) throw UsageError("--timeout must be >= 0 seconds (0: no limit, as qualify's)");
  if (c.stop_after < 0) throw UsageError("--stop-after must be >= 0 seconds (0: no budget)");
  c.versions = checked_versions(a.values("nccl"));
  c.fetcher.store = fs::absolute(a.value("store").value_or(default_store()));
  // What each mode needs, refused before DIR is made.
  if (a.value("bisect")) {
    Bisect b;
    bisect_case(a, b);
    bisect_releases(a, c.fetcher.store, b);
    bisect_entry(a, b);
    c.bisect = std::move(b);
  } else {
    if (c.versions.empty()) throw UsageError("--nccl VERSION[,VERSION...] is required");
    c.sim_entry = simulated_entry(a);
  }
  for (const char* opt : {"label", "exclude-label", "tests", "exclude-tests"})
    if (auto v = a.value(opt)) compile_ctest_regex(std::string("--") + opt, *v);  // as qualify reads it
  c.out = *out_opt;
  if (!c.bisect)
    for (const auto& v : c.versions)
      if (std::string why = not_a_campaign_bundle(c.out / ("nccl-" + v)); !why.empty()) throw UsageError(why);
  std::error_code ec;
  fs::create_directories(c.out / "logs", ec);
  if (ec) throw UsageError("cannot create " + c.out.string() + ": " + ec.message());
  c.fetcher.fetch_cmd = a.value("fetch").value_or("");
  c.fetcher.build_cmd = a.value("build").value_or("");
  c.fetcher.logs = fs::absolute(c.out / "logs");
  return c;
}

// What a release run needs beyond the shared options: the limit, the start, this gpucts.
void plan_releases(Campaign& c) {
  // qualify's own --timeout 0 means no limit; so does the campaign's.
  c.run_limit = c.timeout > 0 ? c.timeout : std::numeric_limits<double>::infinity();
  c.started = Clock::now();
  c.self = fs::read_symlink("/proc/self/exe").string();
}

// `gpucts qualify` of one release into `dir`, with the campaign's selection.
std::vector<std::string> qualify_command(const Args& a, const Campaign& c, const fs::path& dir) {
  std::vector<std::string> cmd = {
      c.self,
      "qualify",
      "--output",
      dir.string(),
      "--no-python",
      "--label",
      a.value("label").value_or(c.sim_entry ? qualify::kSimLabel : "single-gpu|perf"),
      "--exclude-label",
      a.value("exclude-label").value_or("torch|self-test")};
  if (auto b = a.value("build-dir")) cmd.insert(cmd.end(), {"--build-dir", *b});
  if (auto r = a.value("tests"))
    cmd.insert(cmd.end(), {"--tests", *r});
  else if (c.sim_entry)
    cmd.insert(cmd.end(), {"--tests", "^" + *c.sim_entry + "$"});
  if (auto r = a.value("exclude-tests")) cmd.insert(cmd.end(), {"--exclude-tests", *r});
  return cmd;
}

// Makes release v's library exist and runs qualify with it first on the loader path. "" or what failed.
std::string qualify_release(const Args& a, const Campaign& c, const std::string& v, const fs::path& dir,
                            campaign::Timing& t) {
  std::string err = c.fetcher.ensure(v, t);
  if (!err.empty()) return err;
  // Checked before the campaign started; checked again here, where it would be deleted.
  if (std::string why = not_a_campaign_bundle(dir); !why.empty()) return why;
  std::error_code ec;
  fs::remove_all(dir, ec);
  const auto t0 = Clock::now();
  const std::string log = (c.fetcher.logs / ("qualify-" + v + ".log")).string();
  const int rc = qualify::run_bounded(
      qualify_command(a, c, dir),
      child_env(lib_of(c.fetcher.store, v).parent_path(), !a.flag("no-probe"), a.values("env")), c.run_limit,
      log, true);
  t.run = seconds_since(t0);
  // 0 pass or waived, 1 fail, 3 no GPU: each leaves a bundle; anything else is a broken run.
  if (rc != 0 && rc != 1 && rc != 3)
    return "gpucts qualify ended with status " + std::to_string(rc) + " (" + log + ")";
  return "";
}

// The bundle in `dir` as a release of the report (where there is one); a reading error joins `err`.
void add_release(Campaign& c, const std::string& v, const fs::path& dir, const campaign::Timing& t,
                 std::string& err) {
  if (!err.empty() && !fs::exists(dir / "manifest.json")) return;
  try {
    campaign::Release r = campaign::load_release(dir.string());
    r.requested = v;
    r.timing = t;
    r.problem = err;
    c.releases.push_back(std::move(r));
  } catch (const std::exception& e) {
    err += std::string(err.empty() ? "" : "; ") + e.what();
  }
}

// "[2/5] NCCL 2.21.5: fetch 12 s run 340 s -- PASS" on stderr.
void print_progress(const Campaign& c, std::size_t i, const campaign::Timing& t, const std::string& err) {
  std::string line =
      "[" + std::to_string(i + 1) + "/" + std::to_string(c.versions.size()) + "] NCCL " + c.versions[i] + ":";
  auto add = [&](const char* what, const std::optional<double>& s) {
    if (s) line += std::string(" ") + what + " " + std::to_string(static_cast<int>(*s + 0.5)) + " s";
  };
  add("fetch", t.fetch);
  add("build", t.build);
  add("unpack", t.unpack);
  add("run", t.run);
  if (!err.empty())
    line += " -- " + err;
  else if (!c.releases.empty())
    line += " -- " + campaign::release_verdict(c.releases.back().bundle);
  std::fprintf(stderr, "%s\n", terminal_safe(line, 4096).c_str());
}

// Release i: not run once the budget is spent; else qualified (or its bundle resumed) and loaded.
void run_release(const Args& a, Campaign& c, std::size_t i) {
  const std::string& v = c.versions[i];
  if (c.stop_after > 0 && seconds_since(c.started) > c.stop_after) {
    c.failed.push_back("NCCL " + v + ": not run, the campaign's time budget (--stop-after " +
                       std::to_string(static_cast<int>(c.stop_after)) + " s) was spent");
    std::fprintf(stderr, "[%zu/%zu] NCCL %s: not run (time budget spent)\n", i + 1, c.versions.size(),
                 v.c_str());
    return;
  }
  const fs::path dir = fs::absolute(c.out / ("nccl-" + v));
  campaign::Timing t;
  std::string err;
  if (!(a.flag("resume") && fs::exists(dir / "manifest.json")))
    err = qualify_release(a, c, v, dir, t);
  else
    t.how = "resumed";
  add_release(c, v, dir, t, err);
  if (!err.empty()) c.failed.push_back("NCCL " + v + ": " + err);
  print_progress(c, i, t, err);
}

// The campaign report over every release loaded, with what failed; exit 0 only without problems.
int write_campaign(Campaign& c) {
  campaign::Report r = campaign::build(std::move(c.releases), builtin_matrix());
  r.problems.insert(r.problems.end(), c.failed.begin(), c.failed.end());
  campaign::write(r, c.out.string());
  std::printf("%s: %zu release(s), %zu performance change(s), %zu behaviour change(s)%s\n",
              (c.out / "campaign.html").c_str(), r.releases.size(), r.perf.size(), r.case_changes.size(),
              r.problems.empty() ? "" : ", problems (see the report)");
  return r.problems.empty() ? 0 : 1;
}

}  // namespace

int cmd_campaign(const Args& a) {
  Campaign c = campaign_options(a);
  qualify::install_signal_handlers();
  if (c.bisect) return bisect(a, c.fetcher, fs::absolute(c.out), *c.bisect);
  plan_releases(c);
  for (std::size_t i = 0; i < c.versions.size() && !qualify::g_signal.load(); ++i) run_release(a, c, i);
  return write_campaign(c);
}

}  // namespace cts::cli
