#include "emulator/engine/engine.h"

#include <catch2/catch.hpp>

#include <set>

#include "api/rng.h"
#include "emulator/traffic/backlog_traffic.h"
#include "emulator/traffic/flow_traffic.h"
#include "emulator/config/router_factory.h"
#include "emulator/engine/engine_test_util.h"

using namespace flexplane;
using flexplane::test::random_flows;
using flexplane::test::routers_for;

namespace {

PacketEvent delivered(Timeslot t, uint32_t flow, uint32_t seq, EndpointId src, EndpointId dst) {
  PacketEvent e;
  e.time = t;
  e.flow = flow;
  e.seq = seq;
  e.src = src;
  e.dst = dst;
  e.kind = PacketEvent::kDelivered;
  return e;
}

PacketEvent dropped(Timeslot t, uint32_t flow, uint32_t seq, EndpointId src, EndpointId dst, PortId port) {
  PacketEvent e = delivered(t, flow, seq, src, dst);
  e.kind = PacketEvent::kDropped;
  e.router = 0;
  e.port = port;
  e.reason = Reason::kQueueFull;
  return e;
}

// Flows that mostly stay in their rack (`per_rack` endpoints each): one in
// `remote_one_in` leaves it, so sources can promise quiet spells (lookahead).
FlowList rack_local_flows(uint32_t endpoints, uint32_t per_rack, uint32_t count, Timeslot horizon,
                          uint32_t remote_one_in, uint64_t seed) {
  Rng rng(seed);
  FlowList flows = random_flows(endpoints, count, horizon, seed);
  for (FlowSpec& f : flows)
    if (rng.below(remote_one_in) != 0) {
      const EndpointId base = f.src / per_rack * per_rack;
      do f.dst = base + static_cast<EndpointId>(rng.below(per_rack));
      while (f.dst == f.src);
    }
  return flows;
}

struct RunOutput {
  std::vector<PacketEvent> events;
  std::vector<OccupancySample> occupancy;
  std::vector<FlowState> states;
  std::vector<QueueCounters> counters;
  std::vector<CoreSyncStats> sync;
  Timeslot end = 0;           // where the run ended
  bool done = false;          // ... because everything was done (stop_when_done)
};

// Queue manager parameters that give every scheme drops in these short runs (a timeslot is
// 1.2 us: CoDel's target is 2 timeslots, its interval 10).
std::vector<std::pair<std::string, std::string>> small_buffers(const std::string& scheme) {
  if (scheme == "codel") return {{"capacity_pkts", "16"}, {"target_us", "2.4"}, {"interval_ms", "0.012"}};
  if (scheme == "fq_codel") return {{"limit_pkts", "32"}, {"target_us", "2.4"}, {"interval_ms", "0.012"}};
  if (scheme == "pie") return {{"capacity_pkts", "16"}, {"target_us", "6"}, {"tupdate_ms", "0.006"}, {"max_burst_ms", "0"}};
  return {{"capacity_pkts", "16"}};
}

struct LeafSpineRun {
  std::string scheme = "droptail";
  uint32_t cores = 1;
  bool lookahead = true;
  RouterPlacement placement = RouterPlacement::kGrouped;
  uint32_t racks = 3, spines = 2;
  uint32_t remote_one_in = 1;  // 1: destinations uniform over all endpoints
  uint64_t seed = 7;
  uint32_t fat_tree_k = 0;     // > 0: a k-ary fat tree instead (racks of k/2 endpoints under its edges)
  bool stop_when_done = false;
  Timeslot end = 6000;
  Timeslot horizon = 4000;     // flows start in [0, horizon)
};

RunOutput run_leaf_spine(const LeafSpineRun& run) {
  Topology topo = run.fat_tree_k ? make_fat_tree(run.fat_tree_k, 1) : make_leaf_spine(run.racks, 8, run.spines, 1, 1);
  const uint32_t per_rack = run.fat_tree_k ? run.fat_tree_k / 2 : 8;
  FlowList flows = run.remote_one_in == 1
                       ? random_flows(topo.num_endpoints, 600, run.horizon, run.seed)
                       : rack_local_flows(topo.num_endpoints, per_rack, 600, run.horizon, run.remote_one_in, run.seed);
  EndpointStamping stamping;
  stamping.priority = PriorityStamp::kRemainingSize;
  FlowTraffic traffic(flows, topo.num_endpoints, stamping);
  EngineOptions opt;
  opt.cores = run.cores;
  opt.lookahead = run.lookahead;
  opt.placement = run.placement;
  opt.packet_log = true;
  opt.occupancy_interval = 50;
  opt.seed = run.seed;
  opt.stop_when_done = run.stop_when_done;
  Engine engine(topo, routers_for(topo, run.scheme, small_buffers(run.scheme)), traffic, opt);
  engine.run(run.end);
  RunOutput out{engine.events(), engine.occupancy(), traffic.states(), {}, engine.sync_stats(), engine.now(),
                engine.stopped_when_done()};
  for (uint32_t r = 0; r < engine.num_routers(); ++r) {
    const QueueBank& b = engine.router(r).bank();
    for (PortId p = 0; p < b.num_ports(); ++p)
      for (QueueId q = 0; q < b.queues_per_port(); ++q) out.counters.push_back(b.counters(p, q));
  }
  return out;
}

bool same_counters(const QueueCounters& a, const QueueCounters& b) {
  return a.arrived == b.arrived && a.enqueued == b.enqueued && a.dequeued == b.dequeued &&
         a.dropped_on_arrival == b.dropped_on_arrival && a.dropped_at_dequeue == b.dropped_at_dequeue && a.evicted == b.evicted &&
         a.marked == b.marked;
}

void require_same(const RunOutput& many, const RunOutput& one) {
  REQUIRE(many.events == one.events);
  REQUIRE(many.occupancy == one.occupancy);
  REQUIRE(many.states.size() == one.states.size());
  for (size_t i = 0; i < one.states.size(); ++i) {
    REQUIRE(many.states[i].delivered == one.states[i].delivered);
    REQUIRE(many.states[i].finish == one.states[i].finish);
  }
  REQUIRE(many.counters.size() == one.counters.size());
  for (size_t i = 0; i < one.counters.size(); ++i) REQUIRE(same_counters(many.counters[i], one.counters[i]));
}

// The samples of `full` that `early` does not have: all after early's end, all empty.
void require_prefix_then_idle(const std::vector<OccupancySample>& early, const std::vector<OccupancySample>& full,
                              Timeslot early_end) {
  REQUIRE(early.size() < full.size());
  REQUIRE(std::equal(early.begin(), early.end(), full.begin()));
  for (size_t i = early.size(); i < full.size(); ++i) {
    REQUIRE(full[i].time >= early_end);
    REQUIRE(full[i].packets == 0);
  }
}

}  // namespace

