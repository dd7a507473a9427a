#include "matrix/matrix.hpp"

#include "matrix/input.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace cts {

// Defined in the generated builtin_matrix_data.cpp (matrix/CMakeLists.txt embeds data/*.csv).
extern const std::map<std::string, std::string>& builtin_matrix_files();

namespace {

// Reads the common columns and checks every value as it goes, so a bad cell names its line.
class RowReader {
 public:
  RowReader(const CsvTable& t, const CsvRow& r) : t_(t), r_(r) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw MatrixError(t_.file + ":" + std::to_string(r_.line) + ": " + what);
  }
  const std::string& text(const std::string& col) const {
    return r_.at(col);
  }  // "" for an absent optional column
  std::string required(const std::string& col) const {
    if (r_.at(col).empty()) fail("column '" + col + "' is empty");
    return r_.at(col);
  }
  Version version(const std::string& col) const { return parse_version(required(col), col); }
  std::optional<Version> opt_version(const std::string& col) const {
    if (r_.at(col).empty()) return std::nullopt;
    return parse_version(r_.at(col), col);
  }
  std::vector<Version> versions(const std::string& col) const {
    std::vector<Version> out;
    for (const auto& item : split_list(r_.at(col))) out.push_back(parse_version(item, col));
    return out;
  }
  std::optional<long long> opt_int(const std::string& col) const {
    const std::string& s = r_.at(col);
    if (s.empty()) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno || end == s.c_str() || *end) fail("column '" + col + "': '" + s + "' is not an integer");
    return v;
  }
  RowMeta meta(std::string key) const {
    RowMeta m;
    m.file = t_.file;
    m.key = std::move(key);
    m.line = r_.line;
    m.source = required("source");
    m.note = r_.at("note");
    for (const auto& f : split_list(r_.at("unconfirmed"))) {
      if (std::find(t_.columns.begin(), t_.columns.end(), f) == t_.columns.end() && f != "release" &&
          f != "last")
        fail("unconfirmed names '" + f + "', which is not a column");
      m.unconfirmed.insert(f);
    }
    return m;
  }

 private:
  Version parse_version(const std::string& s, const std::string& col) const {
    std::string err;
    auto v = Version::try_parse(s, VersionKind::Generic, &err);
    if (!v)
      fail("column '" + col + "': version '" + s + "' does not parse" + (err.empty() ? "" : ": " + err));
    return *v;
  }
  const CsvTable& t_;
  const CsvRow& r_;
};

// Keys must be unique within a file; the message names both lines.
class KeySet {
 public:
  explicit KeySet(std::string file) : file_(std::move(file)) {}
  void add(const std::string& key, int line) {
    auto [it, fresh] = lines_.emplace(key, line);
    if (!fresh)
      throw MatrixError(file_ + ":" + std::to_string(line) + ": duplicate key '" + key + "' (first at line " +
                        std::to_string(it->second) + ")");
  }

 private:
  std::string file_;
  std::map<std::string, int> lines_;
};

const std::set<std::string> kMetaCols = {"source"};
const std::set<std::string> kMetaOptional = {"note", "unconfirmed"};

