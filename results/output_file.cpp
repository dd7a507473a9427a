#include "results/output_file.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "results/terminal_text.hpp"

namespace cts {

namespace {

std::string why(int e) { return std::strerror(e); }

// A path as an error names it: on one line, and short enough that the cause after it is read.
std::string shown(const std::string& path) { return terminal_safe(path, 1024); }

mode_t file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

// The folder part of `path` ("" or ending in '/') and its file name, once the target is checked:
// nothing but a regular file (or nothing) may be at it.
std::pair<std::string, std::string> checked_target(const std::string& path) {
  if (path.empty() || path.find('\0') != std::string::npos)
    throw OutputError("an empty or NUL-containing output path");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) throw OutputError(shown(path) + ": is a symbolic link; not writing through it");
    if (S_ISDIR(st.st_mode)) throw OutputError(shown(path) + ": is a directory");
    if (!S_ISREG(st.st_mode)) throw OutputError(shown(path) + ": exists and is not a regular file");
  }
  std::string::size_type slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") throw OutputError(shown(path) + ": not a file name");
  return {dir, base};
}

// write(2) of all of `n` bytes at `p`; false with errno set.
bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Checks the target, creates a fresh hidden file beside it, has `fill(fd)` write it (false with
// errno set: `what` went wrong) and flushes it; returns that file's name. Nothing is at the target yet.
template <class Fill>
std::string write_beside(const std::string& path, const char* what, Fill fill) {
  const auto [dir, base] = checked_target(path);
  // The hidden temporary name stays within NAME_MAX: a long base is shortened for it.
  std::string tmpl = dir + "." + base.substr(0, 200) + ".XXXXXX";
  std::vector<char> t(tmpl.begin(), tmpl.end());
  t.push_back('\0');
  int fd = ::mkostemp(t.data(), O_CLOEXEC);  // O_CREAT|O_EXCL: a link or file there is never opened
  if (fd < 0) {
    const std::string cause = why(errno);
    throw OutputError(shown(path) + ": cannot create a file beside it: " + cause);
  }
  std::string tmp(t.data());
  auto give_up = [&](const std::string& failed) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw OutputError(shown(path) + ": " + failed + ": " + why(e));
  };
  ::fchmod(fd, file_mode());
  if (!fill(fd)) give_up(what);
  if (::fsync(fd) != 0 && errno != EINVAL) give_up("cannot flush to disk");
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw OutputError(shown(path) + ": write error: " + why(e));
  }
  return tmp;
}

std::string write_text_beside(const std::string& path, std::string_view text) {
  return write_beside(path, "write error", [&](int fd) { return write_all(fd, text.data(), text.size()); });
}

void move_into_place(const std::string& tmp, const std::string& path) {
  // rename(2) replaces the directory entry itself: a link put there since the check above is
  // replaced, never followed.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw OutputError(shown(path) + ": cannot rename into place: " + why(e));
  }
}

}  // namespace

void check_output_path(const std::string& path) {
  const std::string folder = checked_target(path).first;
  struct stat st {};
  int e = 0;
  if (::stat(folder.empty() ? "." : folder.c_str(), &st) != 0)
    e = errno;
  else if (!S_ISDIR(st.st_mode))
    e = ENOTDIR;
  else if (::access(folder.empty() ? "." : folder.c_str(), W_OK | X_OK) != 0)
    e = errno;
  if (e != 0) throw OutputError(shown(path) + ": cannot create a file beside it: " + why(e));
}

void write_file_atomic(const std::string& path, std::string_view text) {
  move_into_place(write_text_beside(path, text), path);
}

void copy_file_atomic(const std::string& from, const std::string& to) {
  // O_NONBLOCK: a FIFO put at `from` is refused below, not waited on.
  const int in = ::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  struct stat st {};
  if (in < 0 || ::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = in < 0 ? errno : EINVAL;
    if (in >= 0) ::close(in);
    throw OutputError(shown(from) + ": cannot copy: " + (e == EINVAL ? "not a regular file" : why(e)));
  }
  std::string tmp;
  try {
    tmp = write_beside(to, "cannot copy from the source", [&](int fd) {
      char buf[1 << 16];
      for (;;) {
        const ssize_t n = ::read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n == 0;
        if (!write_all(fd, buf, static_cast<std::size_t>(n))) return false;
      }
    });
  } catch (...) {
    ::close(in);
    throw;
  }
  ::close(in);
  move_into_place(tmp, to);
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> ready;
  try {
    for (const auto& [path, text] : files) ready.push_back(write_text_beside(path, text));
  } catch (const OutputError&) {
    for (const auto& tmp : ready) ::unlink(tmp.c_str());
    throw;
  }
  for (std::size_t i = 0; i < files.size(); ++i) move_into_place(ready[i], files[i].first);
}

int open_output_stream(const std::string& path, int flags) {
  int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | flags, 0644);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace cts
