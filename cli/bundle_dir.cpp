#include "cli/bundle_dir.hpp"

#include "results/terminal_text.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

namespace fs = std::filesystem;

namespace cts {

namespace {

std::string shown(const std::string& p) { return terminal_safe(p, 200); }

void make_subfolders(const fs::path& dir, const std::vector<std::string>& subfolders) {
  for (const auto& sub : subfolders) {
    std::error_code ec;
    fs::create_directories(dir / sub, ec);
    if (ec) throw BundleDirError("cannot create " + shown((dir / sub).string()) + ": " + ec.message());
  }
}

// Builds the folder under a temporary name beside `out`, then renames it into place; false when
// `out` appeared meanwhile (someone else's, or an empty folder to claim instead).
bool claim_new(const fs::path& out, const std::vector<std::string>& subfolders) {
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::random_device rd;
  const fs::path tmp = parent / (".gpucts-new-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  if (::mkdir(tmp.c_str(), 0755) != 0)
    throw BundleDirError("cannot create " + shown(out.string()) + ": " + std::strerror(errno));
  try {
    make_subfolders(tmp, subfolders);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(), RENAME_NOREPLACE) == 0) return true;
  const int e = errno;
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (e == EEXIST) return false;
  throw BundleDirError("cannot create " + shown(out.string()) + ": " + std::strerror(e));
}

void claim_existing(const fs::path& out, const std::vector<std::string>& subfolders) {
  std::error_code ec;
  if (!fs::is_directory(out, ec))
    throw BundleDirError(shown(out.string()) + " exists and is not a folder (qualify writes a new bundle)");
  const fs::path claim = out / kClaimFile;
  const int fd = ::open(claim.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST)
    throw BundleDirError(shown(out.string()) + " is being claimed by another gpucts qualify (" +
                         shown(claim.string()) + " exists; remove it if no run uses the folder)");
  if (fd < 0) throw BundleDirError("cannot claim " + shown(out.string()) + ": " + std::strerror(errno));
  ::close(fd);
  auto release = [&] { fs::remove(claim, ec); };
  // Only the claim may be there: a run that claimed it before us has made its subfolders.
  for (const auto& e : fs::directory_iterator(out, ec))
    if (e.path().filename() != kClaimFile) {
      release();
      throw BundleDirError(shown(out.string()) +
                           " exists and is not an empty folder (qualify writes a new bundle)");
    }
  try {
    make_subfolders(out, subfolders);
  } catch (...) {
    release();
    throw;
  }
  release();
}

}  // namespace

std::string claim_bundle_dir(const std::string& out, const std::vector<std::string>& subfolders) {
  if (out.empty()) throw BundleDirError("--output '': names no folder");
  fs::path dir = fs::path(out).lexically_normal();
  if (dir.filename().empty() && dir.has_parent_path()) dir = dir.parent_path();  // "out/"
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec)) && claim_new(dir, subfolders))
    return fs::canonical(dir).string();
  claim_existing(dir, subfolders);
  return fs::canonical(dir).string();
}

}  // namespace cts