std::set<std::string> with(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

CsvTable table(const std::map<std::string, std::string>& files, const std::string& name,
               const std::set<std::string>& required, const std::set<std::string>& optional = {}) {
  auto it = files.find(name);
  if (it == files.end()) throw MatrixError(name + ": missing from the matrix data");
  return parse_csv(it->second, name, with(required, kMetaCols), with(optional, kMetaOptional));
}

std::string key_part(const Version& v) { return v.raw.empty() ? v.str() : v.raw; }

// torch.csv (the x86_64 wheels) or torch_aarch64.csv: the same columns, one platform each.
void load_torch(std::vector<TorchRow>& out, const std::map<std::string, std::string>& files,
                const std::string& file, const std::string& platform) {
  auto t = table(files, file,
                 {"torch", "variant", "cuda", "status", "nccl", "cudnn", "cxx_std", "python_min",
                  "python_max", "arch_list"});
  KeySet keys(t.file);
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    TorchRow row;
    row.torch = rd.version("torch");
    row.variant = rd.required("variant");
    row.platform = platform;
    row.meta = rd.meta(key_part(row.torch) + "/" + row.variant);
    keys.add(row.meta.key, r.line);
    row.cuda = rd.version("cuda");
    if (row.variant != "cpu") {
      std::string want = "cu" + std::to_string(row.cuda.major()) + std::to_string(row.cuda.minor());
      if (row.variant != want)
        rd.fail("variant '" + row.variant + "' does not match cuda " + row.cuda.str() + " (" + want + ")");
    }
    row.status = rd.required("status");
    if (row.status != "stable" && row.status != "experimental")
      rd.fail("status must be stable or experimental");
    row.nccl = rd.opt_version("nccl");
    if (!row.nccl && !row.meta.is_unconfirmed("nccl")) rd.fail("nccl is empty but not marked unconfirmed");
    row.cudnn = rd.opt_version("cudnn");
    if (!row.cudnn && !row.meta.is_unconfirmed("cudnn")) rd.fail("cudnn is empty but not marked unconfirmed");
    auto cxx = rd.opt_int("cxx_std");
    if (!cxx || (*cxx != 14 && *cxx != 17 && *cxx != 20 && *cxx != 23))
      rd.fail("cxx_std must be 14, 17, 20 or 23");
    row.cxx_std = static_cast<int>(*cxx);
    row.python_min = rd.version("python_min");
    row.python_max = rd.version("python_max");
    if (row.python_max < row.python_min) rd.fail("python_max is below python_min");
    row.arch_list = split_list(rd.required("arch_list"));
    for (const auto& a : row.arch_list)
      if ((a.rfind("sm_", 0) != 0 && a.rfind("compute_", 0) != 0) || !arch_cc(a))
        rd.fail("arch_list entry '" + a + "' is not sm_XY or compute_XY");
    out.push_back(std::move(row));
  }
}

void load_cuda(Matrix& m, const std::map<std::string, std::string>& files) {
  auto t = table(files, "cuda.csv", {"cuda", "min_driver", "runfile_driver", "sms"}, {"ga_driver"});
  KeySet keys(t.file);
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    CudaRow row;
    row.cuda = rd.version("cuda");
    row.meta = rd.meta(row.cuda.release_str(2));
    keys.add(row.meta.key, r.line);
    row.min_driver = rd.version("min_driver");
    row.ga_driver = rd.opt_version("ga_driver");
    row.runfile_driver = rd.opt_version("runfile_driver");
    for (const char* col : {"ga_driver", "runfile_driver"})
      if (!rd.opt_version(col) && !row.meta.is_unconfirmed(col))
        rd.fail(std::string(col) + " is empty but not marked unconfirmed");
    row.sms = rd.versions("sms");
    if (row.sms.empty()) rd.fail("sms is empty");
    m.cuda.push_back(std::move(row));
  }
}