TEST_CASE("trace replay: two flows into one port give the hand-derived per-packet outcomes", "[engine]") {
  // 3 endpoints on one ToR, latency 1, DropTail of 2 packets. Flows 0 (0->2)
  // and 1 (1->2), 3 packets each, start at t=0. Each timeslot the ToR takes in
  // one packet per flow, in port order rotated by the timeslot (t odd: flow 1
  // first, PatternRouter::input), and sends one to endpoint 2:
  //  t1 queue [1.0 0.0]                      send 1.0 (arrives t2)
  //  t2 queue [0.0 0.1], 1.1 dropped (full)  send 0.0 (arrives t3)
  //  t3 queue [0.1 1.2], 0.2 dropped         send 0.1 (arrives t4)
  //  t4 send 1.2 (arrives t5). Each flow loses one packet; neither finishes.
  // (In plain port order flow 0 would win every tie and flow 1 lose twice.)
  Topology topo = make_single_rack(3, 1);
  FlowList flows = {{0, 0, 2, 3, 0}, {1, 1, 2, 3, 0}};
  FlowTraffic traffic(flows, 3, EndpointStamping{});
  EngineOptions opt;
  opt.packet_log = true;
  Engine engine(topo, routers_for(topo, "droptail", {{"capacity_pkts", "2"}}), traffic, opt);
  engine.run(20);
  std::vector<PacketEvent> expected = {
      delivered(2, 1, 0, 1, 2), dropped(2, 1, 1, 1, 2, 2), delivered(3, 0, 0, 0, 2),
      dropped(3, 0, 2, 0, 2, 2), delivered(4, 0, 1, 0, 2), delivered(5, 1, 2, 1, 2),
  };
  sort_events(expected);
  REQUIRE(engine.events() == expected);
  REQUIRE_FALSE(traffic.finished(0));
  REQUIRE_FALSE(traffic.finished(1));
  REQUIRE(traffic.states()[0].delivered == 2);
  REQUIRE(traffic.states()[1].delivered == 2);
  REQUIRE(engine.router_packet_hops() == 4);
}

