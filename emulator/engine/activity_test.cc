// Cost in proportion to activity (EngineOptions::skip_idle; docs/design.md):
// a run that steps only the nodes with something to do gives exactly what
// stepping every node every timeslot gives, on 1, 2 and 3 cores, at sparse
// loads with long idle gaps, with schemes whose state moves with time (CoDel,
// PIE, RED, HULL, FQ-CoDel), open and closed loop, with occupancy sampling
// through the idle stretches; and the contracts that make it so:
// Router::idles_when_empty (a router that does not vouch is still run every
// timeslot) and TrafficSource::next_emit (a source is not asked before it).
//
// Principles: the reference is the same engine with skip_idle off (every
// node every timeslot, as before); every comparison is of whole outputs
// (events, occupancy rows, flow states, queue counters).
#include <catch2/catch.hpp>

#include <set>

#include "api/rng.h"
#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
#include "emulator/traffic/flow_traffic.h"

using namespace flexplane;
using flexplane::test::random_flows;
using flexplane::test::routers_for;

namespace {

struct Out {
  std::vector<PacketEvent> events;
  std::vector<OccupancySample> occupancy;
  std::vector<SchemeStatSample> stats;
  std::vector<FlowState> states;
  std::vector<uint64_t> counters;  // every queue's counters, flattened
  uint64_t unexpected = 0;
  Timeslot end = 0;
};

bool same_stats(const std::vector<SchemeStatSample>& a, const std::vector<SchemeStatSample>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].time != b[i].time || a[i].router != b[i].router || a[i].port != b[i].port || a[i].queue != b[i].queue ||
        a[i].stat != b[i].stat || a[i].value != b[i].value)
      return false;
  return true;
}

void require_same(const Out& a, const Out& b) {
  REQUIRE(a.events == b.events);
  REQUIRE(a.occupancy == b.occupancy);
  REQUIRE(same_stats(a.stats, b.stats));
  REQUIRE(a.counters == b.counters);
  REQUIRE(a.unexpected == b.unexpected);
  REQUIRE(a.end == b.end);
  REQUIRE(a.states.size() == b.states.size());
  for (size_t i = 0; i < a.states.size(); ++i) {
    REQUIRE(a.states[i].delivered == b.states[i].delivered);
    REQUIRE(a.states[i].marked == b.states[i].marked);
    REQUIRE(a.states[i].finish == b.states[i].finish);
  }
}

std::vector<std::pair<std::string, std::string>> qm_params(const std::string& scheme) {
  if (scheme == "codel") return {{"capacity_pkts", "16"}, {"target_us", "2.4"}, {"interval_ms", "0.012"}};
  if (scheme == "fq_codel") return {{"limit_pkts", "32"}, {"target_us", "2.4"}, {"interval_ms", "0.012"}};
  if (scheme == "pie") return {{"capacity_pkts", "16"}, {"target_us", "6"}, {"tupdate_ms", "0.006"}, {"max_burst_ms", "0"}};
  if (scheme == "dctcp") return {{"capacity_pkts", "16"}, {"k_pkts", "6"}};
  return {{"capacity_pkts", "16"}};
}

// `count` random flows whose starts fall in windows of `active` timeslots
// separated by idle gaps of `gap` (no flow starts there; the network drains).
FlowList sparse_flows(uint32_t endpoints, uint32_t count, Timeslot active, Timeslot gap, uint32_t windows,
                      uint64_t seed) {
  FlowList flows = random_flows(endpoints, count, active * windows, seed, 60);
  for (FlowSpec& f : flows) f.start += f.start / active * gap;  // monotone: still sorted by start
  return flows;
}

struct Run {
  std::string scheme = "droptail";
  uint32_t fat_tree_k = 4;  // 0: leaf-spine (3 racks of 8, 2 spines)
  uint32_t cores = 1;
  bool skip_idle = true;
  bool lookahead = true;
  bool closed_loop = false;
  bool stop_when_done = false;
  Timeslot end = 20000;
};

