// flexplane-emulator: run experiments in virtual time, validate configs, list schemes.
//
//   flexplane-emulator run CONFIG [--variant NAME]... [--out DIR] [--cores N] [--placement P] [--quiet]
//   flexplane-emulator check CONFIG
//   flexplane-emulator list
//   flexplane-emulator live CONFIG [--out DIR] [--duration-s S] [--record] ... -- <EAL args>
//   flexplane-emulator replay CONFIG --arrivals FILE --out DIR
//   flexplane-emulator capacity CONFIG [--cores N] [--drivers D] [--load L | --backlog P] [--duration-s S] ...
//
// Exit status: 0 success, 2 bad configuration or arguments, 1 other failure.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "api/registry.h"
#include "emulator/config/config.h"
#include "emulator/config/printable.h"
#include "emulator/live/live_run.h"
#include "emulator/output/output.h"
#include "emulator/run/capacity.h"
#include "emulator/run/replay.h"
#include "emulator/run/setup.h"
#include "emulator/run/run.h"
#ifdef FLEXPLANE_HAVE_MPI
#include "emulator/engine/mpi/mpi_partition.h"
#endif
#include "emulator/topology/topology.h"
#include "emulator/workload/collective.h"
#include "emulator/workload/traffic_pattern.h"
#include "transports/transport.h"
#include "api/version.h"

using namespace flexplane;

