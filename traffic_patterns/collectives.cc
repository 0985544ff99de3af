// Collectives (emulator/workload/collective.h): one iteration of each as a
// graph of sends between ranks 0..n-1. A send lists the earlier sends it
// waits for, each one its own rank sent or received; reduction compute is
// not modelled (a rank forwards as soon as it has received), the compute
// between iterations is the workload's compute_gap_timeslots.
#include <algorithm>

#include "emulator/workload/collective.h"

namespace flexplane {

// Ring all-reduce (reduce-scatter then all-gather, as NCCL's ring): the
// message is cut into n chunks of ceil(M / n) packets; in each of 2 (n - 1)
// steps every rank sends one chunk to the next rank, after receiving the
// previous step's chunk from the rank before it.
class RingAllreduce final : public CollectiveOf<NoParams> {
 public:
  void iteration(uint32_t n, uint32_t message_pkts, SendGraph& g) const override {
    const uint32_t chunk = (message_pkts + n - 1) / n;
    for (uint32_t s = 0; s < 2 * (n - 1); ++s)
      for (uint32_t i = 0; i < n; ++i) {
        if (s == 0)
          g.send(i, (i + 1) % n, chunk);
        else
          g.send(i, (i + 1) % n, chunk, {(s - 1) * n + (i + n - 1) % n});  // what rank i just received
      }
  }
};

struct TreeParams {
  uint32_t fanout = 2;  // children per rank (ranks in heap order: rank i's parent is (i - 1) / fanout)
};

// Tree all-reduce: a reduce of the whole message up a `fanout`-ary tree
// rooted at rank 0 (a rank sends to its parent once it has received from
// all its children), then a broadcast down the same tree. Not pipelined.
class TreeAllreduce final : public CollectiveOf<TreeParams> {
 public:
  void iteration(uint32_t n, uint32_t message_pkts, SendGraph& g) const override {
    const uint32_t k = params().fanout;
    auto children = [&](uint32_t i) {
      std::vector<uint32_t> c;
      for (uint64_t j = uint64_t{k} * i + 1; j <= uint64_t{k} * i + k && j < n; ++j) c.push_back(static_cast<uint32_t>(j));
      return c;
    };
    std::vector<uint32_t> up(n, 0), down(n, 0);  // by rank: its reduce send, the broadcast send it receives
    for (uint32_t i = n - 1; i >= 1; --i) {  // children before parents
      std::vector<uint32_t> after;
      for (uint32_t c : children(i)) after.push_back(up[c]);
      up[i] = g.send(i, (i - 1) / k, message_pkts, after);
    }
    for (uint32_t i = 0; i < n; ++i) {  // parents before children
      std::vector<uint32_t> after;
      if (i == 0)
        for (uint32_t c : children(0)) after.push_back(up[c]);
      else
        after.push_back(down[i]);
      for (uint32_t c : children(i)) down[c] = g.send(i, c, message_pkts, after);
    }
  }
};

// All-to-all: every rank sends M packets to every other, rank i to
// i + 1, i + 2, ... (mod n) in turn (the shifted order of MPI
// implementations, so that no rank is everyone's first destination).
class AllToAllCollective final : public CollectiveOf<NoParams> {
 public:
  void iteration(uint32_t n, uint32_t message_pkts, SendGraph& g) const override {
    for (uint32_t d = 1; d < n; ++d)
      for (uint32_t i = 0; i < n; ++i) g.send(i, (i + d) % n, message_pkts);
  }
};

FLEXPLANE_REGISTER_COLLECTIVE(RingAllreduce, "ring_allreduce",
    "ring all-reduce: 2 (n - 1) steps of one ceil(M / n)-packet chunk to the next rank");
FLEXPLANE_REGISTER_COLLECTIVE(TreeAllreduce, "tree_allreduce",
    "tree all-reduce: reduce M packets up a fanout-ary tree to rank 0, then broadcast down",
    param(&TreeParams::fanout, "fanout", "children per rank", {1, 1024}));
FLEXPLANE_REGISTER_COLLECTIVE(AllToAllCollective, "all_to_all",
    "all-to-all: every rank sends M packets to every other, in shifted order");

}  // namespace flexplane
