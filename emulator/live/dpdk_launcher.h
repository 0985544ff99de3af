// CoreLauncher on DPDK lcores (docs/live.md, "Threads and lcores").
//
// The engine's per-core jobs go to the given worker lcores with
// rte_eal_remote_launch(). Jobs beyond the lcores given run on plain threads
// (with live.sleep_when_ahead the engine sleeps when ahead, so sharing a CPU
// works). When there is no monitor, the last job runs on the calling lcore
// itself instead of a thread. Must be called from the main lcore (DPDK only
// launches from there); the lcores must be idle (WAIT state).
#pragma once

#include <functional>
#include <vector>

#include "emulator/engine/core_launcher.h"

namespace flexplane::live {

class DpdkLauncher final : public CoreLauncher {
 public:
  // `lcores`: worker lcores for the engine's jobs, in order.
  explicit DpdkLauncher(std::vector<unsigned> lcores, bool use_caller = true)
      : lcores_(std::move(lcores)), use_caller_(use_caller) {}
  void run(std::vector<std::function<void()>> jobs, const std::function<void()>& monitor) override;
  bool cpu_per_job(size_t jobs) const override { return jobs <= lcores_.size(); }

  // Where the last run() placed its jobs: lcore id, or -1 (thread) / -2 (caller).
  const std::vector<int>& placement() const { return placement_; }

 private:
  std::vector<unsigned> lcores_;
  bool use_caller_;
  std::vector<int> placement_;
};

// Worker lcores that are enabled and currently idle, in id order.
std::vector<unsigned> idle_worker_lcores();

}  // namespace flexplane::live
