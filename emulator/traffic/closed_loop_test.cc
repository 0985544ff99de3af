// Closed-loop transports driven by the engine (emulator/traffic/closed_loop.*).
#include "emulator/traffic/closed_loop.h"

#include <catch2/catch.hpp>

#include "api/rng.h"
#include "emulator/config/config.h"
#include "emulator/config/router_factory.h"
#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
#include "emulator/traffic/closed_loop_nic.h"
#include "emulator/traffic/flow_traffic.h"

using namespace flexplane;
using flexplane::test::random_flows;
using flexplane::test::routers_for;

namespace {

TransportConfig transport(TransportKind kind, double min_rto_us = 100) {
  TransportConfig t;
  t.enabled = true;
  t.kind = kind;
  t.params.min_rto_us = min_rto_us;
  return t;
}

struct Result {
  std::vector<PacketEvent> events;
  std::vector<OccupancySample> occupancy;
  std::vector<FlowState> states;
  std::vector<SenderOutcome> outcomes;
  uint64_t unexpected = 0;
  AckQueueStats acks;
  NicWaitStats nic;
  Timeslot end = 0;   // where the run ended
  bool done = false;  // ... because everything was done (stop_when_done)
};

Result run(const Topology& topo, const FlowList& flows, const std::string& scheme,
           std::vector<std::pair<std::string, std::string>> qm, const TransportConfig& t, uint32_t cores,
           bool lookahead, Timeslot end, PriorityStamp prio = PriorityStamp::kNone, bool stop_when_done = false) {
  EndpointStamping stamping;
  stamping.priority = prio;
  FlowTraffic traffic(flows, topo.num_endpoints, stamping);
  traffic.enable_transport(topo, t, 1200);
  EngineOptions opt;
  opt.cores = cores;
  opt.lookahead = lookahead;
  opt.packet_log = true;
  opt.occupancy_interval = 25;
  opt.stop_when_done = stop_when_done;
  Engine engine(topo, routers_for(topo, scheme, qm), traffic, opt);
  engine.run(end);
  return {engine.events(),           engine.occupancy(),         traffic.states(),
          traffic.sender_outcomes(), traffic.unexpected_arrivals(), traffic.ack_queue_stats(),
          traffic.nic_wait_stats(),  engine.now(),               engine.stopped_when_done()};
}

uint64_t drops(const Result& r) {
  uint64_t n = 0;
  for (const auto& e : r.events) n += e.kind == PacketEvent::kDropped;
  return n;
}

}  // namespace

TEST_CASE("closed loop: a flow alone finishes in its ideal time, every transport", "[traffic][transports]") {
  // single_rack, latency 1: the path is 2 timeslots, the ACK channel (data_path) 2 more, RTT 4.
  // IW10: seq 0..9 join the NIC at t=0; from t=4 each ACK releases 2 (slow start), so the NIC
  // never idles and 40 packets leave at t=0..39 and arrive at t+2: finish 41, FCT = 42 = ideal.
  const Topology topo = make_single_rack(4, 1);
  const FlowList flows = {{0, 0, 1, 40, 0}};
  for (TransportKind k : {TransportKind::kReno, TransportKind::kEcn, TransportKind::kDctcp, TransportKind::kPfabric}) {
    INFO(transport_kind_name(k));
    const Result r = run(topo, flows, "droptail", {}, transport(k), 1, true, 200);
    REQUIRE(r.states[0].delivered == 40);
    REQUIRE(r.states[0].finish == 41);
    REQUIRE(r.outcomes[0].segments_sent == 40);
    REQUIRE(r.outcomes[0].retransmits == 0);
    REQUIRE(r.unexpected == 0);
    REQUIRE(r.nic.waits.total() == 40);
    if (k == TransportKind::kPfabric) continue;
    // NIC waits in slow start: the IW's seq k joins at t = 0 and leaves at k (waits 0..9);
    // seq 10..39 join two per ACK from t = 4, seq k at 4 + floor((k - 10) / 2), and leave
    // at k: waits 6 + ceil((k - 10) / 2), 6..21.
    uint64_t waited = 45;
    for (uint64_t q = 10; q < 40; ++q) waited += q - (4 + (q - 10) / 2);
    REQUIRE(r.nic.waited == waited);
    REQUIRE(r.nic.max_wait == 21);
    REQUIRE(r.nic.waits.percentile(0.25) == 7);  // rank 10 of 0, 1, ..., 9 and 6, 7, 7, 8, 8, ...
  }
}

