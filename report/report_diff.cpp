#include "report/report_diff.hpp"

#include <algorithm>

#include "report/across_runs.hpp"
#include "report/verdict.hpp"
#include "results/text_format.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace cts::report {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kMaxRows = 500;  // per table in Markdown/HTML; JSON has every row

bool is_fail(const std::string& s) { return s == "failed" || s == "error"; }

// Between two decided statuses (verdict::outcome_name, or "absent").
std::string change_of(const std::string& base, const std::string& cand) {
  if (base == cand) return "";
  if (cand == "absent") return "missing";
  if (base == "absent") return is_fail(cand) ? "newly failing" : "new";
  if (is_fail(cand) && !is_fail(base)) return "newly failing";
  if (cand == "passed") return "newly passing";
  if (cand == "waived") return "newly waived";
  if (cand == "skipped") return "newly skipped";
  return "";  // failed <-> error: still failing
}

std::string run_label(const bundle::Bundle& b) {
  return std::filesystem::path(b.dir).filename().string() + " (" + b.manifest.host + ", " +
         b.manifest.created + ")";
}

std::string value_str(double v, const std::string& metric) { return across::value_text(v, metric); }
std::string pct(double v) { return across::percent_text(v); }

}  // namespace

bool Comparison::regressed() const {
  for (const auto& r : regressions)
    if (!r.empty()) return true;
  return false;
}

Scope scope_of(const bundle::Bundle& b) {
  Scope sc;
  sc.level = b.manifest.level;
  sc.revision = b.manifest.gpucts_revision;
  const nlohmann::json& sel = b.manifest.selection;
  if (!sel.is_object() || sel.empty()) return sc;  // not recorded (a bundle of an older gpucts)
  // As the options were given: "--label single-gpu|perf, --exclude-label torch".
  static const std::vector<std::pair<std::string, std::string>> options = {
      {"labels", "--label"},
      {"exclude_label", "--exclude-label"},
      {"tests", "--tests"},
      {"exclude_tests", "--exclude-tests"}};
  std::vector<std::string> parts;
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  for (const auto& [key, option] : options)
    if (sel.contains(key))
      for (const auto& v : sel.at(key).is_array() ? sel.at(key) : nlohmann::json::array({sel.at(key)}))
        parts.push_back(option + " " + text(v));
  for (const auto& item : sel.items()) {
    const std::string key = item.key();  // a plain name: lambdas cannot capture a binding in C++17
    if (std::none_of(options.begin(), options.end(), [&](const auto& o) { return o.first == key; }))
      parts.push_back(key + " " + text(item.value()));
  }
  sc.selection = parts.empty() ? "every suite of the level" : join(parts, ", ");
  return sc;
}

namespace {

// Whether two runs ran the same things, as far as their manifests say (unrecorded: assumed so).
bool same_scope(const Scope& a, const Scope& b) {
  auto same = [](const std::string& x, const std::string& y) { return x.empty() || y.empty() || x == y; };
  return same(a.level, b.level) && same(a.selection, b.selection);
}

std::string scope_text(const Scope& s) {
  std::string t;
  if (!s.level.empty()) t = "level " + s.level;
  if (!s.selection.empty()) t += (t.empty() ? "" : ", ") + std::string("selection ") + s.selection;
  return t.empty() ? "not recorded" : t;
}

}  // namespace

namespace {

// Lost coverage is counted per binary, so a vanished sweep is one line, not thousands.
struct Lost {
  int count = 0;
  std::string first, message;
};

// A case of one run and what decide() says it means there.
struct Seen {
  const junit::Case* c;
  std::string status;  // verdict::outcome_name
};

// What compare() builds up on the way to its Comparison, one named step at a time.
struct Diff {
  Comparison c;
  size_t n = 0;                // candidates
  std::vector<bool> narrowed;  // per candidate: compared on what both ran
  // Case keys in baseline order then new ones; each run's cases by key; the binary of each key.
  std::vector<std::string> order;
  std::map<std::string, Seen> base;
  std::vector<std::map<std::string, Seen>> cand;
  std::map<std::string, std::string> binary_of;
  std::map<std::string, size_t> suite_index;  // binary -> its row of c.suites
  // Per candidate, binary -> passed cases of the baseline now absent / now skipped / now waived.
  std::vector<std::map<std::string, Lost>> lost, skipped, waived;
  // Where the runs' selections differ, what one ran and the other did not: per candidate,
  // binary -> (only in the baseline, only in the candidate).
  std::vector<std::map<std::string, std::pair<int, int>>> outside;
  // Default points of the baseline a candidate does not have: per candidate, test -> (count, first
  // label); and the bandwidth tests each candidate has at all.
  std::vector<std::map<std::string, std::pair<int, std::string>>> gone;
  std::vector<std::set<std::string>> cand_tests;

