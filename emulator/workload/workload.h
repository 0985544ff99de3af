// Workloads: which flows a run offers to the network.
//
// A workload is either generated (kind `poisson`) or replayed from a flow trace
// (kind `trace`, format in emulator/flow_trace.h). Generated workloads:
//
// - Flow sizes come from a SizeDistribution: an empirical CDF file
//   (`size_cdf`, e.g. experiments/data/flow-sizes/web-search.cdf) or a single
//   size (`fixed_size_pkts`).
// - Arrivals are a Poisson process (exponential inter-arrival times, in
//   continuous time, each flow starting at the timeslot it falls in) with
//   aggregate rate
//       lambda = load * num_endpoints / mean_size_pkts   flows per timeslot,
//   so `load` is the offered load relative to the endpoints' access links:
//   every endpoint sends on average `load` packets per timeslot, where one
//   timeslot is one packet on one link. (Whether the fabric can carry it, e.g.
//   with oversubscribed uplinks, is the topology's business.)
// - `pattern` picks the endpoints of each arrival event: a registered traffic
//   pattern (emulator/workload/traffic_pattern.h; built in: all_to_all,
//   permutation, incast in traffic_patterns/), whose parameters are further
//   keys of the workload map. A pattern may start several flows per event
//   (incast: fan_in); the event rate is then lambda / flows_per_event, so
//   the load offered per endpoint is still `load`.
// - Only arrivals with start < duration are generated.
// - Determinism: the same spec (including seed) and num_endpoints give the same
//   FlowList on every machine. Arrivals, sizes, endpoints and the pattern's
//   fixed state (the permutation) draw from separate Rng streams, so e.g. switching the size CDF keeps the
//   arrival times and endpoint pairs of a run (common random numbers).
//
// The FlowList is sorted by (start, id) with ids dense 0..n-1 (emulator/flow.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/packet.h"
#include "api/params.h"
#include "api/rng.h"
#include "api/flow.h"
#include "emulator/workload/collective.h"
#include "emulator/workload/size_distribution.h"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace flexplane {

enum class WorkloadKind { kPoisson, kTrace, kCollective };

const char* to_string(WorkloadKind kind);  // "poisson" | "trace" | "collective"

// YAML keys are the names in [brackets]; see parse_workload.
struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kPoisson;           // [kind]
  std::string pattern = "all_to_all";  // [pattern] a registered traffic pattern
  ParamValues pattern_params;          //   its parameters (e.g. [fan_in] for incast), as given
  double load = 0.5;              // [load] offered load per endpoint, fraction of its access link, (0, 1]
  std::string size_cdf;           // [size_cdf] CDF file (resolved path); exclusive with fixed_size_pkts
  uint32_t fixed_size_pkts = 0;   // [fixed_size_pkts] every flow this many packets; 0 = use size_cdf
  std::string trace_path;         // [trace] kind trace: flow trace CSV (resolved path)
  Timeslot duration = 0;          // [duration_timeslots] arrivals only at start < duration;
                                  //   poisson: required (> 0); trace: 0 = keep every flow
  uint64_t seed = 1;              // [seed] workload random seed
  uint64_t max_flows = 10'000'000;  // [max_flows] refuse to generate more (memory guard: 24 B per flow)
  // kind collective (emulator/workload/collective.h): exactly one of
  std::string collective;         // [collective] a registered Collective
  ParamValues collective_params;  //   its parameters (e.g. [fanout] for tree_allreduce), as given
  CollectiveShape shape;          //   [ranks] [rank_stride] [message_pkts] [iterations] [compute_gap_timeslots]
  std::string sends_path;         // [sends] a send list (resolved path)

  std::string where = "workload";  // config location, used to prefix errors raised at generation time
};

// What generation produced, for run metadata and sanity checks.
struct WorkloadStats {
  double mean_size_pkts = 0;          // of the size distribution (poisson only)
  double flows_per_timeslot = 0;      // target aggregate flow arrival rate (poisson only)
  uint64_t num_flows = 0;
  uint64_t total_pkts = 0;
  double offered_load = 0;            // measured: total_pkts / (num_endpoints * duration)
  std::vector<EndpointId> permutation;  // the pattern's fixed map, if any (permutation: dst of each src)
};

// Parses a `workload:` mapping strictly. `where` names the node for errors (e.g.
// "exp.yaml: workload"); messages read "<where>.<key>: <problem> ('<value>')".
// Relative `size_cdf` and `trace` paths resolve against base_dir (normally the
// directory of the config file). The CDF is loaded once here so that its
// errors surface at config time.
// With `file` (the config's name), each key's errors name its own line and
// column ("exp.yaml:5:3: workload.load") rather than the map's.
WorkloadSpec parse_workload(const YAML::Node& node, const std::string& where, const std::string& base_dir,
                            const std::string& file = "");

// The fully resolved spec as ordered key/value pairs (the YAML key names),
// for run metadata; only keys that apply to the spec's kind and pattern.
std::vector<std::pair<std::string, std::string>> describe(const WorkloadSpec& spec);
// The same, as a YAML map written to `out`.
void describe(const WorkloadSpec& spec, YAML::Emitter& out);

// The spec's size distribution: fixed_size_pkts if set, else size_cdf loaded.
SizeDistribution size_distribution(const WorkloadSpec& spec);

// Everything generate_flows checks, without generating: a trace is read in
// full against num_endpoints (every row: fields, ids, src != dst); a
// generated workload's pattern must fit the endpoints (incast fan_in), its
// sizes load and its flow count stay under max_flows. Throws ConfigError.
// `check` and `run` both call it (emulator/run/setup.h validate_run).
void validate_workload(const WorkloadSpec& spec, uint32_t num_endpoints);

// Generates (poisson, collective) or reads (trace, collective sends) the
// run's flows. Throws ConfigError (prefixed with spec.where) if the spec does
// not fit num_endpoints. A collective's flows wait for each other: its
// dependencies go to `deps`; without `deps` (callers that cannot drive
// dependencies: live endpoints) a collective is a ConfigError.
FlowList generate_flows(const WorkloadSpec& spec, uint32_t num_endpoints, WorkloadStats* stats = nullptr,
                        FlowDeps* deps = nullptr);


}  // namespace flexplane
