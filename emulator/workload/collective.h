// Collective workloads: sends that wait for other sends (issue 26, item 4).
//
// A Poisson or trace workload fixes when every flow starts. A collective
// (all-reduce, all-to-all) or a hand-written schedule of per-rank sends does
// not: a send starts when the sends it depends on have completed, plus a gap
// (compute). The workload is then a flow list plus a dependency graph
// (FlowDeps); the closed-loop sources release each dependent flow at
//     max over its dependencies of (their completion) + its gap,
// where a dependency completes for its rank either when it has been
// received in full (the dependent flow's source is the dependency's
// destination) or, for the rank's own earlier send, when that send has been
// acknowledged in full (same source). A send may wait only on its own
// rank's sends and receives, as an MPI rank does: every dependency is then
// resolved on the core that runs the rank, with no message between cores.
//
// Two ways to give one (workload keys in docs/config.md, "Collectives"):
// - `collective: <name>`: a registered Collective (traffic_patterns/
//   collectives.cc: ring_allreduce, tree_allreduce, all_to_all) describes one
//   iteration among `ranks` ranks; the generator repeats it `iterations`
//   times, each iteration's first sends at a rank waiting for everything
//   that rank did in the previous iteration plus `compute_gap_timeslots`.
// - `sends: <file>`: a send list (format below), e.g. a generated run's
//   sends.csv edited by hand, or one written by another tool.
//
// Send list (CSV; blank lines and lines starting with '#' are ignored):
//   send_id,src,dst,size_pkts,gap_timeslots,iteration,after
//   0,0,1,16,0,0,
//   1,1,2,16,0,0,0
//   2,1,0,16,50,1,0 1
// - send_id: unique, any order of values; `after` lists send_ids of earlier
//   lines, separated by spaces (empty: none).
// - src, dst: endpoint ids (< the topology's endpoint count), src != dst;
//   size_pkts >= 1.
// - gap_timeslots: a send with dependencies starts this long after the last
//   of them completes; one without starts at this timeslot.
// - iteration: a label for the per-iteration results (collective.csv).
// - Each `after` id must name a send whose src or dst is this line's src.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "api/flow.h"
#include "api/params.h"
#include "api/registry.h"

namespace flexplane {

// The dependency graph over a FlowList's dense flow ids.
struct FlowDeps {
  std::vector<uint32_t> after_begin;  // flows + 1: flow f waits for after[after_begin[f] .. after_begin[f + 1])
  std::vector<uint32_t> after;        // flow ids, each smaller than the waiting flow's
  std::vector<Timeslot> gap;          // by flow: its start after its last dependency (none: its start)
  std::vector<uint32_t> iteration;    // by flow
  uint32_t iterations = 0;            // 1 + the largest label

  bool empty() const { return gap.empty(); }
  uint32_t num_after(uint32_t flow) const { return after_begin[flow + 1] - after_begin[flow]; }
};

// One iteration of a collective as a collective describes it: sends between
// ranks 0..n-1, each listing the earlier sends (indices into the same
// iteration) it waits for.
class SendGraph {
 public:
  struct Send {
    uint32_t src, dst, size_pkts;
    std::vector<uint32_t> after;
  };
  // Adds a send and returns its index. Throws std::logic_error on a
  // dependency that is not earlier or touches neither end's rank.
  uint32_t send(uint32_t src, uint32_t dst, uint32_t size_pkts, std::vector<uint32_t> after = {});
  const std::vector<Send>& sends() const { return sends_; }

 private:
  std::vector<Send> sends_;
};

class Collective {
 public:
  virtual ~Collective() = default;
  // One iteration among `ranks` ranks (>= 2), each holding (all-reduce) or
  // sending to every other rank (all-to-all) `message_pkts` packets.
  virtual void iteration(uint32_t ranks, uint32_t message_pkts, SendGraph& out) const = 0;
};

template <class P>
class CollectiveOf : public Collective, public WithParams<P> {};

template <> struct KindName<Collective> { static const char* get() { return "collective"; } };

// FLEXPLANE_REGISTER_COLLECTIVE(Class, "name", "doc", param(...)...)
#define FLEXPLANE_REGISTER_COLLECTIVE(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(Collective, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)

// What a generated collective needs besides the collective itself.
struct CollectiveShape {
  uint32_t ranks = 0;          // 0: every endpoint
  uint32_t rank_stride = 1;    // rank r runs on endpoint r * rank_stride
  uint32_t message_pkts = 0;   // required
  uint32_t iterations = 1;
  Timeslot compute_gap = 0;    // before each iteration's first sends at a rank
};

// The flows and dependencies of `iterations` repetitions of `c`, rank r on
// endpoint r * rank_stride. Flow ids follow the send order. Throws
// ConfigError (naming `where`.<key>) if the shape does not fit
// `num_endpoints` or the graph would exceed `max_flows`.
FlowList expand_collective(const Collective& c, const CollectiveShape& shape, uint32_t num_endpoints,
                           uint64_t max_flows, const std::string& where, FlowDeps* deps);

// Reads a send list. Throws ConfigError("<name>:<line>: ...") for any
// malformed or invalid line. Flow ids are the lines' order.
FlowList read_send_list(const std::string& path, uint32_t num_endpoints, FlowDeps* deps);
FlowList read_send_list(std::istream& in, const std::string& name, uint32_t num_endpoints, FlowDeps* deps);

// Writes a send list (send_id = flow id) that read_send_list reads back to
// the same flows and dependencies.
void write_send_list(const std::string& path, const FlowList& flows, const FlowDeps& deps);

// Sorts flows by (start, id) and renumbers them densely, as the engine
// needs (api/flow.h), carrying the dependencies along. A dependent flow's
// start is the latest start of its dependencies plus its gap (a lower bound
// on its release), so dependencies keep coming first.
void order_flows(FlowList* flows, FlowDeps* deps);

// The longest gap (2^40 timeslots: 15 days at 1.2 us), so that release
// times never overflow.
inline constexpr Timeslot kMaxGap = Timeslot{1} << 40;

inline constexpr const char* kSendListHeader = "send_id,src,dst,size_pkts,gap_timeslots,iteration,after";

}  // namespace flexplane
