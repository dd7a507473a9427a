#include "matrix/rules.hpp"

#include <algorithm>
#include <ctime>
#include <functional>
#include <set>

#include "matrix/nccl_defects.hpp"
#include "matrix/nccl_support.hpp"

namespace cts {
namespace {

// What one rule sees: the matrix, one fingerprint, and where its findings go.
struct Ctx {
  const Matrix& m;
  const Fingerprint& fp;
  std::vector<Finding>& out;
  std::string who;  // fp.label()
  const CheckOptions& opts;
  const DataReach& reach;
  bool lacks_data = false;  // set by no_data(): the inputs were there, the data had no row for them
  void add(std::string id, std::string severity, std::string subject, std::string message, std::string source,
           std::string fix) {
    out.push_back({std::move(id), std::move(severity), std::move(subject), std::move(message),
                   std::move(source), std::move(fix)});
  }
  // What a rule returns when its inputs are present but outside the data (a release newer than the
  // rows, or one between them): not evaluated, and not for want of inputs.
  bool no_data() {
    lacks_data = true;
    return false;
  }
};

// A rule returns false when it could not judge (reported in not_evaluated, never as passed): its
// inputs were absent, or, after no_data(), outside the data.
struct Rule {
  std::vector<std::string> ids;  // every id it can raise (and that count as not evaluated)
  std::function<bool(Ctx&)> run;
};

// As the tool printed it, unless that was an integer code (13000, 22809, 91900).
std::string v(const Version& x) { return x.raw.find('.') != std::string::npos ? x.raw : x.str(); }
std::string cc_str(const Version& cc) {
  return "sm_" + std::to_string(cc.major()) + std::to_string(cc.minor());
}

// A rule built on an UNCONFIRMED matrix fact only warns.
std::string severity(const std::string& base, const RowMeta& row, const std::string& field) {
  return base == "error" && row.is_unconfirmed(field) ? "warning" : base;
}
std::string unconfirmed_note(const RowMeta& row, const std::string& field) {
  return row.is_unconfirmed(field) ? " [" + row.cite() + " " + field + " is UNCONFIRMED]" : "";
}

// The CUDA level of the driver: what cudaDriverGetVersion said, else the newest CUDA minor whose
// GA runfile bundles a driver no newer than this one.
std::optional<Version> driver_level(const Matrix& m, const Fingerprint& fp) {
  if (fp.driver_cuda) return fp.driver_cuda;
  if (!fp.driver_version) return std::nullopt;
  const CudaRow* best = nullptr;
  for (const auto& r : m.cuda)
    if (r.full_driver() && r.full_driver()->compare_release(*fp.driver_version) <= 0 &&
        (!best || best->cuda.compare_release(r.cuda) < 0))
      best = &r;
  return best ? std::optional<Version>(best->cuda) : std::nullopt;
}

// The MVC floor (row) of a CUDA version: its own row, else any row of its major.
const CudaRow* floor_row(const Matrix& m, const Version& cuda) {
  if (const CudaRow* r = m.find_cuda(cuda)) return r;
  auto rows = m.cuda_rows_of_major(cuda.major());
  return rows.empty() ? nullptr : rows.front();
}

std::string driver_branch_fix(const CudaRow& row) {
  std::string fix = "install a Linux driver >= " + v(row.min_driver) + " (R" +
                    std::to_string(row.min_driver.major()) + " branch or newer)";
  if (row.full_driver())
    fix += "; >= " + v(*row.full_driver()) + " runs CUDA " + row.cuda.release_str(2) +
           " without minor-version compatibility";
  return fix;
}

// Whether `driver` can run CUDA `cuda` at all (minor-version compatibility included). Returns the
// reason when it cannot; nullopt when inputs are missing.
std::optional<std::string> driver_cannot_run(const Matrix& m, const Fingerprint& fp, const Version& cuda,
                                             const CudaRow** row_out) {
  const CudaRow* row = floor_row(m, cuda);
  *row_out = row;
  if (fp.driver_version && row) {
    // Its own GA driver runs a CUDA minor natively, even where that is below the major's
    // minor-version-compatibility floor (CUDA 11.0 GA: 450.51.05; 11.x MVC: 450.80.02).
    const bool native = row->cuda.same_release(cuda, 2) && row->full_driver() &&
                        fp.driver_version->compare_release(*row->full_driver()) >= 0;
    if (!native && fp.driver_version->compare_release(row->min_driver) < 0)
      return "driver " + v(*fp.driver_version) + " is below " + v(row->min_driver) +
             ", the minimum Linux driver of CUDA " + std::to_string(cuda.major()) +
             ".x even with minor-version compatibility" +
             (row->cuda.same_release(cuda, 2) && row->full_driver() &&
                      row->full_driver()->compare_release(row->min_driver) < 0
                  ? ", and below " + v(*row->full_driver()) + ", the CUDA " + row->cuda.release_str(2) +
                        " GA driver"
                  : std::string());
    return std::string();
  }
  if (fp.driver_cuda) {
    if (fp.driver_cuda->major() < cuda.major())
      return "the driver supports CUDA " + fp.driver_cuda->release_str(2) + ", an older major than CUDA " +
             cuda.release_str(2);
    return std::string();
  }
  return std::nullopt;
}

bool rule_driver_runtime(Ctx& c) {
  if (!c.fp.cuda_runtime || (!c.fp.driver_version && !c.fp.driver_cuda)) return false;
  const Version& rt = *c.fp.cuda_runtime;
  const CudaRow* row = nullptr;
  auto why = driver_cannot_run(c.m, c.fp, rt, &row);
  if (!why) return c.no_data();  // a CUDA major the data has no row of
  std::string src = row ? row->meta.evidence() : "rule:driver-cuda-major";
  if (!why->empty()) {
    c.add("driver-too-old-for-cuda-runtime", row ? severity("error", row->meta, "min_driver") : "error",
          c.who, "CUDA runtime " + rt.release_str(2) + ": " + *why, src,
          row ? driver_branch_fix(*row) : "install a driver for CUDA " + rt.release_str(2));
    return true;
  }
  auto level = driver_level(c.m, c.fp);
  if (level && level->major() == rt.major() && level->compare_release(rt, 2) < 0) {
    c.add("driver-cuda-minor-older", "warning", c.who,
          "CUDA runtime " + rt.release_str(2) + " on a CUDA " + level->release_str(2) + "-level driver" +
              (c.fp.driver_version ? " (" + v(*c.fp.driver_version) + ")" : "") +
              ": runs under minor-version compatibility, without JIT of newer PTX and with its other limits",
          src,
          row && row->full_driver() ? "for full support install a driver >= " + v(*row->full_driver()) +
                                          " (the CUDA " + row->cuda.release_str(2) + " GA driver, R" +
                                          std::to_string(row->full_driver()->major()) + ")"
                                    : "upgrade the driver to the branch of CUDA " + rt.release_str(2));
  }
  return true;
}

// The machine the fingerprint was probed on ("Linux 6.8.0 aarch64" in its kernel record): the
// aarch64 wheels are built for other GPUs than the x86_64 ones.
std::string platform_of(const Fingerprint& fp) {
  auto it = fp.extra.find("kernel");
  if (it != fp.extra.end() && it->is_string()) {
    const std::string& k = it->get_ref<const std::string&>();
    if (k.size() >= 7 && k.compare(k.size() - 7, 7, "aarch64") == 0) return "aarch64";
  }
  return "x86_64";
}

// The torch wheel of the same release line that this driver can run (newest CUDA variant).
std::string wheel_for_driver(const Matrix& m, const Fingerprint& fp, const Version& torch) {
  const TorchRow* best = nullptr;
  for (const TorchRow* r : m.torch_rows_of(torch, platform_of(fp))) {
    const CudaRow* row = nullptr;
    auto why = driver_cannot_run(m, fp, r->cuda, &row);
    if (why && why->empty() && (!best || best->cuda.compare_release(r->cuda) < 0)) best = r;
  }
  if (!best) return "";
  return "torch " + torch.release_str(2) + "+" + best->variant +
         " (pip index https://download.pytorch.org/whl/" + best->variant + ")";
}

bool rule_driver_torch(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->version || (!c.fp.driver_version && !c.fp.driver_cuda)) return false;
  std::optional<Version> tc = c.fp.torch->cuda ? c.fp.torch->cuda : c.fp.torch->version->torch_cuda_tag();
  if (!tc) return false;  // a CPU build: nothing to check
  const CudaRow* row = nullptr;
  auto why = driver_cannot_run(c.m, c.fp, *tc, &row);
  if (!why) return c.no_data();
  if (!why->empty()) {
    std::string wheel = wheel_for_driver(c.m, c.fp, *c.fp.torch->version);
    const TorchRow* trow = c.m.find_torch(*c.fp.torch->version, tc, platform_of(c.fp));
    c.add("driver-too-old-for-torch-cuda", row ? severity("error", row->meta, "min_driver") : "error", c.who,
          "torch " + v(*c.fp.torch->version) + " is built for CUDA " + tc->release_str(2) + ": " + *why,
          trow  ? trow->meta.evidence()
          : row ? row->meta.evidence()
                : "rule:driver-cuda-major",
          (wheel.empty() ? std::string() : "install " + wheel + ", or ") +
              (row ? driver_branch_fix(*row) : "upgrade the driver"));
  }
  return true;
}

bool rule_nccl_header_library(Ctx& c) {
  if (!c.fp.nccl_header || !c.fp.nccl_runtime) return false;
  const Version &h = *c.fp.nccl_header, &r = *c.fp.nccl_runtime;
  if (h.same_release(r, 3)) return true;
  bool minor = !h.same_release(r, 2);
  c.add("nccl-header-library-mismatch", minor ? "error" : "warning", c.who,
        "compiled against NCCL " + h.release_str(3) + " but loaded " + r.release_str(3) +
            (c.fp.nccl_library ? " from " + *c.fp.nccl_library : ""),
        "rule:nccl-header-library-mismatch",
        "rebuild against the NCCL that is loaded, or point LD_LIBRARY_PATH at libnccl " + h.release_str(3));
  return true;
}

// The NCCL torch runs: the one its process loaded where the probe saw it, else the one it was built with.
std::string torch_nccl_origin(const TorchInfo& t) {
  if (!t.nccl_loaded) return "built with; which one it loads was not probed";
  if (t.nccl_static && *t.nccl_static) return "linked into libtorch statically";
  return "loaded" + (t.nccl_library ? " from " + *t.nccl_library : std::string());
}

bool rule_torch_nccl_loaded(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->nccl_used() || !c.fp.nccl_runtime) return false;
  const Version& tn = *c.fp.torch->nccl_used();
  if (tn.same_release(*c.fp.nccl_runtime, 3)) return true;
  c.add("torch-nccl-differs-from-loaded", "warning", c.who,
        "torch" + (c.fp.torch->version ? " " + v(*c.fp.torch->version) : std::string()) + " uses NCCL " +
            tn.release_str(3) + " (" + torch_nccl_origin(*c.fp.torch) + "); this process loaded NCCL " +
            c.fp.nccl_runtime->release_str(3) + (c.fp.nccl_library ? " from " + *c.fp.nccl_library : "") +
            ": results of the NCCL suites describe the loaded one, not torch's",
        "rule:torch-nccl-differs-from-loaded",
        "run the suites against torch's libnccl (LD_LIBRARY_PATH=<site-packages>/nvidia/nccl/lib) to test "
        "what torch uses");
  return true;
}

