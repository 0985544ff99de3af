// The framework's accounting, for every registered scheme and every combination of queue
// manager and scheduler: under seeded random overload (drops on arrival, at dequeue and by
// eviction), after every timeslot,
//   arrived = enqueued + dropped_on_arrival
//   enqueued = dequeued + dropped_at_dequeue + evicted + backlog
//   dropped = sum of drops by reason, marked = sum of marks by reason
// and every packet offered is sent, dropped (and reported once) or still queued.
#include <catch2/catch.hpp>

#include <set>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

// Returns the packets dropped at dequeue.
uint64_t overload(const Components& c, uint64_t seed) {
  constexpr uint16_t kPorts = 4;
  TestRouter r(kPorts, c, seed);
  Rng rng(seed, 77);
  uint64_t offered = 0, sent = 0;
  for (Timeslot t = 0; t < 3000; ++t) {
    std::vector<Packet> in;
    const uint32_t n = rng.below(t < 2000 ? 9 : 2);  // ~1 per port per timeslot, then draining
    for (uint32_t i = 0; i < n; ++i) {
      // One draw per statement: the order of a call's arguments is unspecified
      // (GCC and clang differ), and the stream must not depend on the compiler.
      const auto size = static_cast<uint16_t>(rng.below(4) ? 1500 : 64 + rng.below(1400));
      const auto dst = static_cast<EndpointId>(rng.below(kPorts));
      Packet p = pkt(rng.below(12), static_cast<uint32_t>(offered + i), dst, size);
      p.src = static_cast<EndpointId>(rng.below(40));
      p.flags = rng.below(2) ? kFlagEct : 0;
      p.priority = rng.below(100);
      p.custom[0] = rng.below(50000);
      in.push_back(p);
    }
    offered += n;
    r.input(in, t);
    std::set<PortId> ports;
    for (const auto& [port, p] : r.output(t)) {
      REQUIRE(ports.insert(port).second);  // at most one packet per port
      ++sent;
    }
    r.check_invariants();
  }
  uint64_t backlog = 0;
  for (PortId p = 0; p < kPorts; ++p) backlog += r.bank().port_packets(p);
  REQUIRE(offered == sent + r.log.drops.size() + backlog);
  REQUIRE(r.log.drops.size() > 0);  // the overload must exercise drops
  uint64_t at_dequeue = 0;
  for (PortId p = 0; p < kPorts; ++p)
    for (QueueId q = 0; q < r.bank().queues_per_port(); ++q) at_dequeue += r.counters(p, q).dropped_at_dequeue;
  return at_dequeue;
}

}  // namespace

TEST_CASE("invariants hold for every registered scheme preset", "[schemes][invariants]") {
  for (const auto& [name, preset_] : SchemeRegistry::instance().all()) {
    INFO("scheme " << name);
    Components c = preset(name);
    c.queue_manager.params = quick_params(c.queue_manager.name);
    if (c.classifier.name != "single") c.classifier.params = {{"num_queues", "4"}};
    if (c.classifier.name == "by_priority_thresholds") c.classifier.params = {{"thresholds", "10,50"}};
    overload(c, 3);
  }
}

TEST_CASE("invariants hold for every queue manager under every scheduler", "[schemes][invariants]") {
  // Four hashed flow queues per port (one for fifo, which serves queue 0 only).
  for (const auto& [qm, qinfo] : Registry<QueueManagerBase>::instance().all())
    for (const auto& [sched, sinfo] : Registry<SchedulerBase>::instance().all()) {
      INFO("queue manager " << qm << ", scheduler " << sched);
      Components c{sched == "fifo" ? Spec{"single"} : Spec{"by_flow", {{"num_queues", "4"}}}, {qm, quick_params(qm)},
                   {sched}};
      const uint64_t at_dequeue = overload(c, 11);
      // CoDel drops at dequeue under every scheduler that sends heads (pfabric and lstf send
      // from behind the head and bypass it).
      if ((qm == "codel" || qm == "fq_codel") && sched != "pfabric" && sched != "lstf") CHECK(at_dequeue > 0);
    }
}
