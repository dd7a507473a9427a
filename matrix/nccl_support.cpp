#include "matrix/nccl_support.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <string_view>

namespace cts {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

bool in_range(const Version& v, const Version& since, const std::optional<Version>& until) {
  return since.compare_release(v) <= 0 && (!until || v.compare_release(*until) < 0);
}

// NCCL reads integers with strtoll(base 0) and, since it checks, refuses trailing garbage.
std::optional<long long> parse_int(const std::string& text) {
  std::string s = trim(text);
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (errno || end == s.c_str() || *end) return std::nullopt;
  return v;
}

// Where strtoll(base 0) reads another number than the decimal digits say: "010" is octal 8,
// "0x10" hexadecimal 16. The radix's name, or "" where the reading is decimal (or "0").
std::string non_decimal_radix(const std::string& text) {
  std::string s = trim(text);
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s = s.substr(1);
  if (s.size() < 2 || s[0] != '0') return "";
  if (s[1] == 'x' || s[1] == 'X') return "hexadecimal";
  if (s.find_first_not_of('0') == std::string::npos) return "";  // "00" is 0 either way
  return "octal";
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Levenshtein distance of a and b when it is below `limit`, else `limit`: only the band of
// cells within `limit` of the diagonal is computed, and a row whose every cell reaches the limit
// ends the search, so an unknown name of megabytes costs what its length difference says (nothing).
size_t edit_distance_below(std::string_view a, std::string_view b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= limit) return limit;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = std::min(j, limit);
  for (size_t i = 1; i <= a.size(); ++i) {
    const size_t lo = i > limit ? i - limit : 1, hi = std::min(b.size(), i + limit);
    cur.assign(b.size() + 1, limit);
    cur[0] = std::min(i, limit);
    size_t row_min = cur[0];
    for (size_t j = lo; j <= hi; ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1), limit});
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min >= limit) return limit;
    std::swap(prev, cur);
  }
  return std::min(prev[b.size()], limit);
}

// One accepted word of a `values` cell: "PAT@2.23" or "Collnet@2.5-2.14".
struct Word {
  std::string word;
  std::optional<Version> since, until;
};

Word parse_word(const std::string& entry) {
  Word w;
  auto at = entry.find('@');
  w.word = entry.substr(0, at);
  if (at == std::string::npos) return w;
  std::string range = entry.substr(at + 1);
  auto dash = range.find('-');
  w.since = Version::try_parse(range.substr(0, dash));
  if (dash != std::string::npos) w.until = Version::try_parse(range.substr(dash + 1));
  return w;
}

// "" when `word` is acceptable for `var` on `nccl`, else why not.
std::string check_word(const NcclEnvVar& var, const std::string& word, const std::optional<Version>& nccl) {
  std::string names;
  for (const auto& e : var.values) {
    Word w = parse_word(e);
    names += (names.empty() ? "" : ", ") + w.word;
    if (lower(w.word) != lower(trim(word))) continue;
    if (nccl && w.since && nccl->compare_release(*w.since) < 0)
      return "'" + w.word + "' needs NCCL " + w.since->str() + " (this is " + nccl->release_str() + ")";
    if (nccl && w.until && nccl->compare_release(*w.until) >= 0)
      return "'" + w.word + "' was removed in NCCL " + w.until->str() + " (this is " + nccl->release_str() +
             ")";
    return "";
  }
  return "'" + trim(word) + "' is not one of " + names;
}

