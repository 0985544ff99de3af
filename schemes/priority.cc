// Strict priority: each timeslot a port sends the head of its lowest-numbered non-empty queue.
// One find-first-set on the port's non-empty mask, so O(1); busy low queues starve higher ones.
#include "api/registry.h"

namespace flexplane {

class PriorityScheduler : public Scheduler<PriorityScheduler, NoParams> {
 public:
  static constexpr bool kHonoursPause = true;  // picks through nonempty_queues() only
  bool schedule(PortId port, Timeslot now, Packet& out) {
    // A queue manager acting at dequeue may empty a queue by drops: then try the next.
    for (uint64_t live; (live = bank().nonempty_queues(port));)
      if (dequeue(port, static_cast<QueueId>(__builtin_ctzll(live)), now, out)) return true;
    return false;
  }
};

FLEXPLANE_REGISTER_SCHEDULER(PriorityScheduler, "priority", "serve the lowest-numbered non-empty queue");
FLEXPLANE_REGISTER_SCHEME("priority_by_size", "strict priority by flow size (smaller flows first)",
    "by_priority_thresholds", "droptail", "priority", "flow_size");
FLEXPLANE_REGISTER_SCHEME("priority_by_dscp", "strict priority by DSCP class (higher classes first)",
    "by_dscp", "droptail", "priority");

}  // namespace flexplane
