// The CoDel control law (Nichols & Jacobson; RFC 8289 §5), shared by the
// `codel` and `fq_codel` queue managers the way Linux shares
// include/net/codel_impl.h between sch_codel and sch_fq_codel.
//
// CoDel acts when a packet leaves: once the head's sojourn time (now minus its
// enqueue time) has stayed above `target` for an `interval`, it drops the head
// (or CE-marks it, with ECN) and enters the dropping state, in which the next
// drop comes interval/sqrt(count) after the previous one, count being the
// drops since the state began; it leaves the state as soon as a head's sojourn
// time is below target or the queue holds at most one MTU.
//
// Differences from RFC 8289's pseudo-code: exact sqrt (Linux uses a Newton
// step on 1/sqrt); times are engine ticks (api/time.h), so target and interval
// are rounded to whole ticks and a drop due between two ticks happens at the
// later one; a dequeue that empties the queue also ends the dropping state
// (the RFC's next dequeue would find the queue empty at once).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "api/queue_bank.h"
#include "api/queue_manager.h"
#include "api/scheme_stats.h"
#include "api/verdicts.h"

namespace flexplane {

// CoDel's state for one queue.
struct CodelVars {
  Timeslot first_above_time = 0;  // when the sojourn time will have been above target for an interval (0: below)
  double drop_next = 0;           // next drop while dropping, in (fractional) ticks
  uint32_t count = 0;             // drops since entering the dropping state
  uint32_t lastcount = 0;         // count when the dropping state was last entered
  bool dropping = false;
  Timeslot last_sojourn = 0;      // sojourn time of the last packet to leave (stats only)
};

class Codel {
 public:
  // target and interval in ticks; maxpacket_bytes: a queue holding at most
  // this many bytes is never above target (RFC 8289: the MTU).
  void configure(Timeslot target, Timeslot interval, uint64_t maxpacket_bytes, bool ecn) {
    target_ = target;
    interval_ = interval;
    maxpacket_ = maxpacket_bytes;
    ecn_ = ecn;
  }
  Timeslot interval() const { return interval_; }

  // RFC 8289 dequeue() for queue (port, q): sends the head unless the
  // control law drops (or marks) it. Returns false when drops emptied the
  // queue; drops are reported through `v` with Reason::kSojournTime.
  bool dequeue(QueueBank& bank, PortId port, QueueId q, Timeslot now, Packet& out, Verdicts& v, CodelVars& s) const {
    if (bank.empty(port, q)) return empty(s);
    bool ok_to_drop = should_drop(bank, port, q, now, s);
    if (s.dropping) {
      if (!ok_to_drop) s.dropping = false;  // sojourn time below target: leave the dropping state
      // A large backlog may need several drops now: hence the loop.
      while (s.dropping && static_cast<double>(now) >= s.drop_next) {
        ++s.count;
        if (ecn_ && v.mark_ecn(bank.peek_mut(port, q), port, q, Reason::kSojournTime)) {
          s.drop_next = control_law(s.drop_next, s.count);
          break;
        }
        v.drop_head(port, q, Reason::kSojournTime);
        if (bank.empty(port, q)) return empty(s);
        ok_to_drop = should_drop(bank, port, q, now, s);
        if (!ok_to_drop)
          s.dropping = false;
        else
          s.drop_next = control_law(s.drop_next, s.count);
      }
    } else if (ok_to_drop) {
      // Above target for an interval: drop (or mark) and enter the dropping state.
      const bool marked = ecn_ && v.mark_ecn(bank.peek_mut(port, q), port, q, Reason::kSojournTime);
      if (!marked) {
        v.drop_head(port, q, Reason::kSojournTime);
        if (!bank.empty(port, q)) should_drop(bank, port, q, now, s);
      }
      s.dropping = true;
      // Linux's rule: if the last dropping state ended recently, resume at the
      // drop rate it had reached instead of starting again from 1.
      const uint32_t delta = s.count - s.lastcount;
      s.count = delta > 1 && static_cast<double>(now) - s.drop_next < 16.0 * static_cast<double>(interval_) ? delta : 1;
      s.drop_next = control_law(static_cast<double>(now), s.count);
      s.lastcount = s.count;
      if (bank.empty(port, q)) return empty(s);
    }
    s.last_sojourn = now - bank.enqueue_time(port, q);
    out = bank.pop(port, q);
    if (bank.empty(port, q)) s.dropping = false;
    return true;
  }

