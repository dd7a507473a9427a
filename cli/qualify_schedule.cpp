#include "cli/qualify_schedule.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace cts::qualify {

void run_side_by_side(std::size_t n, int jobs, const std::function<bool(std::size_t)>& alone,
                      const std::function<void(std::size_t)>& run) {
  jobs = std::max(jobs, 1);
  std::mutex mu;
  std::condition_variable changed;
  int running = 0;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  auto wait_until = [&](auto ready) {
    std::unique_lock<std::mutex> lock(mu);
    changed.wait(lock, [&] { return ready(); });
  };
  auto record = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!first_error) first_error = e;
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (alone(i) || jobs == 1) {
      wait_until([&] { return running == 0; });
      try {
        run(i);
      } catch (...) {
        record(std::current_exception());
      }
      continue;
    }
    wait_until([&] { return running < jobs; });
    {
      std::lock_guard<std::mutex> lock(mu);
      ++running;
    }
    threads.emplace_back([&, i] {
      try {
        run(i);
      } catch (...) {
        record(std::current_exception());
      }
      std::lock_guard<std::mutex> lock(mu);
      --running;
      changed.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace cts::qualify
