#include "matrix/nccl_defects.hpp"

#include <algorithm>

namespace cts {

namespace {

bool listed(const std::vector<std::string>& list, const std::string& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

bool condition_holds(const DefectCondition& d, const DefectCase& c) {
  if (!d.other.empty()) return false;  // depends on what a case cannot see: only `check` raises it
  if (c.nranks < d.nranks_min || (d.nranks_max > 0 && c.nranks > d.nranks_max)) return false;
  if (!listed(d.collectives, c.collective) || !listed(d.dtypes, c.dtype)) return false;
  if (!d.ops.empty() && (c.op.empty() || !listed(d.ops, c.op))) return false;
  if (!d.placement.empty() && d.placement != (c.in_place ? "in_place" : "out_of_place")) return false;
  if (!d.layout.empty() && d.layout != (c.strided ? "strided" : "contiguous")) return false;
  return true;
}

bool any_condition_holds(const NcclDefect& d, const DefectCase& c) {
  return std::any_of(d.conditions.begin(), d.conditions.end(),
                     [&](const DefectCondition& x) { return condition_holds(x, c); });
}

// The rows of one table whose release range holds `v` and for which `keep` holds.
template <class Keep>
std::vector<const NcclDefect*> rows_affecting(const std::vector<NcclDefect>& table, const Version& v,
                                              Keep keep) {
  std::vector<const NcclDefect*> out;
  for (const auto& d : table)
    if (d.affects(v) && keep(d)) out.push_back(&d);
  return out;
}

bool any_row(const NcclDefect&) { return true; }

}  // namespace

std::vector<const NcclDefect*> matching_defects(const Matrix& m, const Version& nccl, const DefectCase& c) {
  return rows_affecting(m.nccl_defects, nccl, [&](const NcclDefect& d) { return any_condition_holds(d, c); });
}

std::vector<const NcclDefect*> defects_of_release(const Matrix& m, const Version& nccl) {
  return rows_affecting(m.nccl_defects, nccl, any_row);
}

std::vector<const NcclDefect*> matching_torch_defects(const Matrix& m, const Version& torch,
                                                      const DefectCase& c) {
  return rows_affecting(m.torch_defects, torch, [&](const NcclDefect& d) {
    return d.backend == c.backend && any_condition_holds(d, c);
  });
}

std::vector<const NcclDefect*> torch_defects_of_release(const Matrix& m, const Version& torch) {
  return rows_affecting(m.torch_defects, torch, any_row);
}

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "/") + x;
  return s;
}

std::string condition_text(const DefectCondition& d) {
  std::vector<std::string> parts;
  if (d.nranks_min == d.nranks_max)
    parts.push_back("a " + std::to_string(d.nranks_min) + "-rank communicator");
  else if (d.nranks_max > 0)
    parts.push_back(std::to_string(d.nranks_min) + " to " + std::to_string(d.nranks_max) + " ranks");
  else if (d.nranks_min > 1)
    parts.push_back(std::to_string(d.nranks_min) + " or more ranks");
  if (!d.collectives.empty()) parts.push_back(joined(d.collectives));
  if (!d.ops.empty()) parts.push_back("op " + joined(d.ops));
  if (!d.placement.empty())
    parts.push_back(d.placement == "in_place" ? "in-place buffers" : "out-of-place buffers");
  if (!d.layout.empty()) parts.push_back(d.layout == "strided" ? "strided tensors" : "contiguous tensors");
  if (!d.dtypes.empty()) parts.push_back("dtype " + joined(d.dtypes));
  if (!d.other.empty()) parts.push_back(d.other);
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s.empty() ? "any collective" : s;
}

}  // namespace

std::string defect_condition_text(const NcclDefect& d) {
  std::string s;
  for (const auto& c : d.conditions) {
    std::string one = condition_text(c);
    if (s.find(one) == std::string::npos) s += (s.empty() ? "" : "; or ") + one;
  }
  return s;
}

const NcclDefect* find_defect(const Matrix& m, const std::string& id) {
  for (const auto* table : {&m.nccl_defects, &m.torch_defects})
    for (const auto& d : *table)
      if (d.id == id) return &d;
  return nullptr;
}

}  // namespace cts