// NVML's "Driver/library version mismatch": the kernel module and the user-space driver differ
// (an upgrade without a reboot). CUDA then fails to start too; it is not an absent driver.
bool rule_driver_library_mismatch(Ctx& c) {
  if (!c.fp.nvml_error) return c.fp.driver_version.has_value();
  if (c.fp.nvml_error->find("LIB_RM_VERSION_MISMATCH") == std::string::npos) return false;
  c.add("driver-library-mismatch", "error", c.who,
        "NVML: " + *c.fp.nvml_error +
            ": the loaded kernel module and the user-space driver libraries are different releases",
        "rule:driver-library-mismatch (NVML nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH)",
        "reboot the node (or reload the nvidia kernel modules) so the module matches the installed driver; "
        "in a "
        "container, do not install a driver inside the image: the host's is mounted in");
  return true;
}

// Known NCCL defects of the loaded library, and of torch's own NCCL where that is another release.
bool rule_nccl_known_defect(Ctx& c) {
  std::vector<std::pair<std::string, Version>> libs;
  if (c.fp.nccl_runtime) libs.push_back({"loaded NCCL", *c.fp.nccl_runtime});
  if (c.fp.torch && c.fp.torch->nccl_used() &&
      (!c.fp.nccl_runtime || !c.fp.torch->nccl_used()->same_release(*c.fp.nccl_runtime, 3)))
    libs.push_back({"torch's NCCL", *c.fp.torch->nccl_used()});
  if (libs.empty()) return false;
  for (const auto& [what, ver] : libs)
    for (const NcclDefect* d : defects_of_release(c.m, ver)) {
      // The version alone matched: whether this machine's work meets the condition is unknown, so
      // the finding warns and says what it needs; --strict-defects makes it an error.
      const std::string when =
          "NCCL " + d->first.release_str(3) +
          (d->fixed ? " up to, not including, " + d->fixed->release_str(3) : " and later (not fixed yet)");
      c.add("nccl-known-defect", c.opts.strict_defects ? "error" : "warning", c.who + " " + what,
            what + " " + ver.release_str(3) + " has " + d->id + " (" + d->severity + "): " + d->title + ", " +
                d->link + "; affects " + when + "; only where " + defect_condition_text(*d) +
                "; symptom: " + d->symptom,
            d->meta.evidence(), d->fix_hint());
      c.out.back().defect = d->id;
    }
  return true;
}

// Known torch defects (torch_defects.csv) of every torch the job runs: the Python torch of the
// fingerprint, and the libtorch the C++ suites were built against where the caller knows it.
bool rule_torch_known_defect(Ctx& c) {
  struct Torch {
    std::string what, subject;
    Version ver;
    bool has_nccl;
  };
  std::vector<Torch> runs;
  if (c.fp.torch && c.fp.torch->version)
    runs.push_back({"torch " + v(*c.fp.torch->version) + " (Python)", c.who + " torch", *c.fp.torch->version,
                    c.fp.torch->cuda.has_value()});
  if (c.opts.libtorch)  // one per job, not one per fingerprint
    runs.push_back({"libtorch " + v(*c.opts.libtorch) + " (the C++ suites)", "libtorch (C++ suites)",
                    *c.opts.libtorch, c.opts.libtorch_has_nccl});
  if (runs.empty()) return false;
  for (const auto& t : runs)
    for (const NcclDefect* d : torch_defects_of_release(c.m, t.ver)) {
      if (d->backend == "nccl" && !t.has_nccl) continue;  // a torch without CUDA has no ProcessGroupNCCL
      const std::string group = d->backend == "nccl" ? "ProcessGroupNCCL" : "ProcessGroupGloo";
      const std::string when = "torch " + d->first.release_str(3) +
                               (d->fixed ? " up to, not including, " + d->fixed->release_str(3)
                                         : " and later (no fixed release known)");
      const std::string msg = t.what + " has " + d->id + " (" + d->severity + ", " + group +
                              "): " + d->title + ", " + d->link + "; affects " + when + "; only where " +
                              defect_condition_text(*d) + "; symptom: " + d->symptom;
      if (std::any_of(c.out.begin(), c.out.end(),
                      [&](const Finding& f) { return f.subject == t.subject && f.message == msg; }))
        continue;
      c.add("torch-known-defect", c.opts.strict_defects ? "error" : "warning", t.subject, msg,
            d->meta.evidence(), d->fix_hint());
      c.out.back().defect = d->id;
    }
  return true;
}

const TorchRow* torch_row(const Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->version) return nullptr;
  return c.m.find_torch(*c.fp.torch->version, c.fp.torch->cuda, platform_of(c.fp));
}

bool beyond_torch_data(const Ctx& c);

