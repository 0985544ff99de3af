// Flows that wait for others, driven by the engine (closed_loop.cc with
// ClosedLoopShared::deps; workloads in emulator/workload/collective.h).
#include <catch2/catch.hpp>

#include <sstream>

#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
#include "emulator/traffic/flow_traffic.h"
#include "emulator/workload/collective.h"

using namespace flexplane;
using flexplane::test::routers_for;

namespace {

struct Result {
  std::vector<FlowState> states;
  std::vector<Timeslot> release, first_sent;
  std::vector<SenderOutcome> outcomes;
  Timeslot end = 0;
  bool done = false;
};

Result run(const Topology& topo, const FlowList& flows, const FlowDeps& deps, uint32_t cores, bool lookahead,
           Timeslot cap) {
  FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
  traffic.set_dependencies(&deps);
  TransportConfig t;
  t.enabled = true;
  t.kind = TransportKind::kDctcp;
  t.params.min_rto_us = 1000;
  traffic.enable_transport(topo, t, 1200);
  EngineOptions opt;
  opt.cores = cores;
  opt.lookahead = lookahead;
  opt.stop_when_done = true;
  Engine engine(topo, routers_for(topo, "dctcp", {{"k_pkts", "20"}, {"capacity_pkts", "64"}}), traffic, opt);
  engine.run(cap);
  return {traffic.states(), traffic.release(), traffic.first_sent(), traffic.sender_outcomes(), engine.now(),
          engine.stopped_when_done()};
}

FlowList sends(const std::string& rows, uint32_t endpoints, FlowDeps* deps) {
  std::istringstream in(std::string(kSendListHeader) + "\n" + rows);
  return read_send_list(in, "test", endpoints, deps);
}

}  // namespace

TEST_CASE("collective traffic: a send starts its gap after a receive, or right after its own last ACK",
          "[traffic][transports][collective]") {
  // single_rack, latency 1: data path 2 timeslots, ACK 2 more. A (0 -> 1, 40 packets) alone: its
  // packets leave at 0..39 and arrive at 2..41 (closed_loop_test: FCT 42 = ideal), the ACK of the
  // last reaches endpoint 0 at 43.
  // - B (1 -> 2, 10 packets) waits for A's receipt at 1, gap 5: released at 41 + 5 = 46, its packets
  //   leave at 46..55 and arrive at 48..57.
  // - C (0 -> 3, 5 packets) waits for A's send to complete at 0 (its last ACK, 43), gap 0: released at
  //   43, in the same timeslot: packets leave at 43..47, arrive at 45..49.
  // Flow order: (start, line): A @0, C @0 (0 + gap 0), B @5 (0 + gap 5) -> ids A 0, C 1, B 2.
  const Topology topo = make_single_rack(4, 1);
  FlowDeps deps;
  const FlowList flows = sends("0,0,1,40,0,0,\n1,1,2,10,5,0,0\n2,0,3,5,0,0,0\n", 4, &deps);
  REQUIRE(flows[1].dst == 3);
  REQUIRE(flows[2].dst == 2);
  const Result r = run(topo, flows, deps, 1, true, 1000);
  REQUIRE(r.states[0].finish == 41);
  REQUIRE(r.release[1] == 43);
  REQUIRE(r.first_sent[1] == 43);
  REQUIRE(r.states[1].finish == 49);
  REQUIRE(r.release[2] == 46);
  REQUIRE(r.first_sent[2] == 46);
  REQUIRE(r.states[2].finish == 57);
  REQUIRE(r.done);  // stop when done: every dependent flow released and finished
  REQUIRE(r.end < 1000);
}

TEST_CASE("collective traffic: a flow waiting for several starts after the last of them", "[traffic][transports][collective]") {
  // Two 10-packet flows into endpoint 2 (from 0 at 0, from 1 at 20); D (2 -> 3) waits for both,
  // gap 1. The first arrives at 2..11, the second at 22..31: D released at 32.
  const Topology topo = make_single_rack(4, 1);
  FlowDeps deps;
  const FlowList flows = sends("0,0,2,10,0,0,\n1,1,2,10,20,0,\n2,2,3,3,1,0,1 0\n", 4, &deps);
  // Order: (0 -> 2) @0, (1 -> 2) @20, D @21.
  const Result r = run(topo, flows, deps, 1, true, 1000);
  REQUIRE(r.states[0].finish == 11);
  REQUIRE(r.states[1].finish == 31);
  REQUIRE(r.release[2] == 32);
  REQUIRE(r.states[2].finish == 32 + 3 + 1);  // 3 packets leave at 32..34, the last arrives at 36
}

TEST_CASE("collective traffic: 1 core and N cores give identical results, lookahead on and off",
          "[transports][determinism][collective]") {
  const Topology topo = make_fat_tree(4, 1);  // 16 endpoints, 20 routers
  for (const char* name : {"ring_allreduce", "tree_allreduce", "all_to_all"}) {
    INFO(name);
    const auto c = Registry<Collective>::instance().get(name, "test").make(ParamValues{}, nullptr);
    CollectiveShape shape;
    shape.ranks = 16;
    shape.message_pkts = 48;
    shape.iterations = 2;
    shape.compute_gap = 30;
    FlowDeps deps;
    const FlowList flows = expand_collective(*c, shape, 16, 1'000'000, "test", &deps);
    const Result base = run(topo, flows, deps, 1, false, 200'000);
    REQUIRE(base.done);
    for (size_t i = 0; i < flows.size(); ++i) {
      REQUIRE(base.states[i].delivered == flows[i].size_pkts);
      if (deps.num_after(static_cast<uint32_t>(i)) == 0) continue;
      Timeslot last = 0;  // released exactly `gap` after the last dependency completed
      for (uint32_t j = deps.after_begin[i]; j < deps.after_begin[i + 1]; ++j) {
        const FlowSpec& d = flows[deps.after[j]];
        REQUIRE(base.states[d.id].finish < base.release[i] + 1);
        if (d.dst == flows[i].src) last = std::max(last, base.states[d.id].finish);
      }
      REQUIRE(base.release[i] >= last + deps.gap[i]);
      REQUIRE(base.first_sent[i] >= base.release[i]);
    }
    for (uint32_t cores : {2u, 4u})
      for (bool lookahead : {false, true}) {
        INFO(cores << " cores, lookahead " << lookahead);
        const Result r = run(topo, flows, deps, cores, lookahead, 200'000);
        REQUIRE(r.end == base.end);
        REQUIRE(r.release == base.release);
        REQUIRE(r.first_sent == base.first_sent);
        for (size_t i = 0; i < flows.size(); ++i) {
          REQUIRE(r.states[i].finish == base.states[i].finish);
          REQUIRE(r.states[i].marked == base.states[i].marked);
          REQUIRE(r.outcomes[i].segments_sent == base.outcomes[i].segments_sent);
        }
      }
  }
}

TEST_CASE("collective traffic: open loop cannot drive dependencies", "[traffic][collective]") {
  const Topology topo = make_single_rack(4, 1);
  FlowDeps deps;
  const FlowList flows = sends("0,0,1,4,0,0,\n1,1,2,4,0,0,0\n", 4, &deps);
  FlowTraffic traffic(flows, 4, EndpointStamping{});
  traffic.set_dependencies(&deps);
  REQUIRE_THROWS_WITH(traffic.enable_transport(topo, TransportConfig{}, 1200),
                      Catch::Contains("transport.kind: a collective's sends start when others complete"));
}