TEST_CASE("closed loop: ACK wait histogram percentiles", "[traffic][transports]") {
  WaitHistogram h;
  REQUIRE(h.percentile(0.5) == 0);  // empty
  for (uint64_t w : {5, 1, 3, 3, 100}) h.add(w);
  REQUIRE(h.total() == 5);
  REQUIRE(h.percentile(0.2) == 1);  // nearest rank: 1st of 1, 3, 3, 5, 100
  REQUIRE(h.percentile(0.5) == 3);  // 3rd
  REQUIRE(h.percentile(0.8) == 5);  // 4th
  REQUIRE(h.percentile(0.99) == 100);
  // Above 1024: 64 bins per power of two, reported by their lower bound.
  WaitHistogram g;
  g.add(1023);
  g.add(1024);
  g.add(1039);  // 1024..1039 share a bin (width 16 in [1024, 2048))
  g.add(1040);
  g.add(5000);  // [4096, 8192): width 64, bin [4992, 5056)
  g.add(uint64_t{1} << 40);
  REQUIRE(g.counts.size() == WaitHistogram::bin(uint64_t{1} << 40) + 1);
  REQUIRE(g.counts.size() <= WaitHistogram::kExact + 54 * WaitHistogram::kSub);  // bounded by 2^64
  REQUIRE(g.percentile(1.0 / 6) == 1023);
  REQUIRE(g.percentile(2.0 / 6) == 1024);
  REQUIRE(g.percentile(3.0 / 6) == 1024);
  REQUIRE(g.percentile(4.0 / 6) == 1040);
  REQUIRE(g.percentile(5.0 / 6) == 4992);
  REQUIRE(g.percentile(1.0) == uint64_t{1} << 40);
  for (uint64_t w : {1024ull, 1500ull, 4095ull, 65535ull, 1000000ull, 123456789ull}) {
    const uint64_t lo = WaitHistogram::lower_bound(WaitHistogram::bin(w));
    REQUIRE(lo <= w);
    REQUIRE(w - lo <= w / 64);  // within 1/64 of the value
    REQUIRE(WaitHistogram::bin(lo) == WaitHistogram::bin(w));
  }
  h.merge(g);
  REQUIRE(h.total() == 11);
  REQUIRE(h.percentile(0.5) == 1023);  // rank 6 of 1, 3, 3, 5, 100, 1023, ...
  REQUIRE(h.percentile(1.0) == uint64_t{1} << 40);
}

