// Collectives and send lists (emulator/workload/collective.h): the graphs
// the registered collectives draw, their expansion over iterations, and the
// send list format.
#include "emulator/workload/collective.h"

#include <catch2/catch.hpp>

#include <sstream>

using namespace flexplane;

namespace {

SendGraph one_iteration(const std::string& name, uint32_t ranks, uint32_t message_pkts, ParamValues params = {}) {
  params.where = "test";
  const auto c = Registry<Collective>::instance().get(name, "test").make(params, nullptr);
  SendGraph g;
  c->iteration(ranks, message_pkts, g);
  return g;
}

std::string send_list(const FlowList& flows, const FlowDeps& deps) {
  std::ostringstream out;
  for (const FlowSpec& f : flows) {
    out << f.src << ">" << f.dst << ":" << f.size_pkts << "@" << f.start << "g" << deps.gap[f.id] << "i"
        << deps.iteration[f.id] << "[";
    for (uint32_t j = deps.after_begin[f.id]; j < deps.after_begin[f.id + 1]; ++j) out << " " << deps.after[j];
    out << " ] ";
  }
  return out.str();
}

}  // namespace

TEST_CASE("collectives: ring all-reduce is 2 (n - 1) steps of n chunks, each after the chunk just received",
          "[workload][collective]") {
  // n = 4, M = 10: chunks of ceil(10 / 4) = 3; 6 steps x 4 sends.
  const SendGraph g = one_iteration("ring_allreduce", 4, 10);
  REQUIRE(g.sends().size() == 24);
  for (uint32_t s = 0; s < 6; ++s)
    for (uint32_t i = 0; i < 4; ++i) {
      const SendGraph::Send& x = g.sends()[s * 4 + i];
      REQUIRE(x.src == i);
      REQUIRE(x.dst == (i + 1) % 4);
      REQUIRE(x.size_pkts == 3);
      if (s == 0) {
        REQUIRE(x.after.empty());
      } else {
        REQUIRE(x.after == std::vector<uint32_t>{(s - 1) * 4 + (i + 3) % 4});  // rank i - 1's previous send
        REQUIRE(g.sends()[x.after[0]].dst == i);
      }
    }
}

TEST_CASE("collectives: tree all-reduce reduces up to rank 0, then broadcasts down", "[workload][collective]") {
  // Binary tree over 5 ranks: 0 -> {1, 2}, 1 -> {3, 4}. Reduce: 4, 3 (leaves), 2 (leaf), 1 (after 3, 4);
  // broadcast: 0 -> 1 and 0 -> 2 after both reduce sends into 0, 1 -> 3 and 1 -> 4 after 0 -> 1.
  const SendGraph g = one_iteration("tree_allreduce", 5, 7);
  const auto& s = g.sends();
  REQUIRE(s.size() == 8);
  auto is = [&](uint32_t i, uint32_t src, uint32_t dst, std::vector<uint32_t> after) {
    INFO("send " << i);
    REQUIRE(s[i].src == src);
    REQUIRE(s[i].dst == dst);
    REQUIRE(s[i].size_pkts == 7);
    REQUIRE(s[i].after == after);
  };
  is(0, 4, 1, {});
  is(1, 3, 1, {});
  is(2, 2, 0, {});
  is(3, 1, 0, {1, 0});  // after its children 3 and 4
  is(4, 0, 1, {3, 2});  // root: after its children 1 and 2
  is(5, 0, 2, {3, 2});
  is(6, 1, 3, {4});     // after what it received from 0
  is(7, 1, 4, {4});
  ParamValues three;
  three.set("fanout", "3", "test.fanout");
  REQUIRE(one_iteration("tree_allreduce", 5, 7, three).sends().size() == 8);  // 4 up, 4 down (0 -> 1, 2, 3; 1 -> 4)
}

TEST_CASE("collectives: all-to-all sends M packets between every ordered pair, shifted", "[workload][collective]") {
  const SendGraph g = one_iteration("all_to_all", 3, 5);
  REQUIRE(g.sends().size() == 6);
  const uint32_t want[6][2] = {{0, 1}, {1, 2}, {2, 0}, {0, 2}, {1, 0}, {2, 1}};
  for (uint32_t i = 0; i < 6; ++i) {
    REQUIRE(g.sends()[i].src == want[i][0]);
    REQUIRE(g.sends()[i].dst == want[i][1]);
    REQUIRE(g.sends()[i].after.empty());
  }
}

TEST_CASE("collectives: a send waits only for earlier sends of its own rank", "[workload][collective]") {
  SendGraph g;
  g.send(0, 1, 1);
  REQUIRE_THROWS_AS(g.send(2, 3, 1, {0}), std::logic_error);  // not rank 2's
  REQUIRE_THROWS_AS(g.send(1, 2, 1, {1}), std::logic_error);  // not earlier
  REQUIRE(g.send(1, 2, 1, {0}) == 1);                          // rank 1 received it
  REQUIRE(g.send(0, 2, 1, {0}) == 2);                          // rank 0 sent it
}

