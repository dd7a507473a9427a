// The environment fingerprint ("gpucts.fingerprint/1" JSON, as `gpucts fingerprint` writes it).
// Every field is optional: absent means unknown. Unknown extra fields are kept in `extra`.
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "matrix/version.hpp"

namespace cts {

inline constexpr const char* kFingerprintSchema = "gpucts.fingerprint/1";

// Bad input: unreadable file, malformed JSON (with line and column), unknown schema, bad field.
class FingerprintError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GpuInfo {
  int index = 0;
  std::optional<std::string> name;
  std::optional<Version> cc;  // "9.0"
  std::optional<long long> memory_mib;
  std::optional<std::string> pci;   // "0000:00:06.0"
  std::optional<std::string> uuid;  // "GPU-…" (extension)
};

struct InterfaceInfo {
  std::string name;
  bool up = false;
  std::vector<std::string> addresses;
};

struct TorchInfo {
  // nccl: torch.cuda.nccl.version(), the NCCL torch was BUILT with; cudnn: torch.backends.cudnn.version(),
  // the cuDNN torch loads at run time.
  std::optional<Version> version, cuda, nccl, cudnn;
  std::optional<Version> cudnn_build;  // cudnn_build: the cuDNN torch was compiled against
  // cudnn_error: what torch raised when it initialized cuDNN (torch.backends.cudnn.version()), one line:
  // it refuses a runtime cuDNN of another major or an older minor, or one too new for a visible GPU.
  std::optional<std::string> cudnn_error;
  // nccl_loaded: the NCCL torch's process LOADED (ncclGetVersion of the libnccl mapped after import and
  // CUDA init), nccl_library its path; nccl_static: no libnccl was mapped, NCCL is linked into libtorch.
  std::optional<Version> nccl_loaded;
  std::optional<std::string> nccl_library;
  std::optional<bool> nccl_static;
  // The NCCL torch's collectives run on: the loaded one where known, else the built one.
  const std::optional<Version>& nccl_used() const { return nccl_loaded ? nccl_loaded : nccl; }
  std::optional<std::vector<std::string>> arch_list;  // "sm_90", "compute_90" (PTX)
  std::optional<bool> cxx11_abi;
};

// The folder NCCL_DEBUG_FILE names (after NCCL's %h and %p), as the probe found it on its host.
struct NcclDebugFileFolder {
  std::string folder;
  bool exists = false;
  bool writable = false;
};

struct Fingerprint {
  std::string schema = kFingerprintSchema;
  std::optional<std::string> host;
  std::optional<int> rank;
  std::optional<std::string> boot_id;     // extension: host identity beside the name
  std::optional<Version> driver_version;  // driver.version (NVML, "580.159.04")
  std::optional<Version> driver_cuda;     // driver.cuda (cudaDriverGetVersion)
  // driver.nvml_error: why NVML gave no driver version, as NVML said it
  // ("NVML_ERROR_LIB_RM_VERSION_MISMATCH: Driver/library version mismatch", "libnvidia-ml.so.1: not found").
  std::optional<std::string> nvml_error;
  std::optional<Version> cuda_runtime;
  std::optional<Version> cuda_toolkit;
  std::optional<Version> nccl_header, nccl_runtime;
  std::optional<std::string> nccl_library;
  std::optional<Version> cudnn;
  std::optional<TorchInfo> torch;
  std::optional<Version> lightning, pytorch_lightning;
  std::map<std::string, std::string> compiler;
  std::optional<std::vector<GpuInfo>> gpus;           // absent: unknown (no driver); empty: none visible
  std::optional<std::vector<std::vector<bool>>> p2p;  // extension: p2p[i][j] peer access
  std::optional<std::vector<InterfaceInfo>> interfaces;
  std::optional<long long> shm_bytes;
  std::optional<std::map<std::string, std::string>> env;
  std::optional<NcclDebugFileFolder> nccl_debug_file;  // recorded only where NCCL_DEBUG_FILE is set
  nlohmann::json extra = nlohmann::json::object();     // unknown top-level fields, kept verbatim

  // A short label for messages: "node-a rank 1", "node-a", "rank 1" or `fallback`. The host is named
  // as NCCL has it: by its NCCL_HOSTID where set ("vm-simhost1 rank 1"), else by its host name.
  std::string label(const std::string& fallback = "this host") const;
  // NCCL_HOSTID as recorded (the preflight's annotation gpucts_rank.nccl_hostid, invalid UTF-8 bytes
  // as \xNN; else env), or nullopt.
  std::optional<std::string> nccl_host_name() const;
};

nlohmann::json to_json(const Fingerprint& fp);
// `origin` names the input in error messages (a file path or "rank 3").
Fingerprint fingerprint_from_json(const nlohmann::json& j, const std::string& origin);
Fingerprint parse_fingerprint(const std::string& text, const std::string& origin);
Fingerprint load_fingerprint_file(const std::string& path);

// The environment variables a fingerprint records (contract: every NCCL_* and TORCH_NCCL_*, plus
// the launcher's variables, plus names that are NCCL_* in another case, which NCCL does not read).
bool is_fingerprint_env_name(const std::string& name);

}  // namespace cts
