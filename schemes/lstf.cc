// LSTF, least slack time first (Mittal et al., "Universal Packet Scheduling", NSDI 2016; one of the
// original Flexplane's schemes): every packet carries its slack -- how long it may still wait --
// in custom[0], in nanoseconds, stamped by its endpoint (`endpoint.slack_us`). A port sends the
// packet whose slack minus the time it has waited here is least, and charges that wait against the
// slack it carries to the next hop (saturating at 0). Linear scans, as pFabric: for small buffers.
#include <algorithm>

#include "api/registry.h"

namespace flexplane {

class LstfScheduler : public Scheduler<LstfScheduler, NoParams> {
 public:
  static constexpr bool kUsesEnqueueTime = true;

  bool schedule(PortId port, Timeslot now, Packet& out) {
    // One queue per port, as LSTF has; with more, lower-numbered queues go first.
    const QueueId q = static_cast<QueueId>(__builtin_ctzll(bank().nonempty_queues(port)));
    const uint32_t len = bank().packets(port, q);
    // Slack left now = slack - (now - enqueued): least slack is least (slack + enqueued). Ties: the earliest.
    uint32_t best = 0;
    double best_key = key(port, q, 0);
    for (uint32_t i = 1; i < len; ++i)
      if (const double k = key(port, q, i); k < best_key) best = i, best_key = k;
    const double waited_ns = time().to_ns(static_cast<double>(now - bank().enqueue_time(port, q, best)));
    out = bank().pop_at(port, q, best);
    out.custom[0] = waited_ns >= out.custom[0] ? 0 : out.custom[0] - static_cast<uint32_t>(waited_ns);
    return true;
  }

 private:
  double key(PortId port, QueueId q, uint32_t i) const {
    return bank().peek(port, q, i).custom[0] + time().to_ns(static_cast<double>(bank().enqueue_time(port, q, i)));
  }
};

FLEXPLANE_REGISTER_SCHEDULER(LstfScheduler, "lstf", "send the packet with the least slack left (slack in custom[0], ns)");
// Endpoints send 4 bytes of scheme data (the slack) with each request and get the slack left back.
FLEXPLANE_REGISTER_SCHEME("lstf", "least slack time first; endpoints stamp endpoint.slack_us", "single", "droptail",
    "lstf", "none", 4, 4);

}  // namespace flexplane
