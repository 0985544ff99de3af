// The framework's accounting, for every registered scheme and every combination of queue
// manager and scheduler: under seeded random overload (drops on arrival, at dequeue and by
// eviction), after every timeslot,
//   arrived = enqueued + dropped_on_arrival
//   enqueued = dequeued + dropped_at_dequeue + evicted + backlog
//   dropped = sum of drops by reason, marked = sum of marks by reason
// and every packet offered is sent, dropped (and reported once) or still queued.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

// The overload must exercise drops; if it did not, say what to declare.
OverloadResult overload_with_drops(const Components& c, uint64_t seed) {
  const OverloadResult r = overload(c, seed);
  if (r.drops == 0) FAIL(no_drops_advice(c.queue_manager.name));
  return r;
}

}  // namespace

TEST_CASE("invariants hold for every registered scheme preset", "[schemes][invariants]") {
  for (const auto& [name, preset_] : SchemeRegistry::instance().all()) {
    if (registered_by_a_test(name)) continue;
    INFO("scheme " << name);
    const Components p = preset(name);
    const Components c{with_test_params<ClassifierBase>(p.classifier.name),
                       with_test_params<QueueManagerBase>(p.queue_manager.name),
                       with_test_params<SchedulerBase>(p.scheduler.name)};
    overload_with_drops(c, 3);
  }
}

TEST_CASE("invariants hold for every queue manager under every scheduler", "[schemes][invariants]") {
  // Four hashed flow queues per port (one for fifo, which serves queue 0 only).
  for (const auto& [qm, qinfo] : Registry<QueueManagerBase>::instance().all())
    for (const auto& [sched, sinfo] : Registry<SchedulerBase>::instance().all()) {
      if (registered_by_a_test(qm) || registered_by_a_test(sched)) continue;
      INFO("queue manager " << qm << ", scheduler " << sched);
      Components c{sched == "fifo" ? Spec{"single"} : Spec{"by_flow", {{"num_queues", "4"}}},
                   with_test_params<QueueManagerBase>(qm), with_test_params<SchedulerBase>(sched)};
      const uint64_t at_dequeue = overload_with_drops(c, 11).at_dequeue;
      // CoDel drops at dequeue under every scheduler that sends heads (pfabric and lstf send
      // from behind the head and bypass it).
      if ((qm == "codel" || qm == "fq_codel") && sched != "pfabric" && sched != "lstf") CHECK(at_dequeue > 0);
    }
}

TEST_CASE("a queue manager without test parameters that drops nothing is told what to declare",
          "[schemes][invariants]") {
  // pfabric declares none (its default buffer is 24 packets); the advice names the macro and the tutorial.
  REQUIRE_FALSE(TestParams<QueueManagerBase>::instance().declared("pfabric"));
  const std::string advice = no_drops_advice("pfabric");
  CHECK_THAT(advice, Catch::Contains("queue manager 'pfabric' dropped nothing"));
  CHECK_THAT(advice, Catch::Contains("FLEXPLANE_TEST_PARAMS(QueueManagerBase, \"pfabric\""));
  CHECK_THAT(advice, Catch::Contains("docs/writing-a-scheme.md"));
  // Declared ones are used by the generic tests: dctcp's buffer of 40 packets.
  CHECK(test_params<QueueManagerBase>("dctcp") ==
        std::vector<std::pair<std::string, std::string>>{{"k_pkts", "10"}, {"capacity_pkts", "40"}});
}