TEST_CASE("closed loop: an ACK waits for the backlog of its reverse port (ack_queueing)", "[traffic][transports]") {
  // single_rack of 4, latency 1. Cross traffic: 2 -> 0 and 3 -> 0, 10 packets each, both sent
  // at t = 0..9 (IW 10): two arrivals and one departure per timeslot at port 0, so its
  // backlog after the ToR's step at t is t (t = 1..10), then 20 - t (t = 10..20).
  // The flow under test: 0 -> 1, 11 packets from t = 8. seq 0..9 leave at 8..17 (IW 10) and
  // arrive at 10..19; seq 10 waits for the first ACK. Its ACKs travel 1 -> 0 and wait in
  // port 0: the ACK produced at t = 10 (of seq 0) finds 10 packets there.
  //  - unqueued (data_path): due 10 + 2 = 12, seq 10 joins the NIC behind seq 9, leaves at
  //    18, arrives at 20.
  //  - delay, data_path: due 10 + 2 + 10 = 22; seq 10 leaves at 22, arrives at 24.
  //  - delay, propagation (1): due 21, arrives at 23.
  // The ACKs of seq 1..9 (produced at 11..19, backlog 9..1) are due at 22 too: ACK compression.
  const Topology topo = make_single_rack(4, 1);
  const FlowList flows = {{0, 2, 0, 10, 0}, {1, 3, 0, 10, 0}, {2, 0, 1, 11, 8}};
  auto with = [](AckLatency latency, AckQueueing q, bool nic = false) {
    TransportConfig t = transport(TransportKind::kReno, 1000);
    t.ack_latency = latency;
    t.ack_queueing = q;
    t.ack_queueing_nic = nic;
    return t;
  };
  const Result none = run(topo, flows, "droptail", {}, with(AckLatency::kDataPath, AckQueueing::kNone), 1, true, 3000);
  REQUIRE(none.states[2].finish == 20);
  REQUIRE(none.acks.acks == 0);  // not counted when off
  const Result delay = run(topo, flows, "droptail", {}, with(AckLatency::kDataPath, AckQueueing::kDelay), 1, true, 3000);
  REQUIRE(delay.states[2].finish == 24);
  REQUIRE(delay.states[0].finish == none.states[0].finish);  // the cross traffic does not wait for ACKs
  REQUIRE(delay.acks.acks == 31);                             // one per packet, nothing lost (1024-packet ports)
  REQUIRE(delay.acks.lost == 0);
  REQUIRE(delay.acks.max_wait == 10);
  REQUIRE(delay.acks.unqueued == 0);
  // Waits: the test flow's ACKs at t = 10..19 find 10, 9, ..., 1, seq 10's at 24 finds 0; the
  // cross traffic's ACK ports (2 and 3) are empty.
  REQUIRE(delay.acks.waited == 55);
  // Per ACK: 21 waited nothing in the port, the test flow's ten 1..10 each; no NIC wait read.
  REQUIRE(delay.acks.port_waits.total() == 31);
  REQUIRE(delay.acks.port_waits.counts[0] == 21);
  REQUIRE(delay.acks.port_waits.percentile(0.5) == 0);
  REQUIRE(delay.acks.port_waits.percentile(0.9) == 7);  // rank 28 of 31
  REQUIRE(delay.acks.port_waits.percentile(0.99) == 10);
  REQUIRE(delay.acks.nic_waits.total() == 31);
  REQUIRE(delay.acks.nic_waits.percentile(0.99) == 0);
  const Result prop = run(topo, flows, "droptail", {}, with(AckLatency::kPropagation, AckQueueing::kDelay), 1, true, 3000);
  REQUIRE(prop.states[2].finish == 23);
  // With the receiver's NIC: endpoint 1's NIC is empty, so the test flow is unchanged; the
  // cross traffic's ACKs leave endpoint 0, whose NIC holds seq 1..9 of the test flow after
  // t = 8 (9 after emit(8), one less each timeslot): the ACKs produced at t = 9..17 wait
  // 9, 8, ..., 1 there (45), the others nothing.
  const Result nic = run(topo, flows, "droptail", {}, with(AckLatency::kDataPath, AckQueueing::kDelay, true), 1, true, 3000);
  REQUIRE(nic.states[2].finish == 24);
  REQUIRE(nic.acks.waited_nic == 45);
  REQUIRE(nic.acks.waited == 55 + 45);
  REQUIRE(nic.acks.nic_waits.counts[0] == 22);
  REQUIRE(nic.acks.nic_waits.percentile(0.9) == 6);  // rank 28: 22 zeros, then 1..6
  REQUIRE(nic.acks.nic_waits.percentile(1.0) == 9);

  // Loss: with 8-packet ports, port 0 holds 8 packets before its departure at t = 8..10 (one
  // arrival refused each timeslot) and 7 after it. The ACK produced at t = 10 is lost there; the
  // one at t = 11 (backlog 6) is due at 19 and acknowledges both: seq 10 leaves at 19,
  // arrives at 21. With delay only, the ACK at t = 10 is due at 10 + 2 + 7 = 19 as well.
  const std::vector<std::pair<std::string, std::string>> small = {{"capacity_pkts", "8"}};
  const Result lossy =
      run(topo, flows, "droptail", small, with(AckLatency::kDataPath, AckQueueing::kDelayAndLoss), 1, true, 3000);
  REQUIRE(drops(lossy) == 3);
  REQUIRE(lossy.acks.lost == 1);
  REQUIRE(lossy.states[2].finish == 21);
  for (uint32_t f = 0; f < 3; ++f) REQUIRE(lossy.states[f].delivered == flows[f].size_pkts);
  const Result delayed = run(topo, flows, "droptail", small, with(AckLatency::kDataPath, AckQueueing::kDelay), 1, true, 3000);
  REQUIRE(delayed.acks.lost == 0);
  REQUIRE(delayed.states[2].finish == 21);
}

