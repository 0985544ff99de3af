// How the engine gets its cores. Virtual-time runs use plain threads; the live
// emulator launches the same per-core loops on DPDK lcores
// (rte_eal_remote_launch) through this same seam, so the engine never knows
// which runtime it is on.
#pragma once

#include <pthread.h>
#include <sched.h>

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
  // Whether run() would give each of `jobs` jobs a CPU of its own. Engine
  // cores that wait for each other then only spin: yielding could hand the
  // CPU to another process for a whole scheduler tick while the core being
  // waited for runs elsewhere.
  virtual bool cpu_per_job(size_t jobs) const { return false; }
};

// Best effort: the thread runs wherever the OS likes if this fails.
inline void pin_to_cpu(std::thread& t, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(t.native_handle(), sizeof one, &one);
}

// The CPUs this process may run on (sched_getaffinity), in increasing order.
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  return cpus;
}

// Plain threads. When there are at least as many CPUs allowed as jobs, job i
// is pinned to the i-th allowed CPU: engine cores spin-wait on each other, so
// two of them sharing a CPU (or migrating) costs far more than it would for
// ordinary threads.
class ThreadLauncher final : public CoreLauncher {
 public:
  void run(std::vector<std::function<void()>> jobs, const std::function<void()>& monitor) override {
    const std::vector<int> cpus = jobs.size() > 1 ? allowed_cpus() : std::vector<int>{};
    const bool pin = jobs.size() > 1 && cpus.size() >= jobs.size();
    std::vector<std::thread> threads;
    threads.reserve(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      threads.emplace_back(std::move(jobs[i]));
      if (pin) pin_to_cpu(threads.back(), cpus[i]);
    }
    if (monitor) monitor();
    for (auto& t : threads) t.join();
  }
  bool cpu_per_job(size_t jobs) const override { return jobs <= 1 || allowed_cpus().size() >= jobs; }
};

}  // namespace flexplane
