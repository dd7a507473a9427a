#include "report/bundle.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "matrix/fingerprint.hpp"
#include "matrix/input.hpp"
#include "results/bundle_paths.hpp"
#include "results/json_fields.hpp"
#include "results/output_file.hpp"
#include "results/terminal_text.hpp"

namespace fs = std::filesystem;

namespace cts::bundle {

std::string read_text(const std::string& path) {
  try {
    return read_input_file(path);  // a regular file (or pipe) within the input size limit
  } catch (const InputError& e) {
    throw BundleError(e.what());
  }
}

void write_text(const std::string& path, const std::string& text) {
  try {
    write_file_atomic(path, text);  // whole or not at all, never through a symbolic link
  } catch (const OutputError& e) {
    throw BundleError(e.what());
  }
}

namespace {
std::string utc_now(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}
}  // namespace

std::string utc_now_iso() { return utc_now("%Y-%m-%dT%H:%M:%SZ"); }

std::string utc_now_compact() { return utc_now("%Y%m%dT%H%M%SZ"); }

namespace {

template <class T>
T need(const nlohmann::json& j, const char* key, const std::string& origin) {
  return json_need<BundleError, T>(j, key, origin);
}

// A count or time a person will read and the verdict may rest on: within its range, or bad input.
template <typename T>
T in_range(T value, T lo, T hi, const char* key, const std::string& origin) {
  if (!(value >= lo && value <= hi)) {
    std::ostringstream o;
    o << origin << ": field '" << key << "': " << value << " is outside " << lo << ".." << hi;
    throw BundleError(o.str());
  }
  return value;
}
constexpr double kMaxSeconds = 1e9;  // about 30 years
constexpr int kMaxCount = 1 << 30;

nlohmann::json parse_json_file(const std::string& path) {
  std::string text = read_text(path);
  try {
    return parse_json(text, path);  // "path:line:column: malformed JSON: ..."
  } catch (const InputError& e) {
    throw BundleError(e.what());
  }
}

// Whether `path` is there at all (a link counts, wherever it leads).
bool present(const fs::path& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

constexpr SuiteStatus kSuiteStatuses[] = {
    SuiteStatus::passed,      SuiteStatus::failed,  SuiteStatus::skipped, SuiteStatus::timeout,
    SuiteStatus::interrupted, SuiteStatus::crashed, SuiteStatus::not_run};
constexpr const char* kSuiteStatusNames[] = {"passed",      "failed",  "skipped", "timeout",
                                             "interrupted", "crashed", "not_run"};  // in SuiteStatus's order

}  // namespace

const char* suite_status_name(SuiteStatus s) { return kSuiteStatusNames[static_cast<int>(s)]; }

std::optional<SuiteStatus> parse_suite_status(const std::string& text) {
  for (SuiteStatus s : kSuiteStatuses)
    if (text == suite_status_name(s)) return s;
  return std::nullopt;
}

nlohmann::json to_json(const Manifest& m) {
  nlohmann::json suites = nlohmann::json::array();
  for (const auto& s : m.suites) {
    suites.push_back({{"name", s.name},
                      {"command", s.command},
                      {"labels", s.labels},
                      {"status", suite_status_name(s.status)},
                      {"exit_code", json_or_null(s.exit_code)},
                      {"signal", json_or_null(s.signal)},
                      {"duration_s", s.duration_s},
                      {"xml", s.xml},
                      {"log", s.log},
                      {"reason", s.reason},
                      {"synthesized", s.synthesized},
                      {"mode", s.mode},
                      {"cases_total", s.cases_total},
                      {"cases_done", s.cases_done},
                      {"gpus", s.gpus},
                      {"missed", s.missed}});
  }
  nlohmann::json waivers = nlohmann::json::array();
  for (const auto& w : m.waivers)
    waivers.push_back({{"id", w.id},
                       {"title", w.title},
                       {"link", w.link},
                       {"fix", w.fix},
                       {"cases", w.cases},
                       {"findings", w.findings}});
  return {{"schema", m.schema},
          {"gpucts_version", m.gpucts_version},
          {"created", m.created},
          {"host", m.host},
          {"tree", m.tree},
          {"verdict", m.verdict},
          {"verdict_reason", m.verdict_reason},
          {"accepted_known", m.accepted_known},
          {"waivers", waivers},
          {"nccl_selected", m.nccl_selected},
          {"interrupted", m.interrupted},
          {"elapsed_s", m.elapsed_s},
          {"gpus_visible", m.gpus_visible},
          {"gpus_expected", json_or_null(m.gpus_expected)},
          {"no_gpu_detail", m.no_gpu_detail},
          {"level", m.level},
          {"selection", m.selection},
          {"gpucts_revision", m.gpucts_revision},
          {"settings", m.settings},
          {"built_against", m.built_against},
          {"suites", suites}};
}

Manifest manifest_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw BundleError(origin + ": not a JSON object");
  Manifest m;
  m.schema = need<std::string>(j, "schema", origin);
  if (m.schema != kBundleSchema)
    throw BundleError(origin + ": schema '" + m.schema + "' is not " + kBundleSchema);
  m.gpucts_version = need<std::string>(j, "gpucts_version", origin);
  m.created = need<std::string>(j, "created", origin);
  m.host = need<std::string>(j, "host", origin);
  m.tree = json_maybe<BundleError, std::string>(j, "tree", origin).value_or("");
  m.verdict = need<std::string>(j, "verdict", origin);
  if (!std::set<std::string>{"pass", "waived", "fail", "no_gpu", "not_run"}.count(m.verdict))
    throw BundleError(origin + ": verdict must be pass, waived, fail, no_gpu or not_run, not '" + m.verdict +
                      "'");
  m.verdict_reason = json_maybe<BundleError, std::string>(j, "verdict_reason", origin).value_or("");
  if (j.contains("accepted_known"))
    m.accepted_known = need<std::vector<std::string>>(j, "accepted_known", origin);
  if (j.contains("waivers")) {
    if (!j.at("waivers").is_array()) throw BundleError(origin + ": 'waivers' must be an array");
    for (size_t i = 0; i < j.at("waivers").size(); ++i) {
      const auto& w = j.at("waivers")[i];
      std::string o = origin + ": waivers[" + std::to_string(i) + "]";
      Waiver x;
      x.id = need<std::string>(w, "id", o);
      x.title = json_maybe<BundleError, std::string>(w, "title", o).value_or("");
      x.link = json_maybe<BundleError, std::string>(w, "link", o).value_or("");
      x.fix = json_maybe<BundleError, std::string>(w, "fix", o).value_or("");
      x.cases = in_range(json_maybe<BundleError, int>(w, "cases", o).value_or(0), 0, kMaxCount, "cases", o);
      x.findings =
          in_range(json_maybe<BundleError, int>(w, "findings", o).value_or(0), 0, kMaxCount, "findings", o);
      m.waivers.push_back(std::move(x));
    }
  }
  if (j.contains("nccl_selected")) m.nccl_selected = need<bool>(j, "nccl_selected", origin);
  m.interrupted = need<bool>(j, "interrupted", origin);
  m.elapsed_s = in_range(need<double>(j, "elapsed_s", origin), 0.0, kMaxSeconds, "elapsed_s", origin);
  m.gpus_visible = in_range(json_maybe<BundleError, int>(j, "gpus_visible", origin).value_or(-1), -1, 4096,
                            "gpus_visible", origin);
  m.gpus_expected = json_maybe<BundleError, int>(j, "gpus_expected", origin);
  if (m.gpus_expected) in_range(*m.gpus_expected, 0, 4096, "gpus_expected", origin);
  m.no_gpu_detail = json_maybe<BundleError, std::string>(j, "no_gpu_detail", origin).value_or("");
  m.level = json_maybe<BundleError, std::string>(j, "level", origin).value_or("");
  m.gpucts_revision = json_maybe<BundleError, std::string>(j, "gpucts_revision", origin).value_or("");
  if (j.contains("built_against"))
    m.built_against = need<std::map<std::string, std::string>>(j, "built_against", origin);
  for (const char* key : {"selection", "settings"})
    if (j.contains(key)) {
      if (!j.at(key).is_object()) throw BundleError(origin + ": '" + key + "' must be an object");
      (std::string(key) == "selection" ? m.selection : m.settings) = j.at(key);
    }
  const auto& suites =
      j.contains("suites") ? j.at("suites") : throw BundleError(origin + ": missing field 'suites'");
  if (!suites.is_array()) throw BundleError(origin + ": 'suites' must be an array");
  for (size_t i = 0; i < suites.size(); ++i) {
    std::string o = origin + ": suites[" + std::to_string(i) + "]";
    const auto& s = suites[i];
    SuiteRun r;
    r.name = need<std::string>(s, "name", o);
    r.command = need<std::vector<std::string>>(s, "command", o);
    r.labels = need<std::vector<std::string>>(s, "labels", o);
    const std::string status = need<std::string>(s, "status", o);
    const auto parsed = parse_suite_status(status);
    if (!parsed) throw BundleError(o + ": unknown status '" + status + "'");
    r.status = *parsed;
    r.exit_code = json_maybe<BundleError, int>(s, "exit_code", o);
    r.signal = json_maybe<BundleError, int>(s, "signal", o);
    r.duration_s = in_range(need<double>(s, "duration_s", o), 0.0, kMaxSeconds, "duration_s", o);
    r.xml = need<std::vector<std::string>>(s, "xml", o);
    r.log = need<std::string>(s, "log", o);
    r.reason = need<std::string>(s, "reason", o);
    r.synthesized = need<bool>(s, "synthesized", o);
    r.mode = json_maybe<BundleError, std::string>(s, "mode", o).value_or("");
    r.cases_total = in_range(json_maybe<BundleError, int>(s, "cases_total", o).value_or(0), 0, kMaxCount,
                             "cases_total", o);
    r.cases_done = in_range(json_maybe<BundleError, int>(s, "cases_done", o).value_or(0), 0, r.cases_total,
                            "cases_done", o);
    r.gpus = in_range(json_maybe<BundleError, int>(s, "gpus", o).value_or(0), 0, 4096, "gpus", o);
    r.missed = json_maybe<BundleError, bool>(s, "missed", o).value_or(false);
    m.suites.push_back(std::move(r));
  }
  return m;
}

nlohmann::json check_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw BundleError(origin + ": not a JSON object");
  auto type = [&](const nlohmann::json& o, const char* key, bool (nlohmann::json::*is)() const noexcept,
                  const char* what, const std::string& where) {
    if (o.contains(key) && !(o.at(key).*is)())
      throw BundleError(origin + ": " + where + key + ": expected " + what);
  };
  type(j, "available", &nlohmann::json::is_boolean, "true or false", "");
  type(j, "reason", &nlohmann::json::is_string, "a string", "");
  type(j, "verdict", &nlohmann::json::is_string, "a string", "");
  type(j, "findings", &nlohmann::json::is_array, "an array", "");
  type(j, "not_evaluated", &nlohmann::json::is_array, "an array", "");
  if (j.contains("findings"))
    for (size_t i = 0; i < j["findings"].size(); ++i) {
      const auto& f = j["findings"][i];
      std::string at = "findings[" + std::to_string(i) + "].";
      if (!f.is_object())
        throw BundleError(origin + ": findings[" + std::to_string(i) + "]: expected an object");
      for (const char* k : {"id", "severity", "subject", "message", "source", "fix"})
        type(f, k, &nlohmann::json::is_string, "a string", at);
      // A finding of another severity would count nowhere: not an error, not shown as one.
      if (const std::string sev = f.value("severity", "");
          sev != "error" && sev != "warning" && sev != "info")
        throw BundleError(origin + ": " + at + "severity: '" + terminal_safe(sev, 80) +
                          "' is not error, warning or info");
    }
  if (j.contains("verdict") && j["verdict"] != "pass" && j["verdict"] != "fail")
    throw BundleError(origin + ": verdict: '" + terminal_safe(j["verdict"].get<std::string>(), 80) +
                      "' is not pass or fail");
  if (j.contains("not_evaluated"))
    for (const auto& x : j["not_evaluated"])
      if (!x.is_string()) throw BundleError(origin + ": not_evaluated: expected an array of strings");
  return j;
}