// ncclFuncStr: the prefixes NCCL_ALGO / NCCL_PROTO accept (the same five in every release).
const char* const kFunctions[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

bool has_feature(const Matrix& m, const char* feature, const Version& nccl) {
  return nccl_feature_supported(m, feature, nccl).supported;
}

// NCCL_ALGO / NCCL_PROTO: "Ring,Tree", "^LL128", and from 2.24 "allreduce:tree;broadcast:ring"
// (parseList of src/graph/tuning.cc: every entry after the first has a prefix).
std::string check_algo_list(const Matrix& m, const NcclEnvVar& var, const std::string& value,
                            const std::optional<Version>& nccl) {
  bool per_function = value.find(':') != std::string::npos || value.find(';') != std::string::npos;
  if (per_function && nccl && !has_feature(m, "AlgoPerFunctionSyntax", *nccl))
    return "the per-function syntax 'func:list;...' needs NCCL " +
           (m.find_feature("AlgoPerFunctionSyntax") ? m.find_feature("AlgoPerFunctionSyntax")->since.str()
                                                    : std::string("2.24")) +
           " (this is " + nccl->release_str() + ")";
  bool first = true;
  for (const auto& segment : split(value, ';')) {
    std::string list = trim(segment);
    auto colon = list.find(':');
    if (colon == std::string::npos && !first)
      return "every entry after the first needs a 'func:' prefix ('" + list + "' has none): NCCL refuses it";
    first = false;
    if (colon != std::string::npos) {
      std::string fn = trim(list.substr(0, colon));
      bool known = std::any_of(std::begin(kFunctions), std::end(kFunctions),
                               [&](const char* f) { return lower(f) == lower(fn); });
      if (!known)
        return "'" + fn + "' is not a collective (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)";
      list = trim(list.substr(colon + 1));
    }
    if (!list.empty() && list[0] == '^') list = list.substr(1);
    if (list.empty()) return "empty list in '" + value + "'";
    for (const auto& item : split(list, ',')) {
      if (trim(item).empty()) return "empty entry in '" + value + "'";
      std::string why = check_word(var, item, nccl);
      if (!why.empty()) return why;
    }
  }
  return "";
}

// What is wrong with a value ("" = nothing), and whether NCCL clamps it rather than failing.
struct ValueVerdict {
  std::string why;
  bool clamped = false;
};

// An integer outside [min, max] or off its step; "" when inside.
std::string out_of_bounds(const NcclEnvVar& var, long long v) {
  if (var.min && v < *var.min) return std::to_string(v) + " is below the minimum " + std::to_string(*var.min);
  if (var.max && v > *var.max) return std::to_string(v) + " is above the maximum " + std::to_string(*var.max);
  if (var.multiple_of && v % *var.multiple_of != 0)
    return std::to_string(v) + " is not a multiple of " + std::to_string(*var.multiple_of);
  return "";
}

std::string check_value_text(const Matrix& m, const NcclEnvVar& var, const std::string& value,
                             const std::optional<Version>& nccl);

ValueVerdict check_value(const Matrix& m, const NcclEnvVar& var, const std::string& value,
                         const std::optional<Version>& nccl) {
  if (var.type == "int" || var.type == "bool") {
    auto v = parse_int(value);
    if (!v) return {"'" + value + "' is not an integer"};
    std::string why = out_of_bounds(var, *v);
    if (!why.empty()) return {why, var.clamps};
    if (!var.values.empty()) {
      bool listed = std::any_of(var.values.begin(), var.values.end(),
                                [&](const std::string& w) { return parse_int(parse_word(w).word) == v; });
      if (!listed) return {check_word(var, value, nccl)};
    }
    return {};
  }
  return {check_value_text(m, var, value, nccl)};
}

// The word-valued types.
std::string check_value_text(const Matrix& m, const NcclEnvVar& var, const std::string& value,
                             const std::optional<Version>& nccl) {
  const std::string& t = var.type;
  if (t == "enum") return check_word(var, value, nccl);
  if (t == "level") {
    if (auto v = parse_int(value)) {
      if (var.min && *v < *var.min)
        return std::to_string(*v) + " is below the minimum " + std::to_string(*var.min);
      return "";
    }
    return check_word(var, value, nccl);
  }
  if (t == "list") {
    std::string list = trim(value);
    if (!list.empty() && list[0] == '^') list = list.substr(1);
    for (const auto& item : split(list, ',')) {
      std::string why = check_word(var, item, nccl);
      if (!why.empty()) return why;
    }
    return "";
  }
  if (t == "algo" || t == "proto") return check_algo_list(m, var, value, nccl);
  if (t == "ifname") return trim(value).empty() ? "an empty list selects nothing" : "";
  return "";  // string, path: anything goes
}

// " [64, 512], a multiple of 32" for messages.
std::string bounds_text(const NcclEnvVar& var) {
  std::string out;
  if (var.min || var.max)
    out = " [" + (var.min ? std::to_string(*var.min) : std::string("..")) + ", " +
          (var.max ? std::to_string(*var.max) : std::string("..")) + "]";
  if (var.multiple_of) out += ", a multiple of " + std::to_string(*var.multiple_of);
  return out;
}

Finding env_finding(const std::string& id, const std::string& sev, const std::string& name, std::string msg,
                    std::string source, std::string fix) {
  return Finding{id, sev, name, std::move(msg), std::move(source), std::move(fix)};
}

// How parseList leaves one collective: the last entry that applies to it (no prefix, or its own),
// as (exclude list?, words); nullopt when no entry applies (every word enabled).
std::optional<std::pair<bool, std::set<std::string>>> entry_for(const std::string& value,
                                                                const std::string& collective) {
  std::optional<std::pair<bool, std::set<std::string>>> out;
  for (const auto& segment : split(value, ';')) {
    std::string list = trim(segment);
    auto colon = list.find(':');
    if (colon != std::string::npos) {
      if (lower(trim(list.substr(0, colon))) != lower(collective)) continue;
      list = trim(list.substr(colon + 1));
    }
    bool exclude = !list.empty() && list[0] == '^';
    if (exclude) list = list.substr(1);
    std::set<std::string> words;
    for (const auto& w : split(list, ',')) words.insert(lower(trim(w)));
    out = std::make_pair(exclude, words);
  }
  return out;
}

bool enabled(const std::optional<std::pair<bool, std::set<std::string>>>& entry, const std::string& word) {
  if (!entry) return true;
  return entry->second.count(lower(word)) != entry->first;
}

}  // namespace

