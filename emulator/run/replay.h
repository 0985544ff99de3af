// `flexplane-emulator replay`: a live run's recorded arrivals replayed in
// virtual time through the same emulated endpoints, so its verdicts can be
// compared with the live ones (docs/live.md). Needs no DPDK.
#pragma once

#include <cstdint>
#include <string>

namespace flexplane {

struct ReplayArgs {
  std::string config;
  std::string variant;
  std::string arrivals;
  std::string out_dir;
  int64_t end_timeslot = -1;   // -1: live_summary.yaml beside the arrivals, else last arrival + drain
  uint32_t cores = 0;          // 0 = from the config
};

// Returns the process exit status (0 ok, 2 bad config, arguments or arrivals file).
int run_replay(const ReplayArgs& args);

}  // namespace flexplane