  SuiteDelta& delta(const std::string& binary) {
    auto [it, fresh] = suite_index.emplace(binary, c.suites.size());
    if (fresh) c.suites.push_back({binary, 0, std::vector<int>(n), std::vector<int>(n), std::vector<int>(n)});
    return c.suites[it->second];
  }
};

// Refuses bundles of different schemas; warns of another gpucts version or revision; records scopes.
void check_comparable(const bundle::Bundle& baseline, const std::vector<bundle::Bundle>& candidates,
                      Comparison& c) {
  for (const auto& cand : candidates) {
    if (cand.manifest.schema != baseline.manifest.schema)
      throw bundle::BundleError("bundles of different schemas cannot be compared: " + baseline.dir + " is " +
                                baseline.manifest.schema + ", " + cand.dir + " is " + cand.manifest.schema);
    if (cand.manifest.gpucts_version != baseline.manifest.gpucts_version)
      c.warnings.push_back("warning: " + cand.dir + " comes from gpucts " + cand.manifest.gpucts_version +
                           ", the baseline " + baseline.dir + " from gpucts " +
                           baseline.manifest.gpucts_version +
                           ": a difference may be the suite's, not the stack's");
  }
  c.scopes.push_back(scope_of(baseline));
  for (const auto& cand : candidates) c.scopes.push_back(scope_of(cand));
  for (size_t i = 1; i < c.scopes.size(); ++i) {
    const std::string &a = c.scopes[0].revision, &b = c.scopes[i].revision;
    if (!a.empty() && !b.empty() && a != b &&
        candidates[i - 1].manifest.gpucts_version == baseline.manifest.gpucts_version)
      c.warnings.push_back("warning: " + candidates[i - 1].dir + " was run by gpucts revision " + b +
                           ", the baseline by " + a);
  }
}

void take_runs(Diff& d, bundle::Bundle baseline, std::vector<bundle::Bundle> candidates) {
  d.c.baseline = std::move(baseline);
  d.c.candidates = std::move(candidates);
  d.n = d.c.candidates.size();
  d.c.regressions.resize(d.n);
  d.c.left_out.resize(d.n);
  d.c.only_in_candidate.resize(d.n);
  d.narrowed.resize(d.n);
  for (size_t i = 0; i < d.n; ++i) d.narrowed[i] = !same_scope(d.c.scopes[0], d.c.scopes[i + 1]);
  d.cand.resize(d.n);
  d.lost.resize(d.n);
  d.skipped.resize(d.n);
  d.waived.resize(d.n);
  d.outside.resize(d.n);
  d.gone.resize(d.n);
  d.cand_tests.resize(d.n);
}

// Environment: the merged rows of each bundle, by name.
void compare_environment(Comparison& c) {
  std::vector<std::map<std::string, std::string>> cand_env;
  for (const auto& b : c.candidates) {
    std::map<std::string, std::string> m;
    for (auto& [k, v] : bundle::environment(b)) m[k] = v;
    cand_env.push_back(std::move(m));
  }
  for (const auto& [what, v] : bundle::environment(c.baseline)) {
    EnvRow r{what, v, {}, false};
    for (const auto& e : cand_env) {
      auto it = e.find(what);
      r.candidates.push_back(it == e.end() ? "absent" : it->second);
      r.changed |= r.candidates.back() != v;
    }
    c.environment.push_back(std::move(r));
  }
  // What ran them: the gpucts and what it was asked to run.
  auto field = [&](const char* what, auto get) {
    EnvRow r{what, get(0), {}, false};
    for (size_t i = 1; i < c.scopes.size(); ++i) {
      r.candidates.push_back(get(i));
      r.changed |= r.candidates.back() != r.baseline;
    }
    c.environment.push_back(std::move(r));
  };
  auto version = [&](size_t k) {
    return (k == 0 ? c.baseline : c.candidates[k - 1]).manifest.gpucts_version;
  };
  auto or_not = [](const std::string& v) { return v.empty() ? std::string("not recorded") : v; };
  field("gpucts", [&](size_t k) {
    return version(k) + (c.scopes[k].revision.empty() ? "" : " (" + c.scopes[k].revision + ")");
  });
  field("level", [&](size_t k) { return or_not(c.scopes[k].level); });
  field("selection", [&](size_t k) { return or_not(c.scopes[k].selection); });
}

// Verdicts (each run decided once: the cases are compared by what it says they mean), and runs
// that did not finish.
void compare_verdicts(Comparison& c) {
  c.verdicts.push_back(verdict::decide(c.baseline));
  for (const auto& b : c.candidates) c.verdicts.push_back(verdict::decide(b));
  const verdict::Verdict& before = c.verdicts[0];
  for (size_t i = 0; i < c.candidates.size(); ++i) {
    const verdict::Verdict& after = c.verdicts[i + 1];
    if (before.exit_code() == 0 && after.exit_code() != 0)
      c.regressions[i].push_back(std::string("verdict: ") + verdict::kind_name(before.kind) + " -> " +
                                 verdict::kind_name(after.kind));
    if (c.candidates[i].manifest.interrupted)
      c.regressions[i].push_back("interrupted: the run was stopped before it finished");
  }
}

// Every run's cases by key, the order of the rows, and each binary's case counts.
void index_cases(Diff& d) {
  auto seen = [&](size_t run, size_t j) {
    const auto& b = run == 0 ? d.c.baseline : d.c.candidates[run - 1];
    return Seen{&b.cases[j], verdict::outcome_name(d.c.verdicts[run].outcomes[j])};
  };
  for (size_t j = 0; j < d.c.baseline.cases.size(); ++j) {
    const std::string key = d.c.baseline.cases[j].key();
    if (!d.base.count(key)) d.order.push_back(key);
    d.base[key] = seen(0, j);
  }
  for (size_t i = 0; i < d.n; ++i)
    for (size_t j = 0; j < d.c.candidates[i].cases.size(); ++j) {
      const std::string key = d.c.candidates[i].cases[j].key();
      if (!d.base.count(key) && std::find(d.order.begin(), d.order.end(), key) == d.order.end())
        d.order.push_back(key);
      d.cand[i][key] = seen(i + 1, j);
    }
  for (const auto& [key, k] : d.base) d.binary_of[key] = k.c->binary;
  for (const auto& m : d.cand)
    for (const auto& [key, k] : m) d.binary_of.emplace(key, k.c->binary);
  for (const auto& k : d.c.baseline.cases) ++d.delta(k.binary).baseline;
  for (size_t i = 0; i < d.n; ++i)
    for (const auto& k : d.c.candidates[i].cases) ++d.delta(k.binary).candidates[i];
}

// One case in candidate i against the baseline: its column of `row`, and what it regresses or adds.
void compare_case_in(Diff& d, CaseRow& row, size_t i) {
  const std::string& binary = d.binary_of[row.key];
  auto it = d.cand[i].find(row.key);
  const bool present = it != d.cand[i].end();
  const std::string s = present ? it->second.status : "absent";
  if (d.narrowed[i] && (s == "absent") != (row.baseline == "absent")) {
    auto& o = d.outside[i][binary];
    ++(s == "absent" ? o.first : o.second);
    row.candidates.push_back(s == "absent" ? "not run" : s);
    row.change.push_back("");
    return;
  }
  row.candidates.push_back(s);
  row.change.push_back(change_of(row.baseline, s));
  const std::string& change = row.change.back();
  const junit::Case* k = present ? it->second.c : nullptr;
  if (k && !k->message.empty()) row.message = k->message;
  if (change == "newly failing")
    d.c.regressions[i].push_back("newly failing: " + row.key + (k ? " -- " + k->message : ""));
  if (change == "missing") {
    ++d.delta(binary).missing[i];
    if (row.baseline == "passed") {
      auto& l = d.lost[i][binary];
      if (l.count++ == 0) l.first = row.key;
    }
  }
  if ((change == "newly skipped" || change == "newly waived") && row.baseline == "passed") {
    auto& l = (change == "newly waived" ? d.waived : d.skipped)[i][binary];
    if (l.count++ == 0) {
      l.first = row.key;
      l.message =
          change == "newly waived" ? junit::cause(k->detail.empty() ? k->message : k->detail) : k->message;
    }
  }
  if (change == "new" || (row.baseline == "absent" && s != "absent")) ++d.delta(binary).added[i];
}

// Cases, in baseline order then new ones: a row where some candidate differs.
void compare_cases(Diff& d) {
  for (const auto& key : d.order) {
    CaseRow row;
    row.key = key;
    auto b = d.base.find(key);
    row.baseline = b == d.base.end() ? "absent" : b->second.status;
    for (size_t i = 0; i < d.n; ++i) compare_case_in(d, row, i);
    if (std::any_of(row.change.begin(), row.change.end(), [](const std::string& x) { return !x.empty(); }))
      d.c.cases.push_back(std::move(row));
  }
}

// Coverage lost (absent or newly skipped, per binary) regresses; what only one run ran is said.
void report_coverage(Diff& d) {
  for (size_t i = 0; i < d.n; ++i) {
    for (const auto& [binary, l] : d.lost[i])
      d.c.regressions[i].push_back("missing: " + std::to_string(l.count) + " case(s) of " + binary +
                                   " that passed in the baseline are absent (first: " + l.first + ")");
    for (const auto& [binary, l] : d.skipped[i])
      d.c.regressions[i].push_back("newly skipped: " + std::to_string(l.count) + " case(s) of " + binary +
                                   " that passed in the baseline (first: " + l.first +
                                   (l.message.empty() ? "" : " -- " + l.message) + ")");
    for (const auto& [binary, l] : d.waived[i])
      d.c.regressions[i].push_back("newly waived: " + std::to_string(l.count) + " case(s) of " + binary +
                                   " that passed in the baseline fail, waived with --accept-known (first: " +
                                   l.first + (l.message.empty() ? "" : " -- " + l.message) + ")");
    for (const auto& [binary, o] : d.outside[i]) {
      std::string t = binary + ": ";
      if (o.first) t += std::to_string(o.first) + " case(s) only the baseline ran";
      if (o.first && o.second) t += ", ";
      if (o.second) t += std::to_string(o.second) + " case(s) only this run ran";
      d.c.left_out[i].push_back(t);
    }
  }
}

// One baseline point against each candidate's point of the same key: a row, and the slowdowns.
BandwidthRow compare_point(Diff& d, const across::PerfPoint& bp,
                           const std::vector<std::map<std::string, across::PerfPoint>>& cpts) {
  const double tolerance_pct = d.c.tolerance_pct;
  BandwidthRow row;
  row.key = bp.key;
  row.label = bp.label;
  row.metric = bp.metric;
  row.baseline = bp.value;
  row.baseline_spread_pct = bp.spread_pct;
  for (size_t i = 0; i < d.n; ++i) {
    auto it = cpts[i].find(bp.key);
    const bool same_metric = it != cpts[i].end() && it->second.metric == bp.metric;
    const across::Move m =
        same_metric ? across::judge_move(bp, it->second, tolerance_pct) : across::Move{kNaN, kNaN, ""};
    row.candidates.push_back(same_metric ? it->second.value : kNaN);
    row.change_pct.push_back(m.change_pct);
    row.candidate_spread_pct.push_back(same_metric ? it->second.spread_pct : kNaN);
    row.change.push_back(m.change);
    if (it == cpts[i].end() && bp.variant.empty()) {
      auto& g = d.gone[i][bp.test];
      if (g.first++ == 0) g.second = bp.label;
    }
    // A variant (nonblocking communicators, polled after every call) times the harness as much as
    // the stack: it is shown, it does not gate.
    if (m.change == "slower" && bp.variant.empty()) {
      char why[96];
      std::snprintf(why, sizeof why, " (tolerance %g%%, spread %.1f%%/%.1f%%)", tolerance_pct, bp.spread_pct,
                    it->second.spread_pct);
      d.c.regressions[i].push_back("slower by " + pct(m.worse_pct).substr(1) + ": " + bp.label + ", " +
                                   across::metric_text(bp.metric) + " " + value_str(row.baseline, bp.metric) +
                                   " -> " + value_str(row.candidates.back(), bp.metric) + why);
    }
  }
  return row;
}

// Bandwidth: points present in the baseline, compared by key (so never across variants).
void compare_bandwidth(Diff& d) {
  std::vector<std::map<std::string, across::PerfPoint>> cpts(d.n);
  for (size_t i = 0; i < d.n; ++i) {
    for (auto& p : across::perf_points(d.c.candidates[i])) cpts[i].emplace(p.key, std::move(p));
    for (const auto& [test, run] : d.c.candidates[i].bandwidth) d.cand_tests[i].insert(test);
  }
  std::set<std::string> in_baseline;
  for (const auto& bp : across::perf_points(d.c.baseline)) {
    in_baseline.insert(bp.key);
    BandwidthRow row = compare_point(d, bp, cpts);
    if (std::any_of(row.change.begin(), row.change.end(), [](const std::string& x) { return !x.empty(); }))
      d.c.bandwidth.push_back(std::move(row));
  }
  // Default points only a candidate measured (a collective or sizes the baseline lacks): said, per
  // collective, never silently dropped; there is nothing to compare them with.
  for (size_t i = 0; i < d.n; ++i) {
    std::vector<std::pair<std::string, std::pair<int, std::string>>>
        only;  // test: collective -> count, first
    for (const auto& p : across::perf_points(d.c.candidates[i])) {
      if (!p.variant.empty() || in_baseline.count(p.key)) continue;
      const std::string what = p.test + ": " + p.collective;
      auto it = std::find_if(only.begin(), only.end(), [&](const auto& o) { return o.first == what; });
      if (it == only.end()) it = only.insert(only.end(), {what, {0, p.label}});
      ++it->second.first;
    }
    for (const auto& [what, o] : only) {
      const std::string line =
          what + ": " + std::to_string(o.first) +
          " point(s) only in this run, none in the baseline to compare with (first: " + o.second + ")";
      (d.narrowed[i] ? d.c.left_out[i] : d.c.only_in_candidate[i]).push_back(line);
    }
  }
}

// Default points a candidate lacks: a regression, or said only where the selections differ.
void report_missing_bandwidth(Diff& d) {
  for (size_t i = 0; i < d.n; ++i)
    for (const auto& [test, g] : d.gone[i]) {
      const std::string what =
          d.cand_tests[i].count(test)
              ? std::to_string(g.first) + " point(s) of " + test + " absent (first: " + g.second + ")"
              : test + " has no results in this run (" + std::to_string(g.first) +
                    " point(s) in the baseline)";
      if (d.narrowed[i])
        d.c.left_out[i].push_back("bandwidth " + what);
      else
        d.c.regressions[i].push_back("missing bandwidth: " + what);
    }
}

// From each run to the next (baseline, candidate 1, candidate 2, ...): what moved between neighbours,
// the floors crossed, and the points where no data moves.
void compare_neighbours(Comparison& c) {
  std::vector<const bundle::Bundle*> seq{&c.baseline};
  for (const auto& b : c.candidates) seq.push_back(&b);
  c.adjacent = across::adjacent_changes(seq, c.tolerance_pct);
  c.names = across::run_names(seq);
  c.story = bands::tell(seq, c.names, c.tolerance_pct);
  for (const auto& x : c.story.crossings)
    if (x.under && x.qualifier.find("nonblocking") == std::string::npos)
      c.regressions[x.run - 1].push_back("under its floor: " + x.text.substr(x.text.find(": ") + 2));
  // One line per collective, dtype and reason over every run, its sizes as a range.
  std::vector<
      std::pair<std::tuple<std::string, std::string, std::string, int, std::string>, std::set<std::uint64_t>>>
      groups;
  for (size_t k = 0; k < seq.size(); ++k)
    for (const auto& [test, run] : seq[k]->bandwidth)
      for (const auto& p : run.points)
        if (auto why = bw::no_data_moves(p); !why.empty()) {
          const auto key = std::make_tuple(test, p.collective, p.dtype, p.ranks, why);
          auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
          if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
          it->second.insert(p.bytes);
        }
  for (const auto& [key, sizes] : groups) {
    const auto& [test, coll, dtype, ranks, why] = key;
    const std::string where = sizes.size() == 1 ? bw::format_bytes(*sizes.begin())
                                                : bw::format_bytes(*sizes.begin()) + " - " +
                                                      bw::format_bytes(*sizes.rbegin()) + " (" +
                                                      std::to_string(sizes.size()) + " sizes)";
    c.no_data.push_back(test + ": " + coll + " " + dtype + " " + where + " in place, " +
                        std::to_string(ranks) + " rank(s): " + why);
  }
}

}  // namespace

