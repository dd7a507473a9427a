// What a collective case is about (its axes), recorded by the case itself as one JUnit property per
// axis ("gpucts.axis.dtype" = "bf16"), so that a report reads the axes back as such instead of
// parsing them out of the case's name. The properties travel with the case: gtest's <properties>
// of the testcase, then the merged JUnit file's <system-out> (junit.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cts {

struct CaseAxes {
  std::string collective;              // the row of the collective table ("AllReduce"); "" if none
  std::string dtype;                   // "bf16"
  std::string op;                      // "" for a collective that does not reduce
  std::optional<std::uint64_t> count;  // elements of the row's count argument
  std::string placement;               // kInPlace | kOutOfPlace ("" when not known)
  int world = 0;                       // ranks of the world the case is listed for (0: not known)
  std::string variant;                 // "plain", "graph", "algoTree", ... ("" when not known)
};

inline constexpr const char* kInPlace = "in_place";
inline constexpr const char* kOutOfPlace = "out_of_place";

// The property names, one per axis.
namespace axis {
inline constexpr const char* kCollective = "gpucts.axis.collective";
inline constexpr const char* kDtype = "gpucts.axis.dtype";
inline constexpr const char* kOp = "gpucts.axis.op";
inline constexpr const char* kCount = "gpucts.axis.count";
inline constexpr const char* kPlacement = "gpucts.axis.placement";
inline constexpr const char* kWorld = "gpucts.axis.world";
inline constexpr const char* kVariant = "gpucts.axis.variant";
}  // namespace axis

// The properties a case records for its axes, in the order above; no op property where it has none.
std::vector<std::pair<std::string, std::string>> axis_properties(const CaseAxes& a);

// The axes back from a case's properties. nullopt when the case recorded none (no
// gpucts.axis.collective: an older bundle, or not a collective case) or when a count or world is
// not a number, so that the reader falls back to what it knew before.
std::optional<CaseAxes> axes_from_properties(const std::map<std::string, std::string>& properties);

}  // namespace cts
