// RED (Floyd & Jacobson 1993): drop (or ECN-mark) arrivals with a probability that grows with an
// EWMA of the queue length; counting packets since the last drop spaces drops evenly. While a
// queue is idle its average decays as if it had sampled an empty queue once per full-sized
// packet the link could have sent (the paper's m = idle time / transmission time): avg *= (1-w)^m,
// computed as exp(idle ticks * ln(1-w) * bytes per tick / MTU) with the constant taken at bind,
// the last result kept (router mode: a pow per arrival at an idle queue cost ~20 cycles/packet,
// docs/performance.md).
#include <cmath>
#include <string>
#include <vector>

#include "api/registry.h"

namespace flexplane {

struct RedParams {
  double weight = 1.0 / 32;       // EWMA weight w_q (Flexplane: 2^-5)
  uint32_t min_th_pkts = 150;     // average below this: accept
  uint32_t max_th_pkts = 300;     // average at or above this: forced drop
  double max_p = 0.1;             // early-drop probability as the average nears max_th_pkts
  uint32_t capacity_pkts = 1024;  // tail-drop limit
  bool ecn = false;               // CE-mark ECN-capable packets instead of early-dropping them
  bool mark_above_max = false;    // with ecn: CE-mark them above max_th too (RoCE switches' ECN, for PFC)

  void validate(const std::string& where) const {
    if (min_th_pkts >= max_th_pkts)
      throw ConfigError(where + ": min_th_pkts (" + std::to_string(min_th_pkts) + ") must be below max_th_pkts (" +
                        std::to_string(max_th_pkts) + ")");
    if (weight <= 0) throw ConfigError(where + ": weight must be above 0");
  }
};

class RedQueueManager : public QueueManager<RedQueueManager, RedParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }
  void on_bind() {
    vars_.assign(size_t{shape().num_ports} * shape().queues_per_port, Vars{});
    // ln((1 - w)^(1 / packets per tick)): -inf for w = 1 (any idle time empties the average).
    log_keep_per_tick_ = std::log1p(-params().weight) * time().bytes_in(1) / shape().mtu_bytes;
    memo_idle_ = 0;
    memo_decay_ = 1;
  }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot now, Verdicts& out) {
    const RedParams& P = params();
    Vars& v = vars_[size_t{port} * shape().queues_per_port + q];
    const uint32_t len = bank().packets(port, q);
    if (len > 0)
      v.avg += P.weight * (len - v.avg);
    else if (const Timeslot idle = now - bank().idle_since(port, q))  // idle: decay by (1 - w)^m, m packets
      v.avg *= decay(idle);                                            // the link could have sent meanwhile
    if (len >= P.capacity_pkts) return out.drop(p, Reason::kQueueFull);
    if (v.avg >= P.max_th_pkts) {
      v.count = 0;
      if (!(P.ecn && P.mark_above_max && out.mark_ecn(p, Reason::kAqmForced))) return out.drop(p, Reason::kAqmForced);
      bank().push(port, q, p);
      return;
    }
    if (v.avg < P.min_th_pkts) {
      v.count = 0;
    } else {
      // p_a = p_b / (1 - count p_b) makes the gap between drops uniform on 1..1/p_b packets.
      const double pb = P.max_p * (v.avg - P.min_th_pkts) / (P.max_th_pkts - P.min_th_pkts);
      const double pa = v.count * pb < 1 ? pb / (1 - v.count * pb) : 1;
      if (rng().uniform() >= pa) {
        ++v.count;
      } else {
        v.count = 0;
        if (!(P.ecn && out.mark_ecn(p, Reason::kAqmEarly))) return out.drop(p, Reason::kAqmEarly);
      }
    }
    bank().push(port, q, p);
  }

  std::vector<StatDesc> stat_descs() const override {
    return {{"red_avg_pkts", "EWMA of the queue length seen by arrivals, packets", StatDesc::kPerQueue},
            {"red_count", "packets accepted since the last early drop or mark", StatDesc::kPerQueue}};
  }
  void sample_stats(PortId port, StatsOut& out) const override {
    for (QueueId q = 0; q < shape().queues_per_port; ++q) {
      const Vars& v = vars_[size_t{port} * shape().queues_per_port + q];
      out.put(0, q, v.avg);
      out.put(1, q, v.count);
    }
  }

 private:
  struct Vars {
    double avg = 0;      // EWMA of the queue length seen by arrivals, packets
    uint32_t count = 0;  // packets accepted unmarked since the last early drop/mark
  };
  // (1 - w)^m for `idle` ticks. The last value is kept: queues a drain emptied at the same tick and
  // refilled by one burst share it (router mode), so they pay one exp() between them.
  double decay(Timeslot idle) {
    if (idle != memo_idle_) {
      memo_idle_ = idle;
      memo_decay_ = std::exp(static_cast<double>(idle) * log_keep_per_tick_);
    }
    return memo_decay_;
  }

  std::vector<Vars> vars_;  // per (port, queue)
  double log_keep_per_tick_ = 0;  // ln(1 - w) * link bytes per tick / MTU
  Timeslot memo_idle_ = 0;        // decay(memo_idle_) == memo_decay_ (decay(0) == 1)
  double memo_decay_ = 1;
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(RedQueueManager, "red", "random early detection (drop or ECN-mark)",
    param(&RedParams::weight, "weight", "EWMA weight of the average queue length", {0, 1}),
    param(&RedParams::min_th_pkts, "min_th_pkts", "average queue below which nothing is dropped, packets",
          {0, 1 << 20}),
    param(&RedParams::max_th_pkts, "max_th_pkts", "average queue from which every arrival is dropped, packets",
          {1, 1 << 20}),
    param(&RedParams::max_p, "max_p", "early-drop probability as the average reaches max_th_pkts", {0, 1}),
    param(&RedParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}),
    param(&RedParams::ecn, "ecn", "CE-mark ECN-capable packets instead of early drops (forced drops stay drops)"),
    param(&RedParams::mark_above_max, "mark_above_max",
          "with ecn: CE-mark ECN-capable packets above max_th_pkts too instead of dropping them (lossless fabrics)"));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "red", {"min_th_pkts", "5"}, {"max_th_pkts", "30"}, {"max_p", "0.3"},
    {"capacity_pkts", "40"});
FLEXPLANE_REGISTER_SCHEME("red", "RED on one FIFO per port; queue_manager {ecn: true} marks instead", "single", "red",
    "fifo");

}  // namespace flexplane