Out run(const Run& r, const FlowList& flows) {
  const Topology topo = r.fat_tree_k ? make_fat_tree(r.fat_tree_k, 1) : make_leaf_spine(3, 8, 2, 1, 1);
  EndpointStamping stamping;
  stamping.priority = PriorityStamp::kRemainingSize;
  stamping.ect = true;
  FlowTraffic traffic(flows, topo.num_endpoints, stamping);
  if (r.closed_loop) {
    TransportConfig t;
    t.enabled = true;
    t.kind = TransportKind::kDctcp;
    t.params.min_rto_us = 100;  // timers fire in the idle gaps too
    traffic.enable_transport(topo, t, 1200);
  }
  EngineOptions opt;
  opt.cores = r.cores;
  opt.skip_idle = r.skip_idle;
  opt.lookahead = r.lookahead;
  opt.packet_log = true;
  opt.occupancy_interval = 50;
  opt.stop_when_done = r.stop_when_done;
  opt.seed = 3;
  Engine engine(topo, routers_for(topo, r.scheme, qm_params(r.scheme)), traffic, opt);
  engine.run(r.end / 2);  // two runs: what is asked for across a run's end is kept
  engine.run(r.end);
  Out o{engine.events(), engine.occupancy(), engine.scheme_stats(), traffic.states(), {}, traffic.unexpected_arrivals(),
        engine.now()};
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const QueueBank& b = engine.router(i).bank();
    for (PortId p = 0; p < b.num_ports(); ++p)
      for (QueueId q = 0; q < b.queues_per_port(); ++q) {
        const QueueCounters c = b.counters(p, q);
        for (uint64_t v : {c.arrived, c.enqueued, c.dequeued, c.dropped_on_arrival, c.dropped_at_dequeue, c.evicted,
                           c.marked})
          o.counters.push_back(v);
      }
  }
  return o;
}

uint64_t count(const Out& o, PacketEvent::Kind k) {
  uint64_t n = 0;
  for (const auto& e : o.events) n += e.kind == k;
  return n;
}

}  // namespace

TEST_CASE("skip idle: sparse loads with long idle gaps give what stepping every node gives, on 1, 2 and 3 cores",
          "[engine][determinism][activity]") {
  // 16 endpoints (k = 4) or 24 (leaf-spine); ~0.5 % and ~5 % load, in windows of 1000 timeslots
  // between gaps of 3000 in which everything drains; occupancy sampled every 50 timeslots.
  struct Case {
    std::string scheme;
    uint32_t k;
    uint32_t flows;
    std::vector<uint32_t> cores;
    bool closed_loop = false;
  };
  for (const Case& c : {Case{"droptail", 4, 40, {1, 2, 3}}, Case{"droptail", 4, 400, {1, 2, 3}},
                        Case{"codel", 4, 400, {1, 3}}, Case{"pie", 0, 300, {1, 2}}, Case{"red", 4, 300, {1, 2}},
                        Case{"hull", 4, 300, {1, 2}}, Case{"fq_codel", 0, 300, {1, 3}}, Case{"pfabric", 4, 300, {1, 2}},
                        Case{"dctcp", 4, 60, {1, 2, 3}, true}}) {
    Run r;
    r.scheme = c.scheme;
    r.fat_tree_k = c.k;
    r.closed_loop = c.closed_loop;
    const uint32_t endpoints = c.k ? c.k * c.k * c.k / 4 : 24;
    const FlowList flows = sparse_flows(endpoints, c.flows, 1000, 3000, 4, 11);
    r.skip_idle = false;
    const Out every = run(r, flows);  // the reference: every node, every timeslot, one core
    REQUIRE(count(every, PacketEvent::kDelivered) > 200);
    if (c.flows >= 300 && !c.closed_loop) REQUIRE(count(every, PacketEvent::kDropped) > 0);
    // The gaps are idle: some occupancy rows are all zero, and flows start after them.
    REQUIRE(flows.back().start > 3 * 4000);
    for (uint32_t cores : c.cores)
      for (bool lookahead : {true, false}) {
        if (!lookahead && cores == 1) continue;
        INFO("scheme " << c.scheme << ", flows " << c.flows << ", cores " << cores << ", lookahead " << lookahead);
        r.skip_idle = true;
        r.cores = cores;
        r.lookahead = lookahead;
        require_same(run(r, flows), every);
      }
  }
}

TEST_CASE("skip idle: stop when done lands on the same timeslot as stepping every node", "[engine][activity][stop]") {
  const FlowList flows = sparse_flows(16, 80, 1000, 3000, 2, 5);
  for (bool closed_loop : {false, true}) {
    Run r;
    r.closed_loop = closed_loop;
    r.scheme = closed_loop ? "dctcp" : "droptail";
    r.stop_when_done = true;
    r.end = 100000;
    r.skip_idle = false;
    const Out every = run(r, flows);
    REQUIRE(every.end < 20000);  // it stopped early
    for (uint32_t cores : {1u, 2u, 3u}) {
      INFO("closed loop " << closed_loop << ", cores " << cores);
      r.skip_idle = true;
      r.cores = cores;
      require_same(run(r, flows), every);
    }
  }
}

