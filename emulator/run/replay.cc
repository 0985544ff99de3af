#include "emulator/run/replay.h"

#include <yaml-cpp/yaml.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "emulator/output/live_records.h"
#include "emulator/output/output.h"
#include "emulator/run/setup.h"

namespace flexplane {

namespace fs = std::filesystem;

namespace {

int replay_impl(const ReplayArgs& a) {
  RunConfig c = pick_run(a.config, a.variant);
  const std::string out_dir = a.out_dir.empty() ? c.output_dir : a.out_dir;
  prepare_output_dir(out_dir);  // before reading the arrivals and replaying them, not after
  const uint32_t cores = a.cores ? a.cores : c.cores;
  std::vector<RecordedArrival> arrivals = read_arrivals_csv(a.arrivals);
  for (const auto& x : arrivals)
    if (x.pkt.src >= c.topology.num_endpoints || x.pkt.dst >= c.topology.num_endpoints)
      throw UsageError(a.arrivals + ": endpoint out of range for " + a.config);
  int64_t end = a.end_timeslot;
  if (end < 0) {
    const fs::path summary = fs::path(a.arrivals).parent_path() / "live_summary.yaml";
    if (fs::exists(summary)) end = YAML::LoadFile(summary.string())["end_timeslot"].as<int64_t>();
  }
  if (end < 0) end = static_cast<int64_t>((arrivals.empty() ? 0 : arrivals.back().time) + 1000000);
  std::vector<ResolvedRouter> resolved;
  std::vector<std::unique_ptr<Router>> routers = build_routers(c, &resolved);
  const size_t n = arrivals.size();
  ReplayTraffic replay(c.topology, std::move(arrivals), c.live.endpoint_queue_pkts, cores);
  const EngineOptions eopt = engine_options(c, cores);
  Engine engine(c.topology, std::move(routers), replay, eopt);
  engine.run(static_cast<Timeslot>(end));
  // run.occupancy_interval_us: the queues of the live run, replayed (always the CSV: kmod/vm reads it)
  if (eopt.occupancy_interval)
    write_occupancy_csv((fs::path(out_dir) / "occupancy.csv").string(), eopt.timeslot_ns, engine);
  const std::vector<LiveVerdict> v = replay.verdicts();
  write_verdicts_csv((fs::path(out_dir) / "verdicts.csv").string(), v);
  std::printf("replay: %zu arrivals, %zu verdicts, %" PRId64 " timeslots on %u core(s) -> %s\n", n, v.size(), end,
              cores, (fs::path(out_dir) / "verdicts.csv").c_str());
  return 0;
}

}  // namespace

// An unreadable arrivals file is a bad argument too: exit 2.
int run_replay(const ReplayArgs& args) { return exit_status_of([&] { return replay_impl(args); }, 2); }

}  // namespace flexplane
