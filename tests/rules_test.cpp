// The rules engine over synthetic fingerprints: for every finding id at least one fingerprint that
// must raise it and one that must not; cross-host comparison with 2 and 8 fingerprints; the
// NCCL_SOCKET_IFNAME matcher; the (dtype, op) and feature tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "matrix/matrix.hpp"
#include "matrix/nccl_defects.hpp"
#include "matrix/nccl_support.hpp"
#include "matrix/rules.hpp"
#include "tests/cpu_seconds.hpp"

namespace cts {
namespace {

using nlohmann::json;

// The GPU machine as it should be seen by a process that loads torch's own NCCL: no finding.
json base_fingerprint() {
  return json::parse(R"({
    "schema": "gpucts.fingerprint/1", "host": "node-a", "rank": 0,
    "driver": {"version": "580.159.04", "cuda": "13.0"},
    "cuda_runtime": "13.0",
    "nccl": {"header": "2.28.9", "runtime": "2.28.9", "library": "/venv/nvidia/nccl/lib/libnccl.so.2"},
    "cudnn": "9.19.0",
    "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9", "cudnn": 91900,
              "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "cxx11_abi": true},
    "gpus": [{"index": 0, "name": "NVIDIA H200", "cc": "9.0", "memory_mib": 143771}],
    "interfaces": [{"name": "lo", "up": true}, {"name": "eth0", "up": true}],
    "shm_bytes": 137438953472,
    "env": {}
  })");
}

Fingerprint make(const json& patch, const std::string& host = "node-a", int rank = 0) {
  json j = base_fingerprint();
  j.merge_patch(patch);  // RFC 7386: null removes a field
  j["host"] = host;
  j["rank"] = rank;
  return fingerprint_from_json(j, "synthetic");
}

struct RuleCase {
  const char* name;
  const char* id;
  bool raises;
  const char* patch;               // JSON merge patch over base_fingerprint()
  const char* severity = nullptr;  // expected severity when it raises (nullptr: the contract's)
  const char* message_has = nullptr;
};

const RuleCase kCases[] =
    {
        {"runtime13_on_575", "driver-too-old-for-cuda-runtime", true,
         R"({"driver": {"version": "575.57.08", "cuda": "12.9"}})", "error", "580"},
        {"runtime13_driver_cuda_only", "driver-too-old-for-cuda-runtime", true,
         R"({"driver": {"version": null, "cuda": "12.9"}})", "error"},
        {"runtime13_on_580", "driver-too-old-for-cuda-runtime", false, "{}"},
        {"runtime110_on_its_ga_driver", "driver-too-old-for-cuda-runtime", false,
         R"({"cuda_runtime": "11.0", "torch": null, "driver": {"version": "450.51.05", "cuda": null}})"},
        {"runtime110_on_rc_driver", "driver-too-old-for-cuda-runtime", true,
         R"({"cuda_runtime": "11.0", "torch": null, "driver": {"version": "450.36.06", "cuda": null}})",
         "error", "below 450.51.05, the CUDA 11.0 GA driver"},
        {"runtime124_on_r535", "driver-cuda-minor-older", true,
         R"({"cuda_runtime": "12.4", "torch": null, "driver": {"version": "535.104.05", "cuda": "12.2"}})",
         "warning", "minor-version compatibility"},
        {"runtime114_unknown_ga_driver", "driver-cuda-minor-older", true,
         R"({"cuda_runtime": "11.4", "torch": null, "driver": {"version": "460.27.04", "cuda": "11.2"}})",
         "warning", "11.2-level"},
        {"runtime124_on_r535_level_from_driver", "driver-cuda-minor-older", true,
         R"({"cuda_runtime": "12.4", "torch": null, "driver": {"version": "535.104.05", "cuda": null}})",
         "warning", "12.2-level"},
        {"runtime122_on_r535", "driver-cuda-minor-older", false,
         R"({"cuda_runtime": "12.2", "torch": null, "driver": {"version": "535.104.05", "cuda": "12.2"}})"},
        {"runtime124_on_r535_not_too_old", "driver-too-old-for-cuda-runtime", false,
         R"({"cuda_runtime": "12.4", "torch": null, "driver": {"version": "535.104.05", "cuda": "12.2"}})"},
        {"torch_cu130_on_575", "driver-too-old-for-torch-cuda", true,
         R"({"cuda_runtime": "12.9", "driver": {"version": "575.57.08", "cuda": "12.9"}})", "error",
         "CUDA 13.0"},
        {"torch_cu128_on_575", "driver-too-old-for-torch-cuda", false,
         R"({"cuda_runtime": "12.9", "driver": {"version": "575.57.08", "cuda": "12.9"}, "torch": {"version": "2.11.0+cu128", "cuda": "12.8", "cudnn": "9.17.1"}, "cudnn": "9.17.1"})"},
        {"header_minor_differs", "nccl-header-library-mismatch", true, R"({"nccl": {"header": "2.27.5"}})",
         "error", "2.27.5"},
        {"header_patch_differs", "nccl-header-library-mismatch", true, R"({"nccl": {"header": "2.28.3"}})",
         "warning"},
        {"header_same", "nccl-header-library-mismatch", false, "{}"},
        {"system_nccl_loaded", "torch-nccl-differs-from-loaded", true,
         R"({"nccl": {"header": "2.28.3", "runtime": "2.28.3", "library": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"}})",
         "warning", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"},
        {"torch_nccl_loaded", "torch-nccl-differs-from-loaded", false, "{}"},
        {"torch_nccl_older", "nccl-below-matrix", true,
         R"({"nccl": {"header": "2.27.5", "runtime": "2.27.5"}, "torch": {"nccl": "2.27.5"}})", "warning",
         "2.28.9"},
        {"torch_nccl_as_shipped", "nccl-below-matrix", false, "{}"},
        // A torch newer than every row is beyond the data: one warning, not an unknown-release info.
        {"torch_3_0_beyond_the_data", "data-beyond-reach", true, R"({"torch": {"version": "3.0.0+cu130"}})",
         "warning", "torch 3.0.0+cu130 (torch) is newer than the newest torch the data knows, 2.15"},
        {"torch_2_11_cu129", "torch-release-unknown", true,
         R"({"torch": {"version": "2.11.0+cu129", "cuda": "12.9"}})", "info", "cu126"},
        {"torch_2_11_cu130", "torch-release-unknown", false, "{}"},
        {"volta_on_cu130_wheel", "gpu-arch-not-in-torch-build", true,
         R"({"gpus": [{"index": 0, "name": "Tesla V100", "cc": "7.0"}]})", "error", "sm_70"},
        {"volta_arch_from_row", "gpu-arch-not-in-torch-build", true,
         R"({"gpus": [{"index": 0, "cc": "7.0"}], "torch": {"arch_list": null}})", "error", "sm_70"},
        {"unconfirmed_row_arch_warns", "gpu-arch-not-in-torch-build", true,
         R"({"cuda_runtime": "12.6", "driver": {"version": "560.35.03", "cuda": "12.6"}, "gpus": [{"index": 0, "cc": "10.0"}], "torch": {"version": "2.6.0+cu126", "cuda": "12.6", "nccl": "2.21.5", "cudnn": "9.5.1", "arch_list": null}, "cudnn": "9.5.1", "nccl": {"header": "2.21.5", "runtime": "2.21.5"}})",
         "warning", "UNCONFIRMED"},
        {"wheel_read_row_arch_errs", "gpu-arch-not-in-torch-build", true,
         R"({"cuda_runtime": "12.4", "driver": {"version": "550.54.15", "cuda": "12.4"}, "gpus": [{"index": 0, "cc": "10.0"}], "torch": {"version": "2.6.0+cu124", "cuda": "12.4", "nccl": "2.21.5", "cudnn": "9.1.0", "arch_list": null}, "cudnn": "9.1.0", "nccl": {"header": "2.21.5", "runtime": "2.21.5"}})",
         "error", "sm_100"},
        {"hopper_in_list", "gpu-arch-not-in-torch-build", false, "{}"},
        {"ptx_jits_forward", "gpu-arch-not-in-torch-build", false,
         R"({"gpus": [{"index": 0, "cc": "10.3"}], "torch": {"arch_list": ["sm_90", "compute_90"]}})"},
        {"same_major_sass", "gpu-arch-not-in-torch-build", false, R"({"gpus": [{"index": 0, "cc": "8.9"}]})"},
        {"volta_under_cuda13", "gpu-arch-unsupported-by-cuda", true,
         R"({"gpus": [{"index": 0, "cc": "7.0"}]})", "error", "CUDA 13.0"},
        {"volta_under_cuda128", "gpu-arch-unsupported-by-cuda", false,
         R"({"cuda_runtime": "12.8", "driver": {"version": "570.124.06", "cuda": "12.8"}, "torch": null, "gpus": [{"index": 0, "cc": "7.0"}]})"},
        {"cudnn_older", "cudnn-differs-from-torch", true, R"({"cudnn": "9.10.2"})", "warning", "9.19.0"},
        {"cudnn_same", "cudnn-differs-from-torch", false, "{}"},
        {"lightning_2_3_torch_1_13", "lightning-torch-incompatible", true,
         R"({"lightning": {"lightning": "2.3.3"}, "torch": {"version": "1.13.1+cu117", "cuda": "11.7", "nccl": null, "cudnn": null}})",
         "error", ">= 2.0"},
        {"lightning_2_6_1_torch_2_9", "lightning-torch-incompatible", false,
         R"({"lightning": {"lightning": "2.6.1", "pytorch_lightning": "2.6.1"}, "torch": {"version": "2.9.1+cu130", "nccl": "2.27.7", "cudnn": "9.13.0"}})"},
        {"lightning_2_6_6_torch_2_11", "lightning-torch-untested", true,
         R"({"lightning": {"lightning": "2.6.6", "pytorch_lightning": "2.6.6"}})", "warning", "< 2.10"},
        {"lightning_2_6_1_torch_2_9_tested", "lightning-torch-untested", false,
         R"({"lightning": {"lightning": "2.6.1"}, "torch": {"version": "2.9.1+cu130", "nccl": "2.27.7", "cudnn": "9.13.0"}})"},
        {"torch_2_0_with_numpy_2", "torch-numpy-abi", true,
         R"({"python": {"packages": {"numpy": "2.4.6"}}, "torch": {"version": "2.0.1+cu117"}})", "error",
         "Numpy is not available"},
        {"torch_2_0_with_numpy_1", "torch-numpy-abi", false,
         R"({"python": {"packages": {"numpy": "1.26.4"}}, "torch": {"version": "2.0.1+cu117"}})"},
        {"torch_2_11_with_numpy_2", "torch-numpy-abi", false,
         R"({"python": {"packages": {"numpy": "2.4.6"}}})"},
        {"ifname_ib_on_eth_host", "nccl-socket-ifname-no-match", true,
         R"({"env": {"NCCL_SOCKET_IFNAME": "ib"}})", "error", "lo, eth0"},
        {"ifname_exact_prefix_only", "nccl-socket-ifname-no-match", true,
         R"({"env": {"NCCL_SOCKET_IFNAME": "=eth"}})", "error"},
        {"ifname_eth", "nccl-socket-ifname-no-match", false, R"({"env": {"NCCL_SOCKET_IFNAME": "eth"}})"},
        {"ifname_exclude_docker", "nccl-socket-ifname-no-match", false,
         R"({"env": {"NCCL_SOCKET_IFNAME": "^docker"}})"},
        {"p2p_disable_1", "nccl-p2p-disabled", true, R"({"env": {"NCCL_P2P_DISABLE": "1"}})", "warning"},
        {"p2p_disable_0", "nccl-p2p-disabled", false, R"({"env": {"NCCL_P2P_DISABLE": "0"}})"},
        {"ib_disable_1", "nccl-ib-disabled", true, R"({"env": {"NCCL_IB_DISABLE": "1"}})", "warning"},
        {"ib_disable_0", "nccl-ib-disabled", false, R"({"env": {"NCCL_IB_DISABLE": "0"}})"},
        {"buffsize_12abc", "nccl-env-invalid-value", true, R"({"env": {"NCCL_BUFFSIZE": "12abc"}})", "error",
         "not an integer"},
        {"buffsize_010_is_octal", "nccl-env-non-decimal", true, R"({"env": {"NCCL_BUFFSIZE": "010"}})",
         "warning", "octal 8"},
        {"ib_timeout_0x10_is_hex", "nccl-env-non-decimal", true, R"({"env": {"NCCL_IB_TIMEOUT": "0x10"}})",
         "warning", "hexadecimal 16"},
        {"buffsize_decimal", "nccl-env-non-decimal", false, R"({"env": {"NCCL_BUFFSIZE": "4194304"}})"},
        {"p2p_disable_00_is_zero_anyway", "nccl-env-non-decimal", false,
         R"({"env": {"NCCL_P2P_DISABLE": "00"}})"},
        {"debug_lower_case", "nccl-env-wrong-case", true, R"({"env": {"nccl_debug": "INFO"}})", "warning",
         "NCCL_DEBUG"},
        {"debug_mixed_case", "nccl-env-wrong-case", true, R"({"env": {"Nccl_Debug": "INFO"}})", "warning",
         "NCCL_DEBUG"},
        {"debug_upper_case", "nccl-env-wrong-case", false, R"({"env": {"NCCL_DEBUG": "INFO"}})"},
        {"ib_timeout_0", "nccl-ib-timeout-zero", true, R"({"env": {"NCCL_IB_TIMEOUT": "0"}})", "warning",
         "1..31"},
        {"ib_timeout_1", "nccl-ib-timeout-zero", false, R"({"env": {"NCCL_IB_TIMEOUT": "1"}})"},
        {"debug_file_folder_missing", "nccl-debug-file-unwritable", true,
         R"({"env": {"NCCL_DEBUG_FILE": "/gone/nccl.%h.%p.log"},
             "nccl_debug_file": {"folder": "/gone", "exists": false, "writable": false}})",
         "warning", "does not exist"},
        {"debug_file_folder_read_only", "nccl-debug-file-unwritable", true,
         R"({"env": {"NCCL_DEBUG_FILE": "/ro/nccl.log"},
             "nccl_debug_file": {"folder": "/ro", "exists": true, "writable": false}})",
         "warning", "not writable"},
        {"debug_file_folder_writable", "nccl-debug-file-unwritable", false,
         R"({"env": {"NCCL_DEBUG_FILE": "/tmp/nccl.log"},
             "nccl_debug_file": {"folder": "/tmp", "exists": true, "writable": true}})"},
        {"ib_timeout_abc", "nccl-env-invalid-value", true, R"({"env": {"NCCL_IB_TIMEOUT": "abc"}})", "error"},
        {"ib_timeout_40", "nccl-env-invalid-value", true, R"({"env": {"NCCL_IB_TIMEOUT": "40"}})", "error",
         "maximum 31"},
        {"socket_family_unix", "nccl-env-invalid-value", true,
         R"({"env": {"NCCL_SOCKET_FAMILY": "AF_UNIX"}})", "error", "AF_INET6"},
        {"algo_bogus", "nccl-env-invalid-value", true, R"({"env": {"NCCL_ALGO": "bogus"}})", "error",
         "'bogus'"},
        {"algo_per_function_bogus", "nccl-env-invalid-value", true,
         R"({"env": {"NCCL_ALGO": "Ring;allreduce:bogus"}})", "error", "'bogus'"},
        {"algo_unknown_function", "nccl-env-invalid-value", true,
         R"({"env": {"NCCL_ALGO": "allgaher:ring"}})", "error", "not a collective"},
        {"algo_pat_before_2_23", "nccl-env-invalid-value", true,
         R"({"nccl": {"header": "2.21.5", "runtime": "2.21.5"}, "torch": null, "env": {"NCCL_ALGO": "PAT"}})",
         "error", "needs NCCL 2.23"},
        {"algo_per_function_before_2_24", "nccl-env-invalid-value", true,
         R"({"nccl": {"header": "2.21.5", "runtime": "2.21.5"}, "torch": null, "env": {"NCCL_ALGO": "allreduce:tree"}})",
         "error", "2.24"},
        {"proto_ll64", "nccl-env-invalid-value", true, R"({"env": {"NCCL_PROTO": "LL64"}})", "error",
         "LL128"},
        {"debug_loud", "nccl-env-invalid-value", true, R"({"env": {"NCCL_DEBUG": "LOUD"}})", "error",
         "TRACE"},
        {"debug_subsys_bogus", "nccl-env-invalid-value", true,
         R"({"env": {"NCCL_DEBUG_SUBSYS": "INIT,BOGUS"}})", "error"},
        {"valid_values", "nccl-env-invalid-value", false,
         R"({"env": {"NCCL_BUFFSIZE": "8388608", "NCCL_IB_TIMEOUT": "22", "NCCL_ALGO": "Ring,Tree", "NCCL_PROTO": "^LL128", "NCCL_DEBUG": "info", "NCCL_SOCKET_FAMILY": "AF_INET6", "NCCL_DEBUG_SUBSYS": "^INIT,COLL", "NCCL_P2P_LEVEL": "NVL", "NCCL_NET_GDR_LEVEL": "3"}})"},
        {"valid_per_function_2_28", "nccl-env-invalid-value", false,
         R"({"env": {"NCCL_ALGO": "allreduce:tree,ring;broadcast:ring", "NCCL_PROTO": "allreduce:^LL128"}})"},
        {"ifnames_typo", "nccl-env-unknown", true, R"({"env": {"NCCL_SOCKET_IFNAMES": "eth0"}})", "warning",
         "did you mean NCCL_SOCKET_IFNAME"},
        {"nccl_timeout", "nccl-env-unknown", true, R"({"env": {"NCCL_TIMEOUT": "1800"}})", "warning",
         "init_process_group"},
        {"ifname_spelled_right", "nccl-env-unknown", false,
         R"({"env": {"NCCL_SOCKET_IFNAME": "eth0", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}})"},
        {"container_nccl_version", "nccl-env-unknown", false, R"({"env": {"NCCL_VERSION": "2.28.3-1"}})"},
        {"nccl_tests_own_variables", "nccl-env-unknown", false,
         R"({"env": {"NCCL_TESTS_DEVICE": "0", "NCCL_TESTS_MIN_BW": "400"}})"},
        {"torch_legacy_spelling", "nccl-env-unknown", true, R"({"env": {"NCCL_ASYNC_ERROR_HANDLING": "1"}})",
         "warning", "TORCH_NCCL_ASYNC_ERROR_HANDLING"},
        {"ras_on_2_21", "nccl-env-newer-than-library", true,
         R"({"nccl": {"header": "2.21.5", "runtime": "2.21.5"}, "torch": null, "env": {"NCCL_RAS_ENABLE": "1"}})",
         "warning", "2.24.3"},
        {"ras_on_2_28", "nccl-env-newer-than-library", false, R"({"env": {"NCCL_RAS_ENABLE": "1"}})"},
        {"ib_gdr_level_renamed", "nccl-env-removed", true, R"({"env": {"NCCL_IB_GDR_LEVEL": "PHB"}})",
         "warning", "2.4.2"},
        {"min_nrings_still_read", "nccl-env-removed", false, R"({"env": {"NCCL_MIN_NRINGS": "4"}})"},
        {"ll_threshold_gone_in_2_5", "nccl-env-removed", true, R"({"env": {"NCCL_LL_THRESHOLD": "16384"}})",
         "warning", "2.5.6"},
        {"net_gdr_level", "nccl-env-removed", false, R"({"env": {"NCCL_NET_GDR_LEVEL": "PHB"}})"},
        {"sockets_8x16", "nccl-socket-threads-product", true,
         R"({"env": {"NCCL_NSOCKS_PERTHREAD": "8", "NCCL_SOCKET_NTHREADS": "16"}})", "warning", "128"},
        {"sockets_4x16", "nccl-socket-threads-product", false,
         R"({"env": {"NCCL_NSOCKS_PERTHREAD": "4", "NCCL_SOCKET_NTHREADS": "16"}})"},
        // NCCL_ALGO / NCCL_PROTO against the device implementations of the loaded release (nccl_algos.csv).
        {"algo_tree_2_28", "nccl-collective-without-algorithm", true, R"({"env": {"NCCL_ALGO": "Tree"}})",
         "error", "leaves Broadcast, Reduce, AllGather, ReduceScatter without"},
        {"algo_not_ring_2_28", "nccl-collective-without-algorithm", true,
         R"({"env": {"NCCL_ALGO": "^Ring"}})", "error", "leaves Broadcast, Reduce without"},
        {"algo_nvls_proto_ll_2_28", "nccl-collective-without-algorithm", true,
         R"({"env": {"NCCL_ALGO": "NVLS", "NCCL_PROTO": "LL"}})", "error", "AllReduce without"},
        // Up to 2.18 NCCL_ALGO never takes Ring from a collective other than AllReduce (tuning.cc "Never
        // disable ring for non-allreduce operations. That allows to run real apps with NCCL_ALGO=TREE.").
        {"algo_tree_2_18_ring_kept", "nccl-collective-without-algorithm", false,
         R"({"nccl": {"header": "2.18.1", "runtime": "2.18.1"}, "torch": null, "env": {"NCCL_ALGO": "Tree"}})"},
        {"algo_tree_2_12_ring_kept", "nccl-collective-without-algorithm", false,
         R"({"nccl": {"header": "2.12.12", "runtime": "2.12.12"}, "torch": null, "env": {"NCCL_ALGO": "Tree"}})"},
        {"algo_nvls_ll_2_18_allreduce", "nccl-collective-without-algorithm", true,
         R"({"nccl": {"header": "2.18.1", "runtime": "2.18.1"}, "torch": null, "env": {"NCCL_ALGO": "NVLS", "NCCL_PROTO": "LL"}})",
         "error", "leaves AllReduce without any algorithm/protocol NCCL 2.18.1 implements"},
        {"algo_tree_2_24_no_fallback", "nccl-collective-without-algorithm", true,
         R"({"nccl": {"header": "2.24.3", "runtime": "2.24.3"}, "torch": null, "env": {"NCCL_ALGO": "Tree"}})",
         "error", "ncclInvalidUsage"},
        {"algo_tree_2_23_ring_fallback", "nccl-collective-without-algorithm", true,
         R"({"nccl": {"header": "2.23.4", "runtime": "2.23.4"}, "torch": null, "env": {"NCCL_ALGO": "Tree"}})",
         "warning", "Ring back"},
        {"algo_tree_2_21_ring_fallback", "nccl-collective-without-algorithm", true,
         R"({"nccl": {"header": "2.21.5", "runtime": "2.21.5"}, "torch": null, "env": {"NCCL_ALGO": "Tree"}})",
         "warning", "Ring back"},
        {"algo_tree_ring_2_28", "nccl-collective-without-algorithm", false,
         R"({"env": {"NCCL_ALGO": "Tree,Ring"}})"},
        {"algo_per_collective_2_28", "nccl-collective-without-algorithm", false,
         R"({"env": {"NCCL_ALGO": "allreduce:tree;broadcast:ring", "NCCL_PROTO": "^LL128;allreduce:LL128"}})"},
        {"algo_unset", "nccl-collective-without-algorithm", false, "{}"},
        {"algo_second_entry_without_prefix", "nccl-env-invalid-value", true,
         R"({"env": {"NCCL_ALGO": "Tree;Ring"}})", "error", "'func:' prefix"},
        {"algo_sendrecv_prefix", "nccl-env-invalid-value", true, R"({"env": {"NCCL_ALGO": "sendrecv:ring"}})",
         "error", "not a collective"},
        // Values NCCL clamps (nccl_env.csv out_of_range=clamp) warn; they are not invalid.
        {"socket_nthreads_32_clamped", "nccl-env-clamped", true, R"({"env": {"NCCL_SOCKET_NTHREADS": "32"}})",
         "warning", "above the maximum 16"},
        {"socket_nthreads_32_not_invalid", "nccl-env-invalid-value", false,
         R"({"env": {"NCCL_SOCKET_NTHREADS": "32"}})"},
        {"nthreads_1024_clamped", "nccl-env-clamped", true, R"({"env": {"NCCL_NTHREADS": "1024"}})",
         "warning", "above the maximum 512"},
        {"nthreads_100_clamped", "nccl-env-clamped", true, R"({"env": {"NCCL_NTHREADS": "100"}})", "warning",
         "not a multiple of 32"},
        {"nthreads_96_accepted", "nccl-env-clamped", false,
         R"({"env": {"NCCL_NTHREADS": "96", "NCCL_SOCKET_NTHREADS": "16"}})"},
        {"nthreads_96_valid", "nccl-env-invalid-value", false,
         R"({"env": {"NCCL_NTHREADS": "96", "NCCL_NSOCKS_PERTHREAD": "128"}})"},
        {"nsocks_128_product", "nccl-socket-threads-product", true,
         R"({"env": {"NCCL_NSOCKS_PERTHREAD": "128", "NCCL_SOCKET_NTHREADS": "1"}})", "warning", "128"},
        // GPU family -> driver floor (gpu_families.csv) and driver branch end of life (driver_branches.csv).
        {"rtx5090_on_r560", "driver-too-old-for-gpu", true,
         R"({"driver": {"version": "560.35.03", "cuda": "12.6"}, "cuda_runtime": "12.8", "torch": {"version": "2.7.0+cu128", "cuda": "12.8", "nccl": "2.26.2", "cudnn": "9.7.1", "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]}, "nccl": {"header": "2.26.2", "runtime": "2.26.2"}, "cudnn": "9.7.1", "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "cc": "12.0"}]})",
         "error", "needs an R570 or newer driver"},
        {"rtx5090_on_r570", "driver-too-old-for-gpu", false,
         R"({"driver": {"version": "570.124.06", "cuda": "12.8"}, "cuda_runtime": "12.8", "torch": {"version": "2.7.0+cu128", "cuda": "12.8", "nccl": "2.26.2", "cudnn": "9.7.1", "arch_list": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]}, "nccl": {"header": "2.26.2", "runtime": "2.26.2"}, "cudnn": "9.7.1", "gpus": [{"index": 0, "name": "NVIDIA GeForce RTX 5090", "cc": "12.0"}]})"},
        {"h100_on_r515_unconfirmed_floor", "driver-too-old-for-gpu", true,
         R"({"driver": {"version": "515.65.01", "cuda": "11.7"}, "cuda_runtime": "11.7", "torch": null, "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}]})",
         "warning", "UNCONFIRMED"},
        {"r535_after_its_eol", "driver-branch-eol", true,
         R"({"probed_at": "2026-12-02T21:00:00Z", "driver": {"version": "535.274.02", "cuda": "12.2"}, "cuda_runtime": "12.2", "torch": null})",
         "warning", "since 2026-06"},
        {"r550_listed_eol", "driver-branch-eol", true,
         R"({"probed_at": "2026-12-02", "driver": {"version": "550.163.01", "cuda": "12.4"}, "cuda_runtime": "12.4", "torch": null})",
         "warning", "end of life"},
        {"r535_before_its_eol", "driver-branch-eol", false,
         R"({"probed_at": "2026-05-15", "driver": {"version": "535.274.02", "cuda": "12.2"}, "cuda_runtime": "12.2", "torch": null})"},
        {"r580_supported", "driver-branch-eol", false, R"({"probed_at": "2026-12-02"})"},
        // R590 and R615: new feature branches absent from NVIDIA's supported table, no end-of-life month.
        {"r590_unlisted", "driver-branch-eol", true,
         R"({"probed_at": "2026-12-02", "driver": {"version": "590.48.01", "cuda": "13.1"}})", "warning",
         "no longer lists and gives no end-of-life month"},
        {"r615_unlisted", "driver-branch-eol", true,
         R"({"probed_at": "2026-12-02", "driver": {"version": "615.34.02", "cuda": "13.4"}, "cuda_runtime": "13.4", "torch": null})",
         "warning", "R615 (NFB)"},
        {"r620_supported", "driver-branch-eol", false,
         R"({"probed_at": "2026-12-02", "driver": {"version": "620.70.06", "cuda": "13.5"}})"},
        // HGX B200 needs 570.133.20 (NVIDIA's GPU Operator notes); GB200 keeps the R570 floor.
        {"hgx_b200_on_570_86_15", "driver-too-old-for-gpu", true,
         R"({"driver": {"version": "570.86.15", "cuda": "12.8"}, "cuda_runtime": "12.8", "torch": null, "gpus": [{"index": 0, "name": "NVIDIA B200", "cc": "10.0"}]})",
         "error", "needs driver 570.133.20 or newer"},
        {"hgx_b200_on_570_133_20", "driver-too-old-for-gpu", false,
         R"({"driver": {"version": "570.133.20", "cuda": "12.8"}, "cuda_runtime": "12.8", "torch": null, "gpus": [{"index": 0, "name": "NVIDIA B200", "cc": "10.0"}]})"},
        {"gb200_on_570_86_15", "driver-too-old-for-gpu", false, R"({"driver": {"version": "570.86.15", "cuda": "12.8"}, "cuda_runtime": "12.8", "torch": null, "gpus": [{"index": 0, "name": "NVIDIA GB200", "cc": "10.0"}]})"},
        // Releases newer than the data: one warning per component, naming the newest the data knows.
        {"driver_r625_beyond", "data-beyond-reach", true,
         R"({"driver": {"version": "625.20.01", "cuda": "13.6"}})", "warning",
         "driver R625 (625.20.01) is newer than the newest driver the data knows, R620"},
        {"cuda_13_6_beyond", "data-beyond-reach", true, R"({"cuda_runtime": "13.6", "torch": null})",
         "warning", "CUDA 13.6 (CUDA runtime) is newer than the newest CUDA the data knows, 13.5"},
        {"nccl_2_33_beyond", "data-beyond-reach", true,
         R"({"nccl": {"header": "2.33.1", "runtime": "2.33.1"}, "torch": null})", "warning",
         "NCCL 2.33.1 (loaded NCCL), 2.33.1 (NCCL header) is newer than the newest NCCL the data knows, "
         "2.32.6"},
        {"cudnn_9_29_beyond", "data-beyond-reach", true, R"({"cudnn": "9.29.0", "torch": null})", "warning",
         "cuDNN 9.29.0 (loaded cuDNN) is newer than the newest cuDNN the data knows, 9.28.1"},
        {"lightning_2_7_beyond", "data-beyond-reach", true, R"({"lightning": {"lightning": "2.7.0"}})",
         "warning", "Lightning 2.7.0 (lightning) is newer than the newest Lightning the data knows, 2.6.6"},
        {"torch_2_15_1_within", "data-beyond-reach", false,
         R"({"torch": {"version": "2.15.1+cu132", "cuda": "13.2", "nccl": "2.30.7", "cudnn": "9.26.0"}, "cuda_runtime": "13.2", "cudnn": "9.26.0", "nccl": {"header": "2.30.7", "runtime": "2.30.7"}})"},
        {"gpu_machine_within", "data-beyond-reach", false, "{}"},
        // Known NCCL defects (nccl_defects.csv): the loaded library and torch's own.
        {"defect_1950_on_2_28_9", "nccl-known-defect", true,
         R"({"nccl": {"header": "2.28.9", "runtime": "2.28.9"}, "torch": null})", nullptr, "nccl-1950"},
        {"defect_1950_names_fix", "nccl-known-defect", true,
         R"({"nccl": {"header": "2.28.3", "runtime": "2.28.3"}, "torch": null})", nullptr,
         "https://github.com/NVIDIA/nccl/issues/1950"},
        {"defect_1950_in_torch_nccl", "nccl-known-defect", true,
         R"({"nccl": {"header": "2.30.7", "runtime": "2.30.7"}, "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9"}})",
         nullptr, "torch's NCCL 2.28.9 has nccl-1950"},
        {"defect_env_only_warns", "nccl-known-defect", true,
         R"({"nccl": {"header": "2.30.7", "runtime": "2.30.7"}, "torch": null})", "warning", "only where"},
        {"defect_none_on_2_32_3", "nccl-known-defect", false,
         R"({"nccl": {"header": "2.32.3", "runtime": "2.32.3"}, "torch": null})"},
        // Known torch defects (torch_defects.csv): the fingerprint's Python torch.
        {"torch_defect_bf16_premulsum_in_2_11", "torch-known-defect", true, R"({})", "warning",
         "torch 2.11.0+cu130 (Python) has torch-190745 (corruption, ProcessGroupNCCL)"},
        {"torch_defect_gloo_strided_in_2_11", "torch-known-defect", true, R"({})", "warning",
         "has torch-192920 (corruption, ProcessGroupGloo)"},
        {"torch_defect_none_before_1_13", "torch-known-defect", false,
         R"({"torch": {"version": "1.12.1+cu116", "cuda": "11.6", "nccl": "2.10.3"}})"},
        {"driver_library_mismatch", "driver-library-mismatch", true,
         R"({"driver": {"nvml_error": "nvmlInit_v2: NVML_ERROR_LIB_RM_VERSION_MISMATCH (18): Driver/library version mismatch"}})",
         "error", "Driver/library version mismatch"},
        {"driver_library_match", "driver-library-mismatch", false,
         R"({"driver": {"version": "580.159.04", "cuda": "13.0"}})"},
        {"shm_64mib", "shm-too-small", true, R"({"shm_bytes": 67108864})", "warning", "64 MiB"},
        {"shm_128gib", "shm-too-small", false,
         "{}"},  // CUDA_VISIBLE_DEVICES as fixtures/visible_devices resolved it (fp "visible_devices").
        {"cvd_7_0_expecting_1", "cuda-visible-devices-odd", true,
         R"({"visible_devices": {"spec": "7,0", "resolved": [], "problems": [{"kind": "invalid-entry", "position": 1, "message": "entry 1 '7': no GPU 7 on this host (1 GPU(s)): CUDA stops the list there; entry 2 after it is ignored too"}], "expected": 1, "expected_from": "GPUCTS_EXPECT_GPUS", "one_per_rank_ok": false}})",
         "error", "resolves to 0 GPU(s), fewer than the 1 expected by GPUCTS_EXPECT_GPUS"},
        {"cvd_duplicate_warns", "cuda-visible-devices-odd", true,
         R"({"visible_devices": {"spec": "0,0", "resolved": [], "problems": [{"kind": "duplicate", "position": 2, "message": "entry 2 '0' names GPU 0 again: with a device named twice CUDA shows NO device"}]}})",
         "warning", "NO device"},
        {"cvd_0_7_two_expected", "cuda-visible-devices-odd", true,
         R"({"visible_devices": {"spec": "0,7", "resolved": [{"index": 0, "uuid": "GPU-d76a", "pci": "0000:00:06.0"}], "problems": [{"kind": "invalid-entry", "position": 2, "message": "entry 2 '7': no GPU 7"}], "expected": 2, "expected_from": "GPUCTS_EXPECT_GPUS"}})",
         "error", "[0 GPU-d76a (0000:00:06.0)]"},
        {"cvd_two_of_four_local_ranks", "cuda-visible-devices-odd", true,
         R"({"visible_devices": {"spec": "0,1", "resolved": [{"index": 0}, {"index": 1}], "problems": [], "expected": 4, "expected_from": "OMPI_COMM_WORLD_LOCAL_SIZE", "one_per_rank_ok": true}})",
         "error", "each rank needs its own GPU"},
        {"cvd_one_per_rank", "cuda-visible-devices-odd", false,
         R"({"visible_devices": {"spec": "3", "resolved": [{"index": 3}], "problems": [], "expected": 8, "expected_from": "LOCAL_WORLD_SIZE", "one_per_rank_ok": true}})"},
        {"cvd_clean_list", "cuda-visible-devices-odd", false,
         R"({"visible_devices": {"spec": "0", "resolved": [{"index": 0, "uuid": "GPU-d76a"}], "problems": [], "expected": 1, "expected_from": "GPUCTS_EXPECT_GPUS"}})"},
        // The aarch64 wheels have their own arch list (sm_80 to sm_120 with sm_110): the row of the
        // machine's platform decides.
        {"thor_aarch64_wheel_has_sm110", "gpu-arch-not-in-torch-build", false,
         R"({"kernel": "Linux 6.8.12-tegra aarch64", "torch": {"version": "2.14.1+cu130", "arch_list": null}, "gpus": [{"index": 0, "name": "NVIDIA Thor", "cc": "11.0"}]})"},
        {"thor_x86_row_lacks_sm110", "gpu-arch-not-in-torch-build", true,
         R"({"kernel": "Linux 6.8.0 x86_64", "torch": {"version": "2.14.1+cu130", "arch_list": null}, "gpus": [{"index": 0, "name": "NVIDIA Thor", "cc": "11.0"}]})",
         "error", "sm_110"},
        {"aarch64_2_10_no_row", "torch-release-unknown", true,
         R"({"kernel": "Linux 6.8.0 aarch64", "torch": {"version": "2.10.0+cu128", "cuda": "12.8"}, "cuda_runtime": "12.8"})",
         "info", "matches no aarch64 row"},
        {"aarch64_2_15_row", "torch-release-unknown", false,
         R"({"kernel": "Linux 6.8.0 aarch64", "torch": {"version": "2.15.0+cu132", "cuda": "13.2"}, "cuda_runtime": "13.2"})"},
        // cuDNN: torch's own rule (same major, runtime minor >= the build's), and what each cuDNN
        // release supports (cudnn.csv: compute capabilities, driver floor per CUDA major).
        {"cudnn_runtime_older_minor", "cudnn-older-than-torch-build", true,
         R"({"torch": {"cudnn_build": "9.20.0"}})", "error", "cuDNN version incompatibility"},
        {"cudnn_runtime_other_major", "cudnn-older-than-torch-build", true,
         R"({"torch": {"cudnn_build": "8.9.7"}})", "error", "another major"},
        {"cudnn_runtime_older_than_wheel_row", "cudnn-older-than-torch-build", true,
         R"({"torch": {"cudnn": "9.17.0"}})", "warning", "its official wheel's"},
        {"cudnn_runtime_same_as_build", "cudnn-older-than-torch-build", false,
         R"({"torch": {"cudnn_build": "9.19.0"}})"},
        {"cudnn_runtime_newer_minor", "cudnn-older-than-torch-build", false,
         R"({"torch": {"cudnn_build": "9.10.2"}})"},
        {"cudnn_9_17_on_v100", "gpu-unsupported-by-cudnn", true,
         R"({"torch": {"version": "2.11.0+cu126", "cuda": "12.6", "nccl": "2.28.9", "cudnn": "9.17.0", "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}, "cuda_runtime": "12.6", "cudnn": null, "gpus": [{"index": 0, "name": "Tesla V100-SXM2-32GB", "cc": "7.0"}]})",
         "error", "does not support Tesla V100"},
        {"cudnn_9_19_on_v100_assumed", "gpu-unsupported-by-cudnn", true,
         R"({"torch": {"version": "2.11.0+cu126", "cuda": "12.6", "nccl": "2.28.9", "cudnn": "9.19.0", "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}, "cuda_runtime": "12.6", "cudnn": null, "gpus": [{"index": 0, "name": "Tesla V100-SXM2-32GB", "cc": "7.0"}]})",
         "warning", "UNCONFIRMED"},
        {"cudnn_9_10_on_v100", "gpu-unsupported-by-cudnn", false,
         R"({"torch": {"version": "2.11.0+cu126", "cuda": "12.6", "nccl": "2.28.9", "cudnn": "9.10.2", "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}, "cuda_runtime": "12.6", "cudnn": null, "gpus": [{"index": 0, "name": "Tesla V100-SXM2-32GB", "cc": "7.0"}]})"},
        {"cudnn_cu13_on_r575", "driver-too-old-for-cudnn", true,
         R"({"torch": {"cudnn": "9.17.0"}, "cudnn": "9.17.0", "driver": {"version": "575.57.08", "cuda": "12.9"}})",
         "error", "580.65.06"},
        {"cudnn_cu12_blackwell_on_r560", "driver-too-old-for-cudnn", true,
         R"({"torch": {"version": "2.10.0+cu128", "cuda": "12.8", "cudnn": "9.10.2", "arch_list": ["sm_100"]}, "cuda_runtime": "12.8", "cudnn": null, "driver": {"version": "560.35.03", "cuda": "12.6"}, "gpus": [{"index": 0, "name": "NVIDIA B200", "cc": "10.0"}]})",
         "error", "570.26"},
        {"cudnn_cu12_hopper_on_r560", "driver-too-old-for-cudnn", false,
         R"({"torch": {"version": "2.10.0+cu128", "cuda": "12.8", "cudnn": "9.10.2"}, "cuda_runtime": "12.8", "cudnn": null, "driver": {"version": "560.35.03", "cuda": "12.6"}})"},
        {"cudnn_cu13_on_r580", "driver-too-old-for-cudnn", false, "{}"},
        {"cudnn_differs_says_runtime", "cudnn-differs-from-torch", true, R"({"cudnn": "9.20.0"})", "warning",
         "runtime cuDNN"},
        // cuDNN 9.11 dropped GPUs below sm_75 for CUDA 12 too (cudnn.csv 9.11.0-9.16.0 rows).
        {"cudnn_9_13_cu12_on_v100", "gpu-unsupported-by-cudnn", true,
         R"({"torch": {"version": "2.11.0+cu126", "cuda": "12.6", "nccl": "2.28.9", "cudnn": "9.13.0", "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}, "cuda_runtime": "12.6", "cudnn": null, "gpus": [{"index": 0, "name": "Tesla V100-SXM2-32GB", "cc": "7.0"}]})",
         "error", "cuDNN 9.13.0 for CUDA 12 does not support"},
        {"cudnn_9_13_cu12_on_t4", "gpu-unsupported-by-cudnn", false,
         R"({"torch": {"version": "2.11.0+cu126", "cuda": "12.6", "nccl": "2.28.9", "cudnn": "9.13.0", "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]}, "cuda_runtime": "12.6", "cudnn": null, "gpus": [{"index": 0, "name": "Tesla T4", "cc": "7.5"}]})"},
        // torch's own refusal, as the probe records it: an error whatever the data says.
        {"torch_refused_older_cudnn", "torch-cudnn-refused", true,
         R"({"torch": {"cudnn": "9.10.2", "cudnn_build": "9.20.0", "cudnn_error": "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (9, 20, 0) but found runtime version (9, 10, 2)."}})",
         "error", "compiled against cuDNN 9.20.0, loads cuDNN 9.10.2"},
        {"torch_refused_cudnn_on_sm70", "torch-cudnn-refused", true,
         R"({"torch": {"cudnn": "9.13.0", "cudnn_build": "9.13.0", "cudnn_error": "RuntimeError: cuDNN version 91300 is not compatible with devices with SM < 7.5."}})",
         "error", "SM < 7.5"},
        {"torch_took_its_cudnn", "torch-cudnn-refused", false, R"({"torch": {"cudnn_build": "9.19.0"}})"},
        // The lightning package needs Python 3.9 from 2.4.0; pytorch_lightning 2.4.0 still takes 3.8.
        {"lightning_2_4_on_python_3_8", "lightning-python-incompatible", true,
         R"({"python": {"version": "3.8.10"}, "lightning": {"lightning": "2.4.0"}})", "error",
         "Python >= 3.9"},
        {"pytorch_lightning_2_4_on_python_3_8", "lightning-python-incompatible", false,
         R"({"python": {"version": "3.8.10"}, "lightning": {"pytorch_lightning": "2.4.0"}})"},
        {"lightning_2_4_on_python_3_9", "lightning-python-incompatible", false,
         R"({"python": {"version": "3.9.18"}, "lightning": {"lightning": "2.4.0", "pytorch_lightning": "2.4.0"}})"},
        // Maxwell, Pascal and Volta are driven up to R580 (gpu_families.csv last_driver).
        {"v100_on_r590", "driver-drops-gpu", true,
         R"({"driver": {"version": "590.44.01", "cuda": "13.1"}, "gpus": [{"index": 0, "name": "Tesla V100", "cc": "7.0"}]})",
         "error", "R580"},
        {"v100_on_r580", "driver-drops-gpu", false,
         R"({"gpus": [{"index": 0, "name": "Tesla V100", "cc": "7.0"}]})"},
        // Every NCCL the job loads reads the settings: torch's loaded one as well as gpucts's.
        {"algo_tree_torch_loads_2_30", "nccl-collective-without-algorithm", true,
         R"({"nccl": {"header": "2.18.1", "runtime": "2.18.1"}, "torch": {"nccl_loaded": "2.30.7"}, "env": {"NCCL_ALGO": "Tree"}})",
         "error", "torch's NCCL, 2.30.7"},
        {"algo_tree_torch_loads_2_32_6", "nccl-collective-without-algorithm", true,
         R"({"nccl": {"header": "2.18.1", "runtime": "2.18.1"}, "torch": {"nccl_loaded": "2.32.6"}, "env": {"NCCL_ALGO": "Tree"}})",
         "error", "nccl_algos.csv ends at NCCL 2.30.7"},
        {"algo_tree_torch_and_gpucts_2_18", "nccl-collective-without-algorithm", false,
         R"({"nccl": {"header": "2.18.1", "runtime": "2.18.1"}, "torch": {"nccl": "2.18.1"}, "env": {"NCCL_ALGO": "Tree"}})"},
        {"ras_on_gpucts_2_21_not_torch", "nccl-env-newer-than-library", true,
         R"({"nccl": {"header": "2.21.5", "runtime": "2.21.5"}, "env": {"NCCL_RAS_ENABLE": "1"}})", "warning",
         "the NCCL gpucts loaded, 2.21.5]"},
        {"torch_loads_newer_than_built", "torch-nccl-differs-from-loaded", true,
         R"({"torch": {"nccl_loaded": "2.30.7", "nccl_library": "/venv/nvidia/nccl/lib/libnccl.so.2", "nccl_static": false}})",
         "warning", "uses NCCL 2.30.7 (loaded from /venv"},
        {"torch_built_older_loads_same", "torch-nccl-differs-from-loaded", false,
         R"({"torch": {"nccl": "2.27.5", "nccl_loaded": "2.28.9"}})"},
        {"torch_nccl_static", "nccl-below-matrix", true,
         R"({"torch": {"nccl": "2.27.5", "nccl_loaded": "2.27.5", "nccl_static": true}})", "warning",
         "linked into libtorch statically"},
        // A variable the data has never seen, read by an NCCL newer than the data: beyond the data.
        {"unseen_name_on_2_33_1", "nccl-env-beyond-data", true,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.33.1"}, "env": {"NCCL_WIN_REGISTER_GIN": "1"}})",
         "info", "unknown to the data up to NCCL 2.32.6"},
        {"unseen_name_on_2_33_1_not_unknown", "nccl-env-unknown", false,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.33.1"}, "env": {"NCCL_WIN_REGISTER_GIN": "1"}})"},
        // The data reads the names of 2.31.2..2.32.6 from their libnccl.so.2: none holds this one.
        {"win_register_gin_on_2_32_6", "nccl-env-beyond-data", false,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.32.6"}, "env": {"NCCL_WIN_REGISTER_GIN": "1"}})"},
        {"win_register_gin_on_2_32_6_unknown", "nccl-env-unknown", true,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.32.6"}, "env": {"NCCL_WIN_REGISTER_GIN": "1"}})",
         "warning", "read by no NCCL release up to 2.32.6"},
        {"win_register_gin_on_2_28_9", "nccl-env-beyond-data", false,
         R"({"env": {"NCCL_WIN_REGISTER_GIN": "1"}})"},
        {"win_register_gin_on_2_28_9_unknown", "nccl-env-unknown", true,
         R"({"env": {"NCCL_WIN_REGISTER_GIN": "1"}})", "warning", "read by no NCCL release up to 2.32.6"},
        // A variable first named in the 2.32.6 wheel's libnccl.so.2; one gone from the 2.32.3 one.
        {"rubin_sm_bw_on_2_32_6", "nccl-env-unknown", false,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.32.6"}, "env": {"NCCL_RUBIN_SM_BW": "1"}})"},
        {"rubin_sm_bw_on_2_32_6_not_newer", "nccl-env-newer-than-library", false,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.32.6"}, "env": {"NCCL_RUBIN_SM_BW": "1"}})"},
        {"rubin_sm_bw_on_2_30_7", "nccl-env-newer-than-library", true,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.30.7"}, "env": {"NCCL_RUBIN_SM_BW": "1"}})", "warning",
         "exists from NCCL 2.32.6"},
        {"net_gdr_mlopart_on_2_32_6", "nccl-env-removed", true,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.32.6"}, "env": {"NCCL_NET_GDR_MLOPART": "1"}})",
         "warning", "no longer read from NCCL 2.32.3"},
        {"net_gdr_mlopart_on_2_31_2", "nccl-env-removed", false,
         R"({"nccl": null, "torch": {"nccl_loaded": "2.31.2"}, "env": {"NCCL_NET_GDR_MLOPART": "1"}})"},
        // NCCL clamps NCCL_SOCKET_NTHREADS to 16 before it caps threads x sockets at 64.
        {"sockets_4x32_runs_4x16", "nccl-socket-threads-product", false,
         R"({"env": {"NCCL_NSOCKS_PERTHREAD": "4", "NCCL_SOCKET_NTHREADS": "32"}})"},
        {"sockets_8x32_runs_8x16", "nccl-socket-threads-product", true,
         R"({"env": {"NCCL_NSOCKS_PERTHREAD": "8", "NCCL_SOCKET_NTHREADS": "32"}})", "warning",
         "NCCL_SOCKET_NTHREADS=32 clamped"},
        {"sockets_32_no_helper_threads", "nccl-socket-threads-product", false,
         R"({"env": {"NCCL_NSOCKS_PERTHREAD": "32"}})"},
};

