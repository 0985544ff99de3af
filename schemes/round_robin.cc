// Round robin: each port serves its non-empty queues in turn, one packet each, resuming after
// the queue it served last. Two find-first-sets on the non-empty mask: O(1) per packet.
#include <vector>

#include "api/registry.h"

namespace flexplane {

class RoundRobinScheduler : public Scheduler<RoundRobinScheduler, NoParams> {
 public:
  static constexpr bool kHonoursPause = true;  // picks through nonempty_queues() only
  void on_bind() { last_.assign(shape().num_ports, kMaxQueuesPerPort - 1); }  // first turn: queue 0

  bool schedule(PortId port, Timeslot now, Packet& out) {
    // A queue manager acting at dequeue may empty a queue by drops: then it is the next one's turn.
    for (uint64_t live; (live = bank().nonempty_queues(port));) {
      const unsigned next = last_[port] + 1u;
      const uint64_t after = next < kMaxQueuesPerPort ? live & (~0ull << next) : 0;  // queues after the last served
      const QueueId q = static_cast<QueueId>(__builtin_ctzll(after ? after : live));
      last_[port] = q;
      if (dequeue(port, q, now, out)) return true;
    }
    return false;
  }

 private:
  std::vector<QueueId> last_;  // per port: the queue served last
};

FLEXPLANE_REGISTER_SCHEDULER(RoundRobinScheduler, "round_robin", "one packet from each non-empty queue in turn");
FLEXPLANE_REGISTER_SCHEME("round_robin", "per-source round robin (drop tail per queue)", "by_source", "droptail",
    "round_robin");

}  // namespace flexplane