void load_nccl(Matrix& m, const std::map<std::string, std::string>& files) {
  {
    auto t = table(files, "nccl_releases.csv", {"nccl", "date", "cuda_builds"});
    KeySet keys(t.file);
    for (const auto& r : t.rows) {
      RowReader rd(t, r);
      NcclRelease row;
      row.nccl = rd.version("nccl");
      row.meta = rd.meta(row.nccl.str());
      keys.add(row.meta.key, r.line);
      row.date = rd.required("date");
      row.cuda_builds = rd.versions("cuda_builds");
      m.nccl_releases.push_back(std::move(row));
    }
  }
  {
    auto t = table(files, "nccl_features.csv", {"name", "kind", "since", "until"});
    KeySet keys(t.file);
    static const std::set<std::string> kinds = {"api", "collective", "dtype", "op", "feature"};
    for (const auto& r : t.rows) {
      RowReader rd(t, r);
      NcclFeature row;
      row.name = rd.required("name");
      row.meta = rd.meta(row.name);
      keys.add(row.name, r.line);
      row.kind = rd.required("kind");
      if (!kinds.count(row.kind))
        rd.fail("kind '" + row.kind + "' is not api, collective, dtype, op or feature");
      row.since = rd.version("since");
      row.until = rd.opt_version("until");
      if (row.until && *row.until <= row.since) rd.fail("until is not after since");
      m.nccl_features.push_back(std::move(row));
    }
  }
  {
    auto t =
        table(files, "nccl_ops.csv", {"dtype", "op", "since", "until", "nranks", "supported", "evidence"});
    KeySet keys(t.file);
    for (const auto& r : t.rows) {
      RowReader rd(t, r);
      NcclOp row;
      row.dtype = rd.required("dtype");
      row.op = rd.required("op");
      row.since = rd.version("since");
      row.until = rd.opt_version("until");
      auto nranks = rd.opt_int("nranks");
      if (nranks && *nranks != 1) rd.fail("nranks must be empty (any) or 1");
      row.nranks = nranks ? 1 : 0;
      row.meta = rd.meta(row.dtype + "/" + row.op + "/" + row.since.str() + (row.nranks ? "/1rank" : ""));
      keys.add(row.meta.key, r.line);
      const std::string& s = rd.required("supported");
      if (s != "yes" && s != "no") rd.fail("supported must be yes or no");
      row.supported = s == "yes";
      row.evidence = rd.required("evidence");
      if (row.evidence != "documented" && row.evidence != "source" && row.evidence != "observed")
        rd.fail("evidence must be documented, source or observed");
      m.nccl_ops.push_back(std::move(row));
    }
  }
  {
    auto t = table(files, "nccl_env.csv",
                   {"name", "since", "until", "type", "values", "min", "max", "default", "constraint"},
                   {"out_of_range", "multiple_of"});
    KeySet keys(t.file);
    static const std::set<std::string> types = {"int",   "bool",   "enum",   "list", "algo",    "proto",
                                                "level", "ifname", "string", "path", "notnccl", "ignore"};
    for (const auto& r : t.rows) {
      RowReader rd(t, r);
      NcclEnvVar row;
      row.name = rd.required("name");
      if (row.name.rfind("NCCL_", 0) != 0) rd.fail("name '" + row.name + "' does not start with NCCL_");
      row.meta = rd.meta(row.name);
      keys.add(row.name, r.line);
      row.since = rd.opt_version("since");
      row.until = rd.opt_version("until");
      row.type = rd.required("type");
      if (!types.count(row.type)) rd.fail("type '" + row.type + "' is unknown");
      row.values = split_list(rd.text("values"));
      if ((row.type == "enum" || row.type == "list" || row.type == "algo" || row.type == "proto") &&
          row.values.empty())
        rd.fail("type " + row.type + " needs values");
      for (const auto& v : row.values) {
        auto at = v.find('@');
        if (at == std::string::npos) continue;
        std::string range = v.substr(at + 1);
        auto dash = range.find('-');
        for (const auto& part :
             {range.substr(0, dash), dash == std::string::npos ? std::string() : range.substr(dash + 1)})
          if (!part.empty() && !Version::try_parse(part))
            rd.fail("values entry '" + v + "': version does not parse");
      }
      row.min = rd.opt_int("min");
      row.max = rd.opt_int("max");
      row.default_value = rd.opt_int("default");
      row.constraint = rd.text("constraint");
      const std::string oor = rd.text("out_of_range");
      if (!oor.empty() && oor != "error" && oor != "clamp") rd.fail("out_of_range must be error or clamp");
      row.clamps = oor == "clamp";
      row.multiple_of = rd.opt_int("multiple_of");
      if (row.multiple_of && *row.multiple_of <= 0) rd.fail("multiple_of must be positive");
      if (!row.constraint.empty()) {
        auto star = row.constraint.find('*'), le = row.constraint.find("<=");
        if (star == std::string::npos || le == std::string::npos || le < star)
          rd.fail("constraint '" + row.constraint + "' is not of the form A*B<=N");
      }
      m.nccl_env.push_back(std::move(row));
    }
  }
}