TEST_CASE("1-core and N-core runs of the same config are identical", "[engine][determinism]") {
  // DropTail, pFabric (which evicts queued packets and reads priorities), CoDel and FQ-CoDel
  // (which drop at dequeue, by enqueue times).
  for (const std::string s : {"droptail", "pfabric", "codel", "fq_codel"}) {
    LeafSpineRun run;
    run.scheme = s;
    const RunOutput one = run_leaf_spine(run);
    REQUIRE(one.events.size() > 1000);
    uint64_t drops = 0;
    for (const auto& e : one.events) drops += e.kind == PacketEvent::kDropped;
    REQUIRE(drops > 0);  // the scenario must exercise drops too
    const auto by_key = [](const PacketEvent& a, const PacketEvent& b) { return a.key() < b.key(); };
    REQUIRE(std::is_sorted(one.events.begin(), one.events.end(), by_key));
    for (uint32_t cores : {2u, 3u, 5u}) {
      INFO("scheme " << s << ", cores " << cores);
      run.cores = cores;
      const RunOutput n = run_leaf_spine(run);
      REQUIRE(std::is_sorted(n.events.begin(), n.events.end(), by_key));  // the cores' logs merged in order
      require_same(n, one);
    }
  }
}

TEST_CASE("fat tree (three tiers): 1-core and N-core runs are identical, with and without lookahead",
          "[engine][determinism][fat_tree]") {
  // k = 4: 16 endpoints, 20 routers in three tiers, ECMP at two of them, on 2 and 3 cores with
  // and without lookahead, pods grouped and round robin; and k = 6 with rack-local traffic, so
  // cores promise quiet spells across all three tiers. (Kept small: this also runs under TSan.)
  struct Case {
    uint32_t k;
    std::string scheme;
    std::vector<uint32_t> cores;
    std::vector<bool> lookahead;
    RouterPlacement placement = RouterPlacement::kGrouped;
  };
  for (const Case& c : {Case{4, "droptail", {2, 3}, {true, false}}, Case{4, "pfabric", {3}, {true}},
                        Case{4, "droptail", {2}, {true}, RouterPlacement::kRoundRobin},
                        Case{6, "droptail", {2}, {true}}}) {
    LeafSpineRun run;
    run.fat_tree_k = c.k;
    run.scheme = c.scheme;
    run.remote_one_in = c.k == 4 ? 1 : 10;
    const RunOutput one = run_leaf_spine(run);
    REQUIRE(one.events.size() > 1000);
    uint64_t drops = 0;
    for (const auto& e : one.events) drops += e.kind == PacketEvent::kDropped;
    REQUIRE(drops > 0);
    // Every tier held packets at some point (nothing stays in the edges only).
    const Topology topo = make_fat_tree(c.k, 1);
    std::set<std::string> busy_tiers;
    for (const OccupancySample& o : one.occupancy)
      if (o.packets) busy_tiers.insert(topo.routers[o.router].tier);
    REQUIRE(busy_tiers == std::set<std::string>{"edge", "agg", "core"});
    for (uint32_t cores : c.cores)
      for (bool lookahead : c.lookahead) {
        INFO("k " << c.k << ", scheme " << c.scheme << ", cores " << cores << ", lookahead " << lookahead
                   << ", grouped " << (c.placement == RouterPlacement::kGrouped));
        run.cores = cores;
        run.lookahead = lookahead;
        run.placement = c.placement;
        require_same(run_leaf_spine(run), one);
      }
  }
}