namespace {

// A PatternRouter behind a wrapper that counts output() calls, says what it
// is told about idles_when_empty, and (as a "beacon") may send a packet of
// its own every `beacon` timeslots on port 0 whatever it holds: a router with
// time-driven behaviour, which must not vouch.
class CountingRouter final : public Router {
 public:
  CountingRouter(std::unique_ptr<Router> inner, bool idles, Timeslot beacon, uint64_t* outputs)
      : inner_(std::move(inner)), idles_(idles), beacon_(beacon), outputs_(outputs) {}
  void bind(const RouterEnv& env) override { inner_->bind(env); }
  void input(Packet* pkts, uint32_t n, Timeslot now) override { inner_->input(pkts, n, now); }
  // Router mode's call, unused by the engine (and the default, inlined over
  // output() below with its one-port buffer, draws a bounds warning).
  uint32_t dequeue_burst(PortId port, Timeslot now, uint32_t max, Packet* out) override {
    return inner_->dequeue_burst(port, now, max, out);
  }
  uint32_t output(Timeslot now, Packet* out, PortId* ports) override {
    ++*outputs_;
    uint32_t m = inner_->output(now, out, ports);
    if (beacon_ && now % beacon_ == 0 && (m == 0 || ports[0] != 0)) {
      for (uint32_t i = m; i > 0; --i) out[i] = out[i - 1], ports[i] = ports[i - 1];
      out[0] = Packet{};
      out[0].flow = 1u << 30;  // no such flow: the sink counts it as unexpected
      out[0].dst = 0;
      out[0].size_bytes = 1500;
      ports[0] = 0;
      ++m;
    }
    return m;
  }
  bool one_packet_per_port() const override { return inner_->one_packet_per_port(); }
  bool forwards_by_table() const override { return beacon_ == 0 && inner_->forwards_by_table(); }
  bool idles_when_empty() const override { return idles_; }
  const QueueBank& bank() const override { return inner_->bank(); }
  const RouterLosses& losses() const override { return inner_->losses(); }

 private:
  std::unique_ptr<Router> inner_;
  bool idles_;
  Timeslot beacon_;
  uint64_t* outputs_;
};

}  // namespace

TEST_CASE("idles_when_empty: a router that vouches is skipped while empty, one that does not runs every timeslot",
          "[engine][activity]") {
  const Topology topo = make_single_rack(4, 1);  // endpoint e on port e
  const FlowList flows = {{0, 1, 2, 5, 100}, {1, 3, 2, 5, 3000}};
  const Timeslot end = 5000;
  std::vector<PacketEvent> events[3];
  uint64_t outputs[3] = {0, 0, 0}, unexpected[3] = {0, 0, 0};
  // 0: vouches; 1: does not vouch; 2: does not vouch and beacons every 100 timeslots.
  for (int k = 0; k < 3; ++k) {
    FlowTraffic traffic(flows, topo.num_endpoints, EndpointStamping{});
    std::vector<std::unique_ptr<Router>> routers;
    routers.push_back(std::make_unique<CountingRouter>(std::move(routers_for(topo, "droptail")[0]), k == 0,
                                                       k == 2 ? 100 : 0, &outputs[k]));
    EngineOptions opt;
    opt.packet_log = true;
    Engine engine(topo, std::move(routers), traffic, opt);
    engine.run(end);
    events[k] = engine.events();
    unexpected[k] = traffic.unexpected_arrivals();
    REQUIRE(traffic.finished(0));
    REQUIRE(traffic.finished(1));
  }
  // Vouching: output() only in timeslots with arrivals or a backlog (10 packets in all,
  // each arriving once and leaving once: at most 20 timeslots, and the first timeslot).
  CHECK(outputs[0] >= 10);
  CHECK(outputs[0] <= 21);
  // Not vouching: every timeslot, and the same deliveries.
  CHECK(outputs[1] == end);
  REQUIRE(events[0] == events[1]);
  // The beacon's packets, sent with an empty bank, all arrive (one every 100 timeslots,
  // the last one at 4900 + 1): the engine did not skip its idle timeslots.
  CHECK(outputs[2] == end);
  CHECK(unexpected[2] == end / 100);
  CHECK(unexpected[0] == 0);
}

