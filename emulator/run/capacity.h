// `flexplane-emulator capacity` (issue 22; docs/live.md, "Capacity"): the
// thesis' scalability stress test in real time. The engine runs paced by the
// wall clock, as under `live`, on its own cores; synthetic endpoints on cores
// of their own feed it through LiveTraffic exactly as the comm core does
// (emulator/synthetic/). One run is one point: it prints one line and writes
// capacity.yaml; scripts/live_capacity.py sweeps cores and load.
//
// Lateness is never hidden: the window's late timeslots and worst lag are in
// every result, and a point whose late fraction passes `late_threshold` says
// so (status: late) instead of passing for a capacity.
#pragma once

#include <cstdint>
#include <string>

namespace flexplane {

struct CapacityArgs {
  std::string config;
  std::string variant;
  std::string out_dir;          // default: the config's output.dir
  uint32_t cores = 0;           // engine cores (0: run.cores)
  uint32_t drivers = 1;         // synthetic endpoint threads (LiveTraffic feeders)
  double load = 0.5;            // Poisson packets per endpoint per timeslot
  uint32_t backlog = 0;         // > 0: backlogged endpoints, this many requests outstanding each
  double duration_s = 1;        // measured window
  double warmup_s = 0.1;        // offered but not measured
  double late_threshold = 0.001;  // a point with more late timeslots than this is not a capacity
  uint32_t ring_entries = 0;    // LiveTraffic ring entries (0: its default)
  double noise_check_s = 0.2;  // first spin this long on every CPU used, timing its gaps (cpu_noise)
  double poll_us = 0;           // drivers: start a loop at most every poll_us (0: busy polling)
  double drain_timeout_s = 5;   // after offering stops, wait this long for every verdict
  bool quiet = false;
};

// Returns the process exit status: 0 (also for a late point: it is a
// measurement, marked), 2 bad config or arguments, 1 other failures
// (including a request left without its verdict).
int run_capacity(const CapacityArgs& args);

}  // namespace flexplane