void load_lightning(Matrix& m, const std::map<std::string, std::string>& files) {
  auto t = table(files, "lightning.csv", {"first", "last", "torch_min", "torch_tested_below", "python_min"},
                 {"pytorch_lightning_python_min"});
  KeySet keys(t.file);
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    LightningRow row;
    row.first = rd.version("first");
    row.last = rd.version("last");
    if (row.last < row.first) rd.fail("last is below first");
    row.meta = rd.meta(row.first.str());
    keys.add(row.meta.key, r.line);
    row.torch_min = rd.version("torch_min");
    row.torch_tested_below = rd.opt_version("torch_tested_below");
    row.python_min = rd.version("python_min");
    row.pytorch_lightning_python_min =
        rd.opt_version("pytorch_lightning_python_min").value_or(row.python_min);
    m.lightning.push_back(std::move(row));
  }
  // Ranges must not overlap: a release maps to one row.
  for (size_t i = 0; i < m.lightning.size(); ++i)
    for (size_t j = i + 1; j < m.lightning.size(); ++j) {
      const auto &a = m.lightning[i], &b = m.lightning[j];
      if (a.first.compare_release(b.last) <= 0 && b.first.compare_release(a.last) <= 0)
        throw MatrixError(t.file + ":" + std::to_string(b.meta.line) + ": range " + b.first.str() + "-" +
                          b.last.str() + " overlaps line " + std::to_string(a.meta.line));
    }
}

// Device implementations of (collective, algorithm, protocol), generated from the NCCL tags.
void load_nccl_algos(Matrix& m, const std::map<std::string, std::string>& files) {
  auto t = table(files, "nccl_algos.csv", {"collective", "algorithm", "protocol", "since", "until"});
  KeySet keys(t.file);
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    NcclAlgo row;
    row.collective = rd.required("collective");
    row.algorithm = rd.required("algorithm");
    row.protocol = rd.required("protocol");
    row.meta = rd.meta(row.collective + "/" + row.algorithm + "/" + row.protocol);
    keys.add(row.meta.key, r.line);
    row.since = rd.version("since");
    row.until = rd.opt_version("until");
    if (row.until && *row.until <= row.since) rd.fail("until is not after since");
    m.nccl_algos.push_back(std::move(row));
  }
}

// GPU families -> driver floor, and driver branches -> end of life.
void load_driver_tables(Matrix& m, const std::map<std::string, std::string>& files) {
  {
    auto t = table(files, "gpu_families.csv", {"family", "cc_min", "cc_max", "min_driver", "first_cuda"},
                   {"last_driver", "gpu_names"});
    KeySet keys(t.file);
    for (const auto& r : t.rows) {
      RowReader rd(t, r);
      GpuFamily row;
      row.family = rd.required("family");
      row.meta = rd.meta(row.family);
      keys.add(row.meta.key, r.line);
      row.cc_min = rd.version("cc_min");
      row.cc_max = rd.version("cc_max");
      if (row.cc_max.compare_release(row.cc_min) < 0) rd.fail("cc_max is below cc_min");
      row.min_driver = rd.version("min_driver");
      row.first_cuda = rd.version("first_cuda");
      if (auto last = rd.opt_int("last_driver")) {
        if (*last < row.min_driver.major()) rd.fail("last_driver is below min_driver");
        row.last_driver = static_cast<long>(*last);
      }
      row.gpu_names = split_list(rd.text("gpu_names"));
      m.gpu_families.push_back(std::move(row));
    }
  }
  auto t = table(files, "driver_branches.csv", {"branch", "designation", "status", "eol"});
  KeySet keys(t.file);
  static const std::regex month("^[0-9]{4}-(0[1-9]|1[0-2])$");
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    DriverBranch row;
    auto branch = rd.opt_int("branch");
    if (!branch || *branch <= 0) rd.fail("branch must be a positive integer");
    row.branch = static_cast<long>(*branch);
    row.meta = rd.meta(std::to_string(row.branch));
    keys.add(row.meta.key, r.line);
    row.designation = rd.required("designation");
    const std::string& status = rd.required("status");
    if (status != "supported" && status != "eol" && status != "unlisted")
      rd.fail("status must be supported, eol or unlisted");
    row.listed_eol = status == "eol";
    row.unlisted = status == "unlisted";
    row.eol = rd.text("eol");
    if (!row.eol.empty() && !std::regex_match(row.eol, month))
      rd.fail("eol '" + row.eol + "' is not YYYY-MM");
    if (row.unlisted && !row.eol.empty()) rd.fail("an unlisted branch has no eol month (else it is eol)");
    m.driver_branches.push_back(std::move(row));
  }
}