void PrintTo(const RuleCase& c, std::ostream* os) { *os << c.name; }

class Rules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(Rules, RaisesOrNot) {
  const RuleCase& c = GetParam();
  CheckResult r = check_fingerprints(builtin_matrix(), {make(json::parse(c.patch))});
  std::vector<const Finding*> hits;
  for (const auto& f : r.findings)
    if (f.id == c.id) hits.push_back(&f);
  std::string all;
  for (const auto& f : r.findings) all += "\n  " + f.id + " (" + f.severity + "): " + f.message;
  if (!c.raises) {
    EXPECT_TRUE(hits.empty()) << c.id << " must not be raised; findings:" << all;
    EXPECT_EQ(std::count(r.not_evaluated.begin(), r.not_evaluated.end(), c.id), 0)
        << c.id << " must be evaluated (its inputs are present), not skipped";
    return;
  }
  ASSERT_FALSE(hits.empty()) << c.id << " must be raised; findings:" << all;
  // An id raised several times (one known defect each) must be raised as described at least once.
  if (c.message_has) {
    std::vector<const Finding*> described;
    for (const Finding* f : hits)
      if (f->message.find(c.message_has) != std::string::npos) described.push_back(f);
    ASSERT_FALSE(described.empty()) << c.id << " raised, but none says '" << c.message_has << "':" << all;
    hits = described;
  }
  for (const Finding* f : hits) {
    if (c.severity) {
      EXPECT_EQ(f->severity, c.severity) << f->message;
    }
    if (c.message_has) {
      EXPECT_NE(f->message.find(c.message_has), std::string::npos) << f->message;
    }
    EXPECT_FALSE(f->source.empty()) << "every finding cites a matrix row or a rule";
    EXPECT_FALSE(f->fix.empty()) << "every finding says what to do";
    EXPECT_FALSE(f->subject.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Finding, Rules, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The folder is judged only from the probe's record on its own host: the checking machine's
// folders say nothing about another host's, so without a record the rule is not evaluated.
TEST(RulesDebugFile, AFolderTheProbeDidNotRecordIsNotJudged) {
  CheckResult r = check_fingerprints(
      builtin_matrix(), {make(json::parse(R"({"env": {"NCCL_DEBUG_FILE": "/gone/nccl.log"}})"))});
  for (const auto& f : r.findings) EXPECT_NE(f.id, "nccl-debug-file-unwritable") << f.message;
  EXPECT_EQ(std::count(r.not_evaluated.begin(), r.not_evaluated.end(), "nccl-debug-file-unwritable"), 1);
}

// Realistic fingerprints (suites/data/check/, written from the matrix sources): each raises or
// clears one finding id.
struct FixtureCase {
  const char* file;
  const char* id;
  bool raises;
  const char* severity;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const FixtureCase& c, std::ostream* os) {
  *os << c.file << (c.raises ? " raises " : " clears ") << c.id;
}

const FixtureCase kFixtures[] = {
    {"rtx5090_driver_560.json", "driver-too-old-for-gpu", true, "error"},
    {"rtx5090_driver_580.json", "driver-too-old-for-gpu", false, nullptr},
    {"h200_nccl_algo_tree.json", "nccl-collective-without-algorithm", true, "error"},
    {"h200_nccl_algo_per_collective.json", "nccl-collective-without-algorithm", false, nullptr},
    {"h200_socket_nthreads_32.json", "nccl-env-clamped", true, "warning"},
    {"h200_socket_nthreads_16.json", "nccl-env-clamped", false, nullptr},
    {"a100_driver_535_2026_12.json", "driver-branch-eol", true, "warning"},
    {"a100_driver_535_2026_05.json", "driver-branch-eol", false, nullptr},
    // NCCL_ALGO=Tree by release: 2.18 keeps Ring for the other collectives, 2.19-2.23 give it back, 2.24+
    // refuse.
    {"a100_torch_2_1_nccl_2_18_algo_tree.json", "nccl-collective-without-algorithm", false, nullptr},
    {"a100_torch_2_5_nccl_2_21_algo_tree.json", "nccl-collective-without-algorithm", true, "warning"},
    // Values NCCL clamps warn and are not invalid; a multiple of 32 in [64, 512] is accepted.
    {"h200_nthreads_1024.json", "nccl-env-clamped", true, "warning"},
    {"h200_nthreads_1024.json", "nccl-env-invalid-value", false, nullptr},
    {"h200_nthreads_96.json", "nccl-env-clamped", false, nullptr},
    {"h200_socket_nthreads_32.json", "nccl-env-invalid-value", false, nullptr},
    {"h200_nsocks_perthread_32.json", "nccl-socket-threads-product", true, "warning"},
    {"h200_nsocks_perthread_32.json", "nccl-env-invalid-value", false, nullptr},
    // Variables by the releases that read them (nccl_env.csv since/until from the tags).
    {"h200_env_read_by_2_28_9.json", "nccl-env-removed", false, nullptr},
    {"h200_env_read_by_2_28_9.json", "nccl-env-unknown", false, nullptr},
    {"h200_env_read_by_2_28_9.json", "nccl-env-newer-than-library", false, nullptr},
    {"h200_env_gone_by_2_28_9.json", "nccl-env-removed", true, "warning"},
    {"h200_env_check_mode_on_2_28_9.json", "nccl-env-newer-than-library", true, "warning"},
    // The newest releases of the data: torch 2.15.0+cu132, CUDA 13.5, NCCL 2.32.3.
    {"h200_torch_2_15_cu132.json", "torch-release-unknown", false, nullptr},
    {"h200_torch_2_15_cu132.json", "nccl-below-matrix", false, nullptr},
    {"h200_torch_2_15_cu132.json", "gpu-arch-not-in-torch-build", false, nullptr},
    {"h200_cuda_13_5_on_r580.json", "driver-cuda-minor-older", true, "warning"},
    {"h200_cuda_13_5_on_r580.json", "driver-too-old-for-cuda-runtime", false, nullptr},
    {"h200_cuda_13_5_on_r580.json", "nccl-known-defect", false, nullptr},
    // CUDA 11.0 runs on its GA driver 450.51.05 (below the 11.x MVC floor 450.80.02), not on the RC's
    // 450.36.06.
    {"a100_cuda_11_0_driver_450_51_05.json", "driver-too-old-for-cuda-runtime", false, nullptr},
    {"a100_cuda_11_0_driver_450_36_06.json", "driver-too-old-for-cuda-runtime", true, "error"},
    // CUDA 12.8 GA needs 570.26 (NVIDIA Table 3), not the 570.86.10 of the 12.8.0 runfile; the B200 of
    // an HGX B200 itself needs 570.133.20 (NVIDIA's GPU Operator notes).
    {"b200_cuda_12_8_driver_570_26.json", "driver-cuda-minor-older", false, nullptr},
    {"b200_cuda_12_8_driver_570_26.json", "driver-too-old-for-gpu", true, "error"},
    {"b200_cuda_12_8_driver_560_35_03.json", "driver-cuda-minor-older", true, "warning"},
    {"b200_cuda_12_8_driver_560_35_03.json", "driver-too-old-for-gpu", true, "error"},
    // Lightning CI caps: 1.6.4-1.6.5 <= 1.11.0, 1.8.2-1.8.5 <= 1.13.0.
    {"v100_lightning_1_6_5_torch_1_11_0.json", "lightning-torch-untested", false, nullptr},
    {"v100_lightning_1_6_5_torch_1_12_1.json", "lightning-torch-untested", true, "warning"},
    {"v100_lightning_1_8_5_torch_1_13_0.json", "lightning-torch-untested", false, nullptr},
    {"v100_lightning_1_8_5_torch_1_13_1.json", "lightning-torch-untested", true, "warning"},
    // A V100 with a pip-upgraded cuDNN 9.17 (its Support Matrix lists 7.5 and newer only).
    {"v100_cu126_cudnn_9_17_pip_upgraded.json", "gpu-unsupported-by-cudnn", true, "error"},
    {"v100_cu126_cudnn_9_10_2.json", "gpu-unsupported-by-cudnn", false, nullptr},
    {"v100_cu126_cudnn_9_10_2.json", "cudnn-older-than-torch-build", false, nullptr},
    {"h200_nsocks_4_nthreads_32.json", "cudnn-older-than-torch-build", false, nullptr},
    // NCCL runs 4 x 16 (threads clamped first): no product warning, the clamp is the finding.
    {"h200_nsocks_4_nthreads_32.json", "nccl-socket-threads-product", false, nullptr},
    {"h200_nsocks_4_nthreads_32.json", "nccl-env-clamped", true, "warning"},
    // torch loads the pip NCCL 2.32.6, newer than the tags; the data reads its libnccl.so.2's
    // variable names, and NCCL_WIN_REGISTER_GIN is none of them.
    {"h200_torch_loads_nccl_2_32_6_gin.json", "nccl-env-beyond-data", false, nullptr},
    {"h200_torch_loads_nccl_2_32_6_gin.json", "nccl-env-unknown", true, "warning"},
    {"h200_nsocks_4_nthreads_32.json", "nccl-env-beyond-data", false, nullptr},
};

class RulesFixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(RulesFixture, RaisesOrClears) {
  const FixtureCase& c = GetParam();
  CheckResult r =
      check_fingerprints(builtin_matrix(), {load_fingerprint_file(test_data_dir() + "/check/" + c.file)});
  std::string all;
  const Finding* hit = nullptr;
  for (const auto& f : r.findings) {
    all += "\n  " + f.id + " (" + f.severity + "): " + f.message + " [" + f.source + "]";
    if (f.id == c.id) hit = &f;
  }
  EXPECT_EQ(std::count(r.not_evaluated.begin(), r.not_evaluated.end(), c.id), 0)
      << c.id << " must be evaluated";
  if (!c.raises) {
    EXPECT_EQ(hit, nullptr) << c.file << " must not raise " << c.id << all;
    return;
  }
  ASSERT_NE(hit, nullptr) << c.file << " must raise " << c.id << all;
  EXPECT_EQ(hit->severity, c.severity) << hit->message;
  // The finding names its evidence: a matrix row and who says so.
  EXPECT_NE(hit->source.find(".csv:"), std::string::npos) << hit->source;
  EXPECT_NE(hit->source.find(" ("), std::string::npos) << hit->source;
}

INSTANTIATE_TEST_SUITE_P(Check, RulesFixture, ::testing::ValuesIn(kFixtures), [](const auto& info) {
  std::string n = info.param.file;
  std::string id = info.param.id;
  std::replace(id.begin(), id.end(), '-', '_');
  return n.substr(0, n.size() - 5) + (info.param.raises ? "_raises_" : "_clears_") + id;
});

// The table above covers every id both ways; a new id without cases fails here.
TEST(RulesTable, EveryIdRaisedAndNotRaised) {
  for (const auto& id : finding_ids()) {
    if (id == "cross-host-mismatch") continue;  // CrossHost below
    bool yes = false, no = false;
    for (const auto& c : kCases) (c.raises ? yes : no) |= id == c.id;
    EXPECT_TRUE(yes) << id << " has no case that raises it";
    EXPECT_TRUE(no) << id << " has no case that must not raise it";
  }
}

TEST(RulesTable, ContractIdsAreProduced) {
  const char* contract[] = {"driver-too-old-for-cuda-runtime",
                            "driver-cuda-minor-older",
                            "driver-too-old-for-torch-cuda",
                            "nccl-header-library-mismatch",
                            "torch-nccl-differs-from-loaded",
                            "nccl-below-matrix",
                            "torch-release-unknown",
                            "gpu-arch-not-in-torch-build",
                            "gpu-arch-unsupported-by-cuda",
                            "cudnn-differs-from-torch",
                            "lightning-torch-incompatible",
                            "nccl-socket-ifname-no-match",
                            "nccl-p2p-disabled",
                            "nccl-ib-disabled",
                            "nccl-env-invalid-value",
                            "nccl-socket-threads-product",
                            "nccl-env-unknown",
                            "nccl-env-newer-than-library",
                            "shm-too-small",
                            "cross-host-mismatch"};
  for (const char* id : contract)
    EXPECT_NE(std::find(finding_ids().begin(), finding_ids().end(), id), finding_ids().end()) << id;
}

TEST(RulesBase, GpuMachineWithTorchNcclHasNoFinding) {
  // The GPU machine's NCCL 2.28.9 and torch 2.11.0 have known defects (KnownDefects,
  // TorchKnownDefects and the *defect_* cases cover them); every other rule finds nothing.
  CheckResult r = check_fingerprints(builtin_matrix(), {make(json::object())});
  for (const auto& f : r.findings)
    if (f.id != "nccl-known-defect" && f.id != "torch-known-defect")
      ADD_FAILURE() << f.id << ": " << f.message;
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return f.id == "nccl-known-defect" && f.message.find("nccl-1950") != std::string::npos;
  }));
  EXPECT_FALSE(r.failed()) << "a defect matched by version alone warns";
  EXPECT_EQ(r.to_json()["verdict"], "pass");
  EXPECT_TRUE(check_fingerprints(builtin_matrix(), {make(json::object())}, CheckOptions{true}).failed())
      << "--strict-defects: a corrupting NCCL defect fails the check";
}

