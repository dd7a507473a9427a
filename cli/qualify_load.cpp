#include "cli/qualify_load.hpp"

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"

namespace fs = std::filesystem;

namespace cts::qualify {

std::map<std::string, std::string> read_built_against(const std::string& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string built_against_file(const Tree& t) {
  const fs::path dir =
      t.kind == "build" ? fs::path(t.root) : fs::path(t.kind == "file" ? t.root : t.tests_json).parent_path();
  return (dir / "gpucts_built_against.txt").string();
}

namespace {

// A 64-bit ELF file whose program interpreter (PT_INTERP) is glibc's: its listing applies to it.
// A script, a static program or anything else would run for real under LD_TRACE_LOADED_OBJECTS.
bool is_dynamic_elf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return false;
  if (std::string(reinterpret_cast<const char*>(h.e_ident), SELFMAG) != ELFMAG ||
      h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phnum > 4096)
    return false;
  for (int i = 0; i < h.e_phnum; ++i) {
    Elf64_Phdr p{};
    in.seekg(static_cast<std::streamoff>(h.e_phoff + i * sizeof p));
    if (!in.read(reinterpret_cast<char*>(&p), sizeof p)) return false;
    if (p.p_type != PT_INTERP) continue;
    // glibc's loader (ld-linux*.so): the one that lists instead of running under that variable.
    std::string interp(std::min<Elf64_Xword>(p.p_filesz, 256), '\0');
    in.seekg(static_cast<std::streamoff>(p.p_offset));
    return in.read(interp.data(), static_cast<std::streamsize>(interp.size())) &&
           interp.find("/ld-linux") != std::string::npos;
  }
  return false;
}

}  // namespace

std::vector<std::string> missing_libraries(const std::string& program) {
  if (::access(program.c_str(), X_OK) != 0 || !fs::is_regular_file(program) || !is_dynamic_elf(program))
    return {};
  proc::Options o;
  o.set_env = {"LD_TRACE_LOADED_OBJECTS=1"};
  o.unset_env = {"LD_PRELOAD"};
  o.timeout_s = 30;
  proc::Result r = proc::run({program}, o);
  std::vector<std::string> out;
  std::stringstream ss(r.output);
  // "\tlibtorch_cpu.so.1.13 => not found"
  for (std::string line; std::getline(ss, line);) {
    auto at = line.find(" => not found");
    if (at == std::string::npos) continue;
    auto begin = line.find_first_not_of(" \t");
    if (begin < at) out.push_back(line.substr(begin, at - begin));
  }
  return out;
}

std::string unloadable_reason(const TestEntry& e, const std::map<std::string, std::string>& built_against) {
  std::vector<std::string> programs;
  for (size_t i = 0; i < e.command.size(); ++i) {
    if (i == 0) {
      if (auto exe = find_program(e.command[0])) programs.push_back(*exe);
    } else if (e.command[i].find('/') != std::string::npos && e.command[i][0] != '-') {
      programs.push_back(e.command[i]);
    }
  }
  for (const auto& p : programs) {
    auto missing = missing_libraries(p);
    if (missing.empty()) continue;
    // Libraries of one origin together, one bracket after them: "needs a.so.1, b.so.1 (built
    // against libtorch 1.13.0), absent here".
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    for (const auto& lib : missing) {
      std::string from;
      size_t best = 0;
      for (const auto& [prefix, what] : built_against)
        if (lib.rfind(prefix, 0) == 0 && prefix.size() > best) best = prefix.size(), from = what;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == from; });
      if (g == groups.end()) g = groups.insert(groups.end(), {from, {}});
      g->second.push_back(lib);
    }
    std::string why;
    for (const auto& [from, libs] : groups) {
      for (const auto& lib : libs) why += (why.empty() ? "needs " : ", ") + lib;
      if (!from.empty()) why += " (built against " + from + ")";
    }
    return why + ", absent here";
  }
  return "";
}

}  // namespace cts::qualify
