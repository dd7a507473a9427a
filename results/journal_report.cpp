#include "results/journal_report.hpp"

#include "matrix/input.hpp"
#include "results/file_names.hpp"
#include "results/xml_escape.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace cts {
namespace {

using json = nlohmann::json;

std::string str(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
double num(const json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}
// A count or rank in [0, INT_MAX], else `fallback` (a cast of 1e30 to int is undefined).
int count(const json& j, const char* k, int fallback) {
  double v = num(j, k);
  return v >= 0 && v <= INT_MAX ? static_cast<int>(v) : fallback;
}
std::optional<int> small_int(const json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT_MAX)
                             : v.get<std::int64_t>() < INT_MIN || v.get<std::int64_t>() > INT_MAX)
    return std::nullopt;
  return static_cast<int>(v.get<std::int64_t>());
}

std::string rank_label(const RankJournal& r) {
  if (r.rank < 0) return r.host.empty() ? "the process" : "the process on " + r.host;
  return "rank " + std::to_string(r.rank) + (r.host.empty() ? "" : " (" + r.host + ")");
}

// A fault/exit line, a watchdog, a signal: what ended this rank, in the order they matter.
const JournalEvent* terminal_event(const RankJournal& r, const char* name) {
  for (const auto& e : r.events)
    if (e.event == name) return &e;
  return nullptr;
}

}  // namespace

std::string iso_time_ms(double unix_ms) {
  // A journal's time from outside: years 0..9999 only (a cast of 1e29 to time_t is undefined).
  if (!(unix_ms >= 0 && unix_ms < 253402300800000.0)) {
    char bad[64];
    std::snprintf(bad, sizeof bad, "(time %g ms, out of range)", unix_ms);
    return bad;
  }
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(std::fmod(unix_ms, 1000.0)));
  return out;
}

std::string RankJournal::abnormal_end() const {
  if (const auto* f = terminal_event(*this, "fault"))
    return f->kind == "exit" ? "exited during " + f->case_name : "killed by " + f->signal;
  for (const char* ev : {"peer_lost", "diverged", "bootstrap", "watchdog"})
    if (const auto* e = terminal_event(*this, ev)) return e->reason;
  if (const auto* i = terminal_event(*this, "interrupted")) return "interrupted by " + i->signal;
  if (!program_ended)
    return "killed: the journal stops" + (running ? " during " + running->name : std::string());
  return "";
}

RankJournal parse_journal(const std::string& path, int rank, const std::string& text) {
  RankJournal r;
  r.path = path;
  r.rank = rank;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    json j;
    try {
      j = parse_json(line, path);  // the strict reader (input.hpp): depth, duplicates, UTF-8
    } catch (const InputError&) {
      ++r.bad_lines;
      continue;
    }
    if (!j.is_object()) {
      ++r.bad_lines;
      continue;
    }
    std::string ev = str(j, "event");
    double t = num(j, "time_ms");
    if (ev == "program_start") {
      // A rerun appended to the same file: only the last run counts.
      std::string host = r.host;
      int world = r.world_size;
      r = RankJournal{};
      r.path = path;
      r.rank = rank;
      r.host = host;
      r.world_size = world;
      r.planned_cases = count(j, "cases", -1);
      r.first_ms = t;
    } else if (ev == "rank_info") {
      if (!str(j, "host").empty()) r.host = str(j, "host");
      if (count(j, "world_size", 0) > 0) r.world_size = count(j, "world_size", 0);
    } else if (ev == "start") {
      std::string name = str(j, "case");
      if (name.empty()) {  // still a case that ran: it stays open under a name that says where it is
        r.invalid.push_back("line " + std::to_string(line_no) + ": a case start without a case name");
        name = "(a case without a name, line " + std::to_string(line_no) + ")";
      }
      r.running = JournalCase{name, "", "", t, 0};
    } else if (ev == "end") {
      auto name = j.find("case");
      if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) {
        r.invalid.push_back("line " + std::to_string(line_no) + ": a case end without a case name");
        continue;
      }
      auto result = j.find("result");
      JournalCase c{name->get<std::string>(),
                    result != j.end() && result->is_string() ? result->get<std::string>() : "(none)",
                    str(j, "message"), r.running ? r.running->start_ms : t, t};
      r.cases.push_back(c);
      r.running.reset();
    } else if (ev == "program_end") {
      r.program_ended = true;
    } else if (r.program_ended) {
      continue;  // after a normal end (the launcher reaping a finished rank): not a fault
    } else {
      JournalEvent e;
      e.event = ev;
      e.kind = str(j, "kind");
      e.reason = str(j, "reason");
      e.signal = str(j, "signal");
      e.case_name = str(j, "case");
      e.time_ms = t;
      if (j.contains("exit_code")) e.exit_code = small_int(j["exit_code"]).value_or(-1);
      if (j.contains("blamed") && j["blamed"].is_array())
        for (const auto& b : j["blamed"])
          if (auto rank = small_int(b); rank && *rank >= 0) e.blamed.push_back(*rank);
      r.events.push_back(e);
    }
    if (t > 0) {
      if (r.first_ms == 0) r.first_ms = t;
      r.last_ms = std::max(r.last_ms, t);
    }
  }
  return r;
}

