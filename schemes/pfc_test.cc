// PFC on a pattern router (api/pfc.h): ingress accounting, XOFF / XON at the
// thresholds, paused egress, per-priority pause, the counters, and the
// configuration errors. The engine's side (frames on links, hosts, lossless
// incast, 1 vs N cores) is emulator/run/pfc_test.cc.
#include <catch2/catch.hpp>

#include "api/pfc.h"
#include "emulator/config/router_factory.h"
#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

PfcParams thresholds(uint32_t xoff, uint32_t xon) {
  PfcParams p;
  p.xoff_pkts = xoff;
  p.xon_pkts = xon;
  p.headroom_pkts = 2;
  return p;
}

Components droptail(uint32_t capacity) { return {{"single"}, {"droptail", {{"capacity_pkts", std::to_string(capacity)}}}, {"fifo"}}; }

}  // namespace

TEST_CASE("pfc: an ingress that reaches xoff pauses its neighbour; one that drains to xon resumes it", "[pfc]") {
  const PfcParams p = thresholds(4, 2);
  TestRouter r(4, droptail(64), 1, 1500, kNsPerTick, &p);
  REQUIRE(r.router().pauses());
  // Ingresses 1 and 2 each deliver one packet per timeslot to port 0, which
  // sends one: the router gains a packet a timeslot. Each neighbour stops
  // once paused (at once: no link latency here).
  std::vector<Timeslot> xoff_at(4, 0), xon_at(4, 0);
  Timeslot t = 0;
  for (; t < 40 && !(xoff_at[1] && xoff_at[2]); ++t) {
    std::vector<Packet> in;
    std::vector<PortId> from;
    for (PortId i : {PortId{1}, PortId{2}})
      if (!xoff_at[i]) in.push_back(pkt(i, static_cast<uint32_t>(t), 0)), from.push_back(i);
    r.input_from(in, from, t);
    r.output(t);
    for (const PauseFrame& f : r.pause_frames(t)) {
      INFO("t " << t << " port " << f.port);
      CHECK(f.paused == 1);
      CHECK(r.bank().ingress_packets(f.port, 0) == 4);
      xoff_at[f.port] = t;
    }
  }
  REQUIRE(xoff_at[1] > 0);
  REQUIRE(xoff_at[2] > 0);
  CHECK(r.bank().ingress_packets(1, 0) + r.bank().ingress_packets(2, 0) == r.bank().port_packets(0));
  // Nothing more arrives: drain.
  for (; t < 60; ++t) {
    r.output(t);
    for (const PauseFrame& f : r.pause_frames(t)) {
      CHECK(f.paused == 0);
      CHECK(r.bank().ingress_packets(f.port, 0) == 2);
      xon_at[f.port] = t;
    }
  }
  CHECK(xon_at[1] > xoff_at[1]);
  CHECK(xon_at[2] > xoff_at[2]);
  const Timeslot end = t;
  for (PortId in : {PortId{1}, PortId{2}}) {
    const PfcCounters c = r.router().pfc()->counters(in, 0, end);
    INFO("ingress " << in);
    CHECK(c.pauses_sent == 1);
    CHECK(c.resumes_sent == 1);
    CHECK(c.max_ingress_pkts == 4);
    CHECK(c.paused_sent_ts == xon_at[in] - xoff_at[in]);
    CHECK(c.headroom_overruns == 0);
  }
  CHECK(r.bank().ingress_packets(1, 0) == 0);
  r.check_invariants();
}

TEST_CASE("pfc: a paused egress sends nothing while other ports do; resumed, it sends again", "[pfc]") {
  const PfcParams p = thresholds(100, 50);
  TestRouter r(4, droptail(64), 1, 1500, kNsPerTick, &p);
  r.input_from({pkt(1, 0, 0), pkt(2, 0, 3)}, {1, 2}, 0);
  r.router().pause(0, 1, 0);  // the neighbour on port 0 paused priority 0
  auto sent = r.output(0);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].first == 3);
  CHECK(r.bank().port_packets(0) == 1);
  CHECK(r.output(1).empty());
  r.router().pause(0, 0, 5);
  sent = r.output(5);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].first == 0);
  const PfcCounters c = r.router().pfc()->counters(0, 0, 9);
  CHECK(c.pauses_received == 1);
  CHECK(c.paused_ts == 5);
  r.check_invariants();
}

