#include "emulator/run/setup.h"

#include <algorithm>
#include <thread>

#include "emulator/config/endpoint_contract.h"
#include "emulator/output/output.h"
#include "transports/transport.h"

namespace flexplane {

namespace {
std::string variant_list(const Experiment& exp) {
  std::string names;
  for (const auto& n : exp.variant_names) names += (names.empty() ? "" : ", ") + n;
  return names.empty() ? "it has none" : "variants: " + names;
}
}  // namespace

void check_variant_names(const Experiment& exp, const std::vector<std::string>& names) {
  for (const auto& name : names)
    if (std::find(exp.variant_names.begin(), exp.variant_names.end(), name) == exp.variant_names.end())
      throw UsageError(exp.file + ": no variant named '" + name + "' (" + variant_list(exp) + ")");
}

RunConfig pick_run(const std::string& file, const std::string& variant) {
  if (variant.empty()) {
    Experiment exp = load_experiment(file);
    if (exp.runs.size() != 1)
      throw UsageError(file + ": has " + std::to_string(exp.runs.size()) + " variants; choose one with --variant (" +
                       variant_list(exp) + ")");
    for (const auto& w : validate_run(exp.runs.front())) warn(w);
    return exp.runs.front();
  }
  Experiment exp = load_experiment(file, {variant});
  check_variant_names(exp, {variant});
  for (const auto& w : validate_run(exp.runs.front())) warn(w);
  return exp.runs.front();
}

std::vector<std::string> validate_run(RunConfig& c) {
  std::vector<std::string> warnings;
  std::vector<ResolvedRouter> resolved;
  build_routers(c, &resolved);
  endpoint_stamping(c, endpoint_contract(c, resolved));
  if (c.transport.enabled) resolve_transport(c.transport.kind, c.transport.params, c.network.timeslot_ns());
  validate_workload(c.workload, c.topology.num_endpoints);
  if (c.transport.enabled && c.transport.kind == TransportKind::kHpcc &&
      std::none_of(resolved.begin(), resolved.end(), [](const ResolvedRouter& r) { return r.queue_manager == "hpcc"; }))
    warnings.push_back((c.variant.empty() ? c.file : c.file + " variant " + c.variant) +
                       ": transport hpcc, but no router stamps telemetry (queue_manager hpcc, e.g. scheme: hpcc): "
                       "its senders see U = 0 and only grow their windows");
  if (c.workload.kind == WorkloadKind::kCollective && !c.transport.enabled)
    throw ConfigError(c.file + ": transport.kind: a collective's sends start when others complete, which only "
                      "closed-loop flows drive: give a transport (e.g. transport: {kind: dctcp})");
  parse_occupancy_file(c.occupancy_file, c.file + ": output.occupancy");
  const auto routers = static_cast<uint32_t>(c.topology.routers.size());
  const std::string name = c.variant.empty() ? c.file : c.file + " variant " + c.variant;
  if (c.cores > routers) {
    warnings.push_back(name + ": " + std::to_string(c.cores) + " cores for " + std::to_string(routers) +
                       " routers: using " + std::to_string(routers) +
                       " (a core runs whole routers; more would only add synchronisation)");
    c.cores = routers;
  }
  if (const unsigned cpus = std::thread::hardware_concurrency(); cpus && c.cores > cpus)
    warnings.push_back(name + ": " + std::to_string(c.cores) + " cores on a machine with " + std::to_string(cpus) +
                       " CPUs: cores that share a CPU wait for each other every timeslot, so this runs much slower "
                       "than with " + std::to_string(cpus) + " (results do not depend on the core count)");
  return warnings;
}

std::vector<std::unique_ptr<Router>> build_routers(const RunConfig& c, std::vector<ResolvedRouter>* resolved) {
  resolved->assign(c.router_specs.size(), ResolvedRouter{});
  std::vector<std::unique_ptr<Router>> routers;
  for (size_t i = 0; i < c.router_specs.size(); ++i) routers.push_back(build_router(c.router_specs[i], &(*resolved)[i]));
  return routers;
}

EngineOptions engine_options(const RunConfig& c, uint32_t cores) {
  EngineOptions opt;
  opt.cores = cores;
  opt.seed = c.seed;
  opt.mtu_bytes = c.network.abstract_packet_bytes;
  opt.timeslot_ns = c.network.timeslot_ns();
  opt.lookahead = c.lookahead;
  opt.placement = c.placement;
  opt.occupancy_interval = c.occupancy_interval;
  opt.occupancy_samples = c.occupancy_file != "none";  // none: histograms only (occupancy_summary.csv)
  opt.packet_log = c.packet_log;
  return opt;
}

}  // namespace flexplane