std::vector<TestRun> read_journal_dir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) throw std::runtime_error("cannot read journal directory " + dir);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  static const std::regex re(R"(^(.+?)(\.rank([0-9]+))?\.(jsonl|premature)$)");
  std::map<std::string, TestRun> runs;
  for (const auto& n : names) {
    std::smatch m;
    if (!std::regex_match(n, m, re)) continue;
    std::string test = name_of_file(m[1].str());  // journals are named by file_name_for()
    int rank = -1;
    if (m[3].matched) {
      errno = 0;
      long v = std::strtol(m[3].str().c_str(), nullptr, 10);
      if (errno == ERANGE || v > INT_MAX) {  // no rank a launcher gives: named, never dropped in silence
        auto& run = runs[test];
        run.test = test;
        run.unreadable.push_back(dir + "/" + n + ": rank number " + m[3].str() + " is beyond any rank");
        continue;
      }
      rank = static_cast<int>(v);
    }
    auto& run = runs[test];
    run.test = test;
    std::string path = dir + "/" + n;
    if (m[4].str() == "premature") {
      run.premature_files.push_back(path);
      continue;
    }
    run.ranks.push_back(parse_journal(path, rank, read_input_file(path)));  // InputError names the file
  }
  std::vector<TestRun> out;
  for (auto& [k, v] : runs) {
    std::sort(v.ranks.begin(), v.ranks.end(),
              [](const RankJournal& a, const RankJournal& b) { return a.rank < b.rank; });
    out.push_back(std::move(v));
  }
  return out;
}

std::string Cause::summary() const {
  if (!found) return "";
  std::string s = (rank < 0 ? std::string("the process") : "rank " + std::to_string(rank)) +
                  (host.empty() ? "" : " (" + host + ")") + ": " + detail;
  if (time_ms > 0) s += " at " + iso_time_ms(time_ms);
  if (!peers_lost.empty()) {
    s += "; peer lost:";
    for (size_t i = 0; i < peers_lost.size(); ++i)
      s += (i ? ", rank " : " rank ") + std::to_string(peers_lost[i]);
  }
  return s;
}