TEST_CASE("closed loop: a timeout while the flow's own segments wait in its NIC is counted", "[traffic][transports]") {
  // Endpoint 0 sends 400 packets to 1 from t = 0 (slow start: its NIC backlog grows by about one
  // per timeslot) and 5 to 2 from t = 200, behind a backlog of about 200 that outlasts the 84-
  // timeslot RTO (100 us): that flow times out with all 5 still queued. Nothing is lost.
  const Topology topo = make_single_rack(4, 1);
  const FlowList flows = {{0, 0, 1, 400, 0}, {1, 0, 2, 5, 200}};
  const Result r = run(topo, flows, "droptail", {}, transport(TransportKind::kReno), 1, true, 5000);
  REQUIRE(r.states[0].delivered == 400);
  REQUIRE(r.states[1].delivered == 5);
  REQUIRE(drops(r) == 0);
  REQUIRE(r.outcomes[0].timeouts == 0);
  REQUIRE(r.outcomes[1].timeouts == 1);
  REQUIRE(r.nic.timeouts_with_data_in_nic == 1);
  // The same flow alone: no backlog, no timeout.
  const Result alone = run(topo, {{0, 0, 2, 5, 200}}, "droptail", {}, transport(TransportKind::kReno), 1, true, 5000);
  REQUIRE(alone.outcomes[0].timeouts == 0);
  REQUIRE(alone.nic.timeouts_with_data_in_nic == 0);
  REQUIRE(alone.nic.max_wait == 4);  // seq 4 behind seq 0..3
}

TEST_CASE("closed loop: every flow finishes despite drops, by retransmission", "[traffic][transports]") {
  // An 8-to-1 incast of 100-packet flows into a 16-packet DropTail port: open loop loses
  // packets for good; NewReno and DCTCP (marking at 8 via the dctcp scheme) retransmit.
  const Topology topo = make_single_rack(9, 1);
  FlowList flows;
  for (uint32_t i = 0; i < 8; ++i) flows.push_back({i, static_cast<EndpointId>(i), 8, 100, 0});
  {
    FlowTraffic open(flows, 9, EndpointStamping{});
    Engine e(topo, routers_for(topo, "droptail", {{"capacity_pkts", "16"}}), open, EngineOptions{});
    e.run(5000);
    uint32_t finished = 0;
    for (uint32_t i = 0; i < 8; ++i) finished += open.finished(i);
    REQUIRE(finished < 8);
  }
  const Result reno = run(topo, flows, "droptail", {{"capacity_pkts", "16"}}, transport(TransportKind::kReno), 1, true,
                          20000);
  REQUIRE(drops(reno) > 0);
  uint64_t rtx = 0, timeouts = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    INFO("flow " << i);
    REQUIRE(reno.states[i].delivered == 100);
    rtx += reno.outcomes[i].retransmits;
    timeouts += reno.outcomes[i].timeouts;
  }
  REQUIRE(rtx >= drops(reno) - reno.unexpected);  // every lost transmission was sent again
  (void)timeouts;
  const Result dctcp = run(topo, flows, "dctcp", {{"capacity_pkts", "16"}, {"k_pkts", "8"}}, transport(TransportKind::kDctcp), 1, true,
                           20000);
  uint64_t cuts = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    REQUIRE(dctcp.states[i].delivered == 100);
    cuts += dctcp.outcomes[i].ecn_reductions;
  }
  REQUIRE(cuts > 0);
  REQUIRE(drops(dctcp) < drops(reno));
}

