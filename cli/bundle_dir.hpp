// The bundle folder of one `gpucts qualify` run, claimed atomically: two runs given the same
// --output never both write into it.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace cts {

// Why a folder cannot be this run's bundle; what() is one line naming it.
class BundleDirError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Claims `out` with its `subfolders` and returns its canonical path. A folder that does not exist
// is built beside it under a temporary name and renamed into place with RENAME_NOREPLACE (the
// claim: the rename of a second run fails). An existing empty folder is claimed by creating the
// file kClaimFile in it with O_EXCL and checking that nothing else is there, then creating the
// subfolders and removing the file (it stays only where the run died between the two: a later
// run then names it). Throws BundleDirError for "" and for a folder that is not empty, is a file
// or is being claimed by another run.
inline constexpr const char* kClaimFile = ".gpucts-claim";
std::string claim_bundle_dir(const std::string& out, const std::vector<std::string>& subfolders);

}  // namespace cts