TEST_CASE("lookahead changes no result, and spares cores most waits when traffic stays in its rack",
          "[engine][determinism][lookahead]") {
  // 2 racks + 1 spine: on 2 cores tor0 and the spine on core 0, tor1 on core
  // 1; on 3 cores the spine on a core of its own, promising what the ToRs'
  // cores promise it. One flow in 20 leaves its rack, so racks promise quiet
  // spells.
  LeafSpineRun run;
  run.racks = 2;
  run.spines = 1;
  run.remote_one_in = 20;
  const RunOutput one = run_leaf_spine(run);
  REQUIRE(one.events.size() > 1000);
  for (uint32_t cores : {2u, 3u}) {
    for (bool lookahead : {true, false}) {
      INFO("cores " << cores << ", lookahead " << lookahead);
      run.cores = cores;
      run.lookahead = lookahead;
      const RunOutput many = run_leaf_spine(run);
      require_same(many, one);
      for (const CoreSyncStats& c : many.sync) {
        if (lookahead) {
          CHECK(c.promises_published > 0);
          CHECK(c.syncs_by_promise > 0);
          CHECK(c.syncs < 6000 / 4);  // measured: 25-366
        } else {
          CHECK(c.promises_published == 0);
          CHECK(c.syncs_by_promise == 0);
          CHECK(c.syncs > 6000 / 4);  // lockstep: at least one per 2 timeslots (measured: 3001-8984)
        }
      }
    }
  }
}

TEST_CASE("with traffic that never leaves its rack, coupled cores never wait for each other", "[engine][lookahead]") {
  Topology topo = make_leaf_spine(2, 8, 1, 1, 1);
  BacklogTraffic traffic;
  EngineOptions opt;
  opt.cores = 2;
  Engine engine(topo, routers_for(topo, "droptail"), traffic, opt);
  engine.run(5000);
  engine.run(10000);
  // The racks' first sends may leave them as far as the engine knows (its
  // first look, at timeslot 0); its next look, 16 timeslots on, promises
  // "idle for good". Until the neighbour sees that promise the cores sync as
  // usual (how many times depends on thread timing); after it, never again.
  for (const CoreSyncStats& c : engine.sync_stats()) {
    CHECK(c.promises_published >= 1);
    CHECK(c.promises_published <= 2);
    CHECK(c.syncs < 100);  // of 10000 timeslots
  }
  REQUIRE(engine.router_packet_hops() == 2u * 8u * 9999u);
}

TEST_CASE("timing timeslots counts every timeslot of every core and changes no result", "[engine][timing]") {
  Topology topo = make_leaf_spine(2, 4, 1, 1, 1);
  FlowList flows = random_flows(topo.num_endpoints, 100, 1000, 5);
  std::vector<std::vector<PacketEvent>> events;
  for (bool timed : {false, true}) {
    FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
    EngineOptions opt;
    opt.cores = 2;
    opt.packet_log = true;
    opt.time_timeslots = timed;
    Engine engine(topo, routers_for(topo, "droptail", {{"capacity_pkts", "8"}}), traffic, opt);
    engine.run(1500);
    engine.run(3000);  // timings add up over runs
    const auto timing = engine.timeslot_timing();
    REQUIRE(timing.size() == 2);
    for (const TimeslotTiming& t : timing) {
      REQUIRE(t.samples == (timed ? 3000u : 0u));
      if (!timed) continue;
      CHECK(t.p10_ns > 0);
      CHECK(t.p10_ns <= t.p50_ns);
      CHECK(t.p50_ns <= t.p90_ns);
    }
    events.push_back(engine.events());
  }
  REQUIRE(events[0].size() > 100);
  REQUIRE(events[1] == events[0]);
}

