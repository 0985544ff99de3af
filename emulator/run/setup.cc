#include "emulator/run/setup.h"

namespace flexplane {

RunConfig pick_run(const std::string& file, const std::string& variant) {
  Experiment exp = load_experiment(file);
  if (variant.empty()) {
    if (exp.runs.size() != 1)
      throw UsageError(file + ": has " + std::to_string(exp.runs.size()) + " variants; choose one with --variant");
    return exp.runs.front();
  }
  for (auto& r : exp.runs)
    if (r.variant == variant) return r;
  throw UsageError(file + ": no variant named '" + variant + "'");
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
