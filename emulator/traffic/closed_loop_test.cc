// Closed-loop transports driven by the engine (emulator/traffic/closed_loop.*).
#include "emulator/traffic/closed_loop.h"

#include <catch2/catch.hpp>

#include "api/rng.h"
#include "emulator/config/config.h"
#include "emulator/config/router_factory.h"
#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
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
};

Result run(const Topology& topo, const FlowList& flows, const std::string& scheme,
           std::vector<std::pair<std::string, std::string>> qm, const TransportConfig& t, uint32_t cores,
           bool lookahead, Timeslot end, PriorityStamp prio = PriorityStamp::kNone) {
  EndpointStamping stamping;
  stamping.priority = prio;
  FlowTraffic traffic(flows, topo.num_endpoints, stamping);
  traffic.enable_transport(topo, t, 1200);
  EngineOptions opt;
  opt.cores = cores;
  opt.lookahead = lookahead;
  opt.packet_log = true;
  opt.occupancy_interval = 25;
  Engine engine(topo, routers_for(topo, scheme, qm), traffic, opt);
  engine.run(end);
  return {engine.events(), engine.occupancy(), traffic.states(), traffic.sender_outcomes(),
          traffic.unexpected_arrivals()};
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
  }
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
  struct Case {
    const char* scheme;
    TransportKind kind;
    PriorityStamp prio;
  };
  for (const Case c : {Case{"droptail", TransportKind::kReno, PriorityStamp::kNone},
                       Case{"dctcp", TransportKind::kDctcp, PriorityStamp::kNone},
                       Case{"pfabric", TransportKind::kPfabric, PriorityStamp::kRemainingSize}}) {
    INFO("scheme " << c.scheme << ", transport " << transport_kind_name(c.kind));
    const std::vector<std::pair<std::string, std::string>> qm = {{"capacity_pkts", "24"}};
    const Result one = run(topo, flows, c.scheme, qm, transport(c.kind), 1, true, 40000, c.prio);
    REQUIRE(drops(one) > 0);
    uint32_t finished = 0;
    for (size_t i = 0; i < flows.size(); ++i) finished += one.states[i].delivered == flows[i].size_pkts;
    REQUIRE(finished == flows.size());  // closed loop: every flow finishes
    for (uint32_t cores : {2u, 3u}) {
      for (bool lookahead : {true, false}) {
        INFO("cores " << cores << ", lookahead " << lookahead);
        const Result many = run(topo, flows, c.scheme, qm, transport(c.kind), cores, lookahead, 40000, c.prio);
        REQUIRE(many.events == one.events);
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
  REQUIRE(parse("transport: {kind: dctcp, dctcp_g: 0.125}").transport.params.dctcp_g == 0.125);
  REQUIRE_THROWS_WITH(parse("transport: {kind: vegas}"), Catch::Contains("transport.kind") && Catch::Contains("vegas"));
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, min_rto: 5}"), Catch::Contains("unknown parameter 'min_rto'"));
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, ack_latency: slow}"), Catch::Contains("transport.ack_latency"));
  REQUIRE_THROWS_WITH(parse("transport: {kind: dctcp, ack_every_pkts: 2}"),
                      Catch::Contains("transport.ack_every_pkts"));
}