TEST_CASE("every packet sent is delivered, dropped, or still in the network", "[engine]") {
  for (const std::string scheme : {"droptail", "codel", "fq_codel", "pie"}) {
  INFO("scheme " << scheme);
  Topology topo = make_leaf_spine(2, 6, 2, 1, 2);
  FlowList flows = random_flows(topo.num_endpoints, 300, 2000, 3);
  FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
  EngineOptions opt;
  opt.cores = 2;
  Engine engine(topo, routers_for(topo, scheme, small_buffers(scheme)), traffic, opt);
  engine.run(200000);  // long enough for every flow to be sent and the network to drain
  uint64_t offered = 0, delivered_pkts = 0;
  for (const auto& f : flows) offered += f.size_pkts;
  for (const auto& s : traffic.states()) delivered_pkts += s.delivered;
  const auto events = engine.events();
  uint64_t drops = events.size();  // packet log off: only drops are recorded
  for (const auto& e : events) REQUIRE(e.kind == PacketEvent::kDropped);
  REQUIRE(drops > 0);
  REQUIRE(offered == delivered_pkts + drops);
  uint64_t backlog = 0, at_dequeue = 0;
  for (uint32_t r = 0; r < engine.num_routers(); ++r) {
    const QueueBank& b = engine.router(r).bank();
    for (PortId p = 0; p < b.num_ports(); ++p) {
      backlog += b.port_packets(p);
      for (QueueId q = 0; q < b.queues_per_port(); ++q) {
        const auto& c = b.counters(p, q);
        REQUIRE(c.arrived == c.enqueued + c.dropped_on_arrival);
        REQUIRE(c.enqueued == c.dequeued + c.dropped_at_dequeue + c.evicted + b.packets(p, q));
        at_dequeue += c.dropped_at_dequeue;
      }
    }
  }
  REQUIRE(backlog == 0);
  if (scheme == "codel" || scheme == "fq_codel") REQUIRE(at_dequeue > 0);
  REQUIRE(engine.link_collisions() == 0);
  for (size_t i = 0; i < flows.size(); ++i) {
    const bool lost = std::any_of(events.begin(), events.end(), [&](const PacketEvent& e) { return e.flow == i; });
    REQUIRE(traffic.finished(static_cast<uint32_t>(i)) == !lost);
  }
  }
}

TEST_CASE("backlogged all-to-all keeps every ToR port busy every timeslot", "[engine]") {
  Topology topo = make_single_rack(32, 1);
  BacklogTraffic traffic;
  Engine engine(topo, routers_for(topo, "droptail"), traffic, EngineOptions{});
  engine.run(1000);
  // Endpoints send from t=0; the ToR forwards from t=1 (one timeslot of latency).
  REQUIRE(engine.router_packet_hops() == 32u * 999u);
  REQUIRE(traffic.delivered() == 32u * 998u);
  REQUIRE(engine.events().empty());
}

namespace {

// A generic Router that breaks the one-packet-per-port rule: it sends all it
// received last timeslot on one port, plus a copy of the first on a port it
// does not have.
class SloppyRouter final : public Router {
 public:
  void bind(const RouterEnv& env) override { bank_.reset(env.num_ports, 1, 16); }
  void input(Packet* pkts, uint32_t n, Timeslot) override { held_.insert(held_.end(), pkts, pkts + n); }
  uint32_t output(Timeslot, Packet* out, PortId* out_ports) override {
    if (held_.empty()) return 0;
    uint32_t m = 0;
    for (const Packet& p : held_) {
      out[m] = p;
      out_ports[m++] = p.dst;
    }
    out[m] = held_[0];
    out_ports[m++] = 99;
    held_.clear();
    return m;
  }
  const QueueBank& bank() const override { return bank_; }
  const RouterLosses& losses() const override { return losses_; }
  RouterLosses losses_;

 private:
  QueueBank bank_;
  std::vector<Packet> held_;
};

}  // namespace