  // The next drop, interval / sqrt(count) after t. Kept in fractional ticks
  // (Linux keeps ns): a drop happens at the first tick at or after it, and a
  // spacing below one tick means several drops in one dequeue.
  double control_law(double t, uint32_t count) const {
    return t + static_cast<double>(interval_) / std::sqrt(static_cast<double>(count));
  }

 private:
  // RFC 8289 dodequeue()'s test on the head (which the caller then sends or
  // drops): ok to drop once the sojourn time has stayed at or above target
  // for an interval while more than one MTU was queued.
  bool should_drop(const QueueBank& bank, PortId port, QueueId q, Timeslot now, CodelVars& s) const {
    const Timeslot sojourn = now - bank.enqueue_time(port, q);
    const uint64_t left_bytes = bank.bytes(port, q) - bank.peek(port, q).size_bytes;  // after this packet leaves
    if (sojourn < target_ || left_bytes <= maxpacket_) {
      s.first_above_time = 0;
      return false;
    }
    if (s.first_above_time == 0) {
      s.first_above_time = now + interval_;
      return false;
    }
    return now >= s.first_above_time;
  }

  // The queue is empty: below target, and out of the dropping state.
  static bool empty(CodelVars& s) {
    s.first_above_time = 0;
    s.dropping = false;
    return false;
  }

  Timeslot target_ = 0, interval_ = 1;
  uint64_t maxpacket_ = 1500;
  bool ecn_ = false;
};

// What the `codel` and `fq_codel` queue managers share: CoDel state per
// (port, queue), the dequeue hook, and the statistics they export
// (`<Self::kStatPrefix>_sojourn_us`, `_dropping`, `_count`, per queue). `P`
// has target_us, interval_ms and ecn; Self writes enqueue() and
// queue_capacity_pkts().
template <class Self, class P>
class CodelQueues : public QueueManager<Self, P> {
 public:
  static constexpr bool kUsesEnqueueTime = true;

  void on_bind() {
    const P& p = this->params();
    codel_.configure(this->time().from_us(p.target_us), this->time().from_ms(p.interval_ms), this->shape().mtu_bytes,
                     p.ecn);
    vars_.assign(size_t{this->shape().num_ports} * this->shape().queues_per_port, CodelVars{});
  }

  bool dequeue(PortId port, QueueId q, Timeslot now, Packet& out, Verdicts& v) {
    return codel_.dequeue(this->bank(), port, q, now, out, v, vars(port, q));
  }

  std::vector<StatDesc> stat_descs() const override {
    const std::string p(Self::kStatPrefix);
    return {{p + "_sojourn_us", "sojourn time of the last packet sent, us", StatDesc::kPerQueue},
            {p + "_dropping", "1 while in the dropping state", StatDesc::kPerQueue},
            {p + "_count", "drops since the dropping state began", StatDesc::kPerQueue}};
  }
  // Every queue, or (Self::kStatsOfBackloggedOnly) those holding packets.
  void sample_stats(PortId port, StatsOut& out) const override {
    const double us_per_tick = this->time().to_us(1);
    for (QueueId q = 0; q < this->shape().queues_per_port; ++q) {
      if (Self::kStatsOfBackloggedOnly && this->bank().empty(port, q)) continue;
      const CodelVars& s = vars_[size_t{port} * this->shape().queues_per_port + q];
      out.put(0, q, static_cast<double>(s.last_sojourn) * us_per_tick);
      out.put(1, q, s.dropping ? 1 : 0);
      out.put(2, q, s.count);
    }
  }

 private:
  CodelVars& vars(PortId port, QueueId q) { return vars_[size_t{port} * this->shape().queues_per_port + q]; }
  Codel codel_;
  std::vector<CodelVars> vars_;  // per (port, queue)
};

}  // namespace flexplane
