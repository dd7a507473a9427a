// Known upstream NCCL defects (nccl_defects.csv) and torch defects (torch_defects.csv, by torch
// release and process group): which releases have them and which collective cases they hit. A
// failing case that matches a row names the defect; `gpucts check` warns or fails on a loaded NCCL
// or a torch inside a row's range; `qualify --accept-known ID` can waive exactly them.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "matrix/matrix.hpp"

namespace cts {

// One collective case as the defect conditions see it (names as the suites print them).
struct DefectCase {
  std::string collective;  // "AllReduce"
  std::string dtype;       // "f32"
  std::string op;          // "avg"; "" for a non-reducing collective
  std::size_t count = 0;   // elements per rank buffer as the case states it
  bool in_place = false;
  int nranks = 1;
  bool strided = false;  // a non-contiguous tensor (torch rows with layout strided)
  std::string backend;   // torch rows: the case's process group, nccl | gloo
};

// The defects whose range holds `nccl` and whose condition holds for `c`, in file order.
std::vector<const NcclDefect*> matching_defects(const Matrix& m, const Version& nccl, const DefectCase& c);
// The defects whose range holds `nccl` (whatever the case), in file order.
std::vector<const NcclDefect*> defects_of_release(const Matrix& m, const Version& nccl);
// torch's: the rows of torch_defects.csv whose range holds torch `torch`, whose backend is the
// case's and whose condition holds (collectives by c10d's names: allreduce, reduce_scatter, ...).
std::vector<const NcclDefect*> matching_torch_defects(const Matrix& m, const Version& torch,
                                                      const DefectCase& c);
std::vector<const NcclDefect*> torch_defects_of_release(const Matrix& m, const Version& torch);
// Either table's row by id ("nccl-1950", "torch-190745"); nullptr where neither has it.
const NcclDefect* find_defect(const Matrix& m, const std::string& id);
// What a case (or a machine) needs to meet the defect, every row of it: "a 1-rank communicator,
// AllReduce/Reduce/ReduceScatter, op avg, out-of-place buffers, dtype f16/bf16/f32; or ...".
std::string defect_condition_text(const NcclDefect& d);

}  // namespace cts
