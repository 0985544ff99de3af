// The engine's side of runs across processes without MPI: what a process
// builds of the routers other processes run (test_mpi.py runs real ranks).
#include <catch2/catch.hpp>

#include "emulator/engine/engine.h"
#include "emulator/engine/engine_test_util.h"
#include "emulator/traffic/flow_traffic.h"

using namespace flexplane;

namespace {
// Rank `rank` of `ranks`, one core each; built, never run (run() attaches it).
class StubPartition final : public Partition {
 public:
  StubPartition(uint32_t rank, uint32_t ranks) : rank_(rank), ranks_(ranks) {}
  uint32_t rank() const override { return rank_; }
  uint32_t ranks() const override { return ranks_; }
  uint32_t cores_per_rank() const override { return 1; }
  void attach(const PartitionView*) override {}
  CoreLauncher& launcher() override { return threads_; }
  bool cores_share_cpus() const override { return false; }
  bool pump() override { return false; }
  void finish() override {}
  std::vector<std::string> gather(const std::string& mine) override { return {mine}; }

 private:
  uint32_t rank_, ranks_;
  ThreadLauncher threads_;
};
}  // namespace

TEST_CASE("across processes, a router another process runs is not bound here; its shape and statistics arrive with its results",
          "[engine][partition]") {
  const Topology t = make_leaf_spine(4, 4, 2, 1, 1);
  const FlowList flows = test::random_flows(t.num_endpoints, 20, 100, 7);
  StubPartition p0(0, 2), p1(1, 2);
  FlowTraffic traffic0(flows, t.num_endpoints, EndpointStamping{}), traffic1(flows, t.num_endpoints, EndpointStamping{});
  EngineOptions opt;
  opt.cores = 2;
  opt.partition = &p0;
  Engine e0(t, test::routers_for(t, "red"), traffic0, opt);  // RED: scheme statistics to carry
  opt.partition = &p1;
  Engine e1(t, test::routers_for(t, "red"), traffic1, opt);

  uint32_t here = 0, there = 0;
  for (uint32_t r = 0; r < t.routers.size(); ++r) {
    INFO("router " << t.routers[r].name);
    REQUIRE(e0.runs_router(r) != e1.runs_router(r));
    const Engine& mine = e0.runs_router(r) ? e0 : e1;
    const Engine& other = e0.runs_router(r) ? e1 : e0;
    REQUIRE(mine.router(r).bank().num_ports() == t.routers[r].num_ports);  // bound where it runs
    REQUIRE(other.router(r).bank().num_ports() == 0);                     // not where it does not
    REQUIRE(!mine.stat_descs(r).empty());
    (e0.runs_router(r) ? here : there) += 1;
  }
  REQUIRE(here > 0);
  REQUIRE(there > 0);

  // Rank 1's results folded into rank 0's engine: every router reads as where it ran.
  std::string from1;
  e1.pack_results(from1);
  e0.unpack_results(from1);
  for (uint32_t r = 0; r < t.routers.size(); ++r) {
    INFO("router " << t.routers[r].name);
    const Engine& mine = e0.runs_router(r) ? e0 : e1;
    REQUIRE(e0.num_ports(r) == mine.router(r).bank().num_ports());
    REQUIRE(e0.queues_per_port(r) == mine.router(r).bank().queues_per_port());
    const std::vector<StatDesc> got = e0.stat_descs(r), want = mine.router(r).stat_descs();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      REQUIRE(got[i].name == want[i].name);
      REQUIRE(got[i].doc == want[i].doc);
      REQUIRE(got[i].scope == want[i].scope);
    }
  }
}

TEST_CASE("across processes, a PFC router's priorities and counters arrive with its results", "[engine][partition][pfc]") {
  const Topology t = make_leaf_spine(4, 4, 2, 1, 1);
  const FlowList flows = test::random_flows(t.num_endpoints, 20, 100, 7);
  auto pfc_routers = [&] {
    std::vector<std::unique_ptr<Router>> out;
    for (size_t i = 0; i < t.routers.size(); ++i) {
      RouterSpec spec;
      spec.where = "test";
      spec.scheme = "droptail";
      spec.pfc = true;
      out.push_back(build_router(spec));
    }
    return out;
  };
  StubPartition p0(0, 2), p1(1, 2);
  FlowTraffic traffic0(flows, t.num_endpoints, EndpointStamping{}), traffic1(flows, t.num_endpoints, EndpointStamping{});
  EngineOptions opt;
  opt.cores = 2;
  opt.partition = &p0;
  Engine e0(t, pfc_routers(), traffic0, opt);
  opt.partition = &p1;
  Engine e1(t, pfc_routers(), traffic1, opt);
  for (uint32_t r = 0; r < t.routers.size(); ++r)  // before the results: only its own routers
    REQUIRE(e0.pfc_priorities(r) == (e0.runs_router(r) ? 1 : 0));
  std::string from1;
  e1.pack_results(from1);
  e0.unpack_results(from1);
  for (uint32_t r = 0; r < t.routers.size(); ++r) {
    INFO("router " << t.routers[r].name);
    REQUIRE(e0.pfc_priorities(r) == 1);
    const Engine& mine = e0.runs_router(r) ? e0 : e1;
    for (PortId p = 0; p < t.routers[r].num_ports; ++p) {
      const PfcCounters got = e0.pfc_counters(r, p, 0), want = mine.pfc_counters(r, p, 0);
      REQUIRE(got.pauses_sent == want.pauses_sent);
      REQUIRE(got.max_ingress_pkts == want.max_ingress_pkts);
    }
  }
}
