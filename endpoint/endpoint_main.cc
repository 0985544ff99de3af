// flexplane-endpoint: the userspace endpoint driver of a live emulation.
//
//   flexplane-endpoint --config CONFIG --id N [--emulator IP[:PORT]] [--bind IP]
//                      [--start-at UNIX_NS] [--duration-s S] [--out DIR] [--trace FILE]
//
// Plays endpoint N of CONFIG: requests a verdict from `flexplane-emulator live`
// for every abstract packet of the flows endpoint N sends (the config's
// workload, same generator and seed as a virtual-time run, or --trace), at
// each flow's start time, and writes flows.csv, verdicts.csv and
// endpoint_counters.csv (docs/live.md).
//
// Exit status: 0 every request got its verdict; 1 time limit reached, session
// refused or socket error; 2 bad arguments or configuration.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "api/params.h"
#include "emulator/config/config.h"
#include "emulator/config/endpoint_contract.h"
#include "emulator/workload/flow_trace.h"
#include "emulator/config/router_factory.h"
#include "api/version.h"
#include "emulator/workload/workload.h"
#include "emulator/config/printable.h"
#include "endpoint/endpoint_setup.h"
#include "endpoint/flow_driver.h"

using namespace flexplane;
using namespace flexplane::endpoint;

namespace {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "flexplane-endpoint: %s\n(see --help)\n", msg.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flexplane-endpoint " FLEXPLANE_VERSION
               ": userspace endpoint driver for live emulation (flexplane-emulator live).\n"
               "Requests one verdict per abstract packet of this endpoint's flows, over the wire protocol of\n"
               "docs/protocol.md, and writes OUT/flows.csv, OUT/verdicts.csv, OUT/endpoint_counters.csv.\n"
               "Exit status: 0 all verdicts received; 1 time limit, refused session or socket error;\n"
               "2 bad arguments or configuration."};
  app.set_version_flag("--version", FLEXPLANE_VERSION " (" FLEXPLANE_GIT_COMMIT ")");

  std::string config, emulator, bind_ip, out_dir, trace, variant;
  uint32_t id = 0;
  uint64_t start_at = 0;
  double duration_s = 0;
  uint32_t window = 1024;
  double rto_us = 2000, drop_tx = 0, drop_rx = 0;
  uint64_t seed = 1;
  bool busy = false, quiet = false;
  app.add_option("--config", config, "experiment config (YAML, docs/config.md); its live: section gives addresses")
      ->required();
  app.add_option("--id", id, "this endpoint's index in the topology")->required();
  app.add_option("--variant", variant, "use this variant of the config (default: the first run)");
  app.add_option("--emulator", emulator, "emulator IP[:PORT] (default live.emulator_ip:live.udp_port)");
  app.add_option("--bind", bind_ip, "local IPv4 address to send from (default live.endpoint_ips[ID])");
  app.add_option("--start-at", start_at,
                 "CLOCK_REALTIME ns of timeslot 0: flow f starts at START_AT + f.start x timeslot (default: now); "
                 "give every endpoint the same value");
  app.add_option("--duration-s", duration_s,
                 "give up (exit 1) this many seconds after the start if verdicts are still missing "
                 "(default: last flow start + 60 s)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out", out_dir, "output folder (default endpoint-ID)");
  app.add_option("--trace", trace, "flow trace CSV (emulator/workload/flow_trace.h) instead of the config's workload");
  app.add_option("--window", window, "requests in flight, a power of two (default 1024)")
      ->check(CLI::Range(1u, 32768u));
  app.add_option("--rto-us", rto_us, "initial retransmission timeout, microseconds (default 2000)")
      ->check(CLI::Range(10.0, 1e7));
  app.add_flag("--busy-poll", busy, "spin instead of sleeping between events (lower latency, burns a core)");
  bool trace_stages = false;
  app.add_flag("--trace-stages", trace_stages,
               "also write OUT/requests.csv: each request's send and verdict times (CLOCK_MONOTONIC ns; docs/live.md)");
  app.add_flag("--quiet,-q", quiet, "no summary line");
  auto* g = app.add_option_group("test hooks", "loss injection inside the driver, for tests");
  g->add_option("--drop-tx", drop_tx, "drop this fraction of outgoing protocol datagrams")->check(CLI::Range(0.0, 0.99));
  g->add_option("--drop-rx", drop_rx, "drop this fraction of incoming protocol datagrams")->check(CLI::Range(0.0, 0.99));
  g->add_option("--seed", seed, "seed of the loss injection (default 1)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (window & (window - 1)) return usage_error("--window must be a power of two");

  RunConfig c;
  FlowList mine;
  DriverOptions o;
  try {
    const EndpointSetup s = endpoint_setup(config, variant, id, emulator, bind_ip);
    c = s.run;
    WorkloadSpec spec = c.workload;
    if (!trace.empty()) {
      spec.kind = WorkloadKind::kTrace;
      spec.trace_path = trace;
      spec.duration = 0;
      spec.where = "--trace";
    }
    for (const auto& f : generate_flows(spec, c.topology.num_endpoints))
      if (f.src == id) mine.push_back(f);
    o.stamping.priority = s.contract.priority;
    o.stamping.ect = c.endpoint_ect;
    o.stamping.packet_bytes = static_cast<uint16_t>(c.network.abstract_packet_bytes);
    apply_contract(s.contract, &o.session);
    o.emulator = s.emulator;
    o.bind = s.bind;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-endpoint: %s\n", printable(e.what()).c_str());  // messages quote inputs
    return 2;
  }

  o.id = id;
  o.timeslot_ns = c.network.timeslot_ns();
  o.session.window = static_cast<uint16_t>(window);
  o.session.rto_ns = static_cast<uint64_t>(rto_us * 1000);
  o.session.drop_tx = drop_tx;
  o.session.drop_rx = drop_rx;
  o.session.seed = seed;
  o.session.quiet = quiet;
  o.busy_poll = busy;
  o.trace_requests = trace_stages;
  o.start_at_real_ns = start_at;
  o.limit_ns = static_cast<uint64_t>(duration_s * 1e9);
  if (out_dir.empty()) out_dir = "endpoint-" + std::to_string(id);

  try {
    std::filesystem::create_directories(out_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-endpoint: cannot create %s: %s\n", out_dir.c_str(), e.what());
    return 1;
  }

  Driver d(o, mine);
  DriverResult res;
  try {
    const int fd = d.open_socket();
    res = d.run(fd);
    close(fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-endpoint: %s\n", e.what());
    return 1;
  }
  try {
    d.write_flows_csv(out_dir + "/flows.csv", c.network.abstract_packet_bytes,
                      [&](EndpointId s, EndpointId t) { return c.topology.path_latency(s, t); });
    d.write_verdicts_csv(out_dir + "/verdicts.csv");
    if (trace_stages) d.write_requests_csv(out_dir + "/requests.csv");
    d.write_counters_csv(out_dir + "/endpoint_counters.csv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-endpoint: %s\n", e.what());
    return 1;
  }
  const DriverCounters k = d.counters();
  const SessionCounters sc = d.session_counters();
  if (!quiet)
    std::printf("endpoint %u: flows %zu, requests %llu, verdicts %llu (release %llu, mark %llu, drop %llu); "
                "retransmitted %llu, sessions %llu, resets %llu -> %s\n",
                id, mine.size(), (unsigned long long)d.total_requests(), (unsigned long long)d.verdicts(),
                (unsigned long long)k.verdicts_release, (unsigned long long)k.verdicts_mark,
                (unsigned long long)k.verdicts_drop, (unsigned long long)sc.proto.requests_resent,
                (unsigned long long)sc.proto.sessions, (unsigned long long)sc.proto.resets, out_dir.c_str());
  if (res.status != DriverStatus::kDone) {
    std::fprintf(stderr, "flexplane-endpoint %u: %s\n", id, res.message.c_str());
    return 1;
  }
  return 0;
}
