// CoDel (Nichols & Jacobson, "Controlling Queue Delay", 2012; RFC 8289): drop at dequeue once the
// queue's sojourn time has stayed above `target` for an `interval`, then ever more often
// (interval / sqrt(count)) until it is below target again. Tail drop at capacity_pkts. The control
// law is in schemes/codel.h, shared with fq_codel.
#include <string>
#include <vector>

#include "api/registry.h"
#include "schemes/codel.h"

namespace flexplane {

struct CodelParams {
  double target_us = 5000;        // acceptable standing queue delay (RFC 8289: 5 ms)
  double interval_ms = 100;       // how long the delay may stay above target (RFC 8289: 100 ms, ~ a worst-case RTT)
  uint32_t capacity_pkts = 1000;  // tail-drop limit (Linux: 1000)
  bool ecn = false;               // CE-mark ECN-capable packets instead of dropping them

  void validate(const std::string& where) const {
    if (target_us <= 0 || interval_ms <= 0) throw ConfigError(where + ": target_us and interval_ms must be above 0");
  }
};

class CodelQueueManager : public CodelQueues<CodelQueueManager, CodelParams> {
 public:
  static constexpr const char* kStatPrefix = "codel";
  static constexpr bool kStatsOfBackloggedOnly = false;
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    if (!bank().push(port, q, p)) out.drop(p, Reason::kQueueFull);
  }
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(CodelQueueManager, "codel", "CoDel: drop at dequeue by sojourn time (RFC 8289)",
    param(&CodelParams::target_us, "target_us", "target sojourn time, us", {0, 1e9}),
    param(&CodelParams::interval_ms, "interval_ms", "interval the sojourn time may stay above target, ms", {0, 1e6}),
    param(&CodelParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}),
    param(&CodelParams::ecn, "ecn", "CE-mark ECN-capable packets instead of dropping them"));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "codel", {"target_us", "4"}, {"interval_ms", "0.03"}, {"capacity_pkts", "40"});
FLEXPLANE_REGISTER_SCHEME("codel", "CoDel on one FIFO per port", "single", "codel", "fifo");

}  // namespace flexplane
