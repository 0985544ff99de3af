// FQ-CoDel (RFC 8290): flows hashed into queues (classifier by_flow), each queue under its own
// CoDel (schemes/codel.h), served by deficit round robin over two lists: queues that just became
// active are *new* and go before the *old* ones, so a sparse flow's packets overtake a backlogged
// elephant's. The queue manager enforces one limit per port: over it, the head of the queue with
// the most bytes is dropped. The scheduler (`fq`) works with any queue manager.
//
// Differences from RFC 8290 / Linux: at most 64 flow queues per port (the bank's limit; Linux
// defaults to 1024), so distinct flows may share a queue; the scheduler does not see arrivals, so
// queues that became active since the port's last turn join the new list in queue order; one
// head packet is dropped per arrival over the limit (Linux drops up to half the fattest queue).
#include <string>
#include <vector>

#include "api/registry.h"
#include "schemes/codel.h"

namespace flexplane {

struct FqCodelParams {
  double target_us = 5000;    // CoDel target (RFC 8290: 5 ms)
  double interval_ms = 100;   // CoDel interval (RFC 8290: 100 ms)
  uint32_t limit_pkts = 10240;  // packets per port, all queues together (Linux: 10240)
  bool ecn = false;           // CE-mark ECN-capable packets instead of dropping them (off, as for codel and red;
                              // Linux turns it on)

  void validate(const std::string& where) const {
    if (target_us <= 0 || interval_ms <= 0) throw ConfigError(where + ": target_us and interval_ms must be above 0");
  }
};

class FqCodelQueueManager : public CodelQueues<FqCodelQueueManager, FqCodelParams> {
 public:
  static constexpr const char* kStatPrefix = "fq_codel";
  static constexpr bool kStatsOfBackloggedOnly = true;  // up to 64 queues per port: only the active ones
  // One queue may hold the whole port's limit, plus the arrival that goes over it.
  uint32_t queue_capacity_pkts() const override { return params().limit_pkts + 1; }

  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    if (!bank().push(port, q, p)) return out.drop(p, Reason::kQueueFull);  // never: capacity covers the limit
    if (bank().port_packets(port) > params().limit_pkts) out.evict(port, fattest(port), 0, Reason::kFattestFlow);
  }

 private:
  QueueId fattest(PortId port) const {  // the queue holding the most bytes; ties: the lowest
    QueueId best = 0;
    for (uint64_t m = bank().nonempty_queues(port); m; m &= m - 1) {
      const QueueId q = static_cast<QueueId>(__builtin_ctzll(m));
      if (bank().bytes(port, q) > bank().bytes(port, best)) best = q;
    }
    return best;
  }
};

struct FqParams {
  uint32_t quantum_bytes = 1514;  // DRR credit per round (RFC 8290: the interface MTU plus header, 1514 B)
};

// RFC 8290 §4.2: DRR over new and old lists of active queues.
class FqScheduler : public Scheduler<FqScheduler, FqParams> {
 public:
  void on_bind() {
    ports_.assign(shape().num_ports, PortState{});
    deficit_.assign(size_t{shape().num_ports} * shape().queues_per_port, 0);
  }

  bool schedule(PortId port, Timeslot now, Packet& out) {
    PortState& s = ports_[port];
    const int32_t quantum = static_cast<int32_t>(params().quantum_bytes);
    for (uint64_t joined = bank().nonempty_queues(port) & ~s.listed; joined; joined &= joined - 1) {
      const QueueId q = static_cast<QueueId>(__builtin_ctzll(joined));  // a newly active queue
      s.lists[kNew].push(q);
      s.listed |= 1ull << q;
      deficit(port, q) = quantum;
    }
    for (;;) {
      const int which = !s.lists[kNew].empty() ? kNew : !s.lists[kOld].empty() ? kOld : -1;
      if (which < 0) return false;  // every active queue was emptied by its queue manager's drops
      List& list = s.lists[which];
      const QueueId q = list.front();
      int32_t& d = deficit(port, q);
      if (d <= 0) {  // used up its quantum: a new one, at the end of the old list
        d += quantum;
        list.pop();
        s.lists[kOld].push(q);
        continue;
      }
      if (bank().empty(port, q) || !dequeue(port, q, now, out)) {
        list.pop();  // went empty: a new queue moves to the old list (so it cannot cut in again at once)
        if (which == kNew && !s.lists[kOld].empty())
          s.lists[kOld].push(q);
        else
          s.listed &= ~(1ull << q);
        continue;
      }
      d -= out.size_bytes;
      return true;
    }
  }

 private:
  enum { kNew = 0, kOld = 1 };
  struct List {  // a FIFO of queue ids; a queue is in at most one list
    QueueId ids[kMaxQueuesPerPort];
    uint8_t head = 0, len = 0;
    bool empty() const { return len == 0; }
    QueueId front() const { return ids[head]; }
    void push(QueueId q) { ids[(head + len++) % kMaxQueuesPerPort] = q; }
    void pop() {
      head = (head + 1) % kMaxQueuesPerPort;
      --len;
    }
  };
  struct PortState {
    List lists[2];
    uint64_t listed = 0;  // bit q: queue q is in a list
  };
  int32_t& deficit(PortId port, QueueId q) { return deficit_[size_t{port} * shape().queues_per_port + q]; }

  std::vector<PortState> ports_;
  std::vector<int32_t> deficit_;  // per (port, queue), bytes; may go negative
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(FqCodelQueueManager, "fq_codel",
    "CoDel per queue; over the port's limit, drop the head of the fattest queue (RFC 8290)",
    param(&FqCodelParams::target_us, "target_us", "CoDel target sojourn time, us", {0, 1e9}),
    param(&FqCodelParams::interval_ms, "interval_ms", "CoDel interval, ms", {0, 1e6}),
    param(&FqCodelParams::limit_pkts, "limit_pkts", "packets per port over all its queues", {1, 1 << 20}),
    param(&FqCodelParams::ecn, "ecn", "CE-mark ECN-capable packets instead of dropping them"));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "fq_codel", {"target_us", "4"}, {"interval_ms", "0.03"}, {"limit_pkts", "60"});
FLEXPLANE_REGISTER_SCHEDULER(FqScheduler, "fq", "DRR over new and old lists of active queues (RFC 8290)",
    param(&FqParams::quantum_bytes, "quantum_bytes", "credit per round, bytes", {1, 1 << 20}));
FLEXPLANE_REGISTER_SCHEME("fq_codel", "FQ-CoDel: hashed flow queues, CoDel each, new flows first", "by_flow",
    "fq_codel", "fq");

}  // namespace flexplane
