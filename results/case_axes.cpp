#include "results/case_axes.hpp"

#include <cctype>
#include <limits>

namespace cts {
namespace {

// A decimal number without sign, space or suffix.
std::optional<std::uint64_t> whole_number(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char ch : s) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(ch - '0');
  }
  return v;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> axis_properties(const CaseAxes& a) {
  std::vector<std::pair<std::string, std::string>> p = {{axis::kCollective, a.collective},
                                                        {axis::kDtype, a.dtype}};
  if (!a.op.empty()) p.emplace_back(axis::kOp, a.op);
  if (a.count) p.emplace_back(axis::kCount, std::to_string(*a.count));
  p.emplace_back(axis::kPlacement, a.placement);
  p.emplace_back(axis::kWorld, std::to_string(a.world));
  p.emplace_back(axis::kVariant, a.variant);
  return p;
}

std::optional<CaseAxes> axes_from_properties(const std::map<std::string, std::string>& properties) {
  auto get = [&](const char* name) {
    auto it = properties.find(name);
    return it == properties.end() ? std::string() : it->second;
  };
  CaseAxes a;
  a.collective = get(axis::kCollective);
  if (a.collective.empty()) return std::nullopt;
  a.dtype = get(axis::kDtype);
  a.op = get(axis::kOp);
  a.placement = get(axis::kPlacement);
  a.variant = get(axis::kVariant);
  if (properties.count(axis::kCount)) {
    a.count = whole_number(get(axis::kCount));
    if (!a.count) return std::nullopt;
  }
  if (properties.count(axis::kWorld)) {
    const auto w = whole_number(get(axis::kWorld));
    if (!w || *w > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) return std::nullopt;
    a.world = static_cast<int>(*w);
  }
  return a;
}

}  // namespace cts