namespace {

// What NCCL_ALGO / NCCL_PROTO leave each collective of a release: the collectives left with no
// (algorithm, protocol) the release implements, how the release treats them, and the evidence.
struct CoverageGaps {
  bool modelled = false;  // nccl_algos.csv has rows for this release
  bool checked = false;   // a setting was there and its value is valid (the lint reports the rest)
  std::vector<std::string> missing;
  std::string needs, evidence, setting;
  bool falls_back = false;  // Ring is given back to them (2.19 to 2.23)
  bool ring_kept = false;   // NCCL_ALGO never took Ring from a collective other than AllReduce (to 2.18)
};

CoverageGaps coverage_gaps(const Matrix& m, const std::map<std::string, std::string>& env,
                           const Version& nccl) {
  CoverageGaps g;
  std::vector<const NcclAlgo*> rows;
  for (const auto& r : m.nccl_algos)
    if (in_range(nccl, r.since, r.until)) rows.push_back(&r);
  if (rows.empty()) return g;  // a release the table does not model
  g.modelled = true;
  auto algo = env.find("NCCL_ALGO"), proto = env.find("NCCL_PROTO");
  if (algo == env.end() && proto == env.end()) return g;
  for (const auto& it : {algo, proto}) {
    if (it == env.end()) continue;
    const NcclEnvVar* var = m.find_env(it->first);
    if (var && !check_value(m, *var, it->second, nccl).why.empty()) return g;  // the lint reports the value
    g.setting += (g.setting.empty() ? "" : " ") + it->first + "=" + it->second;
  }
  g.checked = true;
  g.falls_back = has_feature(m, "AlgoRingFallback", nccl);
  g.ring_kept = has_feature(m, "AlgoRingKeptNonAllReduce", nccl);
  for (const char* coll : kFunctions) {
    auto a = algo == env.end() ? std::nullopt : entry_for(algo->second, coll);
    auto p = proto == env.end() ? std::nullopt : entry_for(proto->second, coll);
    const bool keeps_ring = g.ring_kept && std::string(coll) != "AllReduce";
    std::string served;
    bool ok = false;
    for (const NcclAlgo* r : rows) {
      if (r->collective != coll) continue;
      ok |= (enabled(a, r->algorithm) || (keeps_ring && r->algorithm == "Ring")) && enabled(p, r->protocol);
      served += (served.empty() ? "" : ", ") + r->algorithm + "/" + r->protocol;
      if (g.evidence.empty()) g.evidence = r->meta.evidence();
    }
    if (ok || served.empty()) continue;
    g.missing.push_back(coll);
    g.needs += std::string(g.needs.empty() ? "" : "; ") + coll + " runs on " + served + " only";
  }
  return g;
}

std::string feature_evidence(const Matrix& m, const char* name) {
  const NcclFeature* f = m.find_feature(name);
  return f ? f->meta.evidence() : std::string("nccl_features.csv:") + name;
}

}  // namespace

