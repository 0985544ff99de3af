// `flexplane-emulator live` (docs/live.md): the real-time engine, the
// communication core and the DPDK port, wired together from a config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flexplane::live {

struct LiveArgs {
  std::string config;
  std::string variant;         // required when the config has several
  std::string out_dir;         // default: the config's output.dir
  double duration_s = 0;       // 0 = until SIGINT / SIGTERM
  bool record = false;         // arrivals.csv + verdicts.csv
  bool trace_stages = false;   // stages.csv: each request's times through the comm core and the engine
  uint16_t port = 0;           // DPDK port id
  std::string prio = "auto";   // auto | on | off: request feature PRIO
  int req_custom = -1, verdict_custom = -1;  // custom bytes per request / verdict; -1: from the schemes
  uint32_t window = 4096;      // protocol window per endpoint (power of two)
  double rto_us = 0;           // verdict retransmission timeout (0 = protocol default, 500 us)
  double idle_sleep_us = -1;   // comm core sleep when idle; -1 = 20 if live.sleep_when_ahead else 0
  bool quiet = false;          // no periodic console lines (CSV still written)
  std::vector<std::string> eal_args;
};

// Returns the process exit status (0 ok, 2 bad config / arguments, 1 other).
int run_live(const LiveArgs& args);

}  // namespace flexplane::live
