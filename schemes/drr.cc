// Deficit round robin (Shreedhar & Varghese, SIGCOMM 1995): backlogged queues take turns in a
// ring; a turn adds quantum_bytes to the queue's deficit and sends head packets while they fit.
// Fair in bytes; O(1) per packet when quantum_bytes >= the largest packet.
#include <vector>

#include "api/registry.h"

namespace flexplane {

struct DrrParams {
  uint32_t quantum_bytes = 1500;  // credit per turn; one MTU gives one packet per turn
};

class DrrScheduler : public Scheduler<DrrScheduler, DrrParams> {
 public:
  void on_bind() {
    ports_.assign(shape().num_ports, PortState{});
    deficit_.assign(size_t{shape().num_ports} * shape().queues_per_port, 0);
  }

  bool schedule(PortId port, Timeslot now, Packet& out) {
    PortState& s = ports_[port];
    // The scheduler does not see arrivals: queues that became backlogged since the last call join
    // the tail of the ring now, in queue order.
    for (uint64_t joined = bank().nonempty_queues(port) & ~s.in_ring; joined; joined &= joined - 1) {
      const QueueId q = static_cast<QueueId>(__builtin_ctzll(joined));
      s.ring[(s.head + s.len++) % kMaxQueuesPerPort] = q;
      s.in_ring |= 1ull << q;
    }
    for (;;) {  // ends: every lap adds a quantum to each queue, or drops at dequeue empty the port
      if (!s.len) return false;  // every queue was emptied by its queue manager's drops
      const QueueId q = s.ring[s.head];
      int32_t& deficit = deficit_[size_t{port} * shape().queues_per_port + q];
      if (bank().empty(port, q)) {  // emptied by an eviction
        leave(s, q, deficit);
        continue;
      }
      if (!s.in_turn) {  // a new turn: one quantum of credit
        deficit += params().quantum_bytes;
        s.in_turn = true;
      }
      const int32_t size = bank().peek(port, q).size_bytes;
      if (size <= deficit) {
        // The queue manager may drop the head at dequeue and send the next packet instead.
        const bool sent = dequeue(port, q, now, out);
        if (sent) deficit -= out.size_bytes;
        if (bank().empty(port, q)) leave(s, q, deficit);
        if (sent) return true;
        continue;
      }
      s.in_turn = false;  // the head does not fit: keep the deficit, go to the tail
      s.ring[(s.head + s.len) % kMaxQueuesPerPort] = q;
      s.head = (s.head + 1) % kMaxQueuesPerPort;
    }
  }

 private:
  struct PortState {
    QueueId ring[kMaxQueuesPerPort];  // backlogged queues in service order, from `head`
    uint8_t head = 0, len = 0;
    bool in_turn = false;  // the head queue already got its quantum this turn
    uint64_t in_ring = 0;  // bit q: queue q is in the ring
  };

  // An empty queue leaves the ring and forfeits its deficit.
  void leave(PortState& s, QueueId q, int32_t& deficit) {
    deficit = 0;
    s.in_turn = false;
    s.in_ring &= ~(1ull << q);
    s.head = (s.head + 1) % kMaxQueuesPerPort;
    --s.len;
  }

  std::vector<PortState> ports_;
  std::vector<int32_t> deficit_;  // per (port, queue), bytes (below 0 after a dequeue drop sent a larger packet)
};

FLEXPLANE_REGISTER_SCHEDULER(DrrScheduler, "drr", "deficit round robin over the port's queues",
    param(&DrrParams::quantum_bytes, "quantum_bytes", "credit each queue gets per turn, bytes", {1, 1 << 20}));
FLEXPLANE_REGISTER_SCHEME("drr", "DRR over hashed flow queues (drop tail per queue)", "by_flow", "droptail", "drr");
FLEXPLANE_REGISTER_SCHEME("drr_by_source", "DRR over per-source queues (drop tail per queue)", "by_source",
    "droptail", "drr");

}  // namespace flexplane