// cuDNN release ranges per CUDA major (NVIDIA's cuDNN Support Matrix pages).
void load_cudnn(Matrix& m, const std::map<std::string, std::string>& files) {
  auto t = table(files, "cudnn.csv", {"first", "last", "cuda_major", "cuda", "min_driver", "ccs"},
                 {"deprecated_ccs"});
  KeySet keys(t.file);
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    CudnnRow row;
    row.first = rd.version("first");
    row.last = rd.version("last");
    if (row.last.compare_release(row.first) < 0) rd.fail("last is below first");
    auto major = rd.opt_int("cuda_major");
    if (!major || *major <= 0) rd.fail("cuda_major must be a positive integer");
    row.cuda_major = static_cast<long>(*major);
    row.cuda = rd.versions("cuda");
    if (row.cuda.empty()) rd.fail("column 'cuda' is empty");
    // "9.17.0/cu12.8-12.9": a release may have two rows for one major (Blackwell needs 12.8+).
    row.meta = rd.meta(rd.required("first") + "/cu" + row.cuda.front().release_str(2) + "-" +
                       row.cuda.back().release_str(2));
    keys.add(row.meta.key, r.line);
    for (const auto& c : row.cuda)
      if (c.major() != row.cuda_major)
        rd.fail("cuda lists " + c.str() + ", not of CUDA major " + std::to_string(row.cuda_major));
    row.min_driver = rd.version("min_driver");
    row.ccs = rd.versions("ccs");
    if (row.ccs.empty()) rd.fail("column 'ccs' is empty");
    row.deprecated_ccs = rd.versions("deprecated_ccs");
    for (const auto& d : row.deprecated_ccs)
      if (!row.supports_cc(d)) rd.fail("deprecated_ccs lists " + d.str() + ", which ccs does not");
    m.cudnn.push_back(std::move(row));
  }
}