namespace {

// A traffic that hands the engine its inner traffic's sources and sinks, the
// sources wrapped to record the timeslot of every emit() call.
struct EmitRecording final : Traffic {
  FlowTraffic& in;
  std::vector<Timeslot>* emits;
  EmitRecording(FlowTraffic& i, std::vector<Timeslot>* e) : in(i), emits(e) {}
  void set_group_clock(const std::vector<EndpointId>& g, const std::atomic<Timeslot>* f) override {
    in.set_group_clock(g, f);
  }
  std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) override {
    struct Source final : TrafficSource {
      std::unique_ptr<TrafficSource> in;
      std::vector<Timeslot>* emits;
      uint32_t emit(Timeslot now, Packet* out, uint32_t* local) override {
        emits->push_back(now);
        return in->emit(now, out, local);
      }
      Timeslot remote_quiet_until(Timeslot now) override { return in->remote_quiet_until(now); }
      Timeslot next_emit(Timeslot now) override { return in->next_emit(now); }
      bool busy_after(Timeslot now, int64_t* in_transit) override { return in->busy_after(now, in_transit); }
    };
    auto s = std::make_unique<Source>();
    s->in = in.make_source(group);
    s->emits = emits;
    return s;
  }
  std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>& group, EventLog* log) override {
    return in.make_sink(group, log);
  }
};

// The two flows of the next_emit tests, in one rack of 4 endpoints: flow 0
// (3 packets) at 1000, flow 1 (2 packets) from another endpoint at 4000.
const FlowList kTwoFlows = {{0, 0, 1, 3, 1000}, {1, 2, 3, 2, 4000}};

struct Recorded {
  std::vector<Timeslot> emits;  // the timeslots emit() was called at
  std::vector<FlowState> states;
  std::vector<SenderOutcome> outcomes;  // closed loop only
};

// 6000 timeslots of kTwoFlows, open loop or DCTCP, every node every timeslot
// or skipping idle ones.
Recorded record_emits(bool closed_loop, bool skip_idle) {
  const Topology topo = make_single_rack(4, 1);
  FlowTraffic inner(kTwoFlows, topo.num_endpoints, EndpointStamping{});
  if (closed_loop) {
    TransportConfig t;
    t.enabled = true;
    t.kind = TransportKind::kDctcp;
    inner.enable_transport(topo, t, 1200);
  }
  Recorded r;
  EmitRecording traffic(inner, &r.emits);
  EngineOptions opt;
  opt.skip_idle = skip_idle;
  Engine engine(topo, routers_for(topo, "droptail"), traffic, opt);
  engine.run(6000);
  r.states = inner.states();
  r.outcomes = inner.sender_outcomes();
  return r;
}

}  // namespace

TEST_CASE("next_emit: an open-loop source is not asked before its next flow starts", "[engine][activity]") {
  // A source that says when its next flow starts.
  const Recorded every = record_emits(false, false), skip = record_emits(false, true);
  CHECK(every.emits.size() == 6000);
  // Skipping: timeslot 0, then 1000..1002 (3 packets) and 1003 (a source that sent is not
  // asked for next_emit: it is stepped once more, finds its NIC idle and sleeps), 4000..4002.
  CHECK(skip.emits.size() == 1 + (3 + 1) + (2 + 1));
  for (int f = 0; f < 2; ++f) {
    REQUIRE(skip.states[f].delivered == every.states[f].delivered);
    REQUIRE(skip.states[f].finish == every.states[f].finish);
  }
}

TEST_CASE("next_emit: a closed-loop source sleeps while none of its flows is under way", "[engine][activity]") {
  // DCTCP: each flow is acknowledged in full within tens of timeslots of its start.
  // Between them and after the last, the group has no flow under way.
  const Recorded every = record_emits(true, false), skip = record_emits(true, true);
  CHECK(every.emits.size() == 6000);
  for (int f = 0; f < 2; ++f) {
    REQUIRE(every.states[f].delivered == kTwoFlows[f].size_pkts);
    REQUIRE(skip.states[f].delivered == every.states[f].delivered);
    REQUIRE(skip.states[f].finish == every.states[f].finish);
    REQUIRE(skip.outcomes[f].segments_sent == every.outcomes[f].segments_sent);
  }
  // Asleep: timeslot 0 only, then from each start until its flow is acknowledged.
  const std::vector<Timeslot>& e = skip.emits;
  INFO("emits with skip_idle: " << e.size());
  CHECK(e.front() == 0);
  CHECK(std::count(e.begin(), e.end(), Timeslot{1000}) == 1);
  CHECK(std::count(e.begin(), e.end(), Timeslot{4000}) == 1);
  for (Timeslot at : e) {
    INFO("emit at " << at);
    CHECK((at == 0 || (at >= 1000 && at < 1100) || (at >= 4000 && at < 4100)));
  }
  CHECK(e.size() < 100);
}
