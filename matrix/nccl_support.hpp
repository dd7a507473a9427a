// What a given NCCL release supports, from the matrix data (nccl_features.csv, nccl_ops.csv,
// nccl_env.csv): (dtype, op) pairs, APIs/collectives/dtypes by first version, and the lint of NCCL_*
// environment variables that NCCL itself would accept silently or ignore.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"
#include "matrix/version.hpp"

namespace cts {

struct SupportVerdict {
  bool supported = false;
  std::string reason;  // why not (or what it needs), empty when supported without caveat
  std::string source;  // "nccl_ops.csv:f8e4m3/avg/2.24", "nccl_features.csv:AlltoAll"
};

// dtype: "i8","u8","i32","u32","i64","u64","f16","f32","f64","bf16","f8e4m3","f8e5m2"
// op: "sum","prod","max","min","avg","premulsum"
// nranks: the communicator size; 0 = unknown, then rows that only concern one-rank communicators
// apply too (the verdict is the cautious one and its reason says so).
SupportVerdict nccl_op_supported(const Matrix& m, const std::string& dtype, const std::string& op,
                                 const Version& nccl, int nranks = 0);
// feature: a name of nccl_features.csv ("AlltoAll", "Gather", "Scatter", "CommSplit", "PreMulSum",
// "bf16", "fp8", "nonblocking", ...). An unknown name is unsupported with that reason.
SupportVerdict nccl_feature_supported(const Matrix& m, const std::string& feature, const Version& nccl);

// Lints NCCL_* variables of `env` (other names are ignored). `nccl`: the library that will read
// them (absent: version checks are skipped). Findings: nccl-env-invalid-value, nccl-env-unknown
// (read by no release the data knows), nccl-env-beyond-data (unknown to the data, NCCL newer than it),
// nccl-env-newer-than-library, nccl-env-removed, nccl-env-clamped (a value NCCL replaces by its
// bound: nccl_env.csv out_of_range=clamp), nccl-socket-threads-product, nccl-p2p-disabled, nccl-ib-disabled.
std::vector<Finding> lint_nccl_env(const Matrix& m, const std::map<std::string, std::string>& env,
                                   const std::optional<Version>& nccl);

// NCCL_ALGO / NCCL_PROTO against the (collective, algorithm, protocol) rows of nccl_algos.csv that
// `nccl` implements: nccl-collective-without-algorithm (an error where the release has no Ring
// fallback, nccl_features.csv:AlgoRingFallback; a warning where it has one) naming every collective
// the setting leaves with none. Up to 2.18 NCCL_ALGO never takes Ring from a collective other than
// AllReduce (nccl_features.csv:AlgoRingKeptNonAllReduce). nullopt: the table does not model this release.
std::optional<std::vector<Finding>> nccl_algo_coverage(const Matrix& m,
                                                       const std::map<std::string, std::string>& env,
                                                       const Version& nccl);

// Whether NCCL `nccl` refuses `collective` ("Broadcast", ...) under the NCCL_ALGO / NCCL_PROTO of
// `env` on a communicator of 2 or more ranks (a one-rank communicator takes its own path and never
// asks for an algorithm): the reason, citing the rows, or nullopt where it runs it.
std::optional<std::string> nccl_algo_refusal(const Matrix& m, const std::map<std::string, std::string>& env,
                                             const Version& nccl, const std::string& collective);

// NCCL_SOCKET_IFNAME / NCCL_IB_HCA syntax: comma-separated prefixes; a leading '^' makes the list
// an exclude list; a leading '=' (after '^' if any) makes every entry an exact name. Returns whether
// at least one of `interfaces` is selected; `selected` (if given) receives them in order.
bool nccl_ifname_matches(const std::string& spec, const std::vector<std::string>& interfaces,
                         std::vector<std::string>* selected = nullptr);

}  // namespace cts