Comparison compare(bundle::Bundle baseline, std::vector<bundle::Bundle> candidates, double tolerance_pct) {
  Diff d;
  d.c.tolerance_pct = tolerance_pct;
  check_comparable(baseline, candidates, d.c);
  take_runs(d, std::move(baseline), std::move(candidates));
  compare_environment(d.c);
  compare_verdicts(d.c);
  index_cases(d);
  compare_cases(d);
  report_coverage(d);
  compare_bandwidth(d);
  report_missing_bandwidth(d);
  compare_neighbours(d.c);
  return std::move(d.c);
}

namespace {

// Column and legend names: what differs between the runs (c.names), with the run's role.
struct RunNames {
  const Comparison& c;
  std::string name(size_t k) const { return k < c.names.size() ? c.names[k] : std::string(); }
  std::string column(size_t k) const {
    const std::string role = k == 0 ? "baseline" : "candidate " + std::to_string(k);
    return name(k).empty() ? role : role + ": " + name(k);
  }
  std::string legend(size_t k) const {
    const bool unique = !name(k).empty() && std::count(c.names.begin(), c.names.end(), name(k)) == 1;
    return unique ? name(k) : column(k);
  }
  // `first` followed by a column per run.
  std::vector<std::string> header(std::vector<std::string> first) const {
    for (size_t k = 0; k <= c.candidates.size(); ++k) first.push_back(column(k));
    return first;
  }
};

std::string tolerance_text(const Comparison& c) {
  char tol[32];
  std::snprintf(tol, sizeof tol, "%g%%", c.tolerance_pct);
  return tol;
}

// The first screen: floors crossed, bands of moves, and what else regressed, one line each.
void first_screen(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  const size_t n = c.candidates.size();
  d.heading("What changed against " + rn.legend(0));
  std::vector<std::string> story = c.story.lines();
  for (size_t i = 0; i < n; ++i) {
    std::map<std::string, int> failing;  // binary -> cases newly failing
    for (const auto& r : c.cases)
      if (r.change[i] == "newly failing") ++failing[r.key.substr(0, r.key.find('/'))];
    for (const auto& [binary, k] : failing)
      story.push_back(rn.legend(i + 1) + ": " + std::to_string(k) + " case(s) of " + binary +
                      " newly failing");
    for (const auto& r : c.regressions[i])
      if (r.rfind("missing", 0) == 0 || r.rfind("newly skipped", 0) == 0 || r.rfind("newly waived", 0) == 0 ||
          r.rfind("interrupted", 0) == 0 || r.rfind("verdict", 0) == 0)
        story.push_back(rn.legend(i + 1) + ": " + r);
    for (const auto& o : c.only_in_candidate[i]) story.push_back(rn.legend(i + 1) + ": " + o);
  }
  const std::string tol = tolerance_text(c);
  if (story.empty())
    d.paragraph("nothing moved beyond " + tol +
                " and the spread either run recorded; no case changed for the worse");
  else
    d.list(story);
  d.paragraph("bands: points beyond " + tol +
              " and beyond the spread either run recorded, against the baseline; latency under 64 KiB, "
              "busbw (algbw with one rank) at and above; every point is under Details and in the JSON");
  for (size_t i = 0; i < n; ++i)
    if (!c.left_out[i].empty() || !same_scope(c.scopes[0], c.scopes[i + 1])) {
      std::string t;
      for (const auto& l : c.left_out[i]) t += (t.empty() ? "" : "; ") + l;
      d.paragraph("compared on what both ran: " + rn.legend(i + 1) + " (" + scope_text(c.scopes[i + 1]) +
                  ") and the baseline (" + scope_text(c.scopes[0]) +
                  ") ran different selections; left out: " +
                  (t.empty() ? std::string("nothing, both ran the same cases and points") : t));
    }
}

void runs_table(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  doc::Table runs{{"run", "bundle", "verdict", "cases (pass/fail/err/skip)", "regressions"}, {}, {}};
  // A waived failure is counted with the skips, as junit.xml shows it.
  auto run_row = [&](const std::string& label, const bundle::Bundle& b, const verdict::Verdict& v,
                     const std::vector<std::string>* regs) {
    const verdict::Tally k = v.tally();
    runs.rows.push_back({label, run_label(b), verdict::kind_name(v.kind),
                         std::to_string(k.passed) + "/" + std::to_string(k.failed) + "/" +
                             std::to_string(k.errors) + "/" + std::to_string(k.skipped + k.waived),
                         regs ? std::to_string(regs->size()) : ""});
    runs.row_class.push_back(regs ? (regs->empty() ? "pass" : "fail") : "");
  };
  run_row(rn.column(0), c.baseline, c.verdicts[0], nullptr);
  for (size_t i = 0; i < c.candidates.size(); ++i)
    run_row(rn.column(i + 1), c.candidates[i], c.verdicts[i + 1], &c.regressions[i]);
  d.table(std::move(runs));
}

// Plots before the long tables: each run against the baseline, then the values.
void plots_section(doc::Doc& d, const Comparison& c, const RunNames& rn, bool link_plots) {
  if (c.baseline.bandwidth.empty()) return;
  std::vector<const bundle::Bundle*> seq{&c.baseline};
  for (const auto& b : c.candidates) seq.push_back(&b);
  std::vector<std::string> legends;
  for (size_t k = 0; k <= c.candidates.size(); ++k) legends.push_back(rn.legend(k));
  d.heading("Bandwidth by run");
  d.paragraph(
      "first each run against the baseline (speed = the baseline's time over the run's, out of "
      "place; the shaded band is the tolerance), then the values with the threshold floors dashed "
      "and the crossings ringed");
  for (const auto& plot : bands::plots(seq, legends, c.story, c.tolerance_pct))
    d.svg(plot.svg, plot.title, link_plots ? plot.file : "");
}

void environment_section(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  d.heading("Environment");
  doc::Table env{rn.header({"what"}), {}, {}};
  for (const auto& r : c.environment) {
    std::vector<std::string> row{r.what + (r.changed ? " (changed)" : ""), r.baseline};
    row.insert(row.end(), r.candidates.begin(), r.candidates.end());
    env.rows.push_back(std::move(row));
    env.row_class.push_back(r.changed ? "skip" : "");
  }
  d.table(std::move(env));
}

// Each candidate's regressions, the points where no data moves, and per binary what each run holds
// (so a vanished or new suite shows at a glance).
void details_section(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  const size_t n = c.candidates.size();
  d.heading("Details");
  for (size_t i = 0; i < n; ++i)
    if (!c.regressions[i].empty()) {
      d.heading("Regressions of " + rn.column(i + 1) + " (" + std::to_string(c.regressions[i].size()) + ")",
                3);
      d.list(c.regressions[i]);
    }
  if (!c.no_data.empty()) {
    d.heading("Points where no data moves (" + std::to_string(c.no_data.size()) + "): no bandwidth shown", 3);
    d.list(c.no_data);
  }
  d.heading("Cases per suite");
  doc::Table per{{"suite", rn.column(0)}, {}, {}};
  for (size_t i = 0; i < n; ++i) per.header.push_back(rn.column(i + 1) + " (new / missing)");
  for (const auto& sd : c.suites) {
    std::vector<std::string> row{sd.binary, std::to_string(sd.baseline)};
    bool lost = false;
    for (size_t i = 0; i < n; ++i) {
      row.push_back(std::to_string(sd.candidates[i]) + " (+" + std::to_string(sd.added[i]) + " / -" +
                    std::to_string(sd.missing[i]) + ")");
      lost |= sd.missing[i] > 0;
    }
    per.rows.push_back(std::move(row));
    per.row_class.push_back(lost ? "fail" : "");
  }
  d.table(std::move(per));
}

// Bandwidth between adjacent runs (with more than one candidate), then against the baseline.
void bandwidth_sections(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  const size_t n = c.candidates.size();
  const std::string tol = tolerance_text(c);
  if (n > 1) {
    std::vector<std::string> names;
    for (size_t k = 0; k <= n; ++k) names.push_back(rn.legend(k));
    d.heading("Bandwidth between adjacent runs (" + std::to_string(c.adjacent.size()) + " point(s) moved)");
    d.paragraph("each run against the one before it: points beyond " + tol +
                " and beyond the spread either run recorded; latency under 64 KiB, GB/s at and above");
    if (c.adjacent.empty())
      d.paragraph("no point moved between adjacent runs");
    else {
      // The default measurement first, the variants after it.
      std::vector<across::PerfChange> ordered = c.adjacent;
      std::stable_partition(ordered.begin(), ordered.end(),
                            [](const across::PerfChange& m) { return m.before.variant.empty(); });
      d.table(across::change_table(ordered, names, kMaxRows));
    }
  }
  d.heading("Bandwidth points that moved more than " + tol + " against the baseline (" +
            std::to_string(c.bandwidth.size()) + ")");
  if (c.bandwidth.empty()) {
    d.paragraph(c.baseline.bandwidth.empty() ? "the baseline has no bandwidth results"
                                             : "no point moved beyond the tolerance");
    return;
  }
  doc::Table t{rn.header({"point", "metric"}), {}, {}};
  for (const auto& r : c.bandwidth) {
    if (t.rows.size() == kMaxRows) break;
    std::vector<std::string> row{r.label, across::metric_text(r.metric), value_str(r.baseline, r.metric)};
    bool slower = false;
    for (size_t i = 0; i < n; ++i) {
      row.push_back(value_str(r.candidates[i], r.metric) +
                    (std::isnan(r.change_pct[i]) ? "" : " (" + pct(r.change_pct[i]) + ")"));
      slower |= r.change[i] == "slower";
    }
    t.rows.push_back(std::move(row));
    t.row_class.push_back(slower ? "fail" : "pass");
  }
  d.table(std::move(t));
}

// Changed cases grouped by suite, collective and the same change in every run.
void changed_cases_section(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  const size_t n = c.candidates.size();
  d.heading("Cases that changed (" + std::to_string(c.cases.size()) + ")");
  if (c.cases.empty()) {
    d.paragraph("every case has the same result in every run");
    return;
  }
  struct Group {
    std::vector<std::string> cells;  // suite, collective, baseline, each candidate
    int cases = 0;
    std::string example, message;
    bool fail = false;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> index;
  for (const auto& r : c.cases) {
    const auto slash = r.key.find('/');
    const std::string binary = r.key.substr(0, slash);
    const std::string rest = slash == std::string::npos ? "" : r.key.substr(slash + 1);
    Group g{{binary, rest.substr(0, rest.find('.')), r.baseline}, 0, r.key, r.message, false};
    for (size_t i = 0; i < n; ++i) {
      g.cells.push_back(r.candidates[i] + (r.change[i].empty() ? "" : " (" + r.change[i] + ")"));
      g.fail |= r.change[i] == "newly failing";
    }
    std::string k;
    for (const auto& x : g.cells) k += x + "|";
    auto [it, fresh] = index.emplace(k, groups.size());
    if (fresh) groups.push_back(std::move(g));
    ++groups[it->second].cases;
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return std::tie(a.cells[0], a.cells[1]) < std::tie(b.cells[0], b.cells[1]);
  });
  doc::Table t{{"suite", "collective"}, {}, {}};
  for (size_t k = 0; k <= n; ++k) t.header.push_back(rn.column(k));
  for (const char* h : {"cases", "example", "latest message"}) t.header.push_back(h);
  for (const auto& g : groups) {
    if (t.rows.size() == kMaxRows) break;
    std::vector<std::string> row = g.cells;
    row.insert(row.end(), {std::to_string(g.cases), g.example, g.message});
    t.rows.push_back(std::move(row));
    t.row_class.push_back(g.fail ? "fail" : "skip");
  }
  d.table(std::move(t));
}

// Each changed case, one row each.
void every_changed_case(doc::Doc& d, const Comparison& c, const RunNames& rn) {
  if (c.cases.empty()) return;
  d.heading("Every changed case (" + std::to_string(c.cases.size()) + ")");
  doc::Table t{rn.header({"case"}), {}, {}};
  t.header.push_back("latest message");
  for (const auto& r : c.cases) {
    if (t.rows.size() == kMaxRows) break;
    std::vector<std::string> row{r.key, r.baseline};
    bool fail = false;
    for (size_t i = 0; i < c.candidates.size(); ++i) {
      row.push_back(r.candidates[i] + (r.change[i].empty() ? "" : " (" + r.change[i] + ")"));
      fail |= r.change[i] == "newly failing";
    }
    row.push_back(r.message);
    t.rows.push_back(std::move(row));
    t.row_class.push_back(fail ? "fail" : "skip");
  }
  d.table(std::move(t));
  if (c.cases.size() > kMaxRows)
    d.paragraph("... and " + std::to_string(c.cases.size() - kMaxRows) +
                " more: every change is in report.json");
}

}  // namespace

