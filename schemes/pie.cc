// PIE (Pan et al., HPSR 2013; RFC 8033): a proportional-integral controller keeps the queueing
// delay near `target_us`. Every `tupdate_ms` the drop probability moves by
//   alpha (qdelay - target) + beta (qdelay - qdelay_old)    (delays in seconds),
// scaled down while the probability is small (RFC 8033 §4.2's auto-tuning) and decayed by 2% once
// both delays are below target/2; arrivals are dropped early with that probability (derandomized
// by accumulating it, §5.1), except during a burst allowance and when the queue is short. The
// delay is measured by timestamps: the sojourn time of the last packet to leave (0 once the
// queue is empty), as Linux's pie does without its rate estimator.
#include <algorithm>
#include <string>
#include <vector>

#include "api/registry.h"

namespace flexplane {

struct PieParams {
  double target_us = 15000;     // QDELAY_REF (RFC 8033: 15 ms)
  double tupdate_ms = 15;       // T_UPDATE, how often the probability is recomputed (15 ms)
  double alpha = 0.125;         // weight of the distance from target, 1/s (RFC 8033: 1/8)
  double beta = 1.25;           // weight of the delay's trend, 1/s (RFC 8033: 1 + 1/4)
  double max_burst_ms = 150;    // MAX_BURST: no early drops for this long after a quiet spell
  uint32_t capacity_pkts = 1000;  // tail-drop limit (Linux: 1000)
  bool ecn = false;             // CE-mark ECN-capable packets instead of early drops while p <= 10%

  void validate(const std::string& where) const {
    if (target_us <= 0 || tupdate_ms <= 0) throw ConfigError(where + ": target_us and tupdate_ms must be above 0");
  }
};

class PieQueueManager : public QueueManager<PieQueueManager, PieParams> {
 public:
  static constexpr bool kUsesEnqueueTime = true;
  uint32_t queue_capacity_pkts() const override { return params().capacity_pkts; }
  void on_bind() {
    target_ = time().from_us(params().target_us);
    tupdate_ = std::max<Timeslot>(1, time().from_ms(params().tupdate_ms));
    max_burst_ = time().from_ms(params().max_burst_ms);
    vars_.assign(size_t{shape().num_ports} * shape().queues_per_port, Vars{0, 0, 0, 0, max_burst_, tupdate_});
  }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot now, Verdicts& out) {
    Vars& v = vars(port, q);
    catch_up(v, now);
    if (bank().packets(port, q) >= params().capacity_pkts) {
      v.accu_prob = 0;
      return out.drop(p, Reason::kQueueFull);
    }
    if (drop_early(v, bank().bytes(port, q))) {
      const bool marked = params().ecn && v.drop_prob <= 0.1 && out.mark_ecn(p, Reason::kAqmEarly);
      if (!marked) {
        v.accu_prob = 0;
        return out.drop(p, Reason::kAqmEarly);
      }
    }
    bank().push(port, q, p);
  }

  bool dequeue(PortId port, QueueId q, Timeslot now, Packet& out, Verdicts&) {
    Vars& v = vars(port, q);
    catch_up(v, now);
    v.qdelay = now - bank().enqueue_time(port, q);
    out = bank().pop(port, q);
    if (bank().empty(port, q)) v.qdelay = 0;
    return true;
  }

  std::vector<StatDesc> stat_descs() const override {
    return {{"pie_drop_prob", "drop probability", StatDesc::kPerQueue},
            {"pie_qdelay_us", "last measured queueing delay, us", StatDesc::kPerQueue}};
  }
  void sample_stats(PortId port, StatsOut& out) const override {
    for (QueueId q = 0; q < shape().queues_per_port; ++q) {
      const Vars& v = vars_[size_t{port} * shape().queues_per_port + q];
      out.put(0, q, v.drop_prob);
      out.put(1, q, time().to_us(static_cast<double>(v.qdelay)));
    }
  }

 private:
  struct Vars {
    double drop_prob;
    double accu_prob;          // probability accumulated since the last drop (derandomization)
    Timeslot qdelay;           // current delay estimate, ticks
    Timeslot qdelay_old;       // at the previous update
    Timeslot burst_allowance;  // ticks left without early drops
    Timeslot next_update;      // tick of the next probability update
  };