TEST(RulesNotEvaluated, EmptyFingerprintEvaluatesNothing) {
  Fingerprint empty = fingerprint_from_json(json{{"schema", kFingerprintSchema}}, "empty");
  CheckResult r = check_fingerprints(builtin_matrix(), {empty});
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.not_evaluated, finding_ids()) << "absent inputs are never passed";
}

TEST(RulesNotEvaluated, NoDriverSkipsDriverRules) {
  CheckResult r = check_fingerprints(builtin_matrix(), {make(json::parse(R"({"driver": null})"))});
  for (const char* id :
       {"driver-too-old-for-cuda-runtime", "driver-cuda-minor-older", "driver-too-old-for-torch-cuda"})
    EXPECT_NE(std::find(r.not_evaluated.begin(), r.not_evaluated.end(), id), r.not_evaluated.end()) << id;
  EXPECT_EQ(std::find(r.not_evaluated.begin(), r.not_evaluated.end(), "nccl-below-matrix"),
            r.not_evaluated.end());
}

// A stack newer than the data in every component: each component named once as beyond the data, and
// the rules that needed its facts listed as outside the data, not as lacking inputs.
TEST(RulesNotEvaluated, InputsOutsideTheDataAreNotCalledAbsent) {
  CheckResult r = check_fingerprints(
      builtin_matrix(),
      {load_fingerprint_file(test_data_dir() + "/check/h200_every_component_beyond_the_data.json")});
  std::map<std::string, int> beyond;
  for (const auto& f : r.findings)
    if (f.id == "data-beyond-reach") ++beyond[f.subject.substr(f.subject.rfind(' ') + 1)];
  const std::map<std::string, int> each_once = {{"driver", 1}, {"CUDA", 1},  {"NCCL", 1},
                                                {"cuDNN", 1},  {"torch", 1}, {"Lightning", 1}};
  EXPECT_EQ(beyond, each_once);
  const auto absent = r.inputs_absent();
  for (const char* id :
       {"torch-release-unknown", "nccl-below-matrix", "gpu-unsupported-by-cudnn", "driver-too-old-for-cudnn",
        "lightning-torch-incompatible", "driver-branch-eol", "lightning-python-incompatible"}) {
    EXPECT_NE(std::find(r.outside_data.begin(), r.outside_data.end(), id), r.outside_data.end()) << id;
    EXPECT_EQ(std::find(absent.begin(), absent.end(), id), absent.end()) << id << " had its inputs";
  }
  EXPECT_EQ(r.to_json()["not_evaluated_outside_data"], r.outside_data);
  EXPECT_EQ(r.to_json()["data_reach"]["lightning"], "2.6.6");
  Fingerprint empty = fingerprint_from_json(json{{"schema", kFingerprintSchema}}, "empty");
  CheckResult none = check_fingerprints(builtin_matrix(), {empty});
  EXPECT_TRUE(none.outside_data.empty());
  EXPECT_EQ(none.inputs_absent(), finding_ids());
}