TEST_CASE("collectives: iterations chain at each rank through everything it did, plus the compute gap",
          "[workload][collective]") {
  // Ring over 2 ranks on endpoints 0 and 2 (stride 2), 2 packets, 2 iterations, gap 7: one iteration is
  // 2 steps x 2 sends of 1 packet. Iteration 1's first sends wait for the 4 sends of iteration 0 (each
  // touches both ranks). Flows sorted by (start, send order): a dependent flow's start is the latest
  // start of its dependencies plus its gap.
  const auto ring = Registry<Collective>::instance().get("ring_allreduce", "test").make(ParamValues{}, nullptr);
  CollectiveShape shape;
  shape.ranks = 2;
  shape.rank_stride = 2;
  shape.message_pkts = 2;
  shape.iterations = 2;
  shape.compute_gap = 7;
  FlowDeps deps;
  const FlowList flows = expand_collective(*ring, shape, 4, 100, "w", &deps);
  REQUIRE(flows.size() == 8);
  REQUIRE(deps.iterations == 2);
  REQUIRE(send_list(flows, deps) ==
          "0>2:1@7g7i0[ ] 2>0:1@7g7i0[ ] 0>2:1@7g0i0[ 1 ] 2>0:1@7g0i0[ 0 ] "
          "0>2:1@14g7i1[ 0 1 2 3 ] 2>0:1@14g7i1[ 0 1 2 3 ] 0>2:1@14g0i1[ 5 ] 2>0:1@14g0i1[ 4 ] ");
  for (uint32_t i = 0; i < flows.size(); ++i) REQUIRE(flows[i].id == i);

  REQUIRE_THROWS_WITH(expand_collective(*ring, shape, 2, 100, "w", &deps),
                      "w.ranks: 2 ranks 2 endpoints apart need 3 endpoints, the topology has 2");
  REQUIRE_THROWS_WITH(expand_collective(*ring, shape, 4, 7, "w", &deps),
                      "w.max_flows: 2 iterations of 4 sends exceed max_flows = 7");
}

TEST_CASE("send lists: read, checked line by line, and written back unchanged", "[workload][collective]") {
  const std::string text =
      "# a hand-written schedule\n"
      "send_id,src,dst,size_pkts,gap_timeslots,iteration,after\n"
      "10,0,1,4,3,0,\n"
      "\n"
      "11,1,2,5,0,0,10\n"
      "12,0,2,6,9,1,10 10\n";  // a duplicate dependency counts once
  std::istringstream in(text);
  FlowDeps deps;
  const FlowList flows = read_send_list(in, "s.csv", 3, &deps);
  REQUIRE(send_list(flows, deps) == "0>1:4@3g3i0[ ] 1>2:5@3g0i0[ 0 ] 0>2:6@12g9i1[ 0 ] ");
  REQUIRE(deps.iterations == 2);

  auto error = [](const std::string& rows) {
    std::istringstream s("send_id,src,dst,size_pkts,gap_timeslots,iteration,after\n" + rows);
    FlowDeps d;
    try {
      read_send_list(s, "s.csv", 4, &d);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE(error("0,0,1,4,0,0\n") == "s.csv:2: expected 7 fields, got 6");
  REQUIRE(error("0,0,x,4,0,0,\n") == "s.csv:2: dst: expected an unsigned integer ('x')");
  REQUIRE(error("0,0,4,4,0,0,\n") == "s.csv:2: dst: no such endpoint ('4', the topology has 4)");
  REQUIRE(error("0,1,1,4,0,0,\n") == "s.csv:2: dst: a send to its own source ('1')");
  REQUIRE(error("0,0,1,0,0,0,\n") == "s.csv:2: size_pkts: must be 1..4294967295 ('0')");
  REQUIRE(error("0,0,1,4,0,0,1\n") == "s.csv:2: after: send 1 is not on an earlier line");
  REQUIRE(error("0,0,1,4,0,0,\n0,1,2,4,0,0,\n") == "s.csv:3: send_id: 0 given twice");
  REQUIRE(error("0,0,1,4,0,0,\n1,2,3,4,0,0,0\n") ==
          "s.csv:3: after: send 0 (0 -> 1) is neither a send nor a receive of endpoint 2");
  std::istringstream no_header("0,0,1,4,0,0,\n");
  REQUIRE_THROWS_WITH(read_send_list(no_header, "s.csv", 4, &deps),
                      "s.csv:1: expected the header 'send_id,src,dst,size_pkts,gap_timeslots,iteration,after'");
}
