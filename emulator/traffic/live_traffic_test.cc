#include "emulator/traffic/live_traffic.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include "api/rng.h"
#include "emulator/engine/engine.h"
#include "emulator/config/router_factory.h"

using namespace flexplane;

namespace {

std::vector<std::unique_ptr<Router>> droptail_routers(const Topology& t, uint32_t capacity) {
  std::vector<std::unique_ptr<Router>> out;
  for (size_t i = 0; i < t.routers.size(); ++i) {
    RouterSpec spec;
    spec.where = "test";
    spec.scheme = "dctcp";
    spec.queue_manager.params.set("capacity_pkts", std::to_string(capacity));
    spec.queue_manager.params.set("k_pkts", "4");
    out.push_back(build_router(spec));
  }
  return out;
}

bool same(const LiveVerdict& a, const LiveVerdict& b) {
  return a.time == b.time && a.action == b.action && a.reason == b.reason && a.pkt.flow == b.pkt.flow &&
         a.pkt.seq == b.pkt.seq && a.pkt.src == b.pkt.src && a.pkt.dst == b.pkt.dst && a.pkt.flags == b.pkt.flags;
}

}  // namespace

TEST_CASE("live traffic in real time: one verdict per request, equal to a virtual-time replay", "[engine][live]") {
  const Topology topo = make_leaf_spine(2, 4, 1, 1, 1);
  LiveTrafficOptions lopt;
  lopt.endpoint_queue_pkts = 12;  // small: bursts below overflow it (refusals are verdicts too)
  lopt.record_arrivals = true;
  LiveTraffic live(topo, 2, lopt);
  EngineOptions opt;
  opt.cores = 2;
  opt.clock = Clock::kRealTime;
  opt.timeslot_ns = 20000;  // 20 us: slow enough for a shared CI machine
  opt.sleep_when_ahead = true;
  opt.sleep_threshold_ns = 5000;
  Engine engine(topo, droptail_routers(topo, 6), live, opt);
  std::thread runner([&] { engine.run(~Timeslot{0} >> 2); });

  // Bursts from several endpoints towards one receiver (drops, marks) and
  // scattered traffic (releases); one burst overflows its endpoint's queue.
  Rng rng(5);
  uint32_t submitted = 0;
  std::map<std::pair<uint32_t, uint32_t>, int> expected;
  for (int burst = 0; burst < 12; ++burst) {
    for (uint32_t i = 0; i < 40; ++i) {
      Packet p{};
      const bool incast = burst % 3 == 0;  // everyone -> endpoint 7
      p.src = static_cast<EndpointId>(burst == 5 ? 2 : rng.below(incast ? 7 : 8));
      if (incast) {
        p.dst = 7;
      } else {
        do p.dst = static_cast<EndpointId>(rng.below(8));
        while (p.dst == p.src);
      }
      p.flow = 1000 + burst;
      p.seq = i;
      p.size_bytes = 1500;
      p.flags = kFlagEct;
      if (live.submit(p)) {
        ++submitted;
        expected[{p.flow, p.seq}] = 0;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(submitted == 12 * 40);

  std::vector<LiveVerdict> got;
  LiveVerdict buf[256];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got.size() < submitted && std::chrono::steady_clock::now() < deadline) {
    const size_t n = live.collect(buf, 256);
    got.insert(got.end(), buf, buf + n);
    if (!n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  engine.request_stop();
  runner.join();
  REQUIRE(got.size() == submitted);  // nothing hung, nothing lost

  std::map<LiveVerdict::Action, int> by_action;
  std::map<Reason, int> drop_reasons;
  for (const auto& v : got) {
    REQUIRE(++expected[{v.pkt.flow, v.pkt.seq}] == 1);  // exactly once
    ++by_action[v.action];
    if (v.action == LiveVerdict::kDrop) ++drop_reasons[v.reason];
  }
  REQUIRE(by_action[LiveVerdict::kRelease] > 0);
  REQUIRE(by_action[LiveVerdict::kMark] > 0);
  REQUIRE(drop_reasons[Reason::kEndpointOverflow] > 0);
  REQUIRE(drop_reasons[Reason::kQueueFull] > 0);

  // Replay the recorded arrivals in virtual time, on 1 and on 2 cores.
  sort_verdicts(got);
  const std::vector<RecordedArrival> arrivals = live.arrivals();
  REQUIRE(arrivals.size() == submitted);
  for (uint32_t cores : {1u, 2u}) {
    ReplayTraffic replay(topo, arrivals, lopt.endpoint_queue_pkts, cores);
    EngineOptions vopt;
    vopt.cores = cores;
    Engine virt(topo, droptail_routers(topo, 6), replay, vopt);
    virt.run(arrivals.back().time + 10000);
    const auto again = replay.verdicts();
    REQUIRE(again.size() == got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("verdict " << i << " cores " << cores);
      REQUIRE(same(again[i], got[i]));
    }
  }
  const auto health = engine.health();
  REQUIRE(health.size() == 2);
  REQUIRE(health[0].timeslots == health[1].timeslots);  // both cores stopped at the same timeslot
}

TEST_CASE("real-time runs are paced by the wall clock and match virtual time", "[engine][live]") {
  const Topology topo = make_single_rack(4, 1);
  auto run = [&](Clock clock) {
    LiveTrafficOptions lopt;
    LiveTraffic live(topo, 1, lopt);
    for (uint32_t i = 0; i < 30; ++i) {
      Packet p{};
      p.src = static_cast<EndpointId>(i % 3);
      p.dst = 3;
      p.flow = i % 3;
      p.seq = i;
      REQUIRE(live.submit(p));
    }
    EngineOptions opt;
    opt.clock = clock;
    opt.timeslot_ns = 100000;  // 100 us
    opt.sleep_when_ahead = true;
    Engine engine(topo, droptail_routers(topo, 100), live, opt);
    engine.run(200);  // 20 ms of wall clock in real time
    std::vector<LiveVerdict> v(64);
    v.resize(live.collect(v.data(), v.size()));
    sort_verdicts(v);
    return std::make_pair(v, engine.wall_seconds());
  };
  const auto [virt, virt_s] = run(Clock::kVirtual);
  const auto [real, real_s] = run(Clock::kRealTime);
  REQUIRE(real_s >= 200 * 100e-6);  // cannot finish before its 200 timeslots of wall clock
  REQUIRE(virt.size() == 30);
  REQUIRE(real.size() == virt.size());
  for (size_t i = 0; i < virt.size(); ++i) REQUIRE(same(real[i], virt[i]));
}

TEST_CASE("live traffic: packets dropped at dequeue get exactly one DROP verdict each", "[engine][live]") {
  // Three endpoints send 200 requests each to a fourth through one ToR port under CoDel (target
  // 2 timeslots, interval 10): the queue stands long, so CoDel drops heads at dequeue. Every
  // request still gets exactly one verdict, and the drops carry CoDel's reason.
  const Topology topo = make_single_rack(4, 1);
  LiveTraffic live(topo, 1);
  std::vector<std::unique_ptr<Router>> routers;
  RouterSpec spec;
  spec.where = "test";
  spec.scheme = "codel";
  spec.queue_manager.params.set("target_us", "2.4");
  spec.queue_manager.params.set("interval_ms", "0.012");
  routers.push_back(build_router(spec));
  Engine engine(topo, std::move(routers), live, EngineOptions{});  // virtual time, 1.2 us timeslots
  std::map<std::pair<uint32_t, uint32_t>, int> verdicts;
  for (EndpointId src = 0; src < 3; ++src)
    for (uint32_t i = 0; i < 200; ++i) {
      Packet p{};
      p.src = src;
      p.dst = 3;
      p.flow = src;
      p.seq = i;
      p.size_bytes = 1500;
      REQUIRE(live.submit(p));
      verdicts[{p.flow, p.seq}] = 0;
    }
  engine.run(2000);  // long enough for all 600 to leave the port
  std::vector<LiveVerdict> got(1024);
  got.resize(live.collect(got.data(), got.size()));
  REQUIRE(got.size() == 600);
  std::map<LiveVerdict::Action, int> by_action;
  for (const auto& v : got) {
    REQUIRE(++verdicts[{v.pkt.flow, v.pkt.seq}] == 1);
    ++by_action[v.action];
    if (v.action == LiveVerdict::kDrop) REQUIRE(v.reason == Reason::kSojournTime);
  }
  const QueueCounters& c = engine.router(0).bank().counters(3, 0);
  REQUIRE(c.dropped_at_dequeue > 0);
  REQUIRE(by_action[LiveVerdict::kDrop] == static_cast<int>(c.dropped_at_dequeue));
  REQUIRE(by_action[LiveVerdict::kRelease] == static_cast<int>(c.dequeued));
}