namespace {
// The cases as they ran: junit.xml gives a failure that --accept-known waived as a skip, with the
// status it ran with in gpucts.waived_status (verdict::junit_cases); the verdict decides it again.
std::vector<junit::Case> as_ran(std::vector<junit::Case> cases) {
  for (auto& c : cases)
    if (c.status == junit::Status::skipped && !c.property("gpucts.waived").empty())
      if (auto ran = junit::parse_status(c.property("gpucts.waived_status")); ran && junit::failing(*ran))
        c.status = *ran;
  return cases;
}

// Whether `path` resolves (every link followed) under the real path of `dir`.
bool resolves_inside(const std::string& dir, const std::string& path) {
  std::error_code e1, e2;
  const fs::path root = fs::weakly_canonical(dir, e1), real = fs::weakly_canonical(path, e2);
  if (e1 || e2) return false;
  const fs::path rel = real.lexically_relative(root);
  return !rel.empty() && *rel.begin() != "..";
}

// The *.json files of a bundle folder ("fingerprints/host.json"), sorted; none when the folder is
// absent. The folder itself must lie inside the bundle.
std::vector<std::string> json_files(const std::string& dir, const std::string& folder) {
  std::vector<std::string> files;
  if (!present(fs::path(dir) / folder)) return files;
  const fs::path d = bundle_file(dir, folder);
  if (fs::is_directory(d))
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().extension() == ".json") files.push_back(folder + "/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

std::string bundle_file(const std::string& dir, const std::string& relative) {
  std::string why;
  std::optional<std::string> p = inside_bundle(dir, relative, &why);
  if (p && !resolves_inside(dir, *p)) {
    p.reset();
    why = "it resolves outside the bundle";
  }
  if (p) return *p;
  const bool missing = why.rfind("no such file", 0) == 0;
  throw BundleError(dir + ": " + terminal_safe(relative, 200) + ": " +
                    (missing ? "" : "refused, not read: ") + why);
}

Bundle load(const std::string& dir) {
  Bundle b;
  b.dir = dir;
  if (!fs::is_directory(dir)) throw BundleError(dir + ": not a directory");
  // Every file is opened through bundle_file: one that leads out of the bundle is refused, never read.
  if (!present(fs::path(dir) / "manifest.json"))
    throw BundleError(dir + ": not a gpucts bundle (no manifest.json)");
  const std::string mpath = bundle_file(dir, "manifest.json");
  b.manifest = manifest_from_json(parse_json_file(mpath), mpath);

  if (!present(fs::path(dir) / "junit.xml")) throw BundleError(dir + ": bundle has no junit.xml");
  const std::string jpath = bundle_file(dir, "junit.xml");
  try {
    b.cases = as_ran(junit::read_file(jpath, ""));
    // Each binary's own XML must be readable too: a truncated file is bad input, not "no cases".
    for (const auto& s : b.manifest.suites)
      for (const auto& x : s.xml) xml::parse_file(bundle_file(dir, x));
  } catch (const xml::XmlError& e) {
    throw BundleError(e.what());
  }

  for (const auto& f : json_files(dir, "fingerprints")) {
    const std::string path = bundle_file(dir, f);
    nlohmann::json j = parse_json_file(path);
    try {
      fingerprint_from_json(j, path);  // validates the contract's schema
    } catch (const std::exception& e) {
      throw BundleError(e.what());
    }
    b.fingerprints.emplace_back(fs::path(f).filename().string(), std::move(j));
  }
  const bool has_check = present(fs::path(dir) / "check.json");
  const std::string cpath = has_check ? bundle_file(dir, "check.json") : "";
  b.check = has_check ? check_from_json(parse_json_file(cpath), cpath)
                      : nlohmann::json{{"available", false}, {"reason", "no check.json"}};
  for (const auto& f : json_files(dir, "bandwidth")) {
    try {
      const std::string path = bundle_file(dir, f);
      b.bandwidth.emplace_back(fs::path(f).stem().string(), bw::run_from_json(parse_json_file(path), path));
    } catch (const bw::BandwidthError& e) {
      throw BundleError(e.what());
    }
  }
  return b;
}

std::vector<std::pair<std::string, std::string>> environment_rows(const nlohmann::json& j) {
  Fingerprint fp = fingerprint_from_json(j, "fingerprint");
  // As the tool printed it, except an integer code (13000, 22809), shown as its release.
  auto v = [](const std::optional<Version>& x) -> std::string {
    if (!x) return "absent";
    return x->raw.find_first_not_of("0123456789") == std::string::npos ? x->release_str() : x->raw;
  };
  std::vector<std::pair<std::string, std::string>> rows = {
      {"host", fp.host.value_or("absent")},
      {"driver", v(fp.driver_version)},
      {"driver CUDA", v(fp.driver_cuda)},
      {"CUDA runtime", v(fp.cuda_runtime)},
      {"CUDA toolkit", v(fp.cuda_toolkit)},
      {"NCCL header", v(fp.nccl_header)},
      {"NCCL runtime", v(fp.nccl_runtime)},
      {"NCCL library", fp.nccl_library.value_or("absent")},
      {"cuDNN", v(fp.cudnn)},
      {"torch (python)", fp.torch ? v(fp.torch->version) : "absent"},
      {"torch NCCL", fp.torch ? v(fp.torch->nccl) : "absent"},
      {"lightning", v(fp.lightning)},
  };
  std::string gpus = "absent";
  if (fp.gpus) {
    std::map<std::string, int> names;
    for (const auto& g : *fp.gpus)
      ++names[g.name.value_or("?") + " (cc " + (g.cc ? g.cc->release_str(2) : "?") + ")"];
    gpus = fp.gpus->empty() ? "none visible" : "";
    for (const auto& [n, c] : names) gpus += (gpus.empty() ? "" : ", ") + std::to_string(c) + " x " + n;
  }
  rows.emplace_back("GPUs", gpus);
  std::string cc;
  for (const auto& [k, val] : fp.compiler) cc += (cc.empty() ? "" : ", ") + k + " " + val;
  rows.emplace_back("compiler", cc.empty() ? "absent" : cc);
  // What torch.utils.collect_env adds: OS, kernel, glibc, the python and its CUDA-stack wheels.
  auto text = [&](const char* key, const char* field = nullptr) -> std::string {
    if (!fp.extra.contains(key) || (field && !fp.extra[key].is_object())) return "absent";
    const auto& v = field ? fp.extra[key].value(field, nlohmann::json()) : fp.extra[key];
    return v.is_string() ? v.get<std::string>() : "absent";
  };
  rows.emplace_back("OS", text("os", "name"));
  rows.emplace_back("kernel", text("kernel"));
  rows.emplace_back("glibc", text("glibc"));
  std::string py = text("python", "version");
  if (py != "absent") py += " (" + text("python", "executable") + ")";
  rows.emplace_back("python", py);
  std::string wheels;
  if (fp.extra.contains("python") && fp.extra["python"].is_object() &&
      fp.extra["python"].contains("packages") && fp.extra["python"]["packages"].is_object())
    for (const auto& [k, v] : fp.extra["python"]["packages"].items())
      if (v.is_string()) wheels += (wheels.empty() ? "" : ", ") + k + " " + v.get<std::string>();
  rows.emplace_back("pip wheels", wheels.empty() ? "absent" : wheels);
  return rows;
}

std::map<std::string, std::string> junit_properties(const nlohmann::json& fingerprint) {
  static const std::map<std::string, std::string> kNames = {{"host", "gpucts.host"},
                                                            {"driver", "gpucts.driver"},
                                                            {"driver CUDA", "gpucts.driver_cuda"},
                                                            {"CUDA runtime", "gpucts.cuda_runtime"},
                                                            {"CUDA toolkit", "gpucts.cuda_toolkit"},
                                                            {"NCCL header", "gpucts.nccl_header"},
                                                            {"NCCL runtime", "gpucts.nccl_runtime"},
                                                            {"NCCL library", "gpucts.nccl_library"},
                                                            {"cuDNN", "gpucts.cudnn"},
                                                            {"torch (python)", "gpucts.torch"},
                                                            {"torch NCCL", "gpucts.torch_nccl"},
                                                            {"GPUs", "gpucts.gpus"}};
  std::map<std::string, std::string> out;
  for (const auto& [what, value] : environment_rows(fingerprint))
    if (auto it = kNames.find(what); it != kNames.end()) out[it->second] = value;
  return out;
}

namespace {
// Each environment row merged over the bundle's fingerprints (one value, or one per fingerprint).
std::vector<std::pair<std::string, std::string>> environment_of_fingerprints(const Bundle& b);

// The libtorch the C++ suites were linked against, beside the python's torch: two torches may
// serve one run, and "torch absent" must not stand beside libtorch cases.
std::pair<std::string, std::string> libtorch_row(const Manifest& m) {
  if (m.built_against.empty()) return {"libtorch (C++ suites)", "not recorded"};
  auto it = m.built_against.find("libtorch");
  return {"libtorch (C++ suites)",
          it != m.built_against.end() ? it->second : "none (built without libtorch)"};
}
}  // namespace

std::vector<std::pair<std::string, std::string>> environment(const Bundle& b) {
  std::vector<std::pair<std::string, std::string>> merged = environment_of_fingerprints(b);
  auto at = std::find_if(merged.begin(), merged.end(), [](const auto& r) { return r.first == "torch NCCL"; });
  merged.insert(at == merged.end() ? merged.end() : at + 1, libtorch_row(b.manifest));
  return merged;
}

namespace {
std::vector<std::pair<std::string, std::string>> environment_of_fingerprints(const Bundle& b) {
  std::vector<std::pair<std::string, std::string>> merged;
  if (b.fingerprints.empty()) return {{"fingerprint", "absent"}};
  std::vector<std::vector<std::pair<std::string, std::string>>> all;
  for (const auto& [name, j] : b.fingerprints) all.push_back(environment_rows(j));
  for (size_t r = 0; r < all.front().size(); ++r) {
    std::set<std::string> distinct;
    for (const auto& rows : all) distinct.insert(rows[r].second);
    if (distinct.size() == 1 || all.front()[r].first == "host") {
      std::string v;
      for (const auto& d : distinct) v += (v.empty() ? "" : ", ") + d;
      merged.emplace_back(all.front()[r].first, v);
    } else {
      std::string v;
      for (size_t i = 0; i < all.size(); ++i)
        v += (v.empty() ? "" : "; ") + b.fingerprints[i].first + ": " + all[i][r].second;
      merged.emplace_back(all.front()[r].first, v);
    }
  }
  return merged;
}
}  // namespace

std::vector<std::string> split_ids(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string id; std::getline(ss, id, ',');)
    if (!id.empty()) out.push_back(id);
  return out;
}

std::string defect_of_finding(const nlohmann::json& f) {
  const std::string kind = f.value("id", "");
  if (kind != "nccl-known-defect" && kind != "torch-known-defect") return "";
  // The finding's own field; a check.json of an older gpucts has the id in its source only.
  if (f.contains("defect") && f["defect"].is_string()) return f["defect"].get<std::string>();
  const std::string src = f.value("source", ""),
                    prefix = kind == "nccl-known-defect" ? "nccl_defects.csv:" : "torch_defects.csv:";
  if (src.rfind(prefix, 0) != 0) return "";
  std::string id = src.substr(prefix.size());
  if (auto sp = id.find_first_of(" ("); sp != std::string::npos) id.resize(sp);
  return id;
}

Waiver& waiver_for(std::vector<Waiver>& waivers, const std::string& id) {
  for (auto& w : waivers)
    if (w.id == id) return w;
  waivers.push_back({});
  waivers.back().id = id;
  return waivers.back();
}

}  // namespace cts::bundle