TEST_CASE("a router sending twice on one port, or on a missing port, loses those packets visibly", "[engine]") {
  Topology topo = make_single_rack(4, 1);
  FlowList flows(2);
  flows[0] = FlowSpec{0, 0, 2, 1, 0};
  flows[1] = FlowSpec{1, 1, 2, 1, 0};
  FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
  std::vector<std::unique_ptr<Router>> routers;
  routers.push_back(std::make_unique<SloppyRouter>());
  Engine engine(topo, std::move(routers), traffic, EngineOptions{});
  engine.run(10);
  // Both arrive at t=1; the router sends both on port 2 and one on port 99:
  // the first on port 2 gets through, the other two are counted collisions.
  REQUIRE(engine.link_collisions() == 2);
  REQUIRE(traffic.finished(0));
  REQUIRE_FALSE(traffic.finished(1));
}

TEST_CASE("occupancy traces: rows per sample, histograms of every sample, bytes kept only when sizes differ",
          "[engine][occupancy]") {
  // 4 endpoints on one ToR; 0, 1, 2 each send 30 packets to 3 from t = 0 and 3 sends 10 to 0 from t = 100:
  // port 3 builds a queue of up to 2 packets a timeslot, then drains.
  Topology topo = make_single_rack(4, 1);
  FlowList flows = {{0, 0, 3, 30, 0}, {1, 1, 3, 30, 0}, {2, 2, 3, 30, 0}, {3, 3, 0, 10, 100}};
  auto run = [&](uint16_t packet_bytes, uint32_t engine_mtu, bool keep) {
    EndpointStamping stamping;
    stamping.packet_bytes = packet_bytes;
    auto traffic = std::make_unique<FlowTraffic>(flows, 4, stamping);
    EngineOptions opt;
    opt.occupancy_interval = 3;
    opt.occupancy_samples = keep;
    opt.mtu_bytes = engine_mtu;
    auto engine = std::make_unique<Engine>(topo, routers_for(topo, "droptail"), *traffic, opt);
    engine->run(300);
    return std::make_pair(std::move(engine), std::move(traffic));
  };
  // Packets of the engine's size: bytes are not stored, yet read back as packets x size.
  const auto [same, t1] = run(1500, 1500, true);
  const OccupancyTrace& a = same->occupancy_trace(0);
  REQUIRE(a.samples == 100);  // timeslots 0, 3, ..., 297
  REQUIRE(a.times.size() == 100);
  REQUIRE(a.times[1] == 3);
  REQUIRE(a.packets.size() == 100 * 4);
  REQUIRE(a.packet_bytes == 1500);
  REQUIRE(a.bytes.empty());
  uint32_t peak = 0;
  for (size_t i = 0; i < a.packets.size(); ++i) {
    peak = std::max(peak, a.packets[i]);
    REQUIRE(a.bytes_at(i) == a.packets[i] * 1500);
  }
  REQUIRE(peak >= 20);  // 90 packets into a 1-per-timeslot port over 30 timeslots
  // The histograms count every sample of every port, and agree with the rows.
  for (PortId p = 0; p < 4; ++p) {
    std::vector<uint64_t> h(a.histogram[p].size(), 0);
    for (size_t i = 0; i < 100; ++i) ++h.at(a.packets[i * 4 + p]);
    REQUIRE(h == a.histogram[p]);
  }
  // Packets of another size than the engine's: from the first queued packet on, every row's bytes are kept,
  // the earlier rows spelled out; packets and bytes read back the same as with the sizes agreeing.
  const auto [other, t2] = run(1000, 1500, true);
  const OccupancyTrace& b = other->occupancy_trace(0);
  REQUIRE(b.packet_bytes == 0);
  REQUIRE(b.bytes.size() == b.packets.size());
  const auto [same1000, t3] = run(1000, 1000, true);
  REQUIRE(other->occupancy() == same1000->occupancy());
  REQUIRE(same1000->occupancy_trace(0).packet_bytes == 1000);
  for (size_t i = 0; i < b.packets.size(); ++i) REQUIRE(b.bytes[i] == b.packets[i] * 1000);
  // Samples off: the same histograms, no rows.
  const auto [hist_only, t4] = run(1500, 1500, false);
  const OccupancyTrace& c = hist_only->occupancy_trace(0);
  REQUIRE(c.samples == 100);
  REQUIRE(c.times.empty());
  REQUIRE(c.packets.empty());
  REQUIRE(c.histogram == a.histogram);
  REQUIRE(hist_only->occupancy().empty());
}