bool rule_torch_known(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->version) return false;
  if (torch_row(c)) return true;
  if (beyond_torch_data(c)) return c.no_data();  // data-beyond-reach names it
  const Version& t = *c.fp.torch->version;
  auto rows = c.m.torch_rows_of(t, platform_of(c.fp));
  std::string variants;
  for (const auto* r : rows) variants += (variants.empty() ? "" : ", ") + r->variant;
  c.add("torch-release-unknown", "info", c.who,
        "torch " + v(t) +
            (rows.empty() ? " matches no " + platform_of(c.fp) + " row of the matrix"
                          : " is a variant the matrix does not list for " + platform_of(c.fp) +
                                " (known: " + variants + ")"),
        "torch.csv",
        "its compatibility rules were not checked; add the row to matrix/data/torch.csv with its source");
  return true;
}

bool rule_nccl_below_matrix(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->version || !c.fp.torch->nccl_used()) return false;
  const TorchRow* row = torch_row(c);
  if (!row || !row->nccl) return c.no_data();
  const Version& tn = *c.fp.torch->nccl_used();
  if (tn.compare_release(*row->nccl) >= 0) return true;
  c.add("nccl-below-matrix", "warning", c.who,
        "torch " + v(*c.fp.torch->version) + " runs NCCL " + tn.release_str(3) + " (" +
            torch_nccl_origin(*c.fp.torch) + ")" + ", older than the " + row->nccl->release_str(3) +
            " its official wheel ships" + unconfirmed_note(row->meta, "nccl"),
        row->meta.evidence(),
        "install the official torch " + row->torch.release_str(2) + "+" + row->variant +
            " wheel (or nvidia-nccl-cu" + std::to_string(row->cuda.major()) +
            ">=" + row->nccl->release_str(3) + ")");
  return true;
}

bool rule_gpu_arch_torch(Ctx& c) {
  if (!c.fp.gpus || c.fp.gpus->empty() || !c.fp.torch) return false;
  const TorchRow* row = torch_row(c);
  const std::vector<std::string>* list = nullptr;
  std::string src;
  bool from_row = false;
  if (c.fp.torch->arch_list) {
    list = &*c.fp.torch->arch_list;
    src = "rule:torch.cuda.get_arch_list";
  } else if (row) {
    list = &row->arch_list;
    src = row->meta.evidence();
    from_row = true;
  }
  if (!list) {  // a CUDA torch the data has no row of, or a CPU build (nothing to judge)
    const bool cuda_build =
        c.fp.torch->cuda || (c.fp.torch->version && c.fp.torch->version->torch_cuda_tag());
    return cuda_build ? c.no_data() : false;
  }
  for (const auto& g : *c.fp.gpus) {
    if (!g.cc) continue;
    bool ptx = false;
    if (arch_list_covers(*list, *g.cc, &ptx)) continue;
    std::string joined;
    for (const auto& a : *list) joined += (joined.empty() ? "" : " ") + a;
    c.add("gpu-arch-not-in-torch-build", from_row ? severity("error", row->meta, "arch_list") : "error",
          c.who + " GPU " + std::to_string(g.index),
          (g.name ? *g.name + " " : std::string()) + "(" + cc_str(*g.cc) + ") is not in torch's arch list [" +
              joined + "] and no PTX there JITs to it" +
              (from_row ? unconfirmed_note(row->meta, "arch_list") : ""),
          src, "install a torch wheel whose arch list has " + cc_str(*g.cc) + " (see matrix/data/torch.csv)");
  }
  return true;
}

bool rule_gpu_arch_cuda(Ctx& c) {
  if (!c.fp.gpus || c.fp.gpus->empty()) return false;
  std::optional<Version> cuda = c.fp.cuda_runtime;
  if (!cuda && c.fp.torch) cuda = c.fp.torch->cuda;
  if (!cuda) return false;
  const CudaRow* row = c.m.find_cuda(*cuda);
  if (!row) return c.no_data();
  const Version& lo = *std::min_element(row->sms.begin(), row->sms.end());
  const Version& hi = *std::max_element(row->sms.begin(), row->sms.end());
  for (const auto& g : *c.fp.gpus) {
    if (!g.cc) continue;
    bool below = g.cc->compare_release(lo)<0, above = g.cc->compare_release(hi)> 0;
    if (!below && !above) continue;
    c.add("gpu-arch-unsupported-by-cuda", severity("error", row->meta, "sms"),
          c.who + " GPU " + std::to_string(g.index),
          "CUDA " + cuda->release_str(2) + " cannot target " + (g.name ? *g.name + " " : std::string()) +
              "(" + cc_str(*g.cc) + "): it targets " + cc_str(lo) + " to " + cc_str(hi) +
              unconfirmed_note(row->meta, "sms"),
          row->meta.evidence(),
          below ? "use a CUDA " + std::to_string(cuda->major() - 1) +
                      ".x build (and its torch wheel) for this GPU"
                : "use a newer CUDA toolkit and torch wheel that know " + cc_str(*g.cc));
  }
  return true;
}

std::string check_month(const Fingerprint& fp);
std::string supported_branch_hint(const Matrix& m, long floor, const std::string& month);

// torch.backends.cudnn.version() is the cuDNN torch's process loads at run time, not its build.
bool rule_cudnn(Ctx& c) {
  if (!c.fp.cudnn || !c.fp.torch || !c.fp.torch->cudnn) return false;
  if (c.fp.cudnn->same_release(*c.fp.torch->cudnn, 3)) return true;
  c.add("cudnn-differs-from-torch", "warning", c.who,
        "loaded cuDNN " + c.fp.cudnn->release_str(3) + " differs from the runtime cuDNN " +
            c.fp.torch->cudnn->release_str(3) + " torch loads (torch.backends.cudnn.version())",
        "rule:cudnn-differs-from-torch",
        "install nvidia-cudnn-cu" +
            (c.fp.torch->cuda ? std::to_string(c.fp.torch->cuda->major()) : std::string("XX")) +
            "==" + c.fp.torch->cudnn->release_str(3) + ".* or drop the other libcudnn from the library path");
  return true;
}

// torch's own check at cuDNN init (torch/backends/cudnn/__init__.py): the runtime cuDNN must be of the
// major torch was compiled against and at least its minor, else "cuDNN version incompatibility".
// The build comes from the probe (torch._C._cudnn.getCompileVersion()), else from the official wheel's
// row, which describes that wheel only: then it warns.
bool rule_cudnn_torch_build(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->cudnn) return false;
  if (c.fp.torch->cudnn_error) return true;  // torch-cudnn-refused gives torch's own words
  const Version& rt = *c.fp.torch->cudnn;
  std::optional<Version> build = c.fp.torch->cudnn_build;
  const TorchRow* row = build ? nullptr : torch_row(c);
  if (!build && row && row->cudnn) build = row->cudnn;
  if (!build) return c.fp.torch->version ? c.no_data() : false;
  const bool other_major = rt.major() != build->major();
  if (!other_major && rt.compare_release(*build, 2) >= 0) return true;
  c.add("cudnn-older-than-torch-build", row ? "warning" : "error", c.who,
        "torch" + (c.fp.torch->version ? " " + v(*c.fp.torch->version) : std::string()) +
            " was compiled against cuDNN " + build->release_str(3) +
            (row ? " (its official wheel's, " + row->meta.cite() + ")" : std::string()) +
            " but loads cuDNN " + rt.release_str(3) + ": " +
            (other_major ? "another major" : "an older minor") +
            ", so torch refuses cuDNN operations with 'cuDNN version incompatibility'",
        row ? row->meta.evidence() : "rule:cudnn-older-than-torch-build (torch/backends/cudnn/__init__.py)",
        "install nvidia-cudnn-cu" +
            (c.fp.torch->cuda ? std::to_string(c.fp.torch->cuda->major()) : std::string("XX")) +
            ">=" + build->release_str(2) + ",<" + std::to_string(build->major() + 1) +
            " (or drop the older libcudnn from the library path)");
  return true;
}