// torch refuses a runtime cuDNN older than its build from torch.backends.cudnn.version(); the probe
// must keep what torch raised (and both versions, read beside it), so the check fails on the real
// machine. A stand-in torch package behaves as torch/backends/cudnn/__init__.py does there.
TEST(TorchCudnnRefusal, ProbeRecordsItAndTheCheckFails) {
  const ScratchDir scratch("cudnn_refusal");
  const std::filesystem::path dir = scratch.path();
  std::filesystem::create_directories(dir / "site" / "torch");
  std::ofstream(dir / "site" / "torch" / "__init__.py") << R"(import types
__version__ = "2.12.0+cu130"
version = types.SimpleNamespace(cuda="13.0")
def _refuse():
    raise RuntimeError("cuDNN version incompatibility: PyTorch was compiled  against (9, 20, 0) but found "
                       "runtime version (9, 10, 2). PyTorch already comes bundled with cuDNN.")
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=_refuse))
_C = types.SimpleNamespace(_GLIBCXX_USE_CXX11_ABI=True, _cudnn=types.SimpleNamespace(
    getCompileVersion=lambda: (9, 20, 0), getRuntimeVersion=lambda: (9, 10, 2)))
cuda = types.SimpleNamespace(is_available=lambda: False, nccl=types.SimpleNamespace(version=lambda: (2, 29, 7)),
                             get_arch_list=lambda: ["sm_90"])
)";
  const std::filesystem::path python = dir / "python3";
  std::ofstream(python) << "#!/bin/sh\nPYTHONPATH='" << (dir / "site").string() << "' exec python3 \"$@\"\n";
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  ProbeOptions o;
  o.toolkit = false;
  o.python_exe = python.string();
  const nlohmann::json probed = to_json(probe_fingerprint(o));
  ASSERT_TRUE(probed.contains("torch")) << "python3 with the stand-in torch did not run: " << probed.dump();
  const nlohmann::json& t = probed["torch"];
  EXPECT_NE(t.value("cudnn_error", "").find("cuDNN version incompatibility"), std::string::npos) << t.dump();
  EXPECT_EQ(t.value("cudnn", ""), "9.10.2") << t.dump();
  EXPECT_EQ(t.value("cudnn_build", ""), "9.20.0") << t.dump();
  CheckResult r = check_fingerprints(builtin_matrix(), {fingerprint_from_json(probed, "probe")});
  const auto refused = std::find_if(r.findings.begin(), r.findings.end(),
                                    [](const Finding& f) { return f.id == "torch-cudnn-refused"; });
  ASSERT_NE(refused, r.findings.end()) << probed.dump();
  EXPECT_EQ(refused->severity, "error");
  EXPECT_TRUE(r.failed());
}