// Known defects (nccl_defects.csv, torch_defects.csv); list cells are ';'-separated, "*" = any. A
// repeated id adds a condition. torch's rows name their process group (backend) and a layout.
void load_defects(std::vector<NcclDefect>& out, const std::map<std::string, std::string>& files,
                  const std::string& file, const std::string& product) {
  const bool torch = product == "torch";
  std::set<std::string> cols = {"id",       "title",  "link",        "first",     "fixed",
                                "severity", "nranks", "collectives", "ops",       "placement",
                                "dtypes",   "other",  "symptom",     "workaround"};
  if (torch) cols.insert({"backend", "layout"});
  auto t = table(files, file, cols);
  static const std::set<std::string> severities = {"corruption", "hang", "crash", "error", "perf"};
  const std::regex id_form(torch ? "^torch-[a-z0-9.-]+$" : "^nccl-[a-z0-9.-]+$");
  static const std::regex nranks_form("^(\\*|[0-9]{1,6}|>=[0-9]{1,6}|[0-9]{1,6}-[0-9]{1,6})$");
  auto list = [](const std::string& cell) {
    std::vector<std::string> out;
    if (cell != "*")
      for (const auto& item : split_list(cell)) out.push_back(item);
    return out;
  };
  for (const auto& r : t.rows) {
    RowReader rd(t, r);
    NcclDefect row;
    row.product = product;
    row.id = rd.required("id");
    if (!std::regex_match(row.id, id_form))
      rd.fail("id '" + row.id + "' is not " + (torch ? "torch" : "nccl") + "-<issue or slug> in lower case");
    row.meta = rd.meta(row.id);
    row.title = rd.required("title");
    row.link = rd.required("link");
    if (row.link.rfind("https://", 0) != 0) rd.fail("link '" + row.link + "' is not an https URL");
    row.first = rd.version("first");
    row.fixed = rd.opt_version("fixed");
    if (row.fixed && *row.fixed <= row.first) rd.fail("fixed is not after first");
    row.severity = rd.required("severity");
    if (!severities.count(row.severity))
      rd.fail("severity '" + row.severity + "' is not corruption|hang|crash|error|perf");
    if (torch) {
      row.backend = rd.required("backend");
      if (row.backend != "nccl" && row.backend != "gloo")
        rd.fail("backend '" + row.backend + "' is not nccl or gloo");
    }
    row.symptom = rd.required("symptom");
    row.workaround = rd.text("workaround");

    DefectCondition cond;
    cond.line = r.line;
    const std::string nr = rd.required("nranks");
    if (!std::regex_match(nr, nranks_form)) rd.fail("nranks '" + nr + "' is not *, N, >=N or N-M");
    if (nr == "*") {
      cond.nranks_min = 1;
    } else if (nr.rfind(">=", 0) == 0) {
      cond.nranks_min = std::stoi(nr.substr(2));
    } else if (auto dash = nr.find('-'); dash != std::string::npos) {
      cond.nranks_min = std::stoi(nr.substr(0, dash));
      cond.nranks_max = std::stoi(nr.substr(dash + 1));
      if (cond.nranks_max < cond.nranks_min) rd.fail("nranks range '" + nr + "' is empty");
    } else {
      cond.nranks_min = cond.nranks_max = std::stoi(nr);
    }
    if (cond.nranks_min < 1) rd.fail("nranks must be at least 1");
    cond.collectives = list(rd.required("collectives"));
    cond.ops = list(rd.required("ops"));
    cond.dtypes = list(rd.required("dtypes"));
    cond.placement = rd.required("placement");
    if (cond.placement == "*") cond.placement.clear();
    if (!cond.placement.empty() && cond.placement != "in_place" && cond.placement != "out_of_place")
      rd.fail("placement '" + cond.placement + "' is not in_place, out_of_place or *");
    if (torch) {
      cond.layout = rd.required("layout");
      if (cond.layout == "*") cond.layout.clear();
      if (!cond.layout.empty() && cond.layout != "contiguous" && cond.layout != "strided")
        rd.fail("layout '" + cond.layout + "' is not contiguous, strided or *");
    }
    cond.other = rd.text("other");

    auto same = std::find_if(out.begin(), out.end(), [&](const NcclDefect& d) { return d.id == row.id; });
    if (same == out.end()) {
      row.conditions.push_back(std::move(cond));
      out.push_back(std::move(row));
      continue;
    }
    // Another condition of a defect already listed: it must describe the same defect.
    if (same->title != row.title || same->link != row.link || same->first != row.first ||
        same->fixed != row.fixed || same->severity != row.severity || same->backend != row.backend)
      rd.fail("id '" + row.id + "' repeats line " + std::to_string(same->meta.line) +
              (torch ? " with another title, link, first, fixed, severity or backend"
                     : " with another title, link, first, fixed or severity"));
    same->conditions.push_back(std::move(cond));
  }
}

}  // namespace

bool NcclDefect::affects(const Version& release) const {
  return first.compare_release(release) <= 0 && (!fixed || release.compare_release(*fixed) < 0);
}

std::string NcclDefect::fix_hint() const {
  std::string out =
      fixed ? "upgrade " + product + " to >= " + fixed->str() : "no fixed " + product + " release yet";
  if (!workaround.empty()) out += " (or " + workaround + ")";
  return out;
}