// What torch itself raised when it initialized cuDNN (the probe records it as torch.cudnn_error): torch
// then runs no cuDNN operation at all, whatever the data says. Judged where the probe looked at cuDNN.
bool rule_torch_cudnn_refused(Ctx& c) {
  if (!c.fp.torch || (!c.fp.torch->cudnn && !c.fp.torch->cudnn_build && !c.fp.torch->cudnn_error))
    return false;
  if (!c.fp.torch->cudnn_error) return true;
  const TorchInfo& t = *c.fp.torch;
  std::string versions;
  if (t.cudnn_build) versions += "compiled against cuDNN " + t.cudnn_build->release_str(3);
  if (t.cudnn)
    versions += std::string(versions.empty() ? "" : ", ") + "loads cuDNN " + t.cudnn->release_str(3);
  c.add("torch-cudnn-refused", "error", c.who + " torch",
        "torch" + (t.version ? " " + v(*t.version) : std::string()) +
            (versions.empty() ? "" : " (" + versions + ")") +
            " refused cuDNN when it initialized it, so every cuDNN operation (convolutions, RNNs, "
            "attention) fails: " +
            *t.cudnn_error,
        "rule:torch-cudnn-refused (torch/backends/cudnn/__init__.py: another major or an older minor than "
        "the build, or cuDNN >= 9.11 with a GPU below sm_75)",
        "install the cuDNN torch was built for (nvidia-cudnn-cu" +
            (t.cuda ? std::to_string(t.cuda->major()) : std::string("XX")) +
            (t.cudnn_build
                 ? ">=" + t.cudnn_build->release_str(2) + ",<" + std::to_string(t.cudnn_build->major() + 1)
                 : std::string()) +
            ") and drop other libcudnn from LD_LIBRARY_PATH; on a GPU below sm_75 use a torch that bundles "
            "cuDNN 9.10 or older");
  return true;
}

// Every cuDNN the job can load, with the CUDA major it is built for: torch's runtime one, and the one
// gpucts loaded where that is another release.
struct CudnnLib {
  std::string what;
  Version cudnn;
  long cuda_major;
};
std::vector<CudnnLib> cudnn_libs(const Fingerprint& fp) {
  std::vector<CudnnLib> out;
  std::optional<Version> tc = fp.torch ? fp.torch->cuda : std::nullopt;
  if (!tc && fp.torch && fp.torch->version) tc = fp.torch->version->torch_cuda_tag();
  if (fp.torch && fp.torch->cudnn && tc) out.push_back({"torch's cuDNN", *fp.torch->cudnn, tc->major()});
  if (fp.cudnn && fp.cuda_runtime && (out.empty() || !out.front().cudnn.same_release(*fp.cudnn, 3)))
    out.push_back({"loaded cuDNN", *fp.cudnn, fp.cuda_runtime->major()});
  return out;
}

// The rows of a cuDNN release for a CUDA major (a release may have two: Blackwell on CUDA 12.8+).
std::vector<const CudnnRow*> cudnn_rows(const Matrix& m, const CudnnLib& lib) {
  std::vector<const CudnnRow*> out;
  for (const auto& r : m.cudnn)
    if (r.cuda_major == lib.cuda_major && r.covers(lib.cudnn)) out.push_back(&r);
  return out;
}

// A row read only at its first release (last UNCONFIRMED) is an assumption past that minor: warn.
std::string cudnn_severity(const CudnnRow& row, const Version& cudnn, const char* field) {
  if (row.meta.is_unconfirmed(field)) return "warning";
  if (row.meta.is_unconfirmed("last") && cudnn.compare_release(row.first, 2) > 0) return "warning";
  return "error";
}

// The note a finding carries when it rests on the assumption that a later release keeps the table.
std::string cudnn_assumed_note(const CudnnRow& row, const Version& cudnn) {
  return cudnn.compare_release(row.first, 2) > 0 ? unconfirmed_note(row.meta, "last") : std::string();
}

std::string ccs_text(const CudnnRow& row) {
  std::string out;
  for (const auto& cc : row.ccs) out += (out.empty() ? "" : " ") + cc_str(cc);
  return out;
}

bool rule_cudnn_gpu(Ctx& c) {
  if (!c.fp.gpus || c.fp.gpus->empty()) return false;
  bool judged = false;
  const auto libs = cudnn_libs(c.fp);
  for (const CudnnLib& lib : libs) {
    auto rows = cudnn_rows(c.m, lib);
    if (rows.empty()) continue;
    judged = true;
    for (const auto& g : *c.fp.gpus) {
      if (!g.cc) continue;
      if (std::any_of(rows.begin(), rows.end(), [&](const CudnnRow* r) { return r->supports_cc(*g.cc); }))
        continue;
      const CudnnRow& row = *rows.front();
      c.add("gpu-unsupported-by-cudnn", cudnn_severity(row, lib.cudnn, "ccs"),
            c.who + " GPU " + std::to_string(g.index) + " " + lib.what,
            lib.what + " " + lib.cudnn.release_str(3) + " for CUDA " + std::to_string(lib.cuda_major) +
                " does not support " + (g.name ? *g.name + " " : std::string()) + "(" + cc_str(*g.cc) +
                "): it runs on " + ccs_text(row) + "; cuDNN operations (convolutions, RNNs, attention) fail" +
                unconfirmed_note(row.meta, "ccs") + cudnn_assumed_note(row, lib.cudnn),
            row.meta.evidence(),
            "install a cuDNN release that lists " + cc_str(*g.cc) +
                " (see matrix/data/cudnn.csv), e.g. the one the torch wheel pins");
    }
  }
  return judged || (libs.empty() ? false : c.no_data());
}

bool rule_cudnn_driver(Ctx& c) {
  if (!c.fp.driver_version) return false;
  bool judged = false;
  const auto libs = cudnn_libs(c.fp);
  for (const CudnnLib& lib : libs) {
    auto rows = cudnn_rows(c.m, lib);
    // The rows that serve every visible GPU decide the floor (Blackwell needs the 12.8+ row's).
    std::vector<const CudnnRow*> serving;
    for (const CudnnRow* r : rows) {
      bool all = true;
      if (c.fp.gpus)
        for (const auto& g : *c.fp.gpus) all = all && (!g.cc || r->supports_cc(*g.cc));
      if (all) serving.push_back(r);
    }
    judged |= !rows.empty();
    if (serving.empty()) continue;  // no row serves these GPUs: gpu-unsupported-by-cudnn says so
    const CudnnRow* floor =
        *std::min_element(serving.begin(), serving.end(), [](const CudnnRow* a, const CudnnRow* b) {
          return a->min_driver.compare_release(b->min_driver) < 0;
        });
    if (c.fp.driver_version->compare_release(floor->min_driver) >= 0) continue;
    c.add("driver-too-old-for-cudnn", cudnn_severity(*floor, lib.cudnn, "min_driver"), c.who + " " + lib.what,
          lib.what + " " + lib.cudnn.release_str(3) + " for CUDA " + std::to_string(lib.cuda_major) +
              " needs a Linux driver >= " + v(floor->min_driver) +
              (c.fp.gpus && serving.size() < rows.size() ? " on these GPUs" : std::string()) + "; driver " +
              v(*c.fp.driver_version) + " is older" + unconfirmed_note(floor->meta, "min_driver") +
              cudnn_assumed_note(*floor, lib.cudnn),
          floor->meta.evidence(),
          "install a Linux driver >= " + v(floor->min_driver) + " (R" +
              std::to_string(floor->min_driver.major()) + " or newer)" +
              supported_branch_hint(c.m, floor->min_driver.major(), check_month(c.fp)));
  }
  return judged || (libs.empty() ? false : c.no_data());
}

bool rule_lightning(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->version) return false;
  bool any = false, unknown = false;
  for (const auto& [pkg, ver] :
       {std::pair<const char*, const std::optional<Version>*>{"lightning", &c.fp.lightning},
        {"pytorch_lightning", &c.fp.pytorch_lightning}}) {
    if (!*ver) continue;
    // One finding when both packages are the same release (they share the ranges).
    if (ver == &c.fp.pytorch_lightning && c.fp.lightning && c.fp.lightning->same_release(**ver)) continue;
    const LightningRow* row = c.m.find_lightning(**ver);
    unknown |= !row;
    if (!row) continue;
    any = true;
    const Version& t = *c.fp.torch->version;
    std::string subject = c.who + " " + pkg + " " + v(**ver);
    if (t.compare_release(row->torch_min) < 0) {
      c.add("lightning-torch-incompatible", severity("error", row->meta, "torch_min"), subject,
            std::string(pkg) + " " + v(**ver) + " needs torch >= " + row->torch_min.str() +
                "; installed torch is " + v(t),
            row->meta.evidence(),
            "install torch >= " + row->torch_min.str() + ", or a Lightning release that supports torch " +
                t.release_str(2));
    } else if (row->torch_tested_below && t.compare_release(*row->torch_tested_below) >= 0) {
      c.add("lightning-torch-untested", "warning", subject,
            std::string(pkg) + " " + v(**ver) + " was tested with torch < " + row->torch_tested_below->str() +
                " (its CI cap, dropped on install); installed torch " + v(t) + " is untested with it" +
                unconfirmed_note(row->meta, "last"),
            row->meta.evidence(),
            "use a newer Lightning release or torch < " + row->torch_tested_below->str());
    }
  }
  return any || (unknown ? c.no_data() : false);
}