TEST_CASE("closed loop: 1 core and N cores give identical results, lookahead on and off",
          "[traffic][transports][determinism]") {
  // 3 racks of 8 on 2 spines, random flows (a quarter up to 300 packets) over 4000 timeslots,
  // small buffers: drops, marks, retransmissions and timeouts all happen.
  const Topology topo = make_leaf_spine(3, 8, 2, 1, 1);
  const FlowList flows = random_flows(topo.num_endpoints, 500, 4000, 5, 300);
  // With ack_queueing, ACKs read their destination ToR's port backlog (an uplink for flows
  // between racks): the ToR runs on the ACK's core before its sink, on any number of cores.
  struct Case {
    const char* scheme;
    TransportKind kind;
    PriorityStamp prio;
    AckQueueing queueing;
    bool sack = false;
  };
  for (const Case c : {Case{"droptail", TransportKind::kReno, PriorityStamp::kNone, AckQueueing::kNone},
                       Case{"dctcp", TransportKind::kDctcp, PriorityStamp::kNone, AckQueueing::kNone},
                       Case{"pfabric", TransportKind::kPfabric, PriorityStamp::kRemainingSize, AckQueueing::kNone},
                       Case{"droptail", TransportKind::kReno, PriorityStamp::kNone, AckQueueing::kDelayAndLoss},
                       Case{"dctcp", TransportKind::kDctcp, PriorityStamp::kNone, AckQueueing::kDelay},
                       Case{"droptail", TransportKind::kReno, PriorityStamp::kNone, AckQueueing::kDelayAndLoss, true},
                       Case{"dctcp", TransportKind::kDctcp, PriorityStamp::kNone, AckQueueing::kNone, true}}) {
    INFO("scheme " << c.scheme << ", transport " << transport_kind_name(c.kind) << ", ack_queueing "
                   << ack_queueing_name(c.queueing) << ", sack " << c.sack);
    // DCTCP's default K (65) could never mark in a 24-packet queue (a config error now).
    std::vector<std::pair<std::string, std::string>> qm = {{"capacity_pkts", "24"}};
    if (std::string(c.scheme) == "dctcp") qm.emplace_back("k_pkts", "8");
    TransportConfig t = transport(c.kind);
    t.ack_queueing = c.queueing;
    t.params.sack = c.sack;
    const Result one = run(topo, flows, c.scheme, qm, t, 1, true, 40000, c.prio);
    REQUIRE(drops(one) > 0);
    if (c.queueing != AckQueueing::kNone) {
      REQUIRE(one.acks.waited > 0);
      REQUIRE(one.acks.unqueued == 0);
      if (c.queueing == AckQueueing::kDelayAndLoss) REQUIRE(one.acks.lost > 0);
    }
    uint32_t finished = 0;
    for (size_t i = 0; i < flows.size(); ++i) finished += one.states[i].delivered == flows[i].size_pkts;
    REQUIRE(finished == flows.size());  // closed loop: every flow finishes
    for (uint32_t cores : {2u, 3u}) {
      for (bool lookahead : {true, false}) {
        INFO("cores " << cores << ", lookahead " << lookahead);
        const Result many = run(topo, flows, c.scheme, qm, t, cores, lookahead, 40000, c.prio);
        REQUIRE(many.events == one.events);
        REQUIRE(many.acks.waited == one.acks.waited);
        REQUIRE(many.acks.lost == one.acks.lost);
        REQUIRE(many.occupancy == one.occupancy);
        for (size_t i = 0; i < flows.size(); ++i) {
          REQUIRE(many.states[i].finish == one.states[i].finish);
          REQUIRE(many.outcomes[i].retransmits == one.outcomes[i].retransmits);
          REQUIRE(many.outcomes[i].segments_sent == one.outcomes[i].segments_sent);
        }
      }
    }
  }
}

