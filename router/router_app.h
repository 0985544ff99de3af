// flexplane-router as an object: ports, forwarding table, workers, control
// thread and outputs. The binary (router_main.cc) and the in-process tests
// drive the same object. EAL must be initialised first.
//
//   RouterApp app(load_config("r.yaml"));
//   std::thread t([&] { ...; app.request_reload(); ...; app.request_stop(); });
//   app.run();              // on the main lcore: returns once drained
//   app.write_outputs();
#pragma once

#include <rte_mempool.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "router/config.h"
#include "router/context.h"
#include "router/fast_path.h"
#include "router/port_scheduler.h"
#include "router/slow_path.h"

namespace flexplane::router {

struct RunSummary {
  double wall_seconds = 0;
  uint64_t route_reloads = 0, route_reload_failures = 0, fib_publications = 0;
  uint64_t held_at_exit = 0;   // packets waiting for ARP when the run ended (freed)
  uint64_t drain_timed_out = 0;  // 1 if queues were still backlogged at the drain deadline
};

class RouterApp {
 public:
  explicit RouterApp(RouterConfig config, std::vector<std::string> eal_args = {});
  ~RouterApp();
  RouterApp(const RouterApp&) = delete;
  RouterApp& operator=(const RouterApp&) = delete;

  // Forward until a stop (request_stop, SIGINT via the binary, run.duration_s,
  // run.stop_when_idle_ms), then drain. Call from the main lcore.
  void run();
  void write_outputs() const;

  // Thread-safe requests, served by the control thread.
  void request_stop() { stop_requested_.store(true, std::memory_order_release); }
  void request_reload() { reload_requested_.store(true, std::memory_order_release); }

  // Observers (tests, summary).
  uint64_t route_reloads() const { return summary_.route_reloads; }
  uint64_t fib_publications() const { return fib_ ? fib_->publications() : 0; }
  std::atomic<uint64_t>& reloads_done() { return reloads_done_; }
  const RunSummary& summary() const { return summary_; }
  const Shared& shared() const { return sh_; }
  const std::vector<std::unique_ptr<Worker>>& workers() const { return workers_; }
  const SlowPath& slow_path() const { return *slow_; }
  const std::vector<PortScheduler*>& schedulers() const { return owner_sched_; }
  const RouterConfig& config() const { return cfg_; }
  const std::vector<int>& placement() const { return placement_; }
  const std::vector<std::string>& eal_args() const { return eal_args_; }
  const std::vector<PortSettings>& port_settings() const { return port_settings_; }
  const std::vector<std::unique_ptr<PortScheduler>>& all_schedulers() const { return scheds_; }
  uint64_t tsc_hz() const { return timing_.tsc_hz; }
  uint64_t total_rx() const;

 private:
  void setup_ports();
  void setup_rings();
  void reload_routes(bool initial);
  void control_loop();
  void print_stats(double t, bool header);

  RouterConfig cfg_;
  std::vector<std::string> eal_args_;
  std::vector<PortSettings> port_settings_;
  Shared sh_;
  std::unique_ptr<NeighborTable> neighbors_;
  std::unique_ptr<Fib> fib_;
  RouteSet routes_;
  std::map<uint32_t, uint32_t> connected_hosts_;  // resolved hosts on connected subnets -> neighbour
  bool republish_ = false;
  std::unique_ptr<SlowPath> slow_;
  std::vector<std::unique_ptr<PortScheduler>> scheds_;  // all of them (owners' and per-worker baseline ones)
  std::vector<PortScheduler*> owner_sched_;             // [port]
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<int> placement_;  // where each worker ran: lcore, -1 thread, -2 main lcore
  std::vector<uint16_t> tx_queues_;  // [port]
  PortTiming timing_;
  std::atomic<bool> stop_requested_{false}, reload_requested_{false}, done_{false};
  std::atomic<uint64_t> reloads_done_{0};
  int64_t routes_mtime_ = 0;
  RunSummary summary_;
  FILE* stats_csv_ = nullptr;
  std::vector<uint64_t> last_tx_, last_rx_;
  uint64_t started_tsc_ = 0;
};

}  // namespace flexplane::router