// pip refuses a Lightning release on a Python below its python_requires; an installed pair means a
// forced install (--ignore-requires-python, a copied site-packages) that runs outside its support.
bool rule_lightning_python(Ctx& c) {
  auto py = c.fp.extra.find("python");
  if (py == c.fp.extra.end() || !py->is_object() || !py->contains("version") || !(*py)["version"].is_string())
    return false;
  const auto python = Version::try_parse((*py)["version"].get<std::string>(), VersionKind::Generic);
  if (!python || (!c.fp.lightning && !c.fp.pytorch_lightning)) return false;
  bool judged = false, unknown = false;
  std::optional<Version> refused;  // the lightning release already reported
  for (const auto& [pkg, ver] :
       {std::pair<const char*, const std::optional<Version>*>{"lightning", &c.fp.lightning},
        {"pytorch_lightning", &c.fp.pytorch_lightning}}) {
    if (!*ver) continue;
    const LightningRow* row = c.m.find_lightning(**ver);
    unknown |= !row;
    if (!row) continue;
    judged = true;
    const bool is_pl = ver == &c.fp.pytorch_lightning;
    const Version& floor = is_pl ? row->pytorch_lightning_python_min : row->python_min;
    if (python->compare_release(floor, 2) >= 0) continue;
    if (is_pl && refused && refused->same_release(**ver)) continue;  // one finding for the pair
    refused = **ver;
    c.add("lightning-python-incompatible", severity("error", row->meta, "python_min"),
          c.who + " " + pkg + " " + v(**ver),
          std::string(pkg) + " " + v(**ver) + " requires Python >= " + floor.str() + "; this Python is " +
              v(*python) +
              ": pip refuses that install on this Python, so it was forced and runs outside what "
              "the release supports",
          row->meta.evidence(),
          "use Python >= " + floor.str() + ", or a Lightning release whose Python floor is at most " +
              python->release_str(2));
  }
  return judged || (unknown ? c.no_data() : false);
}

// fp.extra["python"]["packages"] (the probe reads the interpreter's dist-info): numpy beside torch.
// torch's Linux wheels before 2.3 were compiled against the NumPy 1.x C API, which NumPy 2 does not
// keep: under NumPy 2 every exchange between tensors and arrays (tensor.numpy(), torch.from_numpy,
// a DataLoader collating arrays, Lightning's loops) fails with "Numpy is not available", most often
// in the first training step. 2.3 was the first release built against NumPy 2.0.
bool rule_torch_numpy(Ctx& c) {
  if (!c.fp.torch || !c.fp.torch->version) return false;
  auto py = c.fp.extra.find("python");
  if (py == c.fp.extra.end() || !py->is_object() || !py->contains("packages") ||
      !(*py)["packages"].is_object())
    return false;
  const nlohmann::json& packages = (*py)["packages"];
  if (!packages.contains("numpy")) return true;  // no NumPy: nothing to exchange with
  const auto numpy = packages["numpy"].is_string()
                         ? Version::try_parse(packages["numpy"].get<std::string>(), VersionKind::Generic)
                         : std::nullopt;
  if (!numpy) return false;
  const Version& torch = *c.fp.torch->version;
  static const Version first_numpy2_torch = Version::parse("2.3.0", VersionKind::Generic);
  if (torch.compare_release(first_numpy2_torch) >= 0 || numpy->major() < 2) return true;
  c.add("torch-numpy-abi", "error", c.who + " torch " + v(torch),
        "torch " + v(torch) + " was built against NumPy 1.x and NumPy " + v(*numpy) +
            " is installed beside it: tensor.numpy(), torch.from_numpy and every DataLoader or Lightning "
            "step that exchanges arrays fail with \"RuntimeError: Numpy is not available\"",
        "rule:torch-numpy-abi (https://github.com/pytorch/pytorch/issues/107302: torch 2.3 is the first "
        "release built against NumPy 2.0; DEV: torch 2.0.1 with numpy 2.4.6, Lightning's Trainer fails so)",
        "pip install 'numpy<2' in this environment, or torch >= 2.3");
  return true;
}

bool rule_ifname(Ctx& c) {
  if (!c.fp.env) return false;
  auto it = c.fp.env->find("NCCL_SOCKET_IFNAME");
  if (it == c.fp.env->end()) return true;  // unset: NCCL chooses
  if (!c.fp.interfaces) return false;
  std::vector<std::string> names;
  for (const auto& i : *c.fp.interfaces) names.push_back(i.name);
  if (nccl_ifname_matches(it->second, names)) return true;
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
  c.add("nccl-socket-ifname-no-match", "error", c.who,
        "NCCL_SOCKET_IFNAME=" + it->second + " selects none of this host's interfaces (" + joined +
            "): NCCL's bootstrap fails with 'no socket interface found'",
        c.m.find_env("NCCL_SOCKET_IFNAME") ? c.m.find_env("NCCL_SOCKET_IFNAME")->meta.evidence()
                                           : "nccl_env.csv:NCCL_SOCKET_IFNAME",
        "set NCCL_SOCKET_IFNAME to a prefix of one of: " + joined);
  return true;
}

// Every NCCL a job can load reads the NCCL_* settings: the one this process loaded and the one torch's
// process loaded, where that is another release. Each comes with the words findings name it by.
std::vector<std::pair<std::string, std::optional<Version>>> nccls_reading_env(const Fingerprint& fp) {
  std::vector<std::pair<std::string, std::optional<Version>>> out;
  if (fp.nccl_runtime)
    out.push_back({"the NCCL gpucts loaded, " + fp.nccl_runtime->release_str(3), fp.nccl_runtime});
  if (fp.torch && fp.torch->nccl_used() &&
      (!fp.nccl_runtime || !fp.torch->nccl_used()->same_release(*fp.nccl_runtime, 3)))
    out.push_back({"torch's NCCL, " + fp.torch->nccl_used()->release_str(3), fp.torch->nccl_used()});
  return out;
}

// Judges the settings against each NCCL; a finding every NCCL gives alike is reported once, naming
// them all, so the reader sees which library each finding concerns.
void judge_each_nccl(
    Ctx& c, const std::function<std::optional<std::vector<Finding>>(const std::optional<Version>&)>& judge,
    bool* judged) {
  auto libs = nccls_reading_env(c.fp);
  if (libs.empty()) libs.push_back({"", std::nullopt});  // no NCCL known: version checks are skipped
  std::vector<std::pair<Finding, std::vector<std::string>>> found;
  for (const auto& [label, nccl] : libs) {
    auto fs = judge(nccl);
    if (!fs) continue;
    *judged = true;
    for (auto& f : *fs) {
      auto same = std::find_if(found.begin(), found.end(), [&](const auto& e) {
        return e.first.id == f.id && e.first.subject == f.subject && e.first.message == f.message;
      });
      if (same != found.end())
        same->second.push_back(label);
      else
        found.push_back({std::move(f), {label}});
    }
  }
  for (auto& [f, labels] : found) {
    std::string names;
    for (const auto& l : labels)
      if (!l.empty()) names += (names.empty() ? "" : " and ") + l;
    f.subject = c.who + " " + f.subject;
    if (!names.empty()) f.message += " [judged against " + names + "]";
    c.out.push_back(std::move(f));
  }
}

