// Router::dequeue_burst (router mode's burst dequeue) is output() called up to `max` times at the
// same `now`: for every registered preset and every queue manager under every scheduler, one
// port under seeded random overload, the packets sent (in order, with their ECN flags), the drops
// (packet, reason, time) and the counters are the same whether the port is drained by output()
// one packet at a time, by PatternRouter's dequeue_burst, or by Router's default dequeue_burst.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

// A Router that leaves dequeue_burst to the base class's default (output() in a loop).
class ViaOutput final : public Router {
 public:
  explicit ViaOutput(Router& r) : r_(r) {}
  void bind(const RouterEnv&) override {}
  void input(Packet* pkts, uint32_t n, Timeslot now) override { r_.input(pkts, n, now); }
  uint32_t output(Timeslot now, Packet* out, PortId* ports) override { return r_.output(now, out, ports); }
  const QueueBank& bank() const override { return r_.bank(); }
  const RouterLosses& losses() const override { return r_.losses(); }

 private:
  Router& r_;
};

struct Sent {
  uint32_t flow, seq;
  uint16_t size;
  uint8_t flags;
  bool operator==(const Sent&) const = default;
};

std::vector<std::pair<uint32_t, Reason>> drops_of(const TestRouter& r) {
  std::vector<std::pair<uint32_t, Reason>> out;
  for (const auto& d : r.log.drops) out.emplace_back(d.p.seq, d.reason);
  return out;
}

void compare(const Components& c, uint64_t seed) {
  TestRouter one(1, c, seed), burst(1, c, seed), dflt(1, c, seed);
  ViaOutput via(dflt.router());
  Rng rng(seed, 5);
  std::vector<Sent> a, b, d;
  uint32_t seq = 0;
  for (Timeslot t = 0; t < 1500; ++t) {
    std::vector<Packet> in;
    const uint32_t n = rng.below(t < 1000 ? 5 : 1);
    for (uint32_t i = 0; i < n; ++i) {
      const auto size = static_cast<uint16_t>(rng.below(4) ? 1500 : 64 + rng.below(1400));  // before the flow: one
      Packet p = pkt(rng.below(12), seq++, 0, size);  // stream on every compiler (argument order is unspecified)
      p.src = static_cast<EndpointId>(rng.below(40));
      p.flags = rng.below(2) ? kFlagEct : 0;
      p.priority = rng.below(100);
      p.custom[0] = rng.below(50000);
      in.push_back(p);
    }
    one.input(in, t);
    burst.input(in, t);
    dflt.input(in, t);
    const uint32_t max = rng.below(5);  // 0..4 packets this tick (two per tick on average: the queue builds)
    for (uint32_t i = 0; i < max && one.bank().port_packets(0) > 0; ++i) {  // the old adapter's loop
      const auto out = one.output(t);
      if (out.empty()) break;
      a.push_back({out[0].second.flow, out[0].second.seq, out[0].second.size_bytes, out[0].second.flags});
    }
    Packet buf[4];
    for (uint32_t i = 0, m = burst.router().dequeue_burst(0, t, max, buf); i < m; ++i)
      b.push_back({buf[i].flow, buf[i].seq, buf[i].size_bytes, buf[i].flags});
    for (uint32_t i = 0, m = via.dequeue_burst(0, t, max, buf); i < m; ++i)
      d.push_back({buf[i].flow, buf[i].seq, buf[i].size_bytes, buf[i].flags});
    REQUIRE(a.size() == b.size());
    REQUIRE(a.size() == d.size());
  }
  REQUIRE(a == b);
  REQUIRE(a == d);
  REQUIRE(drops_of(one) == drops_of(burst));
  REQUIRE(drops_of(one) == drops_of(dflt));
  for (QueueId q = 0; q < one.bank().queues_per_port(); ++q) {
    REQUIRE(one.counters(0, q).dequeued == burst.counters(0, q).dequeued);
    REQUIRE(one.counters(0, q).marked == burst.counters(0, q).marked);
    REQUIRE(one.bank().packets(0, q) == burst.bank().packets(0, q));
  }
  burst.check_invariants();
  REQUIRE(!a.empty());
}

}  // namespace

TEST_CASE("dequeue_burst sends what output() one at a time sends, for every queue manager and scheduler",
          "[api][dequeue_burst]") {
  for (const auto& [qm, qinfo] : Registry<QueueManagerBase>::instance().all())
    for (const auto& [sched, sinfo] : Registry<SchedulerBase>::instance().all()) {
      if (registered_by_a_test(qm) || registered_by_a_test(sched)) continue;
      INFO("queue manager " << qm << ", scheduler " << sched);
      compare({sched == "fifo" ? Spec{"single"} : Spec{"by_flow", {{"num_queues", "4"}}}, {qm, quick_params(qm)}, {sched}},
              7);
    }
}