TEST_CASE("closed loop: a window-limited source promises quiet until its earliest ACK or timer",
          "[traffic][transports][lookahead]") {
  // One 30-packet NewReno flow 0 -> 4 leaving group {0..3} (2 racks of 4 on one spine, every
  // link latency 1: forward path 4, ACK 4, RTT 8). IW 2 so the sender is window-limited at once:
  // seq 0, 1 leave at t=0, 1; nothing may leave before the first ACK at t=8.
  const Topology topo = make_leaf_spine(2, 4, 1, 1, 1);
  const FlowList flows = {{0, 0, 4, 30, 0}};
  TransportConfig t = transport(TransportKind::kReno);
  t.params.initial_cwnd_pkts = 2;
  FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
  traffic.enable_transport(topo, t, 1200);
  auto src = traffic.make_source({0, 1, 2, 3});
  auto far_sink = traffic.make_sink({4, 5, 6, 7}, nullptr);
  auto far_src = traffic.make_source({4, 5, 6, 7});  // publishes the far group's progress
  std::vector<Packet> out(4);
  std::vector<uint32_t> local(4);
  REQUIRE(src->emit(0, out.data(), local.data()) == 1);
  REQUIRE(src->remote_quiet_until(0) == 1);  // seq 1 still in the NIC
  REQUIRE(src->emit(1, out.data(), local.data()) == 1);
  // The far group has delivered nothing yet (its progress is 0): an ACK could be produced
  // there at t=0 at the earliest and arrive 4 later.
  REQUIRE(src->remote_quiet_until(1) == 4);
  // The far group runs t=0..3 with no arrivals: the earliest ACK is now (4 + 4) = 8.
  for (Timeslot now = 0; now < 4; ++now) far_src->emit(now, out.data(), local.data());
  REQUIRE(src->remote_quiet_until(1) == 8);
}

TEST_CASE("closed loop: the transport section is parsed strictly, errors name the field", "[traffic][transports][config]") {
  const std::string base = std::string("network: {link_rate_gbps: 10}\n") +
                           "topology: {kind: single_rack, endpoints: 4}\n"
                           "workload: {kind: poisson, load: 0.3, size_cdf: " FLEXPLANE_SOURCE_DIR
                           "/experiments/data/flow-sizes/web-search.cdf}\n";
  auto parse = [&](const std::string& transport) {
    return parse_run(YAML::Load(base + transport), "t.yaml", FLEXPLANE_SOURCE_DIR, "");
  };
  REQUIRE_FALSE(parse("").transport.enabled);
  REQUIRE_FALSE(parse("transport: {kind: none, min_rto_us: 5}").transport.enabled);  // a variant switching it off
  const RunConfig c = parse("transport: {kind: newreno, min_rto_us: 200, ack_latency: propagation}");
  REQUIRE(c.transport.enabled);
  REQUIRE(c.transport.kind == TransportKind::kReno);
  REQUIRE(c.transport.params.min_rto_us == 200);
  REQUIRE(c.transport.ack_latency == AckLatency::kPropagation);
  REQUIRE(c.transport.ack_queueing == AckQueueing::kNone);
  REQUIRE(parse("transport: {kind: dctcp, ack_queueing: delay}").transport.ack_queueing == AckQueueing::kDelay);
  REQUIRE(parse("transport: {kind: reno, ack_queueing: delay_and_loss}").transport.ack_queueing ==
          AckQueueing::kDelayAndLoss);
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, ack_queueing: yes}"), Catch::Contains("transport.ack_queueing"));
  REQUIRE(c.transport.ack_queueing_nic);
  REQUIRE_FALSE(parse("transport: {kind: dctcp, ack_queueing: delay, ack_queueing_nic: false}").transport.ack_queueing_nic);
  REQUIRE(parse("transport: {kind: dctcp, dctcp_g: 0.125}").transport.params.dctcp_g == 0.125);
  REQUIRE_THROWS_WITH(parse("transport: {kind: vegas}"), Catch::Contains("transport.kind") && Catch::Contains("vegas"));
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, min_rto: 5}"), Catch::Contains("unknown parameter 'min_rto'"));
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, ack_latency: slow}"), Catch::Contains("transport.ack_latency"));
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, ack_every_pkts: 2}"),
                      Catch::Contains("transport.ack_every_pkts"));
}