bool rule_env_lint(Ctx& c) {
  if (!c.fp.env) return false;
  bool judged = false;
  judge_each_nccl(
      c,
      [&](const std::optional<Version>& nccl) { return std::optional(lint_nccl_env(c.m, *c.fp.env, nccl)); },
      &judged);
  return true;
}

// Judged from what the probe recorded on the host itself: the checking machine's folders say nothing.
bool rule_nccl_debug_file(Ctx& c) {
  if (!c.fp.env || !c.fp.env->count("NCCL_DEBUG_FILE") || !c.fp.nccl_debug_file) return false;
  const NcclDebugFileFolder& d = *c.fp.nccl_debug_file;
  if (d.exists && d.writable) return true;
  c.add("nccl-debug-file-unwritable", "warning", c.who + " NCCL_DEBUG_FILE",
        "NCCL_DEBUG_FILE=" + c.fp.env->at("NCCL_DEBUG_FILE") + ": its folder " + d.folder +
            (d.exists ? " is not writable" : " does not exist") +
            ", so NCCL cannot open the file and no debug log is written there",
        "rule:nccl-debug-file-unwritable (NCCL opens NCCL_DEBUG_FILE with fopen and goes on without it)",
        "create " + d.folder + " with write permission for the job, or point NCCL_DEBUG_FILE elsewhere");
  return true;
}

bool rule_env_version(Ctx& c) {
  return c.fp.env && !nccls_reading_env(c.fp).empty();
}  // the lint does the work

bool rule_nccl_algo_coverage(Ctx& c) {
  if (!c.fp.env || nccls_reading_env(c.fp).empty()) return false;
  bool judged = false;
  judge_each_nccl(
      c,
      [&](const std::optional<Version>& nccl) -> std::optional<std::vector<Finding>> {
        return nccl ? nccl_algo_coverage(c.m, *c.fp.env, *nccl)
                    : std::nullopt;  // nullopt: a release not modelled
      },
      &judged);
  return judged || c.no_data();
}

// The month of the check (YYYY-MM): the fingerprint's "probed_at" (ISO 8601), else this machine's clock.
std::string check_month(const Fingerprint& fp) {
  auto it = fp.extra.find("probed_at");
  if (it != fp.extra.end() && it->is_string() && it->get<std::string>().size() >= 7)
    return it->get<std::string>().substr(0, 7);
  std::time_t now = std::time(nullptr);
  char buf[8];
  std::strftime(buf, sizeof buf, "%Y-%m", std::gmtime(&now));
  return buf;
}

bool branch_ended(const DriverBranch& b, const std::string& month) {
  return b.listed_eol || b.unlisted || (!b.eol.empty() && b.eol < month);
}

// The oldest branch at or above `floor` that NVIDIA still supports in `month`, preferring an LTSB.
std::string supported_branch_hint(const Matrix& m, long floor, const std::string& month) {
  const DriverBranch* best = nullptr;
  for (const auto& b : m.driver_branches) {
    if (b.branch < floor || branch_ended(b, month)) continue;
    bool better = !best || (b.designation == "LTSB") > (best->designation == "LTSB") ||
                  ((b.designation == "LTSB") == (best->designation == "LTSB") && b.branch < best->branch);
    if (better) best = &b;
  }
  if (!best) return "";
  return " (R" + std::to_string(best->branch) + " " + best->designation +
         (best->eol.empty() ? "" : ", supported until " + best->eol) + ": " + best->meta.cite() + ")";
}

// A GPU whose family needs a newer driver branch than the installed one (an RTX 5090 on R560).
bool rule_driver_gpu_family(Ctx& c) {
  if (!c.fp.driver_version || !c.fp.gpus || c.fp.gpus->empty()) return false;
  const Version& drv = *c.fp.driver_version;
  bool judged = false, unknown = false;
  for (const auto& g : *c.fp.gpus) {
    if (!g.cc) continue;
    const GpuFamily* fam = c.m.find_gpu_family(*g.cc, g.name);
    if (fam)
      judged = true;
    else
      unknown = true;
    if (fam && fam->last_driver && drv.major() > *fam->last_driver) {
      const long last = *fam->last_driver;
      c.add("driver-drops-gpu", severity("error", fam->meta, "last_driver"),
            c.who + " GPU " + std::to_string(g.index),
            (g.name ? *g.name + " " : std::string()) + "(" + cc_str(*g.cc) + ", " + fam->family +
                ") is driven up to branch R" + std::to_string(last) + "; driver " + v(drv) + " (R" +
                std::to_string(drv.major()) + ") no longer supports it",
            fam->meta.evidence(),
            "stay on a Linux driver of branch R" + std::to_string(last) +
                supported_branch_hint(c.m, last, check_month(c.fp)) + ", or replace the GPU");
      continue;
    }
    if (!fam || drv.compare_release(fam->min_driver) >= 0) continue;
    const long floor = fam->min_driver.major();
    // A floor of a whole branch (570) or of one driver in it (570.133.20, a platform's own).
    const bool branch_floor = fam->min_driver.raw.find('.') == std::string::npos;
    const std::string needs = branch_floor ? "an R" + std::to_string(floor) + " or newer driver"
                                           : "driver " + v(fam->min_driver) + " or newer";
    c.add("driver-too-old-for-gpu", severity("error", fam->meta, "min_driver"),
          c.who + " GPU " + std::to_string(g.index),
          (g.name ? *g.name + " " : std::string()) + "(" + cc_str(*g.cc) + ", " + fam->family + ") needs " +
              needs + " (its architecture first came with CUDA " + fam->first_cuda.release_str(2) +
              "); driver " + v(drv) + " predates it" + unconfirmed_note(fam->meta, "min_driver"),
          fam->meta.evidence(),
          (branch_floor ? "install a Linux driver of branch R" + std::to_string(floor) + " or newer"
                        : "install Linux driver " + v(fam->min_driver) + " or newer (R" +
                              std::to_string(floor) + " or a newer branch)") +
              supported_branch_hint(c.m, floor, check_month(c.fp)));
  }
  return judged || (unknown ? c.no_data() : false);
}

// A driver of a branch NVIDIA no longer supports (listed as end of life, or past its EOL month).
bool rule_driver_branch_eol(Ctx& c) {
  if (!c.fp.driver_version) return false;
  const DriverBranch* b = c.m.find_driver_branch(c.fp.driver_version->major());
  if (!b) return c.no_data();  // a branch the table does not list (data-beyond-reach names a newer one)
  const std::string month = check_month(c.fp);
  if (!branch_ended(*b, month)) return true;
  // An unlisted branch has no end-of-life month to give: say so rather than invent one.
  const std::string status =
      b->unlisted ? "which NVIDIA's table of supported branches no longer lists and gives no end-of-life "
                    "month (a new feature branch is short-lived)"
                  : "which NVIDIA lists as end of life" + (b->eol.empty() ? "" : " since " + b->eol);
  c.add("driver-branch-eol", "warning", c.who,
        "driver " + v(*c.fp.driver_version) + " is of branch R" + std::to_string(b->branch) +
            (b->designation == "unknown" ? "" : " (" + b->designation + ")") + ", " + status + " (checked " +
            month + "): not a supported branch, no more bug or security fixes promised",
        b->meta.evidence(), "move to a supported branch" + supported_branch_hint(c.m, b->branch, month));
  return true;
}

bool rule_shm(Ctx& c) {
  if (!c.fp.shm_bytes) return false;
  const long long gib = 1LL << 30;
  if (*c.fp.shm_bytes >= gib) return true;
  c.add("shm-too-small", "warning", c.who,
        "/dev/shm is " + std::to_string(*c.fp.shm_bytes >> 20) +
            " MiB (< 1 GiB): NCCL's shared-memory transport fails "
            "or falls back",
        "rule:shm-too-small", "run the container with --shm-size=16g (or --ipc=host)");
  return true;
}

