// DropTail: accept until the queue holds capacity_pkts packets, then drop arrivals.
#include "api/registry.h"

namespace flexplane {

struct DropTailParams {
  uint32_t capacity_pkts = 1024;  // per queue; Flexplane's hardware comparison used 1024 MTUs
};

class DropTailQueueManager : public QueueManager<DropTailQueueManager, DropTailParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    // The bank holds capacity_pkts per queue (queue_capacity_pkts above).
    if (!bank().push(port, q, p)) out.drop(p, Reason::kQueueFull);
  }
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(DropTailQueueManager, "droptail", "tail drop at a fixed queue length",
    param(&DropTailParams::capacity_pkts, "capacity_pkts", "queue limit, packets", {1, 1 << 20}));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "droptail", {"capacity_pkts", "40"});
FLEXPLANE_REGISTER_SCHEME("droptail", "FIFO with tail drop", "single", "droptail", "fifo");

}  // namespace flexplane