std::optional<std::vector<Finding>> nccl_algo_coverage(const Matrix& m,
                                                       const std::map<std::string, std::string>& env,
                                                       const Version& nccl) {
  const CoverageGaps g = coverage_gaps(m, env, nccl);
  if (!g.modelled) return std::nullopt;
  std::vector<Finding> out;
  if (g.missing.empty()) return out;
  // A release newer than the tags the table was read from is judged by the newest one read.
  const std::string reach = data_reach(m).nccl_algos;
  const std::string beyond = !reach.empty() && nccl.compare_release(Version::parse(reach)) > 0
                                 ? " [nccl_algos.csv ends at NCCL " + reach + "; assumed unchanged since]"
                                 : std::string();
  std::string missing;
  for (const auto& c : g.missing) missing += (missing.empty() ? "" : ", ") + c;
  std::string rules = feature_evidence(m, "AlgoRingFallback");
  if (g.ring_kept) rules = feature_evidence(m, "AlgoRingKeptNonAllReduce") + "; " + rules;
  if (g.falls_back) {
    out.push_back(env_finding("nccl-collective-without-algorithm", "warning", "NCCL_ALGO/NCCL_PROTO",
                              g.setting + " leaves " + missing + " without an algorithm/protocol NCCL " +
                                  nccl.release_str() + " implements (" + g.needs +
                                  "): this release gives them Ring back, so the setting is ignored for them" +
                                  beyond,
                              g.evidence + "; " + rules,
                              "allow an algorithm/protocol for every collective, e.g. a per-collective "
                              "setting (NCCL 2.24+) or unset it"));
    return out;
  }
  out.push_back(env_finding(
      "nccl-collective-without-algorithm", "error", "NCCL_ALGO/NCCL_PROTO",
      g.setting + " leaves " + missing + " without any algorithm/protocol NCCL " + nccl.release_str() +
          " implements (" + g.needs + "): NCCL fails them with 'no algorithm/protocol available'" +
          (g.ring_kept ? std::string() : std::string(" (ncclInvalidUsage from 2.24)")) +
          " on every communicator of 2 or more ranks" + beyond,
      g.evidence + "; " + rules + " (this release has no Ring fallback)",
      "allow one for each, e.g. NCCL_ALGO='Ring,Tree' or per collective 'allreduce:tree;broadcast:ring' "
      "(2.24+), or unset the variable"));
  return out;
}

std::optional<std::string> nccl_algo_refusal(const Matrix& m, const std::map<std::string, std::string>& env,
                                             const Version& nccl, const std::string& collective) {
  const CoverageGaps g = coverage_gaps(m, env, nccl);
  if (g.falls_back || std::find(g.missing.begin(), g.missing.end(), collective) == g.missing.end())
    return std::nullopt;
  return g.setting + " leaves " + collective + " without any algorithm/protocol NCCL " + nccl.release_str() +
         " implements and this release has no Ring fallback [" + g.evidence + "; " +
         feature_evidence(m, "AlgoRingFallback") + "]";
}

SupportVerdict nccl_feature_supported(const Matrix& m, const std::string& feature, const Version& nccl) {
  const NcclFeature* f = m.find_feature(feature);
  if (!f) return {false, "'" + feature + "' is not in nccl_features.csv", "nccl_features.csv"};
  std::string src = f->meta.cite();
  if (nccl.compare_release(f->since) < 0)
    return {false, feature + " needs NCCL " + f->since.str() + " (this is " + nccl.release_str() + ")", src};
  if (f->until && nccl.compare_release(*f->until) >= 0)
    return {false,
            feature + " was removed in NCCL " + f->until->str() + " (this is " + nccl.release_str() + ")",
            src};
  return {true, "", src};
}