TEST(RulesOrder, ErrorsFirstThenWarningsThenInfo) {
  CheckResult r = check_fingerprints(
      builtin_matrix(), {make(json::parse(R"({"shm_bytes": 1024, "torch": {"version": "3.0.0+cu130"},
                                               "env": {"NCCL_DEBUG": "LOUD"}})"))});
  ASSERT_GE(r.findings.size(), 3u);
  auto rank = [](const std::string& s) { return s == "error" ? 0 : s == "warning" ? 1 : 2; };
  for (size_t i = 1; i < r.findings.size(); ++i)
    EXPECT_LE(rank(r.findings[i - 1].severity), rank(r.findings[i].severity)) << i;
  EXPECT_TRUE(r.failed());
  json j = r.to_json();
  EXPECT_EQ(j["verdict"], "fail");
  for (const auto& f : j["findings"])
    for (const char* k : {"id", "severity", "subject", "message", "source"}) EXPECT_TRUE(f.contains(k)) << k;
}

// Cross-host comparison: with 2 and with 8 fingerprints.
TEST(CrossHost, TwoHostsDifferInTorchNccl) {
  Fingerprint a = make(json::object(), "node-a", 0);
  Fingerprint b = make(json::parse(R"({"nccl": {"header": "2.27.5", "runtime": "2.27.5"}})"), "node-b", 1);
  CheckResult r = check_fingerprints(builtin_matrix(), {a, b});
  const Finding* hit = nullptr;
  for (const auto& f : r.findings)
    if (f.id == "cross-host-mismatch" && f.subject == "NCCL runtime") hit = &f;
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->severity, "error");
  EXPECT_NE(hit->message.find("2.28.9 on node-a rank 0"), std::string::npos) << hit->message;
  EXPECT_NE(hit->message.find("2.27.5 on node-b rank 1"), std::string::npos) << hit->message;
  EXPECT_TRUE(r.failed());
}

TEST(CrossHost, EightRanksOneDriverDiffers) {
  std::vector<Fingerprint> fps;
  for (int rank = 0; rank < 8; ++rank)
    fps.push_back(make(rank == 5 ? json::parse(R"({"driver": {"version": "580.65.06"}})") : json::object(),
                       "node-" + std::to_string(rank / 4), rank));
  CheckResult r = check_fingerprints(builtin_matrix(), fps);
  std::vector<const Finding*> hits;
  for (const auto& f : r.findings)
    if (f.id == "cross-host-mismatch") hits.push_back(&f);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]->subject, "driver");
  EXPECT_NE(hits[0]->message.find("580.65.06 on node-1 rank 5"), std::string::npos) << hits[0]->message;
  EXPECT_NE(hits[0]->message.find("580.159.04 on node-0 rank 0, node-0 rank 1, node-0 rank 2, node-0 rank 3, "
                                  "node-1 rank 4, node-1 rank 6, node-1 rank 7"),
            std::string::npos)
      << hits[0]->message;
}