// fp.extra["visible_devices"] (fixtures/probe/visible_devices.hpp): what CUDA_VISIBLE_DEVICES resolved to
// on this host, the oddities met on the way, and the GPU count the run expects.
bool rule_visible_devices(Ctx& c) {
  auto it = c.fp.extra.find("visible_devices");
  if (it == c.fp.extra.end()) return false;
  const nlohmann::json& vd = *it;
  auto bad = [&](const std::string& why) { return FingerprintError(c.who + ": visible_devices: " + why); };
  if (!vd.is_object() || !vd.contains("resolved") || !vd["resolved"].is_array() || !vd.contains("problems") ||
      !vd["problems"].is_array())
    throw bad("expected an object with arrays 'resolved' and 'problems'");
  std::string spec = "unset";
  if (vd.contains("spec") && vd["spec"].is_string())
    spec = "'" + vd["spec"].get<std::string>() + "'";
  else if (vd.contains("spec") && !vd["spec"].is_null())
    throw bad("'spec' must be a string or null");
  std::string resolved;
  for (const auto& d : vd["resolved"]) {
    if (!d.is_object() || !d.contains("index") || !d["index"].is_number_integer())
      throw bad("a resolved device without an integer 'index'");
    resolved += (resolved.empty() ? "" : ", ") + std::to_string(d["index"].get<int>());
    if (d.contains("uuid") && d["uuid"].is_string() && !d["uuid"].get<std::string>().empty())
      resolved += " " + d["uuid"].get<std::string>();
    if (d.contains("pci") && d["pci"].is_string() && !d["pci"].get<std::string>().empty())
      resolved += " (" + d["pci"].get<std::string>() + ")";
  }
  const int count = static_cast<int>(vd["resolved"].size());
  std::string problems;
  for (const auto& p : vd["problems"]) {
    if (!p.is_object() || !p.contains("message") || !p["message"].is_string())
      throw bad("a problem without a 'message'");
    problems += (problems.empty() ? "" : "; ") + p["message"].get<std::string>();
  }
  std::string shortfall;
  if (vd.contains("expected")) {
    if (!vd["expected"].is_number_integer()) throw bad("'expected' must be an integer");
    const int want = vd["expected"].get<int>();
    const bool per_rank = vd.value("one_per_rank_ok", false);
    const std::string from = vd.value("expected_from", std::string("the run"));
    // A launcher's ranks use one GPU each (one visible per rank, or one per local rank).
    const bool enough = per_rank ? count == 1 || count >= want : count >= want;
    if (!enough)
      shortfall = "resolves to " + std::to_string(count) + " GPU(s), fewer than the " + std::to_string(want) +
                  " expected by " + from +
                  (per_rank ? " (each rank needs its own GPU, or 1 visible per rank)" : "");
  }
  if (problems.empty() && shortfall.empty()) return true;
  std::string msg = "CUDA_VISIBLE_DEVICES=" + spec + " " +
                    (shortfall.empty() ? "resolves to " + std::to_string(count) + " GPU(s)" : shortfall) +
                    " [" + (resolved.empty() ? std::string("none") : resolved) + "]" +
                    (problems.empty() ? "" : ": " + problems);
  c.add("cuda-visible-devices-odd", shortfall.empty() ? "warning" : "error", c.who + " CUDA_VISIBLE_DEVICES",
        msg, "rule:cuda-visible-devices-odd (CUDA Programming Guide, CUDA_VISIBLE_DEVICES)",
        "list each GPU once, by index (with CUDA_DEVICE_ORDER=PCI_BUS_ID) or full UUID, without blanks; "
        "`gpucts gpus` shows what is there");
  return true;
}

// A component's release newer than the newest of its kind the data knows. Each such release is
// named once per component, with the newest the data has, so a stack that outran the data reads
// as that and not as rules without their inputs.
struct Outran {
  std::string component;          // "NCCL"
  std::vector<std::string> seen;  // "2.33.1 (loaded NCCL)"
  std::string newest, file;
};

std::optional<Version> reach_version(const std::string& newest) {
  return Version::try_parse(newest.size() > 1 && newest[0] == 'R' ? newest.substr(1) : newest);
}

// The newest release of `newest` compared on `parts` components (13.6 beyond 13.5; 2.15.1 within 2.15).
bool beyond(const Version& seen, const std::string& newest, size_t parts) {
  auto n = reach_version(newest);
  return n && seen.compare_release(*n, parts) > 0;
}

std::vector<Outran> outran_data(const Ctx& c) {
  struct Input {
    std::string component, what;
    const std::optional<Version>* version;
    size_t parts;
    std::string newest, file;
  };
  const Fingerprint& fp = c.fp;
  const DataReach& r = c.reach;
  std::optional<Version> driver_branch;
  if (fp.driver_version) driver_branch = Version::parse(std::to_string(fp.driver_version->major()));
  const std::optional<Version> none;
  const TorchInfo* t = fp.torch ? &*fp.torch : nullptr;
  const std::vector<Input> inputs = {
      {"driver", "driver branch", &driver_branch, 1, r.driver_branch, "driver_branches.csv"},
      {"CUDA", "CUDA runtime", &fp.cuda_runtime, 2, r.cuda, "cuda.csv"},
      {"CUDA", "torch's CUDA", t ? &t->cuda : &none, 2, r.cuda, "cuda.csv"},
      {"NCCL", "loaded NCCL", &fp.nccl_runtime, 3, r.nccl, "nccl_releases.csv"},
      {"NCCL", "NCCL header", &fp.nccl_header, 3, r.nccl, "nccl_releases.csv"},
      {"NCCL", "torch's NCCL", t ? &t->nccl_used() : &none, 3, r.nccl, "nccl_releases.csv"},
      {"cuDNN", "loaded cuDNN", &fp.cudnn, 3, r.cudnn, "cudnn.csv"},
      {"cuDNN", "torch's cuDNN", t ? &t->cudnn : &none, 3, r.cudnn, "cudnn.csv"},
      {"cuDNN", "torch's build cuDNN", t ? &t->cudnn_build : &none, 3, r.cudnn, "cudnn.csv"},
      {"torch", "torch", t ? &t->version : &none, 2, r.torch, "torch.csv"},
      {"Lightning", "lightning", &fp.lightning, 3, r.lightning, "lightning.csv"},
      {"Lightning", "pytorch_lightning", &fp.pytorch_lightning, 3, r.lightning, "lightning.csv"},
  };
  std::vector<Outran> out;
  for (const auto& in : inputs) {
    if (!*in.version || !beyond(**in.version, in.newest, in.parts)) continue;
    const Version& seen = **in.version;
    const std::string shown =
        in.component == "driver" ? "R" + seen.release_str(1) + " (" + v(*fp.driver_version) + ")"
        : in.component == "torch" || in.component == "Lightning" ? v(seen)
                                                                 : seen.release_str(in.parts);
    auto it =
        std::find_if(out.begin(), out.end(), [&](const Outran& o) { return o.component == in.component; });
    if (it == out.end()) it = out.insert(out.end(), Outran{in.component, {}, in.newest, in.file});
    it->seen.push_back(in.component == "driver" ? shown : shown + " (" + in.what + ")");
  }
  return out;
}

bool beyond_torch_data(const Ctx& c) {
  return c.fp.torch && c.fp.torch->version && beyond(*c.fp.torch->version, c.reach.torch, 2);
}