TEST_CASE("stop when done: an open-loop run ends soon after its last packet, identically on 1 and N cores",
          "[engine][determinism][stop]") {
  // Flows start in [0, 4000); the cap is 100000 timeslots. Stopped early, every result but the
  // length of the occupancy series is what the run to the cap gives; on 2 and 3 cores (grouped
  // and round robin, lookahead on and off), the same timeslot and the same results.
  constexpr Timeslot kInterval = EngineOptions{}.done_check_interval;
  for (const uint32_t k : {0u, 4u}) {
    INFO("fat tree k " << k << " (0: leaf-spine)");
    LeafSpineRun run;
    run.fat_tree_k = k;
    run.end = 100000;
    const RunOutput full = run_leaf_spine(run);
    REQUIRE_FALSE(full.done);
    REQUIRE(full.end == 100000);
    run.stop_when_done = true;
    const RunOutput one = run_leaf_spine(run);
    REQUIRE(one.done);
    Timeslot last = 0;  // the last delivery or drop
    for (const auto& e : one.events) last = std::max(last, e.time);
    INFO("last event " << last << ", stopped at " << one.end);
    REQUIRE(last > 4000);
    REQUIRE(one.end % kInterval == 0);
    REQUIRE(one.end > last);
    REQUIRE(one.end <= last + 2 * kInterval + 1);  // decided one checkpoint after the first quiet one
    uint64_t drops = 0;
    for (const auto& e : one.events) drops += e.kind == PacketEvent::kDropped;
    REQUIRE(drops > 0);  // some flows are done by losing a packet (open loop)
    REQUIRE(one.events == full.events);
    REQUIRE(one.counters.size() == full.counters.size());
    for (size_t i = 0; i < one.counters.size(); ++i) REQUIRE(same_counters(one.counters[i], full.counters[i]));
    for (size_t i = 0; i < one.states.size(); ++i) {
      REQUIRE(one.states[i].delivered == full.states[i].delivered);
      REQUIRE(one.states[i].finish == full.states[i].finish);
    }
    require_prefix_then_idle(one.occupancy, full.occupancy, one.end);
    for (const RouterPlacement placement : {RouterPlacement::kGrouped, RouterPlacement::kRoundRobin})
      for (uint32_t cores : {2u, 3u})
        for (bool lookahead : {true, false}) {
          INFO("cores " << cores << ", lookahead " << lookahead << ", grouped "
                        << (placement == RouterPlacement::kGrouped));
          run.cores = cores;
          run.lookahead = lookahead;
          run.placement = placement;
          const RunOutput many = run_leaf_spine(run);
          REQUIRE(many.done);
          REQUIRE(many.end == one.end);
          require_same(many, one);
        }
  }
}

TEST_CASE("stop when done: a run with work left at its end runs to the end", "[engine][stop]") {
  // Flows still start until 4000 > the end (3000): the run cannot be done before it.
  for (uint32_t cores : {1u, 3u}) {
    LeafSpineRun run;
    run.cores = cores;
    run.end = 3000;
    run.stop_when_done = true;
    const RunOutput out = run_leaf_spine(run);
    REQUIRE_FALSE(out.done);
    REQUIRE(out.end == 3000);
  }
  // An idle network with no flows at all stops at the second checkpoint.
  const Topology topo = make_single_rack(4, 1);
  const FlowList none;
  FlowTraffic traffic(none, topo.num_endpoints, EndpointStamping{});
  EngineOptions opt;
  opt.stop_when_done = true;
  opt.done_check_interval = 16;
  Engine engine(topo, routers_for(topo, "droptail"), traffic, opt);
  engine.run(1000);
  REQUIRE(engine.stopped_when_done());
  REQUIRE(engine.now() == 32);
  // A source that cannot tell whether it is done (backlogged traffic) never stops early.
  BacklogTraffic backlog;
  Engine busy(topo, routers_for(topo, "droptail"), backlog, opt);
  busy.run(1000);
  REQUIRE_FALSE(busy.stopped_when_done());
  REQUIRE(busy.now() == 1000);
}
