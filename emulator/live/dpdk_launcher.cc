#include "emulator/live/dpdk_launcher.h"

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <memory>
#include <thread>

namespace flexplane::live {

namespace {
int trampoline(void* arg) {
  (*static_cast<std::function<void()>*>(arg))();
  return 0;
}
}  // namespace

std::vector<unsigned> idle_worker_lcores() {
  std::vector<unsigned> out;
  unsigned id;
  RTE_LCORE_FOREACH_WORKER(id) {
    if (rte_eal_get_lcore_state(id) == WAIT) out.push_back(id);
  }
  return out;
}

void DpdkLauncher::run(std::vector<std::function<void()>> jobs, const std::function<void()>& monitor) {
  placement_.assign(jobs.size(), -1);
  // Stable storage: the lcores call through pointers into this vector.
  std::vector<std::unique_ptr<std::function<void()>>> owned;
  std::vector<unsigned> launched;
  std::vector<std::thread> threads;
  std::function<void()> on_caller;
  size_t next_lcore = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (next_lcore < lcores_.size()) {
      owned.push_back(std::make_unique<std::function<void()>>(std::move(jobs[i])));
      const unsigned lc = lcores_[next_lcore++];
      if (rte_eal_remote_launch(trampoline, owned.back().get(), lc) == 0) {
        launched.push_back(lc);
        placement_[i] = static_cast<int>(lc);
        continue;
      }
      jobs[i] = std::move(*owned.back());  // lcore busy: fall through to a thread
    }
    if (!monitor && use_caller_ && !on_caller && i + 1 == jobs.size()) {
      on_caller = std::move(jobs[i]);
      placement_[i] = -2;
      continue;
    }
    threads.emplace_back(std::move(jobs[i]));
  }
  if (monitor) monitor();
  if (on_caller) on_caller();
  for (auto& t : threads) t.join();
  for (unsigned lc : launched) rte_eal_wait_lcore(lc);
}

}  // namespace flexplane::live