std::optional<Version> arch_cc(const std::string& arch) {
  auto us = arch.find('_');
  if (us == std::string::npos) return std::nullopt;
  std::string digits = arch.substr(us + 1);
  if (digits.size() < 2 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  // try_parse: "compute_1208888...8" is too large for a version, and that is "anything else" too.
  return Version::try_parse(digits.substr(0, digits.size() - 1) + "." + digits.substr(digits.size() - 1));
}

bool arch_list_covers(const std::vector<std::string>& arch_list, const Version& cc, bool* by_ptx) {
  for (const auto& a : arch_list) {
    auto v = arch_cc(a);
    if (!v) continue;
    bool ptx = a.rfind("compute_", 0) == 0;
    bool sass_runs = !ptx && v->major() == cc.major() && v->compare_release(cc, 2) <= 0;
    if (sass_runs || (ptx && v->compare_release(cc, 2) <= 0)) {
      if (by_ptx) *by_ptx = ptx;
      return true;
    }
  }
  return false;
}

bool cuda_targets(const CudaRow& row, const Version& cc) {
  for (const auto& sm : row.sms)
    if (sm.same_release(cc, 2)) return true;
  return false;
}

const std::vector<std::string>& matrix_files() {
  static const std::vector<std::string> files = {
      "torch.csv",        "cuda.csv",     "nccl_releases.csv", "nccl_features.csv", "nccl_ops.csv",
      "lightning.csv",    "nccl_env.csv", "nccl_algos.csv",    "gpu_families.csv",  "driver_branches.csv",
      "nccl_defects.csv", "cudnn.csv",    "torch_aarch64.csv", "torch_defects.csv"};
  return files;
}

namespace {
std::string known_files() {
  std::string out;
  for (const auto& f : matrix_files()) out += (out.empty() ? "" : ", ") + f;
  return out;
}
}  // namespace

Matrix parse_matrix(const std::map<std::string, std::string>& files, const std::string& origin) {
  for (const auto& [name, text] : files)
    if (std::find(matrix_files().begin(), matrix_files().end(), name) == matrix_files().end())
      throw MatrixError(name + ": not a matrix file (known: " + known_files() + ")");
  Matrix m;
  m.origin = origin;
  load_torch(m.torch, files, "torch.csv", "x86_64");
  load_torch(m.torch_aarch64, files, "torch_aarch64.csv", "aarch64");
  load_cuda(m, files);
  load_nccl(m, files);
  load_lightning(m, files);
  load_nccl_algos(m, files);
  load_driver_tables(m, files);
  load_defects(m.nccl_defects, files, "nccl_defects.csv", "NCCL");
  load_defects(m.torch_defects, files, "torch_defects.csv", "torch");
  load_cudnn(m, files);
  return m;
}

const Matrix& builtin_matrix() {
  static const Matrix m = parse_matrix(builtin_matrix_files(), "built-in");
  return m;
}

Matrix load_matrix_dir(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& name : matrix_files()) {
    try {
      files[name] = read_input_file(dir + "/" + name, std::size_t{64} << 20);  // no device, no endless pipe
    } catch (const InputError& e) {
      throw MatrixError(e.what());
    }
  }
  try {
    return parse_matrix(files, dir);
  } catch (const MatrixError& e) {
    throw MatrixError(dir + "/" + e.what());  // messages then name the path a person can open
  }
}

const TorchRow* Matrix::find_torch(const Version& t, const std::optional<Version>& cuda,
                                   const std::string& platform) const {
  std::optional<Version> c = cuda ? cuda : t.torch_cuda_tag();
  for (const auto& r : platform == "aarch64" ? torch_aarch64 : torch) {
    if (!r.torch.same_release(t, 2)) continue;
    if (c && r.cuda.same_release(*c, 2)) return &r;
  }
  return nullptr;
}

std::vector<const TorchRow*> Matrix::torch_rows_of(const Version& t, const std::string& platform) const {
  std::vector<const TorchRow*> out;
  for (const auto& r : platform == "aarch64" ? torch_aarch64 : torch)
    if (r.torch.same_release(t, 2)) out.push_back(&r);
  return out;
}

const CudaRow* Matrix::find_cuda(const Version& v) const {
  for (const auto& r : cuda)
    if (r.cuda.same_release(v, 2)) return &r;
  return nullptr;
}