TEST(CrossHost, EightIdenticalRanksAgree) {
  std::vector<Fingerprint> fps;
  for (int rank = 0; rank < 8; ++rank)
    fps.push_back(make(json::object(), "node-" + std::to_string(rank / 4), rank));
  CheckResult r = check_fingerprints(builtin_matrix(), fps);
  for (const auto& f : r.findings)
    if (f.id != "nccl-known-defect" && f.id != "torch-known-defect")
      ADD_FAILURE() << f.id << ": " << f.message;  // NCCL 2.28.9's and torch 2.11.0's own (RulesBase)
  EXPECT_EQ(std::count(r.not_evaluated.begin(), r.not_evaluated.end(), "cross-host-mismatch"), 0);
}

TEST(CrossHost, OneFingerprintIsNotCompared) {
  CheckResult r = check_fingerprints(builtin_matrix(), {make(json::object())});
  EXPECT_EQ(std::count(r.not_evaluated.begin(), r.not_evaluated.end(), "cross-host-mismatch"), 1);
}

// NCCL_SOCKET_IFNAME as NCCL matches it.
struct IfnameCase {
  const char* name;
  const char* spec;
  std::vector<std::string> interfaces, selected;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const IfnameCase& c, std::ostream* os) { *os << c.name; }

const std::vector<std::string> kHost = {"lo", "eth0", "eth1", "docker0", "ib0"};

const IfnameCase kIfnames[] = {
    {"prefix", "eth", kHost, {"eth0", "eth1"}},
    {"exact", "=eth0", kHost, {"eth0"}},
    {"exact_is_not_prefix", "=eth", kHost, {}},
    {"two_prefixes", "eth1,ib", kHost, {"eth1", "ib0"}},
    {"exact_list", "=eth0,ib0", kHost, {"eth0", "ib0"}},
    {"exclude_prefix", "^docker,lo", kHost, {"eth0", "eth1", "ib0"}},
    {"exclude_exact", "^=docker0", kHost, {"lo", "eth0", "eth1", "ib0"}},
    {"exclude_exact_not_prefix", "^=eth", kHost, {"lo", "eth0", "eth1", "docker0", "ib0"}},
    {"port_suffix_ignored", "ib0:1", kHost, {"ib0"}},
    {"no_match", "en", kHost, {}},
    {"exclude_everything", "^e,l,d,i", kHost, {}},
};

