// The compatibility matrix: one table per concern, loaded from matrix/data/*.csv (embedded in the
// binary at build time, or another copy with load_matrix_dir). Each row keeps its file, key, line,
// source and note, so a finding can cite `torch.csv:2.11/cu130`. A field listed in a row's
// `unconfirmed` column was not read in a primary source; rules built on it only warn.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "matrix/csv.hpp"
#include "matrix/version.hpp"

namespace cts {

struct RowMeta {
  std::string file;  // "torch.csv"
  std::string key;   // "2.11/cu130"
  int line = 0;
  std::string source;                 // who says so (see the source key in the file header)
  std::string note;                   // which claim this row corrects, caveats
  std::set<std::string> unconfirmed;  // field names that are UNCONFIRMED
  bool is_unconfirmed(const std::string& field) const { return unconfirmed.count(field) > 0; }
  std::string cite() const { return file + ":" + key; }
  // What a finding names as its evidence: the row and who says so ("cuda.csv:12.8 (https://...)").
  std::string evidence() const { return cite() + " (" + source + ")"; }
};

struct TorchRow {
  RowMeta meta;
  Version torch;                    // release line, "2.11"
  std::string variant;              // "cu130"
  std::string platform = "x86_64";  // x86_64 | aarch64 (the wheels of one line differ by arch list)
  Version cuda;                     // 13.0
  std::string status;               // stable | experimental
  std::optional<Version> nccl;      // NCCL the wheel ships/links
  std::optional<Version> cudnn;
  int cxx_std = 0;                     // 14, 17, 20
  Version python_min, python_max;      // inclusive
  std::vector<std::string> arch_list;  // "sm_90", "compute_120" (= +PTX)
};

struct CudaRow {
  RowMeta meta;
  Version cuda;                           // 12.4
  Version min_driver;                     // minor-version-compatibility floor of the major (525 for 12.x)
  std::optional<Version> ga_driver;       // NVIDIA's Table 3 minimum for the GA release (570.26 for 12.8)
  std::optional<Version> runfile_driver;  // Linux driver bundled in the GA runfile (570.86.10 for 12.8.0)
  std::vector<Version> sms;               // compute capabilities it can target (7.5, 9.0, ...)
  // The driver at which this minor runs without minor-version compatibility.
  const std::optional<Version>& full_driver() const { return ga_driver ? ga_driver : runfile_driver; }
};

struct NcclRelease {
  RowMeta meta;
  Version nccl;
  std::string date;                  // tag date
  std::vector<Version> cuda_builds;  // CUDA builds NVIDIA published (where read)
};

struct NcclFeature {
  RowMeta meta;
  std::string name;  // "AlltoAll", "bf16", "CommSplit", ...
  std::string kind;  // api | collective | dtype | op | feature
  Version since;
  std::optional<Version> until;  // first release without it
};

struct NcclOp {
  RowMeta meta;
  std::string dtype;  // "f8e4m3", "*" = any
  std::string op;     // "avg", "*" = any
  Version since;
  std::optional<Version> until;  // exclusive
  int nranks = 0;                // 1: only one-rank communicators; 0: any
  bool supported = true;
  std::string evidence;  // documented | source | observed
};

struct LightningRow {
  RowMeta meta;
  Version first, last;                        // lightning releases this row covers (inclusive)
  Version torch_min;                          // inclusive
  std::optional<Version> torch_tested_below;  // CI cap (exclusive); wheels drop it on install
  Version python_min;                         // of the lightning package
  Version pytorch_lightning_python_min;       // of pytorch_lightning (2.4.0 still takes 3.8)
};

struct NcclEnvVar {
  RowMeta meta;
  std::string name;
  std::optional<Version> since, until;  // until: first release that no longer reads it
  std::string type;                     // int | bool | enum | list | string | path | algo | proto
  std::vector<std::string> values;      // accepted words (enum, list, algo, proto)
  std::optional<long long> min, max;
  std::optional<long long> default_value;  // NCCL's default, used by constraints
  std::string constraint;                  // "A*B<=N"
  bool clamps = false;  // out_of_range "clamp": NCCL replaces a value outside min/max/multiple_of
  std::optional<long long> multiple_of;
};

// A (collective, algorithm, protocol) that an NCCL release implements on the device.
struct NcclAlgo {
  RowMeta meta;
  std::string collective;  // "AllReduce" (ncclFuncStr)
  std::string algorithm;   // "Ring" (NCCL_ALGO's word)
  std::string protocol;    // "Simple" (NCCL_PROTO's word)
  Version since;
  std::optional<Version> until;  // exclusive
};

// A GPU family (compute-capability range) and the oldest driver that drives it. A row limited to
// GPU names (a platform NVIDIA gives its own floor, HGX B200) takes precedence over its family's.
struct GpuFamily {
  RowMeta meta;
  std::string family;
  Version cc_min, cc_max;  // inclusive
  Version min_driver;      // a branch (570 = R570) or a driver (570.133.20)
  Version first_cuda;
  std::optional<long> last_driver;     // the newest branch that drives it (580 for Volta); unset = no end
  std::vector<std::string> gpu_names;  // NVML names ("NVIDIA B200"); empty = every GPU of the range
};

// A cuDNN release range built for one CUDA major (cudnn.csv, NVIDIA's cuDNN Support Matrix): the
// CUDA minors, the Linux driver floor and the compute capabilities it supports.
struct CudnnRow {
  RowMeta meta;
  Version first, last;                  // cuDNN releases the row covers (inclusive, 9.17.0 .. 9.28.1)
  long cuda_major = 0;                  // 12, 13
  std::vector<Version> cuda;            // supported CUDA minors (12.0 ... 12.9)
  Version min_driver;                   // Linux driver floor (580.65.06)
  std::vector<Version> ccs;             // compute capabilities it runs on
  std::vector<Version> deprecated_ccs;  // supported but deprecated (a later release drops them)
  bool covers(const Version& cudnn) const;
  bool supports_cc(const Version& cc) const;
};

// An NVIDIA data-center driver branch (R580) and its end of life.
struct DriverBranch {
  RowMeta meta;
  long branch = 0;
  std::string designation;  // LTSB | PB | NFB | unknown
  bool listed_eol = false;  // NVIDIA lists it as end of life
  bool unlisted = false;    // gone from NVIDIA's supported table, no end-of-life month given
  std::string eol;          // "2026-06"; empty = no month given
};

// Which collective cases a known NCCL defect hits. An empty list or unset bound means "any";
// `other` names a condition a single case cannot see (a transport, a topology), so such a
// condition is raised by `gpucts check` but matched to no case.
struct DefectCondition {
  int line = 0;
  int nranks_min = 1, nranks_max = 0;  // inclusive; max 0 = no upper bound
  std::vector<std::string> collectives, ops, dtypes;
  std::string placement;  // in_place | out_of_place | "" (either)
  std::string layout;     // torch rows: contiguous | strided | "" (either)
  std::string other;
};

// A known upstream defect: NCCL's (nccl_defects.csv, releases of NCCL) or torch's (torch_defects.csv,
// releases of torch, in one process group: `backend`): releases [first, fixed) and the cases it hits.
// A defect whose cases differ by op (ncclAvg only on floating types, PreMulSum on all) takes one
// row per condition, the later rows repeating the id and its description.
struct NcclDefect {
  RowMeta meta;
  std::string id;                // "nccl-1950", "torch-190745"
  std::string product = "NCCL";  // NCCL | torch: whose releases first and fixed are
  std::string backend;           // torch rows: nccl | gloo (ProcessGroupNCCL, ProcessGroupGloo)
  std::string title, link;
  Version first;                 // first affected release
  std::optional<Version> fixed;  // first release with the fix; unset = not fixed yet
  std::string severity;          // corruption | hang | crash | error | perf
  std::vector<DefectCondition> conditions;
  std::string symptom, workaround;
  // corruption and hang make a release unfit (error); the rest warn.
  bool is_error() const { return severity == "corruption" || severity == "hang"; }
  bool affects(const Version& release) const;
  // "upgrade NCCL to >= 2.29.7", "upgrade torch to >= 2.12.0" (plus the workaround where given).
  std::string fix_hint() const;
};

struct Matrix {
  std::vector<TorchRow> torch;          // the x86_64 wheels
  std::vector<TorchRow> torch_aarch64;  // the aarch64 wheels (their own arch lists)
  std::vector<CudaRow> cuda;
  std::vector<NcclRelease> nccl_releases;
  std::vector<NcclFeature> nccl_features;
  std::vector<NcclOp> nccl_ops;
  std::vector<LightningRow> lightning;
  std::vector<NcclEnvVar> nccl_env;
  std::vector<NcclAlgo> nccl_algos;
  std::vector<GpuFamily> gpu_families;
  std::vector<DriverBranch> driver_branches;
  std::vector<NcclDefect> nccl_defects;
  std::vector<NcclDefect> torch_defects;  // torch_defects.csv
  std::vector<CudnnRow> cudnn;
  std::string origin;  // "built-in" or the directory

