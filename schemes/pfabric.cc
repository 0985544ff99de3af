// pFabric switch side (Alizadeh et al., SIGCOMM 2013): tiny buffers; when one is full the least
// urgent packet (largest priority = remaining flow size) is dropped; a port sends the earliest
// packet of the flow that holds the most urgent one. Linear scans: buffers hold ~24 packets.
#include "api/registry.h"

namespace flexplane {

struct PfabricParams {
  uint32_t capacity_pkts = 24;  // per port; pFabric's 36 KB = 24 x 1500 B (about 2 x BDP)
};

class PfabricQueueManager : public QueueManager<PfabricQueueManager, PfabricParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    const uint32_t len = bank().packets(port, q);
    if (len >= params().capacity_pkts) {
      uint32_t worst = 0;  // least urgent queued packet; ties: the latest, so its flow keeps its head
      for (uint32_t i = 1; i < len; ++i)
        if (bank().peek(port, q, i).priority >= bank().peek(port, q, worst).priority) worst = i;
      if (p.priority >= bank().peek(port, q, worst).priority) return out.drop(p, Reason::kLowestPriority);
      out.evict(port, q, worst, Reason::kLowestPriority);
    }
    bank().push(port, q, p);
  }
};

class PfabricScheduler : public Scheduler<PfabricScheduler, NoParams> {
 public:
  bool schedule(PortId port, Timeslot, Packet& out) {
    // pFabric keeps one queue per port; with more, lower-numbered queues go first.
    const QueueId q = static_cast<QueueId>(__builtin_ctzll(bank().nonempty_queues(port)));
    const uint32_t len = bank().packets(port, q);
    uint32_t best = 0;  // most urgent packet; ties: the earliest
    for (uint32_t i = 1; i < len; ++i)
      if (bank().peek(port, q, i).priority < bank().peek(port, q, best).priority) best = i;
    uint32_t first = 0;  // the flow's earliest packet: no reordering within a flow
    while (bank().peek(port, q, first).flow != bank().peek(port, q, best).flow) ++first;
    out = bank().pop_at(port, q, first);
    return true;
  }
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(PfabricQueueManager, "pfabric", "when full, drop the least urgent packet",
    param(&PfabricParams::capacity_pkts, "capacity_pkts", "buffer per port, packets", {1, 1 << 20}));
FLEXPLANE_REGISTER_SCHEDULER(PfabricScheduler, "pfabric", "send the earliest packet of the most urgent flow");
FLEXPLANE_REGISTER_SCHEME("pfabric", "pFabric: priority drop and scheduling by remaining flow size", "single",
    "pfabric", "pfabric", "remaining_size");

}  // namespace flexplane