doc::Doc to_doc(const Comparison& c, bool link_plots) {
  doc::Doc d;
  const size_t n = c.candidates.size();
  const RunNames rn{c};
  d.title =
      "gpucts regression report: " + std::to_string(n) + " candidate(s) against " + run_label(c.baseline);
  int bad = 0;
  for (const auto& r : c.regressions) bad += !r.empty();
  d.verdict(bad ? "REGRESSED: " + std::to_string(bad) + " of " + std::to_string(n) + " candidate(s)"
                : "NO REGRESSION",
            bad ? "fail" : "pass");
  for (const auto& w : c.warnings) d.paragraph(w);
  first_screen(d, c, rn);
  runs_table(d, c, rn);
  plots_section(d, c, rn, link_plots);
  environment_section(d, c, rn);
  details_section(d, c, rn);
  bandwidth_sections(d, c, rn);
  changed_cases_section(d, c, rn);
  every_changed_case(d, c, rn);
  return d;
}

nlohmann::json to_json(const Comparison& c) {
  // A waived failure is counted with the skips, as junit.xml shows it, and on its own.
  auto run = [](const bundle::Bundle& b, const verdict::Verdict& v) {
    const verdict::Tally k = v.tally();
    return nlohmann::json{{"dir", b.dir},
                          {"host", b.manifest.host},
                          {"created", b.manifest.created},
                          {"gpucts_version", b.manifest.gpucts_version},
                          {"verdict", verdict::kind_name(v.kind)},
                          {"passed", k.passed},
                          {"failed", k.failed},
                          {"errors", k.errors},
                          {"skipped", k.skipped + k.waived},
                          {"waived", k.waived}};
  };
  auto num = [](double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); };
  nlohmann::json j;
  j["schema"] = "gpucts.report/1";
  j["tolerance_pct"] = c.tolerance_pct;
  j["regressed"] = c.regressed();
  j["baseline"] = run(c.baseline, c.verdicts[0]);
  j["candidates"] = nlohmann::json::array();
  for (size_t i = 0; i < c.candidates.size(); ++i) {
    auto r = run(c.candidates[i], c.verdicts[i + 1]);
    r["regressions"] = c.regressions[i];
    j["candidates"].push_back(r);
  }
  j["environment"] = nlohmann::json::array();
  for (const auto& e : c.environment)
    j["environment"].push_back(
        {{"what", e.what}, {"baseline", e.baseline}, {"candidates", e.candidates}, {"changed", e.changed}});
  j["cases"] = nlohmann::json::array();
  for (const auto& r : c.cases)
    j["cases"].push_back({{"case", r.key},
                          {"baseline", r.baseline},
                          {"candidates", r.candidates},
                          {"change", r.change},
                          {"message", r.message}});
  j["bandwidth"] = nlohmann::json::array();
  for (const auto& r : c.bandwidth) {
    nlohmann::json cands = nlohmann::json::array(), pcts = nlohmann::json::array();
    for (double v : r.candidates) cands.push_back(num(v));
    for (double v : r.change_pct) pcts.push_back(num(v));
    j["bandwidth"].push_back({{"point", r.key},
                              {"label", r.label},
                              {"metric", r.metric},
                              {"baseline", r.baseline},
                              {"candidates", cands},
                              {"change_pct", pcts},
                              {"change", r.change},
                              {"baseline_spread_pct", r.baseline_spread_pct}});
  }
  j["names"] = c.names;
  j["adjacent"] = nlohmann::json::array();
  for (const auto& m : c.adjacent)
    j["adjacent"].push_back({{"from", m.from},
                             {"to", m.from + 1},
                             {"point", m.before.key},
                             {"label", m.before.label},
                             {"metric", m.before.metric},
                             {"before", m.before.value},
                             {"after", m.after.value},
                             {"change_pct", m.move.change_pct},
                             {"change", m.move.change}});
  // The first screen's lines, each band and crossing, what was left out, and the warnings.
  j["story"] = bands::to_json(c.story, c.names);
  j["story"]["lines"] = c.story.lines();
  j["warnings"] = c.warnings;
  j["left_out"] = c.left_out;
  j["only_in_candidate"] = c.only_in_candidate;
  j["no_data"] = c.no_data;
  j["scopes"] = nlohmann::json::array();
  for (const auto& sc : c.scopes)
    j["scopes"].push_back(
        {{"level", sc.level}, {"selection", sc.selection}, {"gpucts_revision", sc.revision}});
  j["suites"] = nlohmann::json::array();
  for (const auto& sd : c.suites)
    j["suites"].push_back({{"binary", sd.binary},
                           {"baseline", sd.baseline},
                           {"candidates", sd.candidates},
                           {"new", sd.added},
                           {"missing", sd.missing}});
  return j;
}

}  // namespace cts::report