SupportVerdict nccl_op_supported(const Matrix& m, const std::string& dtype, const std::string& op,
                                 const Version& nccl, int nranks) {
  for (const auto* name : {&dtype, &op}) {
    const NcclFeature* f = m.find_feature(*name);
    const char* kind = name == &dtype ? "dtype" : "op";
    if (!f || f->kind != kind)
      return {false, "'" + *name + "' is not a known NCCL " + kind + " (nccl_features.csv)",
              "nccl_features.csv"};
    SupportVerdict v = nccl_feature_supported(m, *name, nccl);
    if (!v.supported) return v;
  }
  // The most specific row of nccl_ops.csv whose range holds this release decides.
  const NcclOp* best = nullptr;
  int best_score = -1;
  for (const auto& r : m.nccl_ops) {
    bool d = r.dtype == dtype, o = r.op == op;
    if ((!d && r.dtype != "*") || (!o && r.op != "*")) continue;
    if (!in_range(nccl, r.since, r.until)) continue;
    if (r.nranks == 1 && nranks > 1) continue;
    int score = (d ? 2 : 0) + (o ? 1 : 0) + (r.nranks ? 4 : 0);
    if (score > best_score) best = &r, best_score = score;
  }
  if (!best) return {true, "", "nccl_features.csv:" + dtype};
  std::string why = best->meta.note;
  if (best->nranks == 1 && nranks == 0) why = "with a one-rank communicator (nranks unknown): " + why;
  if (best->evidence == "observed") why = "observed on the device, not documented: " + why;
  if (!best->meta.unconfirmed.empty()) why += " [UNCONFIRMED]";
  return {best->supported, why, best->meta.cite()};
}

bool nccl_ifname_matches(const std::string& spec, const std::vector<std::string>& interfaces,
                         std::vector<std::string>* selected) {
  std::string s = trim(spec);
  bool exclude = false, exact = false;
  if (!s.empty() && s[0] == '^') exclude = true, s = s.substr(1);
  if (!s.empty() && s[0] == '=') exact = true, s = s.substr(1);
  std::vector<std::string> items;
  for (auto& item : split(s, ',')) {
    item = trim(item);
    if (auto colon = item.find(':'); colon != std::string::npos)
      item = item.substr(0, colon);  // "ib0:1": port
    if (!item.empty()) items.push_back(item);
  }
  std::vector<std::string> out;
  for (const auto& name : interfaces) {
    bool hit = std::any_of(items.begin(), items.end(), [&](const std::string& p) {
      return exact ? name == p : name.compare(0, p.size(), p) == 0;
    });
    if (hit != exclude) out.push_back(name);
  }
  if (selected) *selected = out;
  return !out.empty();
}