std::vector<const CudaRow*> Matrix::cuda_rows_of_major(long major) const {
  std::vector<const CudaRow*> out;
  for (const auto& r : cuda)
    if (r.cuda.major() == major) out.push_back(&r);
  return out;
}

const LightningRow* Matrix::find_lightning(const Version& v) const {
  for (const auto& r : lightning)
    if (r.first.compare_release(v, 3) <= 0 && v.compare_release(r.last, 3) <= 0) return &r;
  return nullptr;
}

const NcclEnvVar* Matrix::find_env(const std::string& name) const {
  for (const auto& r : nccl_env)
    if (r.name == name) return &r;
  return nullptr;
}

const GpuFamily* Matrix::find_gpu_family(const Version& cc, const std::optional<std::string>& name) const {
  const GpuFamily* family = nullptr;
  for (const auto& r : gpu_families) {
    if (r.cc_min.compare_release(cc, 2) > 0 || cc.compare_release(r.cc_max, 2) > 0) continue;
    if (r.gpu_names.empty()) {
      if (!family) family = &r;
    } else if (name && std::find(r.gpu_names.begin(), r.gpu_names.end(), *name) != r.gpu_names.end()) {
      return &r;
    }
  }
  return family;
}

const DriverBranch* Matrix::find_driver_branch(long branch) const {
  for (const auto& r : driver_branches)
    if (r.branch == branch) return &r;
  return nullptr;
}

bool CudnnRow::covers(const Version& cudnn) const {
  return first.compare_release(cudnn, 3) <= 0 && cudnn.compare_release(last, 3) <= 0;
}

bool CudnnRow::supports_cc(const Version& cc) const {
  return std::any_of(ccs.begin(), ccs.end(), [&](const Version& c) { return c.same_release(cc, 2); });
}

const CudnnRow* Matrix::find_cudnn(const Version& v, long cuda_major) const {
  for (const auto& r : cudnn)
    if (r.cuda_major == cuda_major && r.covers(v)) return &r;
  return nullptr;
}

namespace {
template <class Rows, class Get>
std::string newest(const Rows& rows, Get get) {
  const Version* best = nullptr;
  for (const auto& r : rows)
    if (const Version* v = get(r); v && (!best || best->compare_release(*v) < 0)) best = v;
  return best ? (best->raw.empty() ? best->str() : best->raw) : std::string();
}
}  // namespace

DataReach data_reach(const Matrix& m) {
  DataReach r;
  r.torch = newest(m.torch, [](const TorchRow& t) { return &t.torch; });
  r.nccl = newest(m.nccl_releases, [](const NcclRelease& n) { return &n.nccl; });
  // The algorithms and source markers were read from the release tags' own source; the variable
  // names also from the libnccl.so.2 of a release that has no tag yet, where its row says so
  // (matrix/tools generate.py writes "NCCL_* names: ..." into that row's source).
  const auto tagged = [](const NcclRelease& n) {
    return n.meta.source.rfind("github:NVIDIA/nccl tag ", 0) == 0;
  };
  r.nccl_algos = newest(m.nccl_releases, [&](const NcclRelease& n) { return tagged(n) ? &n.nccl : nullptr; });
  r.nccl_env = newest(m.nccl_releases, [&](const NcclRelease& n) -> const Version* {
    return tagged(n) || n.meta.source.find("; NCCL_* names: ") != std::string::npos ? &n.nccl : nullptr;
  });
  r.cudnn = newest(m.cudnn, [](const CudnnRow& c) { return &c.last; });
  r.cuda = newest(m.cuda, [](const CudaRow& c) { return &c.cuda; });
  long branch = 0;
  for (const auto& b : m.driver_branches) branch = std::max(branch, b.branch);
  if (branch) r.driver_branch = "R" + std::to_string(branch);
  r.lightning = newest(m.lightning, [](const LightningRow& l) { return &l.last; });
  return r;
}

const NcclFeature* Matrix::find_feature(const std::string& name) const {
  for (const auto& r : nccl_features)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace cts
