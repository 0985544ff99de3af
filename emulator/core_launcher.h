// How the engine gets its cores. Virtual-time runs use plain threads; the live
// emulator launches the same per-core loops on DPDK lcores
// (rte_eal_remote_launch) through this same seam, so the engine never knows
// which runtime it is on.
#pragma once

#include <functional>
#include <thread>
#include <vector>

namespace flexplane {

class CoreLauncher {
 public:
  virtual ~CoreLauncher() = default;
  // Run each job on its own core; returns when all have finished. `monitor`
  // runs on the calling thread meanwhile and must return once `done()` is true.
  virtual void run(std::vector<std::function<void()>> jobs, const std::function<void()>& monitor) = 0;
};

class ThreadLauncher final : public CoreLauncher {
 public:
  void run(std::vector<std::function<void()>> jobs, const std::function<void()>& monitor) override {
    std::vector<std::thread> threads;
    threads.reserve(jobs.size());
    for (auto& job : jobs) threads.emplace_back(std::move(job));
    if (monitor) monitor();
    for (auto& t : threads) t.join();
  }
};

}  // namespace flexplane
