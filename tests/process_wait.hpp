// Waiting on processes a test started through another program (a shell, a launcher, gpucts): the
// pid such a process wrote to a file, and the moment it is gone.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace cts::test {

// The pid written to `f`, once it is there (within `wait_s` seconds), else -1.
inline pid_t read_pid(const std::filesystem::path& f, double wait_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream in(f);
    long v = 0;
    if (in >> v && v > 0) return static_cast<pid_t>(v);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// Whether `pid` is gone within `s` seconds (looked at once at least): no such process, or a zombie
// its new parent has not reaped yet.
inline bool gone_within(pid_t pid, double s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  for (;;) {
    if (::kill(pid, 0) != 0) return true;
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(st, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace cts::test