std::vector<Finding> lint_nccl_env(const Matrix& m, const std::map<std::string, std::string>& env,
                                   const std::optional<Version>& nccl) {
  std::vector<Finding> out;
  const std::string lib = nccl ? "NCCL " + nccl->release_str() : "";
  for (const auto& [name, value] : env) {
    if (name.rfind("NCCL_", 0) != 0) {
      // getenv is case-sensitive: NCCL never reads "nccl_debug" or "Nccl_Debug".
      const std::string up = upper(name);
      if (up.rfind("NCCL_", 0) == 0) {
        const NcclEnvVar* meant = m.find_env(up);
        out.push_back(env_finding(
            "nccl-env-wrong-case", "warning", name,
            name + " is not read: NCCL's variable names are upper case, so it reads " + up +
                (meant ? "" : " (itself unknown to the data)") + " and ignores " + name,
            meant ? meant->meta.evidence() : "rule:nccl-env-wrong-case (getenv is case-sensitive)",
            "rename it: " + up + "=" + value));
      }
      continue;
    }
    const NcclEnvVar* var = m.find_env(name);
    if (var && var->type == "ignore") continue;
    if (var && var->type == "notnccl") {
      out.push_back(env_finding("nccl-env-unknown", "warning", name,
                                name + " is read by no NCCL release: " + var->meta.note, var->meta.cite(),
                                var->meta.note));
      continue;
    }
    if (!var) {
      const NcclEnvVar* near = nullptr;
      size_t best = std::max<size_t>(3, name.size() / 5) + 1;
      for (const auto& v : m.nccl_env) {
        if (v.type == "notnccl" || v.type == "ignore") continue;
        const size_t d = edit_distance_below(name, v.name, best);
        if (d < best) best = d, near = &v;
      }
      // The data knows the variables of the releases whose source or library it read; a newer NCCL
      // may read a name the data has never seen, so that is no typo: it is beyond the data.
      const DataReach known = data_reach(m);
      const std::string& reach = known.nccl_env;
      std::string src =
          "nccl_env.csv (no row: none of the NCCL_PARAM / getenv reads or env.rst names of the "
          "github:NVIDIA/nccl release tags up to " +
          known.nccl_algos +
          (reach != known.nccl_algos ? " nor of the NCCL_* names of the released libnccl.so.2 up to " + reach
                                     : std::string()) +
          " is " + name + ")";
      for (const auto& r : m.nccl_releases)
        if (!reach.empty() && r.nccl.same_release(Version::parse(reach), 3))
          src = r.meta.evidence() + "; " + src;
      std::string fix = near ? "did you mean " + near->name + "? (" + near->name + "=" + value + ")"
                             : "remove it, or use the variable of the program that should read it";
      if (nccl && !reach.empty() && nccl->compare_release(Version::parse(reach)) > 0) {
        out.push_back(env_finding("nccl-env-beyond-data", "info", name,
                                  name + " is unknown to the data up to NCCL " + reach + "; " + lib +
                                      " is newer and may read it" +
                                      (near ? " (or it is a typo of " + near->name + ")" : ""),
                                  src,
                                  "check NCCL " + nccl->release_str() +
                                      "'s env.rst; refresh the matrix data (matrix/tools) to judge it"));
        continue;
      }
      std::string msg = name + " is read by no NCCL release up to " + reach + ", so NCCL ignores it";
      if (near) msg += "; did you mean " + near->name + "?";
      out.push_back(env_finding("nccl-env-unknown", "warning", name, msg, src, fix));
      continue;
    }
    const std::string src = var->meta.evidence();
    if (nccl && var->since && nccl->compare_release(*var->since) < 0) {
      out.push_back(env_finding("nccl-env-newer-than-library", "warning", name,
                                name + " exists from NCCL " + var->since->str() + "; " + lib + " ignores it",
                                src, "use NCCL " + var->since->str() + " or newer, or drop " + name));
    } else if (nccl && var->until && nccl->compare_release(*var->until) >= 0) {
      out.push_back(
          env_finding("nccl-env-removed", "warning", name,
                      name + " is no longer read from NCCL " + var->until->str() + " (loaded: " + lib + ")",
                      src, "drop " + name + (var->meta.note.empty() ? "" : " (" + var->meta.note + ")")));
    }
    if (var->type == "int" || var->type == "bool") {
      const std::string radix = non_decimal_radix(value);
      if (auto read = parse_int(value); read && !radix.empty())
        out.push_back(env_finding(
            "nccl-env-non-decimal", "warning", name,
            name + "=" + value + ": NCCL reads integers with strtoll(base 0), so this is " + radix + " " +
                std::to_string(*read) + ", not the decimal number its digits suggest",
            src,
            "write the value in decimal: " + name + "=" + std::to_string(*read) + " is what NCCL reads now"));
    }
    if (name == "NCCL_IB_TIMEOUT" && parse_int(value) == 0)
      out.push_back(
          env_finding("nccl-ib-timeout-zero", "warning", name,
                      "NCCL_IB_TIMEOUT=" + value +
                          ": outside the useful range 1..31; 0 is InfiniBand's infinite timeout, so a lost "
                          "peer or link hangs the job instead of failing it",
                      src, "set NCCL_IB_TIMEOUT between 1 and 31, or unset it for NCCL's default"));
    ValueVerdict verdict = check_value(m, *var, value, nccl);
    const std::string& why = verdict.why;
    if (verdict.clamped) {
      out.push_back(env_finding(
          "nccl-env-clamped", "warning", name,
          name + "=" + value + ": " + why + "; NCCL does not refuse it: it replaces the value and goes on",
          src, "set " + name + " within its range" + bounds_text(*var) + " to get what you ask for"));
      continue;
    }
    if (!why.empty()) {
      bool weak = var->meta.is_unconfirmed("values") || var->meta.is_unconfirmed("type");
      out.push_back(env_finding(
          "nccl-env-invalid-value", weak ? "warning" : "error", name,
          name + "=" + value + ": " + why +
              (var->type == "int" || var->type == "bool"
                   ? " (NCCL before its strict parsing reads a leading number or 0, silently)"
                   : ""),
          src,
          "set " + name + " to an accepted value" +
              (var->default_value ? " (NCCL's default is " + std::to_string(*var->default_value) + ")" : "") +
              " or unset it"));
      continue;
    }
    if ((name == "NCCL_P2P_DISABLE" || name == "NCCL_IB_DISABLE") && parse_int(value).value_or(0) != 0) {
      bool p2p = name == "NCCL_P2P_DISABLE";
      out.push_back(env_finding(p2p ? "nccl-p2p-disabled" : "nccl-ib-disabled", "warning", name,
                                p2p ? "NCCL_P2P_DISABLE=" + value +
                                          ": NVLink and PCIe peer-to-peer are off; "
                                          "intra-node traffic goes through shared memory or the network"
                                    : "NCCL_IB_DISABLE=" + value +
                                          ": InfiniBand and RoCE are off; "
                                          "inter-node traffic falls back to TCP sockets",
                                src, "unset " + name + " unless the transport is known broken on this host"));
    }
  }
  // Product constraints ("A*B<=N"), with NCCL's defaults for the variable that is not set.
  for (const auto& var : m.nccl_env) {
    if (var.constraint.empty()) continue;
    auto star = var.constraint.find('*'), le = var.constraint.find("<=");
    std::string a = trim(var.constraint.substr(0, star)),
                b = trim(var.constraint.substr(star + 1, le - star - 1));
    auto limit = parse_int(var.constraint.substr(le + 2));
    if (!limit || (!env.count(a) && !env.count(b))) continue;
    // NCCL clamps each variable to its own bounds before it forms the product (net_socket.cc: the
    // threads to 16, then the sockets to 64/threads), so the product is of the clamped values.
    auto value_of = [&](const std::string& n) -> std::optional<long long> {
      const NcclEnvVar* v = m.find_env(n);
      auto it = env.find(n);
      if (it == env.end()) return v && v->default_value ? v->default_value : std::optional<long long>(1);
      auto x = parse_int(it->second);
      if (x && v && v->clamps) {
        if (v->max && *x > *v->max) x = v->max;
        if (v->min && *x < *v->min) x = v->min;
      }
      return x;
    };
    auto va = value_of(a), vb = value_of(b);
    if (!va || !vb) continue;  // an invalid value is reported above
    if (*va * *vb > *limit)
      out.push_back(env_finding(
          "nccl-socket-threads-product", "warning", a + "*" + b,
          a + "=" + std::to_string(*va) + " x " + b + "=" + std::to_string(*vb) +
              (env.count(a) && parse_int(env.at(a)) != va ? " (" + a + "=" + env.at(a) + " clamped)" : "") +
              (env.count(b) && parse_int(env.at(b)) != vb ? " (" + b + "=" + env.at(b) + " clamped)" : "") +
              " = " + std::to_string(*va * *vb) + " sockets per connection > " + std::to_string(*limit) +
              ": NCCL clamps it (with a WARN)",
          var.meta.evidence(), "choose values whose product is at most " + std::to_string(*limit)));
  }
  return out;
}

}  // namespace cts