Cause first_cause(const TestRun& run) {
  Cause best;
  auto consider = [&](const RankJournal& r, const std::string& what, const std::string& detail,
                      const std::string& case_name, double t) {
    if (best.found && !(t < best.time_ms)) return;
    best.found = true;
    best.rank = r.rank;
    best.host = r.host;
    best.what = what;
    best.detail = detail;
    best.case_name = case_name;
    best.time_ms = t;
  };
  // 1. Something that happened to a rank itself: a crash, an exit mid-case, a failed case.
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events)
      if (e.event == "fault")
        consider(r, e.kind == "exit" ? "exit" : e.signal,
                 (e.kind == "exit" ? std::string("exit() during ") : e.signal + " during ") +
                     (e.case_name.empty() ? "start-up" : e.case_name),
                 e.case_name, e.time_ms);
    for (const auto& c : r.cases)
      if (c.result == "failed") consider(r, "failed", c.name + " failed: " + c.message, c.name, c.end_ms);
  }
  // 2. A rank that a peer named as not answering (hung, stopped, never started).
  if (!best.found)
    for (const auto& r : run.ranks)
      for (const auto& e : r.events)
        if (e.event == "peer_lost" && !e.blamed.empty()) {
          int blamed = e.blamed.front();
          auto it = std::find_if(run.ranks.begin(), run.ranks.end(),
                                 [&](const RankJournal& x) { return x.rank == blamed; });
          RankJournal who;
          who.rank = blamed;
          if (it != run.ranks.end()) who = *it;
          std::string last = (it != run.ranks.end() && it->running)
                                 ? " (its journal stops in " + it->running->name + ")"
                                 : "";
          consider(who, "did not answer",
                   "did not answer rank " + std::to_string(r.rank) + ": " + e.reason + last, e.case_name,
                   e.time_ms);
        }
  // 3. A rank the launcher counted that left no journal at all: it never started.
  bool ranked = !run.ranks.empty() && std::all_of(run.ranks.begin(), run.ranks.end(),
                                                  [](const RankJournal& r) { return r.rank >= 0; });
  if (!best.found && ranked) {
    int world = 0;
    double t0 = 0;
    for (const auto& r : run.ranks) {
      world = std::max(world, r.world_size);
      if (t0 == 0 || (r.first_ms > 0 && r.first_ms < t0)) t0 = r.first_ms;
    }
    for (int k = 0; k < world && !best.found; ++k)
      if (std::none_of(run.ranks.begin(), run.ranks.end(),
                       [&](const RankJournal& r) { return r.rank == k; })) {
        RankJournal ghost;
        ghost.rank = k;
        consider(ghost, "never started",
                 "never started: no journal, though the launcher started " + std::to_string(world) + " ranks",
                 "", t0);
      }
  }
  // 4. A rank whose journal simply stops (SIGKILL, _exit, OOM killer): earliest last line.
  if (!best.found)
    for (const auto& r : run.ranks)
      if (!r.program_ended && r.events.empty())
        consider(r, "vanished",
                 "journal stops without an end" + (r.running ? " during " + r.running->name : std::string()) +
                     " (killed, or _exit)",
                 r.running ? r.running->name : "", r.last_ms);
  // 5. Only deadlines and signals: the first of them.
  if (!best.found)
    for (const auto& r : run.ranks)
      for (const auto& e : r.events)
        if (e.event == "watchdog" || e.event == "bootstrap" || e.event == "peer_lost" ||
            e.event == "diverged" || e.event == "interrupted")
          consider(r, e.event == "interrupted" ? e.signal : e.event, e.reason, e.case_name, e.time_ms);
  // Peers lost: every other rank that went abnormally or failed from the cause on (its
  // "Connection reset by peer" is the consequence, not a second cause).
  if (best.found)
    for (const auto& r : run.ranks) {
      if (r.rank == best.rank) continue;
      bool failed_after = std::any_of(r.cases.begin(), r.cases.end(), [&](const JournalCase& c) {
        return c.result == "failed" && c.end_ms >= best.time_ms;
      });
      if (failed_after || !r.abnormal_end().empty()) best.peers_lost.push_back(r.rank);
    }
  return best;
}