  // torch "2.11.0+cu130" -> its row (release line and CUDA variant); nullptr if none.
  const TorchRow* find_torch(const Version& torch, const std::optional<Version>& cuda,
                             const std::string& platform = "x86_64") const;
  // Every CUDA variant of a line for one platform.
  std::vector<const TorchRow*> torch_rows_of(const Version& torch,
                                             const std::string& platform = "x86_64") const;
  const CudaRow* find_cuda(const Version& cuda) const;  // by major.minor
  std::vector<const CudaRow*> cuda_rows_of_major(long major) const;
  const LightningRow* find_lightning(const Version& lightning) const;
  const NcclEnvVar* find_env(const std::string& name) const;
  const NcclFeature* find_feature(const std::string& name) const;
  // The row for a GPU: one limited to its NVML name first, else its compute capability's family.
  const GpuFamily* find_gpu_family(const Version& cc, const std::optional<std::string>& name = {}) const;
  const DriverBranch* find_driver_branch(long branch) const;
  // The row of a cuDNN release for a CUDA major; nullptr if none covers it.
  const CudnnRow* find_cudnn(const Version& cudnn, long cuda_major) const;
};

// How far the data reaches: the newest release of each source the rows know (empty = none).
// nccl_env: the newest NCCL whose variable names were read (a release tag's source, or the
// libnccl.so.2 of a release's wheel); nccl_algos: the newest tag, which bounds what only the source
// shows (algorithms, source markers).
struct DataReach {
  std::string torch, nccl, nccl_env, nccl_algos, cudnn, cuda, driver_branch, lightning;
};
DataReach data_reach(const Matrix& m);

// Whether a torch arch list ("sm_90", "compute_90" = PTX) runs on a GPU of compute capability `cc`:
// its SASS (same major, minor <= the GPU's) or PTX at or below it, which the driver JITs forward.
bool arch_list_covers(const std::vector<std::string>& arch_list, const Version& cc, bool* by_ptx = nullptr);
// Whether CUDA `row` lists `cc` among the SMs it can target.
bool cuda_targets(const CudaRow& row, const Version& cc);
// "sm_90" -> 9.0; nullopt for anything else.
std::optional<Version> arch_cc(const std::string& arch);

// The file names, in load order.
const std::vector<std::string>& matrix_files();
// Parses the given file texts (file name -> contents). Throws MatrixError("file:line: ...").
Matrix parse_matrix(const std::map<std::string, std::string>& files, const std::string& origin);
// The copy built into the binary (parsed once).
const Matrix& builtin_matrix();
// Every file of matrix_files() must exist in `dir`.
Matrix load_matrix_dir(const std::string& dir);

}  // namespace cts
