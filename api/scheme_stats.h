// A scheme's own state, exported beside the queue occupancy samples
// (scheme_stats.csv, docs/output-format.md): RED's average, CoDel's drop
// state, HULL's phantom queue, PIE's drop probability.
//
// A component declares what it exports once (stat_descs()) and writes the
// current values of one port when asked (sample_stats()). The engine asks at
// the occupancy sampling interval only, from the router's own core, so the
// hook costs nothing on the packet path; formatting happens when the file is
// written.
//
//   std::vector<StatDesc> stat_descs() const override {
//     return {{"red_avg_pkts", "EWMA of the queue length, packets", StatDesc::kPerQueue}};
//   }
//   void sample_stats(PortId port, StatsOut& out) const override {
//     for (QueueId q = 0; q < shape().queues_per_port; ++q) out.put(0, q, vars_[...].avg);
//   }
#pragma once

#include <string>

#include "api/packet.h"

namespace flexplane {

struct StatDesc {
  enum Scope : uint8_t { kPerPort, kPerQueue };
  std::string name;  // unique within the router; `<scheme>_<what>_<unit>` reads well in a CSV
  std::string doc;
  Scope scope = kPerQueue;
};

// Where sample_stats() writes: `stat` indexes the component's stat_descs();
// `queue` is ignored for per-port stats.
class StatsOut {
 public:
  virtual ~StatsOut() = default;
  virtual void put(unsigned stat, QueueId queue, double value) = 0;
};

}  // namespace flexplane