namespace {

void print_progress(const RunConfig& c, const EngineProgress& p) {
  const double ts_us = c.network.timeslot_ns() / 1000.0;
  std::fprintf(stderr, "  [%s] %5.1f%%  emulated %.3f / %.3f ms  (%.1f s wall)\n",
               c.variant.empty() ? "run" : c.variant.c_str(), 100.0 * p.done / std::max<Timeslot>(1, p.total),
               p.done * ts_us / 1000.0, p.total * ts_us / 1000.0, p.wall_seconds);
}

void print_summary(const RunConfig& c, const RunSummary& s) {
  const double emulated_ms = s.timeslots * c.network.timeslot_ns() / 1e6;
  std::printf("%-14s flows %llu: finished %llu, unfinished %llu (lost a packet %llu, still in flight %llu); "
              "drops %llu, marks %llu; %.2f ms emulated (%s) in %.2f s (%.1f M router hops/s) -> %s\n",
              c.variant.empty() ? "run" : c.variant.c_str(), (unsigned long long)s.flows,
              (unsigned long long)s.finished, (unsigned long long)(s.unfinished_lost + s.unfinished_in_flight),
              (unsigned long long)s.unfinished_lost, (unsigned long long)s.unfinished_in_flight,
              (unsigned long long)s.drops, (unsigned long long)s.marks, emulated_ms,
              s.all_flows_done ? "all flows done" : "to the cap", s.wall_seconds,
              s.router_packet_hops / std::max(1e-9, s.wall_seconds) / 1e6, s.output_dir.c_str());
  if (s.pfc.routers)
    std::printf("%-14s pfc: %llu pauses sent, %.1f us paused in all, most held from one ingress %u packets%s "
                "(pfc.csv)\n",
                "", (unsigned long long)s.pfc.pauses_sent, s.pfc.paused_sent_ts * c.network.timeslot_ns() / 1000.0,
                s.pfc.max_ingress_pkts,
                s.pfc.headroom_overruns ? (", " + std::to_string(s.pfc.headroom_overruns) +
                                           " arrivals past xoff + headroom: raise headroom_pkts").c_str()
                                        : "");
  if (s.collective.iterations)
    std::printf("%-14s collective: %u of %u iterations done, iteration time mean %.1f us, max %.1f us "
                "(collective.csv)\n",
                "", s.collective.completed, s.collective.iterations, s.collective.mean_iteration_us,
                s.collective.max_iteration_us);
  std::fflush(stdout);
  // Losses outside any queue are never expected of the built-in schemes: say so loudly.
  std::string losses;
  for (const auto& k : s.losses.kinds)
    if (k.packets) losses += (losses.empty() ? "" : ", ") + std::string(k.name) + " " + std::to_string(k.packets);
  if (!losses.empty())
    warn(std::string(c.variant.empty() ? "run" : c.variant) + ": packets lost outside any queue: " + losses +
         " (losses.csv)");
}

template <class Base>
void list_components(const char* title) {
  std::printf("\n%s:\n", title);
  for (const auto& [name, info] : Registry<Base>::instance().all()) {
    std::printf("  %-24s %s\n", name.c_str(), info.doc.c_str());
    for (const auto& p : info.params) std::printf("      %s\n", param_list_line(p).c_str());  // api/registry.h
  }
}

void list_all() {
  std::printf("Schemes (presets for routers.<level>.scheme):\n");
  for (const auto& [name, p] : SchemeRegistry::instance().all())
    std::printf("  %-18s %s\n  %-18s   = classifier %s, queue_manager %s, scheduler %s, endpoint priority %s\n",
                name.c_str(), p.doc.c_str(), "", p.classifier.c_str(), p.queue_manager.c_str(), p.scheduler.c_str(),
                p.endpoint_priority.c_str());
  list_components<ClassifierBase>("Classifiers");
  list_components<QueueManagerBase>("Queue managers");
  list_components<SchedulerBase>("Schedulers");
  list_components<LoadBalancerBase>("Load balancers (routers.<level>.load_balancer; default ecmp)");
  if (!Registry<Router>::instance().all().empty()) list_components<Router>("Generic routers");
  list_components<TopologyKind>("Topology kinds (topology.kind)");
  list_components<TrafficPattern>("Traffic patterns (workload.pattern; parameters are workload keys)");
  list_components<Collective>("Collectives (workload.kind: collective, workload.collective; parameters are workload keys)");
  std::printf("\nTransports (transport.kind; closed-loop senders, docs/transports.md):\n"
              "  none                     open loop: every packet sent once (default)\n"
              "  newreno (= reno)         TCP NewReno, RTO per RFC 6298\n"
              "  ecn                      NewReno + RFC 3168 ECN\n"
              "  dctcp                    DCTCP (RFC 8257)\n"
              "  pfabric                  pFabric's minimal rate control\n"
              "  swift                    Swift's delay-based window (below 1 packet with pacing_gain > 0)\n"
              "  dcqcn                    DCQCN's rate control, paced (give routers pfc: docs/pfc.md)\n"
              "  hpcc                     HPCC's window from in-band telemetry (switches: scheme hpcc)\n"
              "      %-22s %-13s default %-8s %s\n",
              "ack_latency", "string", "data_path", "ACK channel latency: data_path | propagation");
  std::printf("      %-22s %-13s default %-8s %s\n", "ack_queueing", "string", "none",
              "ACKs wait behind the receiver's NIC and its ToR's port: none | delay | delay_and_loss");
  std::printf("      %-22s %-13s default %-8s %s\n", "ack_queueing_nic", "bool", "true",
              "with ack_queueing: count the receiver's NIC FIFO (false: the ToR port only)");
  for (const auto& p : transport_param_schema().descs()) std::printf("      %s\n", param_list_line(p).c_str());
}

}  // namespace

// Started by mpirun / srun: a run across processes (docs/mpi.md). MPI is
// initialised before anything reads argv and finalised when main returns;
// an error on one rank ends the whole job (MPI_Abort), never a hang.
struct MpiSession {
  bool on = false;
  uint32_t rank = 0, size = 1;
  MpiSession(int* argc, char*** argv) {
#ifdef FLEXPLANE_HAVE_MPI
    if (!MpiPartition::launched_by_mpi()) return;
    MpiPartition::init(argc, argv);
    on = true;
    rank = MpiPartition::world_rank();
    size = MpiPartition::world_size();
#endif
  }
  ~MpiSession() {
#ifdef FLEXPLANE_HAVE_MPI
    if (on) MpiPartition::finalize();
#endif
  }
  int end(int rc) {
#ifdef FLEXPLANE_HAVE_MPI
    if (on && size > 1 && rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
#endif
    return rc;
  }
};

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  CLI::App app{"flexplane-emulator " FLEXPLANE_VERSION
               ": emulate a datacenter network in timeslots, in virtual time.\n"
               "Config reference: docs/config.md; outputs: docs/output-format.md"};
  app.set_version_flag("--version", FLEXPLANE_VERSION " (" FLEXPLANE_GIT_COMMIT ")");
  app.require_subcommand(1);

