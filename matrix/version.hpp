// One version type for every string the stack prints: PEP 440 torch versions
// (2.1.0a0+git4c55dc5, 2.11.0+cu130), Debian/RPM packages (2.19.3-1+cuda12.2), drivers
// (535.104.05), cuDNN (9.1.0.70) and the integer codes the C APIs return (13000, 22809, 91900).
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cts {

// How to read a bare integer: the C APIs pack versions differently.
enum class VersionKind {
  Generic,   // "2" is version 2; a packed code is never guessed
  Cuda,      // cudaRuntimeGetVersion: 1000*major + 10*minor (13000 -> 13.0, 12040 -> 12.4)
  Nccl,      // NCCL_VERSION_CODE: 10000*major + 100*minor + patch; <= 2.8: 1000*major + 100*minor + patch
  Cudnn,     // cudnnGetVersion: 9.x: 10000*major + 100*minor + patch; 8.x: 1000*major + 100*minor + patch
  TorchNccl  // torch::cuda::nccl::version(): (major << 32) | (minor << 16) | patch
};

class VersionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Version {
  std::vector<long> release;  // 2.19.3 -> {2, 19, 3}
  std::string pre_label;      // "a", "b", "rc" (PEP 440), empty if final
  long pre_number = 0;
  std::optional<long> post;              // 2.26.2.post1
  std::optional<long> dev;               // 2.6.0.dev20241112
  std::optional<long> package_revision;  // the "-1" of 2.19.3-1 (Debian/RPM)
  std::string local;                     // "cu130", "git4c55dc5", "cuda12.2" (after '+')
  std::string raw;                       // exactly what was parsed

  // Throws VersionError naming the text and what is wrong.
  static Version parse(std::string_view text, VersionKind kind = VersionKind::Generic);
  static std::optional<Version> try_parse(std::string_view text, VersionKind kind = VersionKind::Generic,
                                          std::string* error = nullptr);
  static Version from_code(long long code, VersionKind kind);

  long major() const { return component(0); }
  long minor() const { return component(1); }
  long patch() const { return component(2); }
  long component(size_t i) const { return i < release.size() ? release[i] : 0; }

  // "+cuda12.2" build qualifier of NVIDIA packages, if any.
  std::optional<Version> build_cuda() const;
  // "+cu130" local tag of PyTorch wheels, if any (13.0).
  std::optional<Version> torch_cuda_tag() const;
  bool is_prerelease() const { return !pre_label.empty() || dev.has_value(); }

  // Full PEP 440 ordering: dev < a < b < rc < final < post; a local label sorts above its base.
  int compare(const Version& other) const;
  // Numeric release components only, the first `precision` of them (zeros pad): 12.4 == 12.4.1 at 2.
  int compare_release(const Version& other, size_t precision = static_cast<size_t>(-1)) const;
  bool same_release(const Version& other, size_t precision = static_cast<size_t>(-1)) const {
    return compare_release(other, precision) == 0;
  }

  std::string str() const;                                                    // normalized form
  std::string release_str(size_t precision = static_cast<size_t>(-1)) const;  // "2.28.9", "13.0"
  long nccl_code() const;  // 2.28.9 -> 22809, 2.8.4 -> 2804
};

inline bool operator<(const Version& a, const Version& b) { return a.compare(b) < 0; }
inline bool operator>(const Version& a, const Version& b) { return a.compare(b) > 0; }
inline bool operator<=(const Version& a, const Version& b) { return a.compare(b) <= 0; }
inline bool operator>=(const Version& a, const Version& b) { return a.compare(b) >= 0; }
inline bool operator==(const Version& a, const Version& b) { return a.compare(b) == 0; }
inline bool operator!=(const Version& a, const Version& b) { return a.compare(b) != 0; }

}  // namespace cts