class IfnameMatch : public ::testing::TestWithParam<IfnameCase> {};

TEST_P(IfnameMatch, SelectsAsNccl) {
  const auto& c = GetParam();
  std::vector<std::string> got;
  bool any = nccl_ifname_matches(c.spec, c.interfaces, &got);
  EXPECT_EQ(got, c.selected) << "NCCL_SOCKET_IFNAME=" << c.spec;
  EXPECT_EQ(any, !c.selected.empty());
}

INSTANTIATE_TEST_SUITE_P(SocketIfname, IfnameMatch, ::testing::ValuesIn(kIfnames),
                         [](const auto& info) { return std::string(info.param.name); });

// (dtype, op) and features by NCCL release.
struct OpCase {
  const char* dtype;
  const char* op;
  const char* nccl;
  bool supported;
  const char* reason_has;
  int nranks = 0;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.dtype << " " << c.op << " on " << c.nccl << " ranks=" << c.nranks;
}

const OpCase kOps[] = {
    {"f32", "sum", "2.7.8", true, ""},
    {"bf16", "sum", "2.9.9", false, "2.10.3"},
    {"bf16", "sum", "2.10.3", true, ""},
    {"f32", "avg", "2.9.9", false, "2.10.3"},
    {"f32", "premulsum", "2.11.4", true, ""},
    {"f8e4m3", "sum", "2.23.4", false, "2.24.3"},
    {"f8e4m3", "sum", "2.28.3", true, "sm_90"},
    {"f8e5m2", "max", "2.28.9", true, "sm_90"},
    {"f8e4m3", "avg", "2.28.3", false, "observed", 1},
    {"f8e4m3", "avg", "2.28.3", false, "one-rank communicator (nranks unknown)", 0},
    {"f8e4m3", "avg", "2.28.3", true, "sm_90", 2},
    {"f8e5m2", "premulsum", "2.28.9", false, "ncclLaunchOneRank", 1},
    {"f32", "avg", "2.28.3", true, "", 1},
    {"f16", "bogus", "2.28.3", false, "not a known NCCL op"},
    {"c64", "sum", "2.28.3", false, "not a known NCCL dtype"},
};

class NcclOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(NcclOps, Supported) {
  const auto& c = GetParam();
  SupportVerdict v = nccl_op_supported(builtin_matrix(), c.dtype, c.op, Version::parse(c.nccl), c.nranks);
  EXPECT_EQ(v.supported, c.supported) << v.reason;
  EXPECT_NE(v.reason.find(c.reason_has), std::string::npos) << v.reason;
  EXPECT_FALSE(v.source.empty());
}

INSTANTIATE_TEST_SUITE_P(Op, NcclOps, ::testing::ValuesIn(kOps), [](const auto& info) {
  std::string n = std::string(info.param.dtype) + "_" + info.param.op + "_" + info.param.nccl + "_ranks" +
                  std::to_string(info.param.nranks);
  std::replace(n.begin(), n.end(), '.', '_');
  return n;
});

struct FeatureCase {
  const char* feature;
  const char* nccl;
  bool supported;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const FeatureCase& c, std::ostream* os) { *os << c.feature << " on " << c.nccl; }

const FeatureCase kFeatures[] = {
    {"AlltoAll", "2.27.7", false},    {"AlltoAll", "2.28.3", true},   {"Gather", "2.28.9", true},
    {"Scatter", "2.27.3", false},     {"CommSplit", "2.17.1", false}, {"CommSplit", "2.18.1", true},
    {"PreMulSum", "2.11.4", true},    {"PreMulSum", "2.10.3", false}, {"nonblocking", "2.14.3", true},
    {"bf16", "2.10.3", true},         {"fp8", "2.23.4", false},       {"fp8", "2.24.3", true},
    {"NoSuchThing", "2.28.9", false},
};

class NcclFeatures : public ::testing::TestWithParam<FeatureCase> {};

TEST_P(NcclFeatures, Supported) {
  const auto& c = GetParam();
  SupportVerdict v = nccl_feature_supported(builtin_matrix(), c.feature, Version::parse(c.nccl));
  EXPECT_EQ(v.supported, c.supported) << v.reason;
  if (!v.supported) {
    EXPECT_FALSE(v.reason.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Feature, NcclFeatures, ::testing::ValuesIn(kFeatures), [](const auto& info) {
  std::string n = std::string(info.param.feature) + "_" + info.param.nccl;
  std::replace(n.begin(), n.end(), '.', '_');
  return n;
});

// Which collective NCCL refuses under a forced NCCL_ALGO / NCCL_PROTO (what the collective suites
// expect of a forced-algorithm case on 2 or more ranks), per nccl_algos.csv and the fallback rows.
TEST(NcclAlgoRefusal, TreeLeavesTheRingOnlyCollectivesFrom2_24) {
  const Matrix& m = builtin_matrix();
  const std::map<std::string, std::string> tree = {{"NCCL_ALGO", "Tree"}};
  for (const char* coll : {"Broadcast", "Reduce", "AllGather", "ReduceScatter"}) {
    auto why = nccl_algo_refusal(m, tree, Version::parse("2.28.9"), coll);
    ASSERT_TRUE(why.has_value()) << coll;
    EXPECT_NE(why->find("nccl_algos.csv:"), std::string::npos) << *why;
    EXPECT_NE(why->find("nccl_features.csv:AlgoRingFallback"), std::string::npos) << *why;
  }
  EXPECT_FALSE(nccl_algo_refusal(m, tree, Version::parse("2.28.9"), "AllReduce"));
  // 2.19 to 2.23 give Ring back; up to 2.18 NCCL_ALGO never took it from these collectives.
  for (const char* nccl : {"2.21.5", "2.18.6", "2.14.3"})
    EXPECT_FALSE(nccl_algo_refusal(m, tree, Version::parse(nccl), "Broadcast")) << nccl;
  // Up to 2.18 AllReduce has no fallback.
  EXPECT_TRUE(nccl_algo_refusal(m, {{"NCCL_ALGO", "NVLS"}, {"NCCL_PROTO", "LL"}}, Version::parse("2.18.6"),
                                "AllReduce"));
  EXPECT_FALSE(nccl_algo_refusal(
      m, {{"NCCL_ALGO", "allreduce:tree;broadcast:ring;reduce:ring;allgather:ring;reducescatter:ring"}},
      Version::parse("2.28.9"), "Broadcast"));
}

// A fingerprint whose visible_devices field is malformed is bad input (gpucts check: exit 2).
TEST(RulesVisibleDevices, MalformedRecordIsBadInput) {
  for (const char* patch : {R"({"visible_devices": {"spec": "0"}})",
                            R"({"visible_devices": {"resolved": [{"index": "0"}], "problems": []}})",
                            R"({"visible_devices": {"resolved": [], "problems": [{"kind": "x"}]}})"}) {
    try {
      check_fingerprints(builtin_matrix(), {make(json::parse(patch))});
      ADD_FAILURE() << "accepted " << patch;
    } catch (const FingerprintError& e) {
      EXPECT_NE(std::string(e.what()).find("visible_devices"), std::string::npos) << e.what();
    }
  }
}

TEST(RulesVisibleDevices, AbsentRecordIsNotEvaluated) {
  CheckResult r = check_fingerprints(builtin_matrix(), {make(json::object())});
  EXPECT_EQ(std::count(r.not_evaluated.begin(), r.not_evaluated.end(), "cuda-visible-devices-odd"), 1);
}

// Which torch cases a known torch defect explains: its backend, range and condition (each row kind
// of torch_defects.csv, one case that it must name and one that it must not).
TEST(TorchKnownDefects, CasesMatchByBackendReleaseAndCondition) {
  auto ids = [](const char* torch, DefectCase c) {
    std::string out;
    for (const NcclDefect* d : matching_torch_defects(builtin_matrix(), Version::parse(torch), c))
      out += (out.empty() ? "" : ",") + d->id;
    return out;
  };
  DefectCase premul{"allreduce", "bf16", "premulsum", 1021, true, 2, false, "nccl"};
  EXPECT_EQ(ids("2.11.0+cu130", premul), "torch-190745");
  DefectCase f32 = premul;
  f32.dtype = "f32";
  EXPECT_EQ(ids("2.11.0+cu130", f32), "") << "only bf16 takes the float factor";
  DefectCase on_gloo = premul;
  on_gloo.backend = "gloo";
  EXPECT_EQ(ids("2.11.0+cu130", on_gloo), "") << "a ProcessGroupNCCL defect is no Gloo case's";
  EXPECT_EQ(ids("1.12.1", premul), "") << "before the row's first release";

  DefectCase strided{"allreduce", "f32", "sum", 64, false, 2, true, "gloo"};
  EXPECT_EQ(ids("2.11.0", strided), "torch-192920");
  DefectCase contiguous = strided;
  contiguous.strided = false;
  EXPECT_EQ(ids("2.11.0", contiguous), "") << "contiguous tensors are not hit";
  DefectCase strided_nccl = strided;
  strided_nccl.backend = "nccl";
  EXPECT_EQ(ids("2.11.0", strided_nccl), "");

  DefectCase alltoall{"alltoall", "i32", "", 64, false, 2, true, "gloo"};
  EXPECT_EQ(ids("1.13.1", alltoall), "torch-192920-alltoall");
  EXPECT_EQ(ids("2.11.0", alltoall), "") << "2.x honours strides in alltoall";
  DefectCase sendrecv{"sendrecv", "f64", "", 64, false, 2, true, "gloo"};
  EXPECT_EQ(ids("2.11.0", sendrecv), "torch-192920-sendrecv");
  EXPECT_EQ(find_defect(builtin_matrix(), "torch-192920-sendrecv")->severity, "hang");
}

// Every torch the job runs: the fingerprint's Python torch, and the libtorch of the C++ suites
// where the caller knows it (once per job). A torch without CUDA has no ProcessGroupNCCL defect.
TEST(TorchKnownDefects, EveryTorchOfTheJobWarnsUnlessStrict) {
  auto of = [](const CheckResult& r, const std::string& subject) {
    std::vector<const Finding*> out;
    for (const auto& f : r.findings)
      if (f.id == "torch-known-defect" && f.subject.find(subject) != std::string::npos) out.push_back(&f);
    return out;
  };
  auto named = [](const std::vector<const Finding*>& fs, const std::string& id) {
    return std::any_of(fs.begin(), fs.end(), [&](const Finding* f) { return f->defect == id; });
  };
  const CheckResult gpu = check_fingerprints(builtin_matrix(), {make(json::object())});
  auto py = of(gpu, "torch");
  EXPECT_TRUE(named(py, "torch-190745"));
  EXPECT_TRUE(named(py, "torch-192920"));
  EXPECT_FALSE(named(py, "torch-192920-alltoall")) << "fixed before 2.11";
  for (const Finding* f : py) {
    EXPECT_EQ(f->severity, "warning") << f->message;
    EXPECT_NE(f->message.find("; only where "), std::string::npos) << f->message;
    EXPECT_NE(f->message.find("symptom: "), std::string::npos) << f->message;
    EXPECT_NE(f->source.find("torch_defects.csv:" + f->defect), std::string::npos) << f->source;
    EXPECT_FALSE(f->fix.empty()) << f->message;
  }
  EXPECT_FALSE(gpu.failed()) << "a torch defect matched by version alone warns";
  CheckOptions strict;
  strict.strict_defects = true;
  const CheckResult strict_r = check_fingerprints(builtin_matrix(), {make(json::object())}, strict);
  EXPECT_TRUE(strict_r.failed());
  for (const Finding* f : of(strict_r, "torch")) EXPECT_EQ(f->severity, "error") << f->message;

  const CheckResult cpu_r = check_fingerprints(
      builtin_matrix(),
      {make(json::parse(R"({"torch": {"version": "2.11.0+cpu", "cuda": null, "nccl": null}})"))});
  const auto cpu = of(cpu_r, "torch");
  EXPECT_FALSE(named(cpu, "torch-190745")) << "a CPU torch has no ProcessGroupNCCL";
  EXPECT_TRUE(named(cpu, "torch-192920"));

  CheckOptions with_libtorch;
  with_libtorch.libtorch = Version::parse("1.13.0");
  std::vector<Fingerprint> eight;
  for (int rank = 0; rank < 8; ++rank)
    eight.push_back(make(json::parse(R"({"torch": null})"), "node-a", rank));
  const CheckResult job = check_fingerprints(builtin_matrix(), eight, with_libtorch);
  const auto lt = of(job, "libtorch (C++ suites)");
  EXPECT_TRUE(named(lt, "torch-192920-alltoall"));
  EXPECT_FALSE(named(lt, "torch-190745")) << "this libtorch has no ProcessGroupNCCL";
  EXPECT_EQ(std::count_if(lt.begin(), lt.end(), [](const Finding* f) { return f->defect == "torch-192920"; }),
            1)
      << "the libtorch is the job's, named once";
  with_libtorch.libtorch_has_nccl = true;
  const CheckResult job_nccl = check_fingerprints(builtin_matrix(), eight, with_libtorch);
  EXPECT_TRUE(named(of(job_nccl, "libtorch"), "torch-190745"));
  const CheckResult no_torch = check_fingerprints(builtin_matrix(), eight);
  EXPECT_TRUE(of(no_torch, "torch").empty()) << "no torch, no finding";
  EXPECT_EQ(std::count(no_torch.not_evaluated.begin(), no_torch.not_evaluated.end(), "torch-known-defect"),
            1);
}

TEST(TorchKnownDefects, EveryRowIsSourcedAndSaysHowToFixIt) {
  const Matrix& m = builtin_matrix();
  ASSERT_GE(m.torch_defects.size(), 4u);
  for (const auto& d : m.torch_defects) {
    EXPECT_EQ(d.product, "torch") << d.id;
    EXPECT_TRUE(d.backend == "nccl" || d.backend == "gloo") << d.id;
    EXPECT_FALSE(d.meta.source.empty()) << d.id;
    EXPECT_EQ(d.meta.file, "torch_defects.csv") << d.id;
    EXPECT_FALSE(d.conditions.empty()) << d.id;
  }
  ASSERT_NE(find_defect(m, "torch-192920-alltoall"), nullptr);
  EXPECT_EQ(find_defect(m, "torch-192920-alltoall")->fix_hint().rfind("upgrade torch to >= 2.0.0", 0), 0u);
  EXPECT_EQ(find_defect(m, "torch-190745")->fix_hint().rfind("no fixed torch release yet", 0), 0u);
}

}  // namespace
}  // namespace cts

