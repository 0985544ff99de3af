// HULL switch side (Alizadeh et al., NSDI 2012): a per-port phantom queue -- a byte counter that
// every arrival fills and that drains at gamma x line rate -- CE-marks arrivals while it is above a
// threshold, so senders back off before the real queue builds. Drained lazily on each arrival.
#include <algorithm>
#include <string>
#include <vector>

#include "api/registry.h"

namespace flexplane {

struct HullParams {
  double gamma = 0.95;                    // phantom drain rate as a fraction of line rate
  uint32_t mark_threshold_bytes = 15000;  // mark while the phantom queue is above this (HULL: 15 KB)
  uint32_t capacity_pkts = 1024;          // tail-drop limit of the real queue
  bool drop_non_ect = false;              // drop instead of mark packets that are not ECN-capable

  void validate(const std::string& where) const {
    if (gamma <= 0) throw ConfigError(where + ": gamma must be above 0");
  }
};

class HullQueueManager : public QueueManager<HullQueueManager, HullParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }
  void on_bind() { phantom_.assign(shape().num_ports, Phantom{}); }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot now, Verdicts& out) {
    if (bank().packets(port, q) >= params().capacity_pkts) return out.drop(p, Reason::kQueueFull);
    Phantom& ph = phantom_[port];
    // Drains at gamma x line rate (bytes per tick: time().link_bytes_per_tick).
    const double drain_bytes = static_cast<double>(now - ph.updated) * params().gamma * time().link_bytes_per_tick;
    ph.bytes = std::max(0.0, ph.bytes - drain_bytes);
    ph.updated = now;
    if (ph.bytes + p.size_bytes > params().mark_threshold_bytes && !out.mark_ecn(p, Reason::kPhantomQueue) &&
        params().drop_non_ect)
      return out.drop(p, Reason::kPhantomQueue);
    ph.bytes += p.size_bytes;
    bank().push(port, q, p);
  }

  std::vector<StatDesc> stat_descs() const override {
    return {{"hull_phantom_bytes", "phantom queue at the port's last arrival, bytes", StatDesc::kPerPort}};
  }
  void sample_stats(PortId port, StatsOut& out) const override { out.put(0, 0, phantom_[port].bytes); }

 private:
  struct Phantom {
    double bytes = 0;      // phantom queue length at `updated`
    Timeslot updated = 0;  // timeslot of the last drain
  };
  std::vector<Phantom> phantom_;  // per port: it models the link, shared by the port's queues
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(HullQueueManager, "hull", "mark by a phantom queue drained below line rate",
    param(&HullParams::gamma, "gamma", "phantom queue drain rate, fraction of line rate", {0, 1}),
    param(&HullParams::mark_threshold_bytes, "mark_threshold_bytes",
          "mark while the phantom queue exceeds this, bytes"),
    param(&HullParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}),
    param(&HullParams::drop_non_ect, "drop_non_ect", "drop instead of mark packets that are not ECN-capable"));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "hull", {"capacity_pkts", "40"});
FLEXPLANE_REGISTER_SCHEME("hull", "HULL phantom-queue marking on one FIFO per port", "single", "hull", "fifo");

}  // namespace flexplane