  Vars& vars(PortId port, QueueId q) { return vars_[size_t{port} * shape().queues_per_port + q]; }

  // The periodic update is driven lazily by arrivals and departures: run the ones that are due.
  void catch_up(Vars& v, Timeslot now) const {
    for (int n = 0; now >= v.next_update; ++n) {
      if (n == 4096) {  // a long idle spell: the state stopped moving long ago
        v.next_update = now - (now - v.next_update) % tupdate_;
        n = 0;
      }
      update(v);
      v.next_update += tupdate_;
    }
  }

  // RFC 8033 calculate_drop_prob(), with the delay measured in ticks.
  void update(Vars& v) const {
    const double cur = time().to_s(static_cast<double>(v.qdelay)), old = time().to_s(static_cast<double>(v.qdelay_old));
    const double ref = time().to_s(static_cast<double>(target_));
    double p = params().alpha * (cur - ref) + params().beta * (cur - old);
    const double prob = v.drop_prob;  // auto-tuning: small probabilities move in small steps
    p /= prob < 1e-6 ? 2048 : prob < 1e-5 ? 512 : prob < 1e-4 ? 128 : prob < 1e-3 ? 32 : prob < 1e-2 ? 8 : prob < 0.1 ? 2 : 1;
    if (prob >= 0.1 && p > 0.02) p = 0.02;  // cap the step once the probability is high
    v.drop_prob += p;
    if (cur < ref / 2 && old < ref / 2) v.drop_prob *= 0.98;  // decay when congestion is gone
    v.drop_prob = std::clamp(v.drop_prob, 0.0, 1.0);
    v.burst_allowance = v.burst_allowance > tupdate_ ? v.burst_allowance - tupdate_ : 0;
    if (v.drop_prob == 0 && cur < ref / 2 && old < ref / 2) v.burst_allowance = max_burst_;  // quiet again
    v.qdelay_old = v.qdelay;
  }

  // RFC 8033 drop_early(), for a queue holding `queued_bytes` before the arrival.
  bool drop_early(Vars& v, uint64_t queued_bytes) {
    if (v.burst_allowance > 0) return false;
    const double ref = time().to_s(static_cast<double>(target_));
    if ((time().to_s(static_cast<double>(v.qdelay_old)) < ref / 2 && v.drop_prob < 0.2) ||
        queued_bytes <= 2ull * shape().mtu_bytes)
      return false;
    if (v.drop_prob == 0) v.accu_prob = 0;
    v.accu_prob += v.drop_prob;
    if (v.accu_prob < 0.85) return false;
    if (v.accu_prob >= 8.5) return true;
    if (rng().uniform() < v.drop_prob) {
      v.accu_prob = 0;
      return true;
    }
    return false;
  }

  Timeslot target_ = 0, tupdate_ = 1, max_burst_ = 0;
  std::vector<Vars> vars_;  // per (port, queue)
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(PieQueueManager, "pie", "PIE: early drop with a PI-controlled probability (RFC 8033)",
    param(&PieParams::target_us, "target_us", "target queueing delay, us", {0, 1e9}),
    param(&PieParams::tupdate_ms, "tupdate_ms", "drop probability update period, ms", {0, 1e6}),
    param(&PieParams::alpha, "alpha", "weight of (delay - target), 1/s", {0, 1e3}),
    param(&PieParams::beta, "beta", "weight of (delay - previous delay), 1/s", {0, 1e3}),
    param(&PieParams::max_burst_ms, "max_burst_ms", "burst allowance after a quiet spell, ms", {0, 1e6}),
    param(&PieParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}),
    param(&PieParams::ecn, "ecn", "CE-mark ECN-capable packets instead of early drops while the probability is <= 10%"));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "pie", {"target_us", "10"}, {"tupdate_ms", "0.01"}, {"max_burst_ms", "0"},
    {"capacity_pkts", "40"});
FLEXPLANE_REGISTER_SCHEME("pie", "PIE on one FIFO per port", "single", "pie", "fifo");

}  // namespace flexplane
