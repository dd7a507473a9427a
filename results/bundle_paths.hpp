// Paths a bundle records (manifest XML and log paths, fingerprints/, bandwidth/) resolved so that a
// report never reads outside the bundle: no absolute path, no "..", no symbolic link on the way.
#pragma once
#include <optional>
#include <string>

namespace cts {

// `root`/`relative` when `relative` is a relative path without ".." components and no component
// from root down is a symbolic link, and the file (or folder) is there; else nullopt with *why set
// to one line ("absolute path", "'..' in the path", "a symbolic link: fingerprints/x.json",
// "no such file").
std::optional<std::string> inside_bundle(const std::string& root, const std::string& relative,
                                         std::string* why);

}  // namespace cts