TEST_CASE("pfc: priorities are queues; pausing one lets the others through", "[pfc]") {
  const PfcParams p = thresholds(100, 50);
  const Components c{{"by_source", {{"num_queues", "2"}}}, {"droptail", {{"capacity_pkts", "16"}}}, {"priority"}};
  TestRouter r(2, c, 1, 1500, kNsPerTick, &p);
  // Source 0 -> queue 0 (served first), source 1 -> queue 1.
  r.input_from({from_source(0, 0), from_source(1, 0), from_source(0, 1)}, {0, 1, 0}, 0);
  r.router().pause(0, 1, 0);  // priority 0 of port 0 paused
  auto sent = r.output(0);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].second.src == 1);  // queue 1's packet, although queue 0 has strict priority
  CHECK(r.output(1).empty());      // queue 0's are held
  r.router().pause(0, 0, 2);
  CHECK(r.output(2).at(0).second.src == 0);
  CHECK(r.output(3).at(0).second.src == 0);
  r.check_invariants();
}

TEST_CASE("pfc: the dynamic threshold pauses earlier as the shared buffer fills", "[pfc]") {
  PfcParams p = thresholds(1000, 990);
  p.alpha = 1;
  p.buffer_pkts = 20;
  TestRouter r(4, droptail(64), 1, 1500, kNsPerTick, &p);
  // No output: ingress 1 alone fills the router; it pauses once it holds
  // alpha x (20 - held), i.e. at 10 packets, far below xoff_pkts.
  Timeslot xoff_at = ~Timeslot{0};
  for (Timeslot t = 0; t < 20 && xoff_at == ~Timeslot{0}; ++t) {
    r.input_from({pkt(1, t, 0)}, {1}, t);
    r.router().pause(0, 1, t);  // keep port 0 from sending
    r.output(t);
    if (!r.pause_frames(t).empty()) xoff_at = t;
  }
  CHECK(xoff_at == 9);  // 10 held: 10 >= 1 x (20 - 10)
}

TEST_CASE("pfc: eviction and dequeue both release the ingress's count", "[pfc]") {
  QueueBank b(2, 1, 8);
  b.keep_ingress();
  b.set_ingress(1);
  REQUIRE(b.push(0, 0, pkt(1, 0)));
  REQUIRE(b.push(0, 0, pkt(1, 1)));
  b.set_ingress(0);
  REQUIRE(b.push(0, 0, pkt(2, 0)));
  CHECK(b.ingress_packets(1, 0) == 2);
  CHECK(b.ingress_packets(0, 0) == 1);
  CHECK(b.ingress_of(0, 0, 2) == 0);
  b.remove_at(0, 0, 1);  // the second of ingress 1
  CHECK(b.ingress_packets(1, 0) == 1);
  CHECK(b.ingress_of(0, 0, 1) == 0);  // moved with its packet
  b.pop(0, 0);
  CHECK(b.ingress_packets(1, 0) == 0);
  b.pop_at(0, 0, 0);
  CHECK(b.ingress_packets(0, 0) == 0);
}

TEST_CASE("pfc: configuration errors name the field", "[pfc][config]") {
  RouterSpec spec;
  spec.where = "x.yaml: routers.default";
  spec.scheme = "droptail";
  spec.pfc = true;
  ResolvedRouter resolved;
  SECTION("xon must be below xoff") {
    spec.pfc_params.set("xon_pkts", "40");
    spec.pfc_params.set("xoff_pkts", "32");
    REQUIRE_THROWS_WITH(build_router(spec), Catch::Contains("routers.default.pfc") && Catch::Contains("xon_pkts (40)"));
  }
  SECTION("unknown parameter") {
    spec.pfc_params.set("xof_pkts", "32");
    REQUIRE_THROWS_WITH(build_router(spec), Catch::Contains("unknown parameter 'xof_pkts'"));
  }
  SECTION("a scheduler that picks queues on its own") {
    spec.scheme = "";
    spec.classifier = ComponentSpec{"by_flow", {}};
    spec.classifier.params.set("num_queues", "4");
    spec.scheduler.name = "drr";
    REQUIRE_THROWS_WITH(build_router(spec), Catch::Contains("honours pauses") && Catch::Contains("'drr'"));
  }
  SECTION("more queues than priorities") {
    spec.scheme = "";
    spec.classifier = ComponentSpec{"by_flow", {}};
    spec.classifier.params.set("num_queues", "16");
    spec.scheduler.name = "round_robin";
    REQUIRE_THROWS_WITH(build_router(spec), Catch::Contains("8 priorities"));
  }
  SECTION("defaults resolve into the metadata") {
    auto r = build_router(spec, &resolved);
    CHECK(r->pauses());
    CHECK(resolved.pfc);
    CHECK(resolved.pfc_params.at(0) == std::pair<std::string, std::string>{"xoff_pkts", "32"});
  }
}
