// The live emulator's periodic statistics: one row of live_stats.csv per
// interval and, unless quiet, one console line (docs/live.md). Counters are
// read from the comm core and the engine; rates are per interval.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include "emulator/engine/engine.h"
#include "emulator/live/comm_core.h"

namespace flexplane::live {

class LiveStats {
 public:
  // Opens `path` and writes the header; throws std::runtime_error.
  LiveStats(const std::string& path, uint32_t cores, bool quiet, uint64_t t0_ns);
  void report(uint64_t now_ns, const CommCore& core, const Engine& engine);

 private:
  static std::string header(uint32_t cores);
  void console_line(double t, double rps, double vps, const CommCore& core, const std::vector<CoreHealth>& health,
                    const fp_emu_stats& ps) const;

  std::ofstream csv_;
  uint32_t cores_;
  bool quiet_;
  uint64_t t0_, last_t_;
  uint64_t last_req_ = 0, last_verd_ = 0;
};

}  // namespace flexplane::live
