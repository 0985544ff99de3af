// Connection set-up (transport.handshake): a SYN through the same NIC and
// switch queues as data, a SYN-ACK on the ACKs' way back, data after it.
#include <catch2/catch.hpp>

#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
#include "emulator/traffic/flow_traffic.h"

using namespace flexplane;
using flexplane::test::random_flows;
using flexplane::test::routers_for;

namespace {

struct Result {
  std::vector<FlowState> states;
  std::vector<Timeslot> first_sent;
  std::vector<SenderOutcome> outcomes;
  std::vector<PacketEvent> events;
  uint64_t unexpected = 0;
  Timeslot end = 0;
  bool done = false;
};

Result run(const Topology& topo, const FlowList& flows, bool handshake, uint32_t cores, bool lookahead,
           std::vector<std::pair<std::string, std::string>> qm = {}, AckQueueing acks = AckQueueing::kNone) {
  FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
  TransportConfig t;
  t.enabled = true;
  t.kind = TransportKind::kDctcp;
  t.params.min_rto_us = 100;  // 84 timeslots of 1.2 us: the SYN's RTO too
  t.params.handshake = handshake;
  t.ack_queueing = acks;
  traffic.enable_transport(topo, t, 1200);
  EngineOptions opt;
  opt.cores = cores;
  opt.lookahead = lookahead;
  opt.packet_log = true;
  opt.stop_when_done = true;
  Engine engine(topo, routers_for(topo, "droptail", qm), traffic, opt);
  engine.run(100'000);
  return {traffic.states(), traffic.first_sent(), traffic.sender_outcomes(), engine.events(),
          traffic.unexpected_arrivals(), engine.now(), engine.stopped_when_done()};
}

}  // namespace

TEST_CASE("handshake: data starts one round trip later, and the FCT counts it", "[traffic][transports][handshake]") {
  // single_rack, latency 1: path 2, ACK channel 2. Without: packets leave at 0..39, finish 41
  // (closed_loop_test). With: the SYN leaves at 0 and arrives at 2, the SYN-ACK is back at 4, data
  // leaves at 4..43 and the last packet arrives at 45.
  const Topology topo = make_single_rack(4, 1);
  const FlowList flows = {{0, 0, 1, 40, 0}};
  const Result off = run(topo, flows, false, 1, true);
  const Result on = run(topo, flows, true, 1, true);
  REQUIRE(off.states[0].finish == 41);
  REQUIRE(on.states[0].finish == 45);
  REQUIRE(on.first_sent[0] == 4);  // the first data packet; the SYN is not counted there
  REQUIRE(on.states[0].delivered == 40);
  REQUIRE(on.outcomes[0].segments_sent == 40);  // data only
  REQUIRE(on.unexpected == 0);
  REQUIRE(on.done);
  // The SYN crossed the network as a packet of its own (seq kSynSeq), delivered at 2.
  uint32_t syns = 0;
  for (const auto& e : on.events)
    if (e.seq == kSynSeq) {
      ++syns;
      REQUIRE(e.kind == PacketEvent::kDelivered);
      REQUIRE(e.time == 2);
    }
  REQUIRE(syns == 1);
}

TEST_CASE("handshake: a SYN waits behind the NIC's backlog, and a lost SYN is resent after the RTO",
          "[traffic][transports][handshake]") {
  const Topology topo = make_single_rack(4, 1);
  SECTION("behind the sender's own NIC backlog") {
    // Flow 0 (30 packets) opens at 0..4 and queues its IW10 at 4 (leaving 4..13); flow 1 from the
    // same host starts at 5: its SYN joins behind flow 0's 9 segments still queued (the ones its
    // ACKs release from 8 on join behind the SYN), leaves at 14, arrives at 16, and its SYN-ACK is
    // back at 18.
    const FlowList flows = {{0, 0, 1, 30, 0}, {1, 0, 2, 5, 5}};
    const Result r = run(topo, flows, true, 1, true);
    REQUIRE(r.first_sent[0] == 4);
    uint32_t syn_delivered = 0;
    for (const auto& e : r.events)
      if (e.seq == kSynSeq && e.flow == 1) syn_delivered = static_cast<uint32_t>(e.time);
    REQUIRE(syn_delivered == 16);
    REQUIRE(r.first_sent[1] >= 18);
    REQUIRE(r.states[1].delivered == 5);
  }
  SECTION("a SYN dropped in a full port") {
    // Two SYNs for endpoint 3 (sent at 0, from 0 and 1) reach the ToR together and find a
    // one-packet queue: one is dropped. Its flow resends the SYN after the RTO (84 timeslots), so
    // its data starts no earlier than 84 + 4.
    const FlowList flows = {{0, 0, 3, 3, 0}, {1, 1, 3, 3, 0}};
    const Result r = run(topo, flows, true, 1, true, {{"capacity_pkts", "1"}});
    uint32_t syn_drops = 0, lost = 0;
    for (const auto& e : r.events)
      if (e.kind == PacketEvent::kDropped && e.seq == kSynSeq) {
        ++syn_drops;
        lost = e.flow;
      }
    REQUIRE(syn_drops == 1);
    REQUIRE(r.first_sent[lost] >= 84 + 4);
    REQUIRE(r.first_sent[1 - lost] == 4);
    REQUIRE(r.states[lost].delivered == 3);
    REQUIRE(r.done);
  }
}

TEST_CASE("handshake: 1 core and N cores give identical results, lookahead on and off",
          "[transports][determinism][handshake]") {
  const Topology topo = make_fat_tree(4, 1);
  const FlowList flows = random_flows(topo.num_endpoints, 300, 3000, 11);
  for (AckQueueing acks : {AckQueueing::kNone, AckQueueing::kDelayAndLoss}) {
    const Result base = run(topo, flows, true, 1, false, {{"capacity_pkts", "24"}}, acks);
    REQUIRE(base.done);
    for (size_t i = 0; i < flows.size(); ++i) REQUIRE(base.states[i].delivered == flows[i].size_pkts);
    for (uint32_t cores : {2u, 4u})
      for (bool lookahead : {false, true}) {
        INFO(cores << " cores, lookahead " << lookahead);
        const Result r = run(topo, flows, true, cores, lookahead, {{"capacity_pkts", "24"}}, acks);
        REQUIRE(r.end == base.end);
        REQUIRE(r.first_sent == base.first_sent);
        for (size_t i = 0; i < flows.size(); ++i) {
          REQUIRE(r.states[i].finish == base.states[i].finish);
          REQUIRE(r.outcomes[i].segments_sent == base.outcomes[i].segments_sent);
        }
      }
  }
}