TEST_CASE("closed loop: stop when done ends after the last ACK, identically on 1 and N cores",
          "[traffic][transports][determinism][stop]") {
  // The determinism case's network and flows with a cap of 200000 timeslots: every flow is
  // acknowledged long before. Stopped early, the results are those of the run to the cap (the
  // occupancy series ends earlier, and what it misses is empty), on any number of cores.
  const Topology topo = make_leaf_spine(3, 8, 2, 1, 1);
  const FlowList flows = random_flows(topo.num_endpoints, 500, 4000, 5, 300);
  const std::vector<std::pair<std::string, std::string>> qm = {{"capacity_pkts", "24"}, {"k_pkts", "8"}};
  for (const AckQueueing queueing : {AckQueueing::kNone, AckQueueing::kDelayAndLoss}) {
    INFO("ack_queueing " << ack_queueing_name(queueing));
    TransportConfig t = transport(TransportKind::kDctcp);
    t.ack_queueing = queueing;
    const Result full = run(topo, flows, "dctcp", qm, t, 1, true, 200000);
    REQUIRE_FALSE(full.done);
    const Result one = run(topo, flows, "dctcp", qm, t, 1, true, 200000, PriorityStamp::kNone, true);
    REQUIRE(one.done);
    REQUIRE(drops(one) > 0);  // retransmissions happened
    Timeslot last = 0;  // the last delivery or drop
    uint32_t finished = 0;
    for (const auto& e : one.events) last = std::max(last, e.time);
    for (size_t i = 0; i < flows.size(); ++i) finished += one.states[i].delivered == flows[i].size_pkts;
    REQUIRE(finished == flows.size());
    INFO("last event " << last << ", stopped at " << one.end);
    REQUIRE(one.end > last);
    REQUIRE(one.end < 20000);  // far before the cap
    REQUIRE(one.events == full.events);
    REQUIRE(one.acks.acks == full.acks.acks);
    REQUIRE(one.acks.waited == full.acks.waited);
    REQUIRE(one.nic.waited == full.nic.waited);
    for (size_t i = 0; i < flows.size(); ++i) {
      REQUIRE(one.states[i].finish == full.states[i].finish);
      REQUIRE(one.outcomes[i].segments_sent == full.outcomes[i].segments_sent);
      REQUIRE(one.outcomes[i].timeouts == full.outcomes[i].timeouts);
    }
    REQUIRE(one.occupancy.size() < full.occupancy.size());
    REQUIRE(std::equal(one.occupancy.begin(), one.occupancy.end(), full.occupancy.begin()));
    for (size_t i = one.occupancy.size(); i < full.occupancy.size(); ++i) REQUIRE(full.occupancy[i].packets == 0);
    for (uint32_t cores : {2u, 3u})
      for (bool lookahead : {true, false}) {
        INFO("cores " << cores << ", lookahead " << lookahead);
        const Result many = run(topo, flows, "dctcp", qm, t, cores, lookahead, 200000, PriorityStamp::kNone, true);
        REQUIRE(many.done);
        REQUIRE(many.end == one.end);
        REQUIRE(many.events == one.events);
        REQUIRE(many.occupancy == one.occupancy);
        REQUIRE(many.acks.waited == one.acks.waited);
        for (size_t i = 0; i < flows.size(); ++i) REQUIRE(many.states[i].finish == one.states[i].finish);
      }
  }
  // A flow that cannot finish before the cap keeps the run to its cap.
  const FlowList long_flow = {{0, 0, 1, 5000, 0}};
  const Topology rack = make_single_rack(2, 1);
  const Result capped = run(rack, long_flow, "droptail", {}, transport(TransportKind::kReno), 2, true, 3000,
                            PriorityStamp::kNone, true);
  REQUIRE(capped.states[0].delivered > 1000);
  REQUIRE(capped.states[0].delivered < 5000);
  REQUIRE_FALSE(capped.done);
  REQUIRE(capped.end == 3000);
}

