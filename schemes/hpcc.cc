// HPCC's switch side (Li et al., SIGCOMM 2019): in-band network telemetry.
// Tail drop at capacity, like DropTail; and as a packet leaves, the port
// writes into Packet::custom[kTelemetryWord] the largest normalised
// inflight the packet's path has shown so far,
//     U = qlen / T + txRate            (qlen after this departure, in
//                                       packets; txRate in packets per
//                                       timeslot; T = base_rtt_timeslots)
// i.e. HPCC's qlen / (B x T) + txRate / B with B one packet per timeslot.
// txRate is an exponentially weighted average of departures over T
// (1 for a port that sends every timeslot). HPCC stamps each hop's raw
// (qlen, txBytes, ts) and the sender differences consecutive ACKs; the 12
// bytes of custom data hold one hop, not five, so the hop computes its own U
// and the packet keeps the path's maximum, which is the U HPCC's sender acts
// on. The receiver echoes it (transports/transport.h, Ack::telemetry) to an
// `hpcc` sender. docs/writing-a-scheme.md, "Telemetry", walks through it.
#include <algorithm>
#include <cmath>
#include <vector>

#include "api/registry.h"
#include "transports/transport.h"

namespace flexplane {

struct HpccParams {
  uint32_t capacity_pkts = 1024;        // tail-drop limit
  uint32_t base_rtt_timeslots = 16;     // T: the network's base RTT, over which utilisation is measured
};

class HpccQueueManager : public QueueManager<HpccQueueManager, HpccParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }

  void on_bind() {
    ports_.assign(shape().num_ports, Port{});
    decay_per_timeslot_ = std::exp(-1.0 / params().base_rtt_timeslots);
  }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    if (!bank().push(port, q, p)) out.drop(p, Reason::kQueueFull);
  }

  bool dequeue(PortId port, QueueId q, Timeslot now, Packet& out, Verdicts&) {
    QueueBank& b = bank();
    if (b.empty(port, q)) return false;
    out = b.pop(port, q);
    Port& s = ports_[port];
    // txRate: each departure adds (1 - d) and the average decays by d per timeslot, so a port
    // busy every timeslot converges to 1 packet per timeslot.
    const double gap = s.any ? static_cast<double>(now - s.last) : 1e9;
    s.rate = s.rate * std::pow(decay_per_timeslot_, gap) + (1 - decay_per_timeslot_);
    s.last = now;
    s.any = true;
    const double u = static_cast<double>(b.port_packets(port)) / params().base_rtt_timeslots + s.rate;
    uint32_t& word = out.custom[kTelemetryWord];  // U x 65536, the largest along the path
    word = std::max(word, static_cast<uint32_t>(std::min(u * kTelemetryOne, 4294967295.0)));
    return true;
  }

 private:
  struct Port {
    double rate = 0;  // departures per timeslot, averaged over T
    Timeslot last = 0;
    bool any = false;
  };
  std::vector<Port> ports_;
  double decay_per_timeslot_ = 0;
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(HpccQueueManager, "hpcc",
    "tail drop; stamps the path's largest U = qlen / T + txRate into custom[2] as packets leave (HPCC's INT)",
    param(&HpccParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}),
    param(&HpccParams::base_rtt_timeslots, "base_rtt_timeslots", "HPCC's T: the base RTT utilisation is measured over",
          {1, 1 << 20}));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "hpcc", {"capacity_pkts", "40"}, {"base_rtt_timeslots", "8"});
FLEXPLANE_REGISTER_SCHEME("hpcc", "HPCC's in-band telemetry on one FIFO per port (for transport: hpcc)", "single",
                          "hpcc", "fifo");

}  // namespace flexplane
