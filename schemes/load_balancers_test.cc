// The stock load balancers (schemes/load_balancers.cc) on a real PatternRouter:
// destination 1 has four equal-cost ports {0, 1, 2, 3}, destination 2 only
// port 0, destination 0 only port 4; what each does with a burst.
#include <catch2/catch.hpp>

#include <array>
#include <memory>

#include "api/pattern_router.h"
#include "api/registry.h"
#include "emulator/config/router_factory.h"
#include "schemes/scheme_test_util.h"

using namespace flexplane;
using test::pkt;

namespace {

constexpr EndpointId kSprayed = 1, kPortZero = 2;

class LbRouter {
 public:
  explicit LbRouter(const test::Spec& lb, uint64_t seed = 1)
      : routes_(3, 7),
        router_(test::make_component<ClassifierBase>({"single"}),
                test::make_component<QueueManagerBase>({"droptail", {{"capacity_pkts", "100000"}}}),
                test::make_component<SchedulerBase>({"fifo"}), test::make_component<LoadBalancerBase>(lb)) {
    routes_.set(0, {4});
    routes_.set(kSprayed, {0, 1, 2, 3});
    routes_.set(kPortZero, {0});
    RouterEnv env;
    env.num_ports = 5;
    env.time = TimeBase{test::kNsPerTick, 1500};  // 1 us ticks
    env.routes = &routes_;
    env.sink = &log;
    env.seed = seed;
    router_.bind(env);
  }
  // `n` packets of `flow` to `dst` in one input() call at `now`.
  void burst(uint32_t n, Timeslot now, EndpointId dst = kSprayed, uint32_t flow = 9) {
    std::vector<Packet> pkts;
    for (uint32_t i = 0; i < n; ++i) pkts.push_back(pkt(flow, seq_++, dst));
    router_.input(pkts.data(), n, now);
  }
  std::array<uint32_t, 5> queued() const {
    std::array<uint32_t, 5> q{};
    for (PortId p = 0; p < 5; ++p) q[p] = router_.bank().port_packets(p);
    return q;
  }
  const RoutingTable& routes() const { return routes_; }
  PatternRouter& router() { return router_; }
  test::DropLog log;

 private:
  RoutingTable routes_;
  PatternRouter router_;
  uint32_t seq_ = 0;
};

uint32_t spread(const std::array<uint32_t, 5>& q) {  // max - min over the four candidates
  return *std::max_element(q.begin(), q.begin() + 4) - *std::min_element(q.begin(), q.begin() + 4);
}

}  // namespace

TEST_CASE("load balancer ecmp: a flow keeps the port the table's flow hash gives", "[schemes][load_balancer]") {
  LbRouter r({"ecmp"});
  for (uint32_t flow = 0; flow < 50; ++flow) r.burst(3, flow, kSprayed, flow);
  std::array<uint32_t, 5> expect{};
  for (uint32_t flow = 0; flow < 50; ++flow) expect[r.routes().route(pkt(flow, 0, kSprayed))] += 3;
  CHECK(r.queued() == expect);
  CHECK(expect[4] == 0);
}

TEST_CASE("load balancer round_robin: a group's ports in turn, across batches", "[schemes][load_balancer]") {
  LbRouter r({"round_robin"});
  for (Timeslot t = 0; t < 20; ++t) r.burst(7, t);  // 140 packets of one flow, batches of 7
  const auto q = r.queued();
  CHECK(q[0] + q[1] + q[2] + q[3] == 140);
  CHECK(q[0] == 35);
  CHECK(spread(q) == 0);
  r.burst(4, 20, kPortZero);  // single-port destinations are left alone
  CHECK(r.queued()[0] == 39);
}

TEST_CASE("load balancer spray: uniform at random, per packet, reproducible by seed", "[schemes][load_balancer]") {
  LbRouter a({"spray"}, 5), b({"spray"}, 5), c({"spray"}, 6);
  for (Timeslot t = 0; t < 100; ++t) a.burst(40, t), b.burst(40, t), c.burst(40, t);
  const auto q = a.queued();
  for (int p = 0; p < 4; ++p) {
    INFO("port " << p);
    CHECK(q[p] > 1000 - 150);  // binomial(4000, 1/4): sd 27
    CHECK(q[p] < 1000 + 150);
  }
  CHECK(q[4] == 0);
  CHECK(b.queued() == q);
  CHECK(c.queued() != q);
}

TEST_CASE("load balancer least_queue: the emptiest port, counting this batch's own choices", "[schemes][load_balancer]") {
  LbRouter r({"least_queue"});
  r.burst(5, 0, kPortZero);  // port 0 holds 5
  r.burst(6, 0);             // one batch: 2 each on ports 1-3, none on port 0
  auto q = r.queued();
  CHECK(q[0] == 5);
  CHECK(q[1] == 2);
  CHECK(q[2] == 2);
  CHECK(q[3] == 2);
  r.burst(13, 1);  // 9 level ports 1-3 with port 0 (5 each), then one each
  q = r.queued();
  CHECK(q[0] + q[1] + q[2] + q[3] == 24);
  CHECK(spread(q) == 0);
}

TEST_CASE("load balancer flowlet: a flow keeps its port until it pauses for gap_us", "[schemes][load_balancer]") {
  LbRouter r({"flowlet", {{"gap_us", "10"}}});  // 10 ticks
  auto flowlets = [&] {
    struct Sum final : StatsOut {
      double total = 0;
      void put(unsigned, QueueId, double v) override { total += v; }
    } sum;
    for (PortId p = 0; p < 5; ++p) r.router().sample_stats(p, sum);
    return sum.total;
  };
  REQUIRE(r.router().stat_descs().size() == 1);
  CHECK(r.router().stat_descs()[0].name == "flowlet_flowlets");
  for (Timeslot t = 0; t < 30; t += 9) r.burst(2, t);  // gaps of 9 ticks: one flowlet
  auto q = r.queued();
  CHECK(*std::max_element(q.begin(), q.end()) == 8);
  CHECK(flowlets() == 1);
  r.burst(1, 27 + 10);  // a gap of 10: a new flowlet, on a port drawn afresh
  CHECK(flowlets() == 2);
  r.burst(1, 38, kSprayed, 10);  // another flow: its own flowlet
  CHECK(flowlets() == 3);
}

TEST_CASE("load balancers: strict configuration errors name the field", "[schemes][load_balancer][config]") {
  RouterSpec spec;
  spec.where = "exp.yaml: routers.default";
  spec.load_balancer.name = "sprey";
  CHECK_THROWS_WITH(build_router(spec), Catch::Contains("routers.default.load_balancer: unknown load_balancer 'sprey'") &&
                                           Catch::Contains("round_robin"));
  spec.load_balancer.name = "flowlet";
  spec.load_balancer.params.set("table_entries", "1000");
  CHECK_THROWS_WITH(build_router(spec), Catch::Contains("table_entries must be a power of two"));
  spec.load_balancer.params = ParamValues{};
  ResolvedRouter resolved;
  CHECK(build_router(spec, &resolved) != nullptr);
  CHECK(resolved.load_balancer == "flowlet");
  spec.load_balancer.name.clear();
  CHECK(build_router(spec, &resolved) != nullptr);
  CHECK(resolved.load_balancer == "ecmp");  // the default, recorded in metadata.yaml
}