namespace {

void add_problem(JournalJunit& out, const std::string& test, const std::string& what) {
  out.problems.push_back(test + ": " + what);
}

void add_error_case(JournalJunit& out, const std::string& test, const std::string& name,
                    const std::string& cls, const std::string& message) {
  junit::Case k;
  k.binary = test;
  k.suite = test;
  k.name = name;
  k.status = junit::Status::error;
  k.message = k.detail = cap_report_text(message);
  k.properties["gpucts.failure_class"] = cls;
  out.cases.push_back(std::move(k));
}

std::string result_property(const RankJournal& r) {
  return r.rank < 0 ? "gpucts.result" : "gpucts.rank" + std::to_string(r.rank);
}

// One case as every rank recorded it, and the ranks that were running it when they ended.
struct CaseRow {
  std::string name;
  std::vector<std::pair<const RankJournal*, const JournalCase*>> results;
  std::vector<const RankJournal*> interrupted;
};

// Cases in the order they first ran on any rank; every rank's result beside each. The index
// keeps this linear in the number of cases.
std::vector<CaseRow> case_rows(const TestRun& run) {
  std::vector<CaseRow> rows;
  std::unordered_map<std::string, size_t> index;
  auto row = [&](const std::string& name) -> CaseRow& {
    auto [it, added] = index.emplace(name, rows.size());
    if (added) rows.push_back(CaseRow{name, {}, {}});
    return rows[it->second];
  };
  for (const auto& r : run.ranks) {
    for (const auto& c : r.cases) row(c.name).results.emplace_back(&r, &c);
    if (r.running) row(r.running->name).interrupted.push_back(&r);
  }
  return rows;
}

// What the ranks that finished a case say of it, the first message of each kind kept.
struct Finished {
  double duration_ms = 0;
  bool any_fail = false, any_unknown = false, all_skip = false;
  std::string fail_msg, skip_msg, unknown_msg;
};

Finished finished_results(const CaseRow& row, junit::Case& k) {
  Finished f;
  f.all_skip = !row.results.empty();
  for (const auto& [rj, c] : row.results) {
    f.duration_ms = std::max(f.duration_ms, c->end_ms - c->start_ms);
    k.properties[result_property(*rj)] = c->result + (c->message.empty() ? "" : ": " + c->message);
    auto status = junit::parse_status(c->result);
    if (!status || *status == junit::Status::error) {
      f.any_unknown = true;
      if (f.unknown_msg.empty())
        f.unknown_msg =
            rank_label(*rj) + ": unknown result '" + to_valid_utf8(c->result) + "' in the journal";
    } else if (*status == junit::Status::failed) {
      f.any_fail = true;
      if (f.fail_msg.empty()) f.fail_msg = rank_label(*rj) + ": " + c->message;
    }
    if (c->result != "skipped")
      f.all_skip = false;
    else if (f.skip_msg.empty())
      f.skip_msg = c->message;
  }
  return f;
}

// The ranks that ended while running the case: why (a timeout unless killed, interrupted or
// exited), as its message and failure class; "" where none did.
std::pair<std::string, std::string> unfinished(const CaseRow& row, const Cause& cause, junit::Case& k) {
  std::string msg, cls = "crash";
  for (const auto* rj : row.interrupted) {
    std::string why = rj->abnormal_end();
    if (why.rfind("killed", 0) != 0 && why.rfind("interrupted", 0) != 0 && why.rfind("exited", 0) != 0) {
      why = "timeout: " + why;
      if (msg.empty()) cls = "timeout";
    }
    k.properties[result_property(*rj)] = "did not finish: " + why;
    if (msg.empty()) msg = why + " (" + rank_label(*rj) + " was running " + row.name + ")";
  }
  if (!msg.empty() && cause.found) msg += "; first cause: " + cause.summary();
  return {msg, cls};
}

// One JUnit case of a row: an interruption wins, then an unknown result, a failure, all skipped.
junit::Case case_of(const TestRun& run, const CaseRow& row, const Cause& cause, JournalJunit& out) {
  auto dot = row.name.find('.');
  junit::Case k;
  k.binary = run.test;
  k.suite = dot == std::string::npos ? run.test : row.name.substr(0, dot);
  k.name = dot == std::string::npos ? row.name : row.name.substr(dot + 1);
  const Finished f = finished_results(row, k);
  const auto [err_msg, err_class] = unfinished(row, cause, k);
  k.time_s = f.duration_ms / 1000.0;
  if (!err_msg.empty()) {
    k.status = junit::Status::error;
    k.message = k.detail = cap_report_text(err_msg);
    k.properties["gpucts.failure_class"] = err_class;
  } else if (f.any_unknown) {
    k.status = junit::Status::error;
    k.message = k.detail = cap_report_text(f.unknown_msg);
    add_problem(out, run.test, f.unknown_msg + " (" + row.name + ")");
  } else if (f.any_fail) {
    k.status = junit::Status::failed;
    k.message = k.detail = cap_report_text(f.fail_msg);
  } else if (f.all_skip && row.interrupted.empty()) {
    k.status = junit::Status::skipped;
    k.message = cap_report_text(f.skip_msg.empty() ? "skipped (no reason given)" : f.skip_msg);
  }
  return k;
}

// A rank that went between cases or after its last one (no case was running): the finished cases
// are all there, but the run did not end normally, and that is an error of its own (process_end).
// A process that left its premature-exit file but no case line still shows up (startup).
void add_abnormal_ends(const TestRun& run, bool no_cases, const Cause& cause, JournalJunit& out) {
  std::string lost;
  if (!no_cases)
    for (const auto& r : run.ranks) {
      std::string why = r.abnormal_end();
      if (why.empty() || r.running) continue;
      std::string after = r.cases.empty() ? "before its first case" : "after case " + r.cases.back().name;
      int not_run = r.planned_cases >= 0 ? r.planned_cases - static_cast<int>(r.cases.size()) : 0;
      lost += (lost.empty() ? "" : "; ") + rank_label(r) + ": " + why + ", " + after +
              (not_run > 0 ? " (" + std::to_string(not_run) + " planned case(s) did not run)" : "");
    }
  if (!lost.empty())
    add_error_case(
        out, run.test, "process_end", "crash",
        "did not end normally: " + lost + (cause.found ? "; first cause: " + cause.summary() : ""));
  if (no_cases && (!run.premature_files.empty() || !run.ranks.empty()))
    add_error_case(
        out, run.test, "startup", "crash",
        "killed before any case ran: " +
            (cause.found ? cause.summary() : std::string("the test process ended before its first case")));
}

// A rank the launcher counted that left no journal: its cases are not in any line above.
// Only where every journal names its rank: a single-process binary's journal has none.
void add_missing_ranks(const TestRun& run, JournalJunit& out) {
  const bool ranked =
      std::all_of(run.ranks.begin(), run.ranks.end(), [](const RankJournal& r) { return r.rank >= 0; });
  int world = 0;
  if (ranked)
    for (const auto& r : run.ranks) world = std::max(world, r.world_size);
  std::vector<bool> seen(static_cast<size_t>(std::min(world, 1 << 20)), false);
  for (const auto& r : run.ranks)
    if (r.rank >= 0 && static_cast<size_t>(r.rank) < seen.size()) seen[static_cast<size_t>(r.rank)] = true;
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k]) {
      const std::string what = "rank " + std::to_string(k) +
                               " left no journal, though the launcher started " + std::to_string(world) +
                               " ranks";
      add_error_case(out, run.test, "rank" + std::to_string(k) + "_journal", "crash", what);
      add_problem(out, run.test, what);
    }
}