bool rule_data_beyond_reach(Ctx& c) {
  const Fingerprint& fp = c.fp;
  const bool any_input = fp.driver_version || fp.cuda_runtime || fp.nccl_runtime || fp.nccl_header ||
                         fp.cudnn || fp.lightning || fp.pytorch_lightning || (fp.torch && fp.torch->version);
  if (!any_input) return false;
  for (const Outran& o : outran_data(c)) {
    std::string seen;
    for (const auto& s : o.seen) seen += (seen.empty() ? "" : ", ") + s;
    c.add("data-beyond-reach", "warning", c.who + " " + o.component,
          o.component + " " + seen + " is newer than the newest " + o.component + " the data knows, " +
              o.newest + " (" + o.file + "): the rules that need its facts were not evaluated, not passed",
          "rule:data-beyond-reach (matrix " + o.file + ", newest " + o.newest + ")",
          "check with matrix data that reaches it (a newer gpucts, or --matrix DIR), or judge " +
              o.component + " " + o.seen.front() + " by its own release notes");
  }
  return true;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      {{"driver-too-old-for-cuda-runtime", "driver-cuda-minor-older"}, rule_driver_runtime},
      {{"driver-too-old-for-torch-cuda"}, rule_driver_torch},
      {{"driver-library-mismatch"}, rule_driver_library_mismatch},
      {{"nccl-header-library-mismatch"}, rule_nccl_header_library},
      {{"torch-nccl-differs-from-loaded"}, rule_torch_nccl_loaded},
      {{"nccl-below-matrix"}, rule_nccl_below_matrix},
      {{"nccl-known-defect"}, rule_nccl_known_defect},
      {{"torch-known-defect"}, rule_torch_known_defect},
      {{"torch-release-unknown"}, rule_torch_known},
      {{"gpu-arch-not-in-torch-build"}, rule_gpu_arch_torch},
      {{"gpu-arch-unsupported-by-cuda"}, rule_gpu_arch_cuda},
      {{"cudnn-differs-from-torch"}, rule_cudnn},
      {{"cudnn-older-than-torch-build"}, rule_cudnn_torch_build},
      {{"torch-cudnn-refused"}, rule_torch_cudnn_refused},
      {{"gpu-unsupported-by-cudnn"}, rule_cudnn_gpu},
      {{"driver-too-old-for-cudnn"}, rule_cudnn_driver},
      {{"lightning-torch-incompatible", "lightning-torch-untested"}, rule_lightning},
      {{"lightning-python-incompatible"}, rule_lightning_python},
      {{"torch-numpy-abi"}, rule_torch_numpy},
      {{"nccl-socket-ifname-no-match"}, rule_ifname},
      {{"nccl-env-invalid-value", "nccl-env-unknown", "nccl-socket-threads-product", "nccl-p2p-disabled",
        "nccl-ib-disabled", "nccl-env-clamped", "nccl-env-beyond-data", "nccl-env-wrong-case",
        "nccl-env-non-decimal", "nccl-ib-timeout-zero"},
       rule_env_lint},
      {{"nccl-collective-without-algorithm"}, rule_nccl_algo_coverage},
      {{"driver-too-old-for-gpu", "driver-drops-gpu"}, rule_driver_gpu_family},
      {{"driver-branch-eol"}, rule_driver_branch_eol},
      {{"nccl-env-newer-than-library", "nccl-env-removed"}, rule_env_version},
      {{"nccl-debug-file-unwritable"}, rule_nccl_debug_file},
      {{"shm-too-small"}, rule_shm},
      {{"cuda-visible-devices-odd"}, rule_visible_devices},
      {{"data-beyond-reach"}, rule_data_beyond_reach},
  };
  return r;
}

// Fields every host of one job must agree on.
struct CrossField {
  const char* name;
  std::function<std::optional<std::string>(const Fingerprint&)> get;
};

const std::vector<CrossField>& cross_fields() {
  static const std::vector<CrossField> f = {
      {"driver",
       [](const Fingerprint& fp) {
         return fp.driver_version ? std::optional<std::string>(v(*fp.driver_version)) : std::nullopt;
       }},
      {"CUDA runtime",
       [](const Fingerprint& fp) {
         return fp.cuda_runtime ? std::optional<std::string>(fp.cuda_runtime->release_str(2)) : std::nullopt;
       }},
      {"NCCL runtime",
       [](const Fingerprint& fp) {
         return fp.nccl_runtime ? std::optional<std::string>(fp.nccl_runtime->release_str(3)) : std::nullopt;
       }},
      {"torch",
       [](const Fingerprint& fp) {
         return fp.torch && fp.torch->version ? std::optional<std::string>(v(*fp.torch->version))
                                              : std::nullopt;
       }},
      {"torch NCCL",
       [](const Fingerprint& fp) {
         return fp.torch && fp.torch->nccl_used()
                    ? std::optional<std::string>(fp.torch->nccl_used()->release_str(3))
                    : std::nullopt;
       }},
      {"cuDNN",
       [](const Fingerprint& fp) {
         return fp.cudnn ? std::optional<std::string>(fp.cudnn->release_str(3)) : std::nullopt;
       }},
  };
  return f;
}

bool cross_host(const std::vector<Fingerprint>& fps, std::vector<Finding>& out) {
  if (fps.size() < 2) return false;
  bool compared = false;
  for (const auto& field : cross_fields()) {
    std::map<std::string, std::vector<std::string>> by_value;  // value -> labels, in input order
    std::vector<std::string> order;
    size_t known = 0;
    for (size_t i = 0; i < fps.size(); ++i) {
      auto val = field.get(fps[i]);
      if (!val) continue;
      ++known;
      if (!by_value.count(*val)) order.push_back(*val);
      by_value[*val].push_back(fps[i].label("input " + std::to_string(i + 1)));
    }
    if (known < 2) continue;
    compared = true;
    if (by_value.size() < 2) continue;
    std::string msg = std::string(field.name) + " differs:";
    for (const auto& val : order) {
      const auto& who = by_value[val];
      msg += " " + val + " on ";
      for (size_t k = 0; k < who.size(); ++k) msg += (k ? ", " : "") + who[k];
      msg += ";";
    }
    msg.pop_back();
    out.push_back(
        {"cross-host-mismatch", "error", field.name, msg, "rule:cross-host-mismatch",
         "install the same " + std::string(field.name) + " on every host of the job (one image for all)"});
  }
  return compared;
}

int rank_of(const std::string& s) { return s == "error" ? 0 : s == "warning" ? 1 : 2; }

}  // namespace

const std::vector<std::string>& finding_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& r : rules()) out.insert(out.end(), r.ids.begin(), r.ids.end());
    out.push_back("cross-host-mismatch");
    return out;
  }();
  return ids;
}

std::vector<std::string> CheckResult::inputs_absent() const {
  std::vector<std::string> out;
  for (const auto& id : not_evaluated)
    if (std::find(outside_data.begin(), outside_data.end(), id) == outside_data.end()) out.push_back(id);
  return out;
}

bool CheckResult::failed() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == "error"; });
}

nlohmann::json CheckResult::to_json() const {
  nlohmann::json j;
  j["verdict"] = failed() ? "fail" : "pass";
  j["findings"] = nlohmann::json::array();
  for (const auto& f : findings) {
    j["findings"].push_back({{"id", f.id},
                             {"severity", f.severity},
                             {"subject", f.subject},
                             {"message", f.message},
                             {"source", f.source},
                             {"fix", f.fix}});
    if (!f.defect.empty()) j["findings"].back()["defect"] = f.defect;
  }
  j["not_evaluated"] = not_evaluated;
  j["not_evaluated_outside_data"] = outside_data;
  j["data_reach"] = {{"torch", reach.torch},
                     {"nccl", reach.nccl},
                     {"nccl_env", reach.nccl_env},
                     {"nccl_algos", reach.nccl_algos},
                     {"cudnn", reach.cudnn},
                     {"cuda", reach.cuda},
                     {"driver_branch", reach.driver_branch},
                     {"lightning", reach.lightning}};
  j["rules_total"] = finding_ids().size();
  j["rules_evaluated"] = finding_ids().size() - not_evaluated.size();
  return j;
}

CheckResult check_fingerprints(const Matrix& m, const std::vector<Fingerprint>& fps,
                               const CheckOptions& opts) {
  CheckResult res;
  res.reach = data_reach(m);
  std::set<std::string> skipped, outside;
  for (size_t i = 0; i < fps.size(); ++i) {
    Ctx c{m,
          fps[i],
          res.findings,
          fps[i].label(fps.size() > 1 ? "input " + std::to_string(i + 1) : "this host"),
          opts,
          res.reach};
    for (const auto& r : rules()) {
      c.lacks_data = false;
      if (r.run(c)) continue;
      skipped.insert(r.ids.begin(), r.ids.end());
      if (c.lacks_data) outside.insert(r.ids.begin(), r.ids.end());
    }
  }
  if (!cross_host(fps, res.findings)) skipped.insert("cross-host-mismatch");
  for (const auto& id : finding_ids()) {
    if (skipped.count(id)) res.not_evaluated.push_back(id);
    if (outside.count(id)) res.outside_data.push_back(id);
  }
  std::stable_sort(res.findings.begin(), res.findings.end(), [](const Finding& a, const Finding& b) {
    return rank_of(a.severity) < rank_of(b.severity);
  });
  return res;
}

}  // namespace cts