namespace cts {
namespace {

// Which collective cases a known defect explains (nccl_defects.csv conditions).
// torch's NCCL: the one it was built with (torch.cuda.nccl.version()) and the one its process loaded
// (the probe's /proc/self/maps + ncclGetVersion), kept side by side; the rules use the loaded one.
TEST(TorchNcclLoaded, RoundTripsAndRulesUseIt) {
  json j = base_fingerprint();
  j["torch"]["nccl_loaded"] = 23006;  // ncclGetVersion's code for 2.30.6 is 23006
  j["torch"]["nccl_library"] = "/venv/nvidia/nccl/lib/libnccl.so.2";
  j["torch"]["nccl_static"] = false;
  j["torch"]["cudnn_build"] = "9.19.0";
  const Fingerprint fp = fingerprint_from_json(j, "synthetic");
  ASSERT_TRUE(fp.torch->nccl_used());
  EXPECT_EQ(fp.torch->nccl_used()->release_str(3), "2.30.6");
  EXPECT_EQ(fp.torch->nccl->release_str(3), "2.28.9") << "the built one is kept beside it";
  const json back = to_json(fp);
  EXPECT_EQ(back["torch"]["nccl_library"], "/venv/nvidia/nccl/lib/libnccl.so.2");
  EXPECT_EQ(back["torch"]["nccl_static"], false);
  EXPECT_EQ(back["torch"]["cudnn_build"], "9.19.0");
  EXPECT_EQ(fingerprint_from_json(back, "again").torch->nccl_used()->release_str(3), "2.30.6");
  // Cross-host: two ranks whose torch was built alike but loads different NCCLs disagree.
  json other = base_fingerprint();
  other["host"] = "node-b";
  CheckResult r = check_fingerprints(builtin_matrix(), {fp, fingerprint_from_json(other, "b")});
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return f.id == "cross-host-mismatch" && f.subject == "torch NCCL" &&
           f.message.find("2.30.6") != std::string::npos;
  }));
  j["torch"]["nccl_static"] = "yes";
  try {
    fingerprint_from_json(j, "bad.json");
    FAIL() << "a non-boolean nccl_static must be refused";
  } catch (const FingerprintError& e) {
    EXPECT_NE(std::string(e.what()).find("torch.nccl_static"), std::string::npos) << e.what();
  }
}

TEST(KnownDefects, OneRankAvgMatchesOnlyTheCasesItHits) {
  const Matrix& m = builtin_matrix();
  auto ids = [&](const char* nccl, DefectCase c) {
    std::string out;
    for (const NcclDefect* d : matching_defects(m, Version::parse(nccl), c))
      out += (out.empty() ? "" : ",") + d->id;
    return out;
  };
  const DefectCase f32_avg{"AllReduce", "f32", "avg", 262145, false, 1, false, ""};
  EXPECT_EQ(ids("2.28.9", f32_avg), "nccl-1950");
  EXPECT_EQ(ids("2.19.1", f32_avg), "nccl-1950");
  EXPECT_EQ(ids("2.29.7", f32_avg), "") << "fixed in 2.29.7";
  EXPECT_EQ(ids("2.18.6", f32_avg), "") << "2.18 split the work correctly";
  EXPECT_EQ(ids("2.28.9", {"AllReduce", "i32", "avg", 262145, false, 1, false, ""}), "")
      << "integer avg is a copy";
  EXPECT_EQ(ids("2.28.9", {"ReduceScatter", "i32", "premulsum", 262145, false, 1, false, ""}), "nccl-1950");
  EXPECT_EQ(ids("2.28.9", {"Reduce", "bf16", "avg", 8193, true, 1, false, ""}), "")
      << "in place avg is not hit";
  EXPECT_EQ(ids("2.28.9", {"AllReduce", "f32", "premulsum", 262145, true, 1, false, ""}), "nccl-1950")
      << "in place PreMulSum leaves the tail unscaled";
  EXPECT_EQ(ids("2.29.3", {"AllReduce", "f32", "premulsum", 262145, true, 1, false, ""}), "nccl-1950");
  EXPECT_EQ(ids("2.28.9", {"AllReduce", "f8e4m3", "avg", 262145, false, 1, false, ""}), "")
      << "one-rank fp8 avg is refused (ncclInvalidArgument), not corrupted";
  EXPECT_EQ(ids("2.28.9", {"AllReduce", "f8e5m2", "premulsum", 262145, true, 1, false, ""}), "");
  EXPECT_EQ(ids("2.28.9", {"AllReduce", "f32", "avg", 262145, false, 2, false, ""}), "") << "one rank only";
  EXPECT_EQ(ids("2.28.9", {"AllReduce", "f32", "sum", 262145, false, 1, false, ""}), "");
  EXPECT_EQ(ids("2.28.9", {"Broadcast", "f32", "", 262145, false, 1, false, ""}), "");
}

// Matched by the NCCL version alone a defect warns, naming what a case needs to meet it and the
// fix; --strict-defects (CheckOptions) makes every such finding an error.
TEST(KnownDefects, VersionAloneWarnsUnlessStrict) {
  const Fingerprint fp =
      make(json::parse(R"({"nccl": {"header": "2.28.9", "runtime": "2.28.9"}, "torch": null})"));
  const CheckResult plain = check_fingerprints(builtin_matrix(), {fp});
  const CheckResult strict = check_fingerprints(builtin_matrix(), {fp}, CheckOptions{true});
  EXPECT_FALSE(plain.failed());
  EXPECT_TRUE(strict.failed());
  int defects = 0;
  for (const auto& f : plain.findings) {
    if (f.id != "nccl-known-defect") continue;
    ++defects;
    EXPECT_EQ(f.severity, "warning") << f.message;
    EXPECT_NE(f.message.find("; only where "), std::string::npos) << f.message;
    EXPECT_FALSE(f.fix.empty()) << f.message;
  }
  EXPECT_GT(defects, 0);
  for (const auto& f : strict.findings)
    if (f.id == "nccl-known-defect") {
      EXPECT_EQ(f.severity, "error") << f.message;
    }
  const NcclDefect* d = find_defect(builtin_matrix(), "nccl-1950");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(defect_condition_text(*d),
            "a 1-rank communicator, AllReduce/Reduce/ReduceScatter, op avg, out-of-place buffers, dtype "
            "f16/bf16/f32/f64; or a 1-rank communicator, AllReduce/Reduce/ReduceScatter, op premulsum, "
            "dtype i8/u8/i32/u32/i64/u64/f16/bf16/f32/f64");
}

// NVIDIA's cuBLASMp troubleshooting page: the RMA signal buffers defect is in NCCL 2.30.4 and fixed
// in 2.30.7 (not in 2.30.4 itself).
TEST(KnownDefects, RmaSignalBuffersFixedIn2_30_7) {
  const Matrix& m = builtin_matrix();
  auto has_it = [&](const char* nccl) {
    for (const NcclDefect* d : defects_of_release(m, Version::parse(nccl)))
      if (d->id == "nccl-2.30.4-rma-signal") return true;
    return false;
  };
  EXPECT_TRUE(has_it("2.30.4"));
  EXPECT_FALSE(has_it("2.30.7")) << "fixed in 2.30.7";
  const NcclDefect* d = find_defect(m, "nccl-2.30.4-rma-signal");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->meta.source.find("cublasmp/troubleshooting"), std::string::npos) << d->meta.source;
  EXPECT_EQ(d->fix_hint().rfind("upgrade NCCL to >= 2.30.7", 0), 0u) << d->fix_hint();
}

TEST(KnownDefects, EveryRowIsSourcedAndSaysHowToFixIt) {
  const Matrix& m = builtin_matrix();
  ASSERT_GE(m.nccl_defects.size(), 10u);
  ASSERT_NE(find_defect(m, "nccl-1950"), nullptr);
  EXPECT_EQ(find_defect(m, "nccl-1950")->fix_hint().rfind("upgrade NCCL to >= 2.29.7", 0), 0u);
  EXPECT_EQ(find_defect(m, "nccl-0"), nullptr);
  for (const auto& d : m.nccl_defects) {
    EXPECT_FALSE(d.meta.source.empty()) << d.id;
    EXPECT_EQ(d.link.rfind("https://", 0), 0u) << d.id;
    EXPECT_FALSE(d.conditions.empty()) << d.id;
    EXPECT_TRUE(d.affects(d.first)) << d.id;
    if (d.fixed) {
      EXPECT_FALSE(d.affects(*d.fixed)) << d.id;
    }
  }
}

}  // namespace
// The "did you mean" search is bounded by the length difference and a band around the diagonal:
// a 16 MiB unknown name and 20,000 unknown names take well under a second each, the near name of
// a short typo is still found.
TEST(NcclEnvLint, DidYouMeanIsFastOnHugeOrManyNames) {
  const double t0 = cts::test::cpu_seconds();
  // Sizes at which the old search took minutes (it compared every byte of every name), small
  // enough that the sanitizer build (-O0, ASan) stays well inside the bound.
  std::map<std::string, std::string> env = {{"NCCL_" + std::string(2 << 20, 'X'), "1"},
                                            {"NCCL_SOCKET_IFNAMES", "eth0"}};
  for (int i = 0; i < 2000; ++i) env["NCCL_UNKNOWN_NAME_" + std::to_string(i)] = "1";
  const auto findings = lint_nccl_env(builtin_matrix(), env, std::nullopt);
  EXPECT_LT(cts::test::cpu_seconds() - t0, 20);
  bool typo = false;
  for (const auto& f : findings)
    typo |= f.message.find("did you mean NCCL_SOCKET_IFNAME?") != std::string::npos;
  EXPECT_TRUE(typo);
  EXPECT_GE(findings.size(), 2002u);
}

}  // namespace cts