// Lines and files the reader could not take: an error case and a problem each.
void add_unreadable_journals(const TestRun& run, JournalJunit& out) {
  for (const auto& r : run.ranks)
    for (const auto& bad : r.invalid) {
      add_error_case(out, run.test, "journal", "crash", r.path + ": " + bad);
      add_problem(out, run.test, r.path + ": " + bad);
    }
  for (const auto& bad : run.unreadable) {
    add_error_case(out, run.test, "journal", "crash", bad);
    add_problem(out, run.test, bad);
  }
}

// The run's own record (ranks, first cause, how each rank ended) for its testsuites' system-out.
junit::PropertyMap run_record(const TestRun& run, const Cause& cause) {
  junit::PropertyMap props;
  props["gpucts.ranks"] = std::to_string(run.ranks.size());
  if (cause.found) props["gpucts.first_cause"] = cap_report_text(cause.summary());
  for (const auto& r : run.ranks) {
    std::string end = r.abnormal_end();
    int not_run = r.planned_cases >= 0 ? r.planned_cases - static_cast<int>(r.cases.size()) : 0;
    props["gpucts.rank" + std::to_string(r.rank) + ".end"] =
        (end.empty() ? std::string("completed") : end) +
        (not_run > 0 ? "; " + std::to_string(not_run) + " planned case(s) did not finish" : "");
  }
  for (size_t i = 0; i < run.premature_files.size(); ++i)
    props["gpucts.premature_exit_file" + (i ? "." + std::to_string(i) : std::string())] =
        run.premature_files[i];
  return props;
}

}  // namespace

JournalJunit journals_to_cases(const std::vector<TestRun>& runs) {
  JournalJunit out;
  for (const auto& run : runs) {
    const std::vector<CaseRow> rows = case_rows(run);
    const Cause cause = first_cause(run);
    const size_t first_case = out.cases.size();
    for (const auto& row : rows) out.cases.push_back(case_of(run, row, cause, out));
    add_abnormal_ends(run, rows.empty(), cause, out);
    add_missing_ranks(run, out);
    add_unreadable_journals(run, out);
    if (out.cases.size() > first_case) out.run_properties[run.test] = run_record(run, cause);
  }
  if (out.cases.empty()) {  // an empty report is not a green one: one error case says why
    const std::string why = "no journal: no test process wrote a case or left a premature-exit file";
    add_error_case(out, "journal-to-junit", "no_journal", "crash", why);
    out.problems.push_back(why);
  }
  return out;
}

std::string journals_to_junit(const std::vector<TestRun>& runs) {
  const JournalJunit j = journals_to_cases(runs);
  return junit::write(j.cases, "gpucts journals", {}, j.run_properties);
}

void set_journal_times(std::vector<junit::Case>& cases, const RankJournal& j) {
  std::map<std::string, double> took;
  for (const auto& c : j.cases)
    if (c.end_ms >= c.start_ms && c.start_ms > 0) took[c.name] = (c.end_ms - c.start_ms) / 1000.0;
  for (auto& c : cases)
    if (auto it = took.find(c.suite + "." + c.name); it != took.end()) c.time_s = it->second;
}

}  // namespace cts