  std::string config;
  std::vector<std::string> only;
  std::string out_dir;
  uint32_t cores = 0;
  std::string placement;
  bool quiet = false;
  auto* run = app.add_subcommand("run", "run an experiment (every variant, or those named with --variant)");
  run->add_option("config", config, "experiment YAML file")->required();
  run->add_option("--variant", only, "run only this variant (repeatable)");
  run->add_option("--out", out_dir, "results folder (overrides output.dir)");
  run->add_option("--cores", cores, "emulation cores (overrides run.cores)")->check(CLI::Range(1, 256));
  run->add_option("--placement", placement, "which core runs each router (overrides run.placement)")
      ->check(CLI::IsMember({"grouped", "round_robin"}));
  run->add_flag("-q,--quiet", quiet, "no progress lines");

  auto* check = app.add_subcommand(
      "check", "validate a config as `run` does, without simulating or writing anything (every variant, or --variant)");
  check->add_option("config", config, "experiment YAML file")->required();
  check->add_option("--variant", only, "check only this variant (repeatable)");

  app.add_subcommand("list", "list schemes, components and their parameters");

  // Live emulation (docs/live.md). DPDK EAL arguments follow '--'.
  live::LiveArgs la;
  auto* live_cmd = app.add_subcommand(
      "live", "emulate in real time for endpoints speaking the wire protocol over a DPDK port; EAL args after '--'");
  live_cmd->add_option("config", la.config, "experiment YAML file (topology, routers, live: section)")->required();
  live_cmd->add_option("--variant", la.variant, "the variant to emulate (configs with variants)");
  live_cmd->add_option("--out", la.out_dir, "results folder (overrides output.dir)");
  live_cmd->add_option("--duration-s", la.duration_s, "stop after this many seconds (default: at SIGINT/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  live_cmd->add_flag("--record", la.record, "write arrivals.csv and verdicts.csv (for `replay`)");
  live_cmd->add_flag("--trace-stages", la.trace_stages,
                     "write stages.csv: each request's times through the comm core and the engine (docs/live.md)");
  live_cmd->add_option("--port", la.port, "DPDK port id (default 0)");
  live_cmd->add_option("--prio", la.prio, "request feature PRIO: auto (from the schemes) | on | off");
  live_cmd->add_option("--req-custom", la.req_custom, "custom bytes per request (0..12: what a packet carries; default: what the schemes declare)")->check(CLI::Range(0, 255));
  live_cmd->add_option("--verdict-custom", la.verdict_custom, "custom bytes per verdict (0..12: what a packet carries; default: what the schemes declare)")
      ->check(CLI::Range(0, 255));
  live_cmd->add_option("--window", la.window, "protocol window per endpoint, a power of two (default 4096)")
      ->check(CLI::Range(2, 32768));
  live_cmd->add_option("--rto-us", la.rto_us, "verdict retransmission timeout, us (default 500; raise on loaded hosts)")
      ->check(CLI::NonNegativeNumber);
  live_cmd->add_option("--idle-sleep-us", la.idle_sleep_us,
                       "comm core sleep when idle (default 20 with live.sleep_when_ahead, else 0 = busy poll)");
  live_cmd->add_flag("-q,--quiet", la.quiet, "no periodic counter lines on stderr");

  ReplayArgs ra;
  auto* replay_cmd = app.add_subcommand("replay", "replay a live run's arrivals.csv in virtual time -> verdicts.csv");
  replay_cmd->add_option("config", ra.config, "the experiment YAML file of the live run")->required();
  replay_cmd->add_option("--variant", ra.variant, "the variant (configs with variants)");
  replay_cmd->add_option("--arrivals", ra.arrivals, "arrivals.csv written by `live --record`")->required();
  replay_cmd->add_option("--out", ra.out_dir, "folder for verdicts.csv")->required();
  replay_cmd->add_option("--end-timeslot", ra.end_timeslot,
                         "run until this timeslot (default: end_timeslot of live_summary.yaml beside the arrivals)");
  replay_cmd->add_option("--cores", ra.cores, "emulation cores (default: run.cores)")->check(CLI::Range(1, 256));

  // The live capacity experiment (docs/live.md, "Capacity"): no DPDK needed.
  CapacityArgs ca;
  auto* capacity_cmd = app.add_subcommand(
      "capacity", "real-time engine driven by synthetic endpoints on cores of their own: emulated Gbit/s, "
                  "late timeslots, request->verdict latency -> capacity.yaml");
  capacity_cmd->add_option("config", ca.config, "experiment YAML file (topology, routers, network; live.endpoint_queue_pkts)")
      ->required();
  capacity_cmd->add_option("--variant", ca.variant, "the variant (configs with variants)");
  capacity_cmd->add_option("--out", ca.out_dir, "results folder (overrides output.dir)");
  capacity_cmd->add_option("--cores", ca.cores, "engine cores (default: run.cores)")->check(CLI::Range(1, 256));
  capacity_cmd->add_option("--drivers", ca.drivers, "synthetic endpoint threads, each on a CPU of its own (default 1)")
      ->check(CLI::Range(1, 64));
  capacity_cmd->add_option("--load", ca.load, "Poisson requests per endpoint per timeslot: the fraction of its link (default 0.5)");
  capacity_cmd->add_option("--backlog", ca.backlog, "backlogged endpoints instead: requests outstanding per endpoint");
  capacity_cmd->add_option("--duration-s", ca.duration_s, "measured window, seconds (default 1)");
  capacity_cmd->add_option("--warmup-s", ca.warmup_s, "offered before the window, not measured (default 0.1)");
  capacity_cmd->add_option("--late-threshold", ca.late_threshold,
                           "fraction of late timeslots above which the point is marked late, not a capacity (default 0.001)");
  capacity_cmd->add_option("--ring-entries", ca.ring_entries,
                           "entries per LiveTraffic ring (default 4096, as `live`; rounded up to a power of two)");
  capacity_cmd->add_option("--noise-check-s", ca.noise_check_s,
                           "first spin this long on each CPU used and report the time the machine took away "
                           "(gaps > 5 us: the floor under late timeslots; default 0.2, 0 = skip)");
  capacity_cmd->add_option("--poll-us", ca.poll_us,
                           "drivers start a loop at most every this many us (default 0: busy polling; 2 trades "
                           "~1.5 us of latency for fewer cache lines bouncing between cores)");
  capacity_cmd->add_option("--drain-timeout-s", ca.drain_timeout_s,
                           "after the window, wait at most this long for every verdict (default 5)");
  capacity_cmd->add_flag("-q,--quiet", ca.quiet, "no per-second lines");

  // Everything after the first '--' belongs to the DPDK EAL (live only).
  std::vector<std::string> eal_args;
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      cli_argc = i;
      for (int j = i + 1; j < argc; ++j) eal_args.emplace_back(argv[j]);
      break;
    }

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  // Errors: a message on stderr; exit status 2 for bad arguments or configuration, 1 otherwise.
  return mpi.end(exit_status_of([&] {
    if (mpi.size > 1 && !app.got_subcommand("run"))
      throw UsageError("under mpirun only `run` splits across ranks (this was started with " +
                       std::to_string(mpi.size) + " ranks)");
    if (app.got_subcommand("live")) {
      if (live_cmd->count("--out") && la.out_dir.empty()) throw UsageError("--out: empty folder name");
#ifdef FLEXPLANE_WITH_LIVE
      la.eal_args = eal_args;
      return live::run_live(la);
#else
      std::fprintf(stderr, "error: this flexplane-emulator was built without DPDK: no live emulation\n");
      return 1;
#endif
    }
    if (!eal_args.empty()) {
      std::fprintf(stderr, "error: arguments after '--' are only for `live` (DPDK EAL)\n");
      return 2;
    }
    if (app.got_subcommand("capacity")) {
      if (capacity_cmd->count("--out") && ca.out_dir.empty()) throw UsageError("--out: empty folder name");
      return run_capacity(ca);
    }
    if (app.got_subcommand("replay")) {
      if (ra.out_dir.empty()) throw UsageError("--out: empty folder name");
      return run_replay(ra);
    }
    if (app.got_subcommand("list")) {
      list_all();
      return 0;
    }
    // `check` and `run` share everything up to the simulation: loading (only
    // the variants named, if any), the overrides, and validate_run.
    if (run->count("--out") && out_dir.empty()) throw UsageError("--out: empty folder name");
    Experiment exp = load_experiment(config, only);
    check_variant_names(exp, only);
    std::vector<RunConfig*> selected;
    for (auto& r : exp.runs) {
      if (!out_dir.empty()) r.output_dir = (std::filesystem::path(out_dir) / r.variant).string();
      if (cores) r.cores = cores;
      if (!placement.empty()) parse_router_placement(placement, &r.placement);  // checked by --placement
      selected.push_back(&r);
    }
    for (RunConfig* r : selected)
      for (const auto& w : validate_run(*r)) warn(w);
    if (app.got_subcommand("check")) {
      for (const RunConfig* r : selected)
        std::printf("ok: %s%s%s: %u endpoints, %zu routers, %llu + %llu timeslots of %.1f ns -> %s\n",
                    printable(config).c_str(), r->variant.empty() ? "" : " variant ", r->variant.c_str(),
                    r->topology.num_endpoints, r->topology.routers.size(), (unsigned long long)r->duration,
                    (unsigned long long)r->drain, r->network.timeslot_ns(), printable(r->output_dir).c_str());
      return 0;
    }
    // Every run's folder is checked (and created) only now, after every
    // selected run validated: a bad config leaves nothing behind, and a typo
    // in --out fails before minutes of emulation.
    const bool rank0 = mpi.rank == 0;
    if (!rank0) quiet = true;  // one voice: rank 0 prints progress and summaries
    if (rank0)
      for (RunConfig* r : selected) prepare_output_dir(r->output_dir);
    for (RunConfig* rp : selected) {
      RunConfig& r = *rp;
      const std::string cores = mpi.size > 1 ? std::to_string(mpi.size) + " ranks x " + std::to_string(r.cores) + " core(s)"
                                             : std::to_string(r.cores) + " core(s)";
      if (!quiet && r.workload.kind == WorkloadKind::kCollective)  // no arrival window: the sends wait for each other
        std::fprintf(stderr, "%s: %u endpoints, %zu routers, a collective capped at %.3f ms, %s\n",
                     r.variant.empty() ? "run" : r.variant.c_str(), r.topology.num_endpoints, r.topology.routers.size(),
                     (r.duration + r.drain) * r.network.timeslot_ns() / 1e6, cores.c_str());
      else if (!quiet)
        std::fprintf(stderr, "%s: %u endpoints, %zu routers, %.3f ms arrivals + %.3f ms drain, %s\n",
                     r.variant.empty() ? "run" : r.variant.c_str(), r.topology.num_endpoints, r.topology.routers.size(),
                     r.duration * r.network.timeslot_ns() / 1e6, r.drain * r.network.timeslot_ns() / 1e6,
                     cores.c_str());
      std::unique_ptr<Partition> partition;
#ifdef FLEXPLANE_HAVE_MPI
      if (mpi.size > 1) partition = std::make_unique<MpiPartition>(r.cores);
#endif
      const RunSummary s = execute_run(r, quiet ? ProgressFn{} : ProgressFn(print_progress), partition.get());
      if (rank0) print_summary(r, s);
    }
    return 0;
  }, 1));
}
