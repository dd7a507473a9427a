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
  return true;
}

bool any_condition_holds(const NcclDefect& d, const DefectCase& c) {
  return std::any_of(d.conditions.begin(), d.conditions.end(),
                     [&](const DefectCondition& x) { return condition_holds(x, c); });
}

}  // namespace

std::vector<const NcclDefect*> matching_defects(const Matrix& m, const Version& nccl, const DefectCase& c) {
  std::vector<const NcclDefect*> out;
  for (const auto& d : m.nccl_defects)
    if (d.affects(nccl) && any_condition_holds(d, c)) out.push_back(&d);
  return out;
}

std::vector<const NcclDefect*> defects_of_release(const Matrix& m, const Version& nccl) {
  std::vector<const NcclDefect*> out;
  for (const auto& d : m.nccl_defects)
    if (d.affects(nccl)) out.push_back(&d);
  return out;
}

const NcclDefect* find_defect(const Matrix& m, const std::string& id) {
  for (const auto& d : m.nccl_defects)
    if (d.id == id) return &d;
  return nullptr;
}

}  // namespace cts