TEST_CASE("closed loop: a flow's transport state lives from its start to its last packet or ACK",
          "[traffic][transports][memory]") {
  // The determinism case's flows, with ACKs lost in full ports (so that senders time out and
  // resend to receivers that already have everything: those answer from the flow's record).
  // Mid-run, exactly the flows started and not yet acknowledged in full hold a sender, and
  // those with some but not all packets delivered a receiver; at the end, none.
  const Topology topo = make_leaf_spine(3, 8, 2, 1, 1);
  const FlowList flows = random_flows(topo.num_endpoints, 500, 4000, 5, 300);
  TransportConfig t = transport(TransportKind::kDctcp);
  t.ack_queueing = AckQueueing::kDelayAndLoss;
  for (uint32_t cores : {1u, 3u})
    for (Timeslot end : {Timeslot{2500}, Timeslot{200000}}) {
      INFO("cores " << cores << ", end " << end);
      FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
      traffic.enable_transport(topo, t, 1200);
      EngineOptions opt;
      opt.cores = cores;
      opt.stop_when_done = true;
      Engine engine(topo, routers_for(topo, "dctcp", {{"capacity_pkts", "24"}, {"k_pkts", "8"}}), traffic, opt);
      engine.run(end);
      uint64_t senders = 0, receivers = 0, resent = 0;
      for (size_t i = 0; i < flows.size(); ++i) {
        const FlowState& s = traffic.states()[i];
        const SenderOutcome& o = traffic.sender_outcomes()[i];
        senders += flows[i].start < engine.now() && o.segments_sent == 0;  // outcomes are written when done
        receivers += s.delivered > 0 && s.delivered < flows[i].size_pkts;
        resent += o.retransmits;
      }
      const FlowTraffic::LiveFlowState live = traffic.live_flow_state();
      REQUIRE(live.senders == senders);
      REQUIRE(live.receivers == receivers);
      if (end == 2500) {
        REQUIRE(senders > 0);
        REQUIRE(receivers > 0);
      } else {
        REQUIRE(engine.stopped_when_done());
        REQUIRE(resent > 0);
        REQUIRE(senders == 0);
        REQUIRE(receivers == 0);
      }
    }
}

TEST_CASE("closed loop: the NIC FIFO keeps order, reuses its slots and gives big storage back",
          "[traffic][transports][memory]") {
  NicFifo q;
  REQUIRE(q.slots() == 0);
  uint32_t in = 0, out = 0;
  auto pop_checked = [&] {
    REQUIRE(q.front().arrival == out);
    REQUIRE(q.front().seq == out * 3);
    q.pop();
    ++out;
  };
  auto push = [&] {
    q.push({in, in * 3, 0, NicSlot::kEct});
    ++in;
  };
  // A host that never drains: 10 queued while 100,000 pass through, in 16 slots throughout
  // (a vector popped from the front grew by one entry per segment).
  for (int i = 0; i < 10; ++i) push();
  for (int i = 0; i < 100000; ++i) {
    push();
    pop_checked();
    REQUIRE(q.slots() == NicFifo::kFirstSlots);
  }
  REQUIRE(q.size() == 10);
  // A burst of 1,000 doubles the ring to 1,024 slots, in order across the copies; drained, the
  // storage goes back. A FIFO that stayed small keeps its slots.
  for (int i = 0; i < 1000; ++i) push();
  REQUIRE(q.slots() == 1024);
  while (!q.empty()) pop_checked();
  REQUIRE(q.slots() == 0);
  for (int i = 0; i < 40; ++i) push();
  while (!q.empty()) pop_checked();
  REQUIRE(q.slots() == 64);
  REQUIRE(in == out);
  // Waits from the low 32 bits of the joining timeslot, across a wrap of those bits.
  const Timeslot joined = (Timeslot{1} << 32) - 3;
  const NicSlot s{0, 0, static_cast<uint32_t>(joined), 0};
  REQUIRE(s.wait(joined) == 0);
  REQUIRE(s.wait(joined + 10) == 10);
  REQUIRE(s.wait(joined + 123456) == 123456);
}
