#include "results/bundle_paths.hpp"

#include <filesystem>

namespace fs = std::filesystem;

namespace cts {

std::optional<std::string> inside_bundle(const std::string& root, const std::string& relative,
                                         std::string* why) {
  const fs::path rel(relative);
  if (relative.empty() || rel.has_root_path()) {
    *why = relative.empty() ? "an empty path" : "an absolute path";
    return std::nullopt;
  }
  if (relative.find('\0') != std::string::npos) {
    *why = "a NUL byte in the path";
    return std::nullopt;
  }
  fs::path at(root);
  fs::path walked;
  for (const auto& part : rel) {
    if (part == "..") {
      *why = "'..' in the path";
      return std::nullopt;
    }
    if (part == "." || part.empty()) continue;
    at /= part;
    walked /= part;
    std::error_code ec;
    const auto st = fs::symlink_status(at, ec);
    if (ec || !fs::exists(st)) {
      *why = "no such file: " + walked.string();
      return std::nullopt;
    }
    if (fs::is_symlink(st)) {
      *why = "a symbolic link: " + walked.string();
      return std::nullopt;
    }
  }
  return at.string();
}

}  // namespace cts
