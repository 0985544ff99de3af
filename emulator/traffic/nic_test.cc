// The hosts' NICs in closed loop (transport.nic, closed_loop_nic.h): one
// FIFO per host (the default) or round robin over the host's flows.
#include <catch2/catch.hpp>

#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
#include "emulator/traffic/closed_loop_nic.h"
#include "emulator/traffic/flow_traffic.h"

using namespace flexplane;
using flexplane::test::random_flows;
using flexplane::test::routers_for;

namespace {

struct Result {
  std::vector<FlowState> states;
  std::vector<Timeslot> first_sent;
  Timeslot end = 0;
  NicWaitStats nic;
};

Result run(const Topology& topo, const FlowList& flows, NicMode mode, uint32_t cores, bool lookahead,
           AckQueueing acks = AckQueueing::kNone) {
  FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
  TransportConfig t;
  t.enabled = true;
  t.kind = TransportKind::kDctcp;
  t.params.min_rto_us = 1000;
  t.nic = mode;
  t.ack_queueing = acks;
  traffic.enable_transport(topo, t, 1200);
  EngineOptions opt;
  opt.cores = cores;
  opt.lookahead = lookahead;
  opt.stop_when_done = true;
  Engine engine(topo, routers_for(topo, "dctcp", {{"k_pkts", "20"}, {"capacity_pkts", "64"}}), traffic, opt);
  engine.run(100'000);
  return {traffic.states(), traffic.first_sent(), engine.now(), traffic.nic_wait_stats()};
}

}  // namespace

TEST_CASE("nic: a FIFO sends one flow's window after the other's, round robin interleaves them",
          "[traffic][transports][nic]") {
  // single_rack, latency 1 (path 2). Flows 0 and 1 (10 packets each, IW10) start at 0 on host 0,
  // to hosts 1 and 2. FIFO: flow 0's packets leave at 0..9 (finish 11), flow 1's at 10..19
  // (finish 21). Round robin: 0, 1, 0, 1, ...: flow 0's seq k at 2k, flow 1's at 2k + 1
  // (finish 18 + 2 = 20 and 19 + 2 = 21).
  const Topology topo = make_single_rack(4, 1);
  const FlowList flows = {{0, 0, 1, 10, 0}, {1, 0, 2, 10, 0}};
  const Result fifo = run(topo, flows, NicMode::kFifo, 1, true);
  REQUIRE(fifo.first_sent == std::vector<Timeslot>{0, 10});
  REQUIRE(fifo.states[0].finish == 11);
  REQUIRE(fifo.states[1].finish == 21);
  const Result rr = run(topo, flows, NicMode::kRoundRobin, 1, true);
  REQUIRE(rr.first_sent == std::vector<Timeslot>{0, 1});
  REQUIRE(rr.states[0].finish == 20);
  REQUIRE(rr.states[1].finish == 21);
  // The same 20 segments waited: FIFO 0 + 1 + ... + 9 for flow 0 and 10..19 for flow 1 (190);
  // round robin: seq k of flow 0 waits 2k, of flow 1 2k + 1 (190 too).
  REQUIRE(fifo.nic.waited == 190);
  REQUIRE(rr.nic.waited == 190);
  REQUIRE(rr.nic.max_wait == 19);
}

TEST_CASE("nic: round robin lets a short flow pass a long one's window", "[traffic][transports][nic]") {
  // Flow 0: 100 packets from 0 (its IW10 queued at 0); flow 1: 2 packets from the same host at 3.
  // FIFO: flow 1 waits behind the IW and the segments flow 0's ACKs add from t = 4.
  // Round robin: its first packet leaves at 4 (after flow 0's seq 3, its turn), its second at 6.
  const Topology topo = make_single_rack(4, 1);
  const FlowList flows = {{0, 0, 1, 100, 0}, {1, 0, 2, 2, 3}};
  const Result fifo = run(topo, flows, NicMode::kFifo, 1, true);
  const Result rr = run(topo, flows, NicMode::kRoundRobin, 1, true);
  REQUIRE(fifo.first_sent[1] >= 10);
  REQUIRE(rr.first_sent[1] == 4);
  REQUIRE(rr.states[1].finish == 6 + 2);
  REQUIRE(rr.states[0].delivered == 100);
}

TEST_CASE("nic: round robin gives identical results on 1 and N cores, lookahead on and off",
          "[transports][determinism][nic]") {
  const Topology topo = make_fat_tree(4, 1);
  const FlowList flows = random_flows(topo.num_endpoints, 300, 2000, 5);
  for (AckQueueing acks : {AckQueueing::kNone, AckQueueing::kDelay}) {
    const Result base = run(topo, flows, NicMode::kRoundRobin, 1, false, acks);
    for (size_t i = 0; i < flows.size(); ++i) REQUIRE(base.states[i].delivered == flows[i].size_pkts);
    for (uint32_t cores : {2u, 4u})
      for (bool lookahead : {false, true}) {
        INFO(cores << " cores, lookahead " << lookahead);
        const Result r = run(topo, flows, NicMode::kRoundRobin, cores, lookahead, acks);
        REQUIRE(r.end == base.end);
        REQUIRE(r.first_sent == base.first_sent);
        for (size_t i = 0; i < flows.size(); ++i) REQUIRE(r.states[i].finish == base.states[i].finish);
      }
  }
}
