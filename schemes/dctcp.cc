// DCTCP switch side (Alizadeh et al., SIGCOMM 2010): CE-mark every arrival that finds more than K
// packets queued; tail-drop at capacity. Instantaneous queue, no averaging, no randomness.
#include <string>

#include "api/registry.h"

namespace flexplane {

struct DctcpParams {
  uint32_t k_pkts = 65;           // marking threshold K (Flexplane: 65 MTUs)
  uint32_t capacity_pkts = 1024;  // tail-drop limit
  bool drop_non_ect = false;      // above K, drop packets that cannot be marked (else queue them unmarked)

  // An arrival is marked when it finds more than K queued and dropped when it finds capacity_pkts,
  // so K >= capacity_pkts - 1 would mark nothing: DropTail under DCTCP's name.
  void validate(const std::string&) const {
    if (k_pkts + 1ull >= capacity_pkts)
      throw FieldError({"k_pkts", "capacity_pkts"},
                       "k_pkts (" + std::to_string(k_pkts) + ") must be below capacity_pkts - 1 (" +
                           std::to_string(capacity_pkts) + " - 1): arrivals that find more than k_pkts queued are "
                           "marked, those that find capacity_pkts are dropped, so nothing would ever be marked");
  }
};

class DctcpQueueManager : public QueueManager<DctcpQueueManager, DctcpParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    const uint32_t len = bank().packets(port, q);
    if (len >= params().capacity_pkts) return out.drop(p, Reason::kQueueFull);
    if (len > params().k_pkts && !out.mark_ecn(p, Reason::kAboveThreshold) && params().drop_non_ect)
      return out.drop(p, Reason::kAboveThreshold);
    bank().push(port, q, p);
  }
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(DctcpQueueManager, "dctcp", "mark when the queue is longer than K",
    param(&DctcpParams::k_pkts, "k_pkts", "mark arrivals that find more than this many packets queued", {0, 1 << 20}),
    param(&DctcpParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}),
    param(&DctcpParams::drop_non_ect, "drop_non_ect", "above k_pkts, drop packets that are not ECN-capable"));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "dctcp", {"k_pkts", "10"}, {"capacity_pkts", "40"});
FLEXPLANE_REGISTER_SCHEME("dctcp", "DCTCP marking on one FIFO per port", "single", "dctcp", "fifo");

}  // namespace flexplane
