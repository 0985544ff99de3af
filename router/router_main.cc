// flexplane-router: the registered schemes forwarding real packets (docs/router.md).
//
//   flexplane-router CONFIG [--out DIR] [--duration-s S] [-q] -- <EAL args>
//   flexplane-router CONFIG --check          # validate config + routes, no DPDK
//
// Ports are whatever the EAL arguments create (--vdev net_af_packet0,iface=...,
// net_pcap, net_ring, memif, PCI NICs), numbered in that order.
// SIGINT/SIGTERM stop (queued packets are drained), SIGHUP reloads the routes.
#include <CLI/CLI.hpp>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "emulator/config/printable.h"
#include "router/eal.h"
#include "router/eal_ports.h"
#include "router/router_app.h"

namespace {

std::atomic<flexplane::router::RouterApp*> g_app{nullptr};

// Messages quote inputs (config values, routes words, file names): printed
// through printable() so control bytes show as escapes.
void say_error(const char* what) { std::fprintf(stderr, "error: %s\n", flexplane::printable(what).c_str()); }

void on_signal(int sig) {
  if (auto* app = g_app.load()) {
    if (sig == SIGHUP)
      app->request_reload();
    else
      app->request_stop();
  }
}

// Fill in memory options the user left out: hugepages when enough are free
// (--in-memory: no files left behind), else plain memory.
std::vector<std::string> with_eal_defaults(std::vector<std::string> eal, bool quiet) {
  bool memory = false;
  for (const auto& a : eal)
    for (const char* k : {"--no-huge", "--in-memory", "--huge-dir", "--file-prefix", "-m", "--socket-mem"})
      memory = memory || a == k || a.rfind(std::string(k) + "=", 0) == 0;
  if (!memory) {
    if (flexplane::router::hugepages_free() >= 512) {
      eal.push_back("--in-memory");
    } else {
      for (const char* a : {"--no-huge", "-m", "1024", "--no-shconf"}) eal.push_back(a);
    }
    if (!quiet) {
      std::string s;
      for (size_t i = 0; i < eal.size(); ++i) s += " " + eal[i];
      std::fprintf(stderr, "router: EAL arguments:%s\n", s.c_str());
    }
  }
  return eal;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace flexplane;
  using namespace flexplane::router;

  // Everything after the first '--' belongs to DPDK's EAL.
  std::vector<std::string> eal_args{argv[0]};
  int own_argc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      own_argc = i;
      for (int j = i + 1; j < argc; ++j) eal_args.push_back(argv[j]);
      break;
    }

  CLI::App cli{
      "flexplane-router: forward real packets through the registered schemes (docs/router.md).\n"
      "Usage: flexplane-router CONFIG [options] -- <DPDK EAL arguments>\n"
      "  e.g. flexplane-router r.yaml -- -l 0 --vdev net_af_packet0,iface=veth0 --vdev net_af_packet1,iface=veth1\n"
      "Schemes and their parameters: flexplane-emulator list. Signals: SIGINT/SIGTERM stop (queues drain),\n"
      "SIGHUP reloads the routes file. Exit status: 0 ok, 1 runtime error, 2 configuration error."};
  std::string config, out_dir;
  double duration_s = -1;
  bool quiet = false, check = false;
  cli.add_option("config", config, "router YAML file (ports, scheme, routes, run, output)")->required();
  cli.add_option("--out", out_dir, "results folder (overrides output.dir)");
  cli.add_option("--duration-s", duration_s, "stop after this many seconds (overrides run.duration_s)")
      ->check(CLI::Range(0.0, 1e7));
  cli.add_flag("-q,--quiet", quiet, "no periodic counter lines on stderr");
  cli.add_flag("--check", check,
               "validate the config and routes files as the start does (port ids too, given the EAL arguments "
               "after '--'), then exit");
  try {
    cli.parse(own_argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }

  // One validation for --check and the start, before the EAL: the port ids
  // against the ports the EAL arguments create when that is known from them
  // (the start validates again with the devices it got).
  const std::optional<uint16_t> num_ports =
      eal_port_count(std::vector<std::string>(eal_args.begin() + 1, eal_args.end()));
  RouterConfig cfg;
  try {
    cfg = load_config(config, num_ports);
  } catch (const ConfigError& e) {
    say_error(e.what());
    return 2;
  }
  if (!out_dir.empty()) cfg.output_dir = out_dir;
  if (duration_s >= 0) cfg.run.duration_s = duration_s;
  if (quiet) cfg.run.stats_interval_s = 0;
  if (check) {
    if (num_ports)
      std::printf("%s: ok (%u port%s)\n", printable(config).c_str(), *num_ports, *num_ports == 1 ? "" : "s");
    else
      std::printf("%s: ok (port ids not checked: give the EAL arguments after '--', with --no-pci and --vdev "
                  "devices, to check them)\n", printable(config).c_str());
    return 0;
  }

  eal_args = with_eal_defaults(eal_args, quiet);
  if (eal_init(eal_args) < 0) {
    std::fprintf(stderr, "error: DPDK EAL initialisation failed: %s (check the arguments after '--')\n",
                 rte_strerror(rte_errno));
    return 2;
  }
  int rc = 0;
  try {
    RouterApp app(cfg, std::vector<std::string>(eal_args.begin() + 1, eal_args.end()));
    struct Published {  // the signal handler sees the app only while it exists
      explicit Published(RouterApp* a) { g_app.store(a); }
      ~Published() { g_app.store(nullptr); }
    } published(&app);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_signal);
    if (!quiet) {
      for (const PortInfo& p : app.shared().ports)
        std::fprintf(stderr, "router: port %u %s %s rate %s, worker %u, %u rx queue%s\n", p.id,
                     mac_str(p.mac).c_str(),
                     p.addr.has_ip ? (ipv4_str(p.addr.ip) + "/" + std::to_string(p.addr.prefix_length)).c_str()
                                   : "(no address)",
                     app.port_settings()[p.id].rate_mbps > 0
                         ? (std::to_string(app.port_settings()[p.id].rate_mbps) + " Mbit/s").c_str()
                         : "unpaced",
                     p.owner, p.rx_queues, p.rx_queues == 1 ? "" : "s");
      std::fprintf(stderr, "router: %u worker%s, forwarding (Ctrl-C stops)\n", app.shared().num_workers,
                   app.shared().num_workers == 1 ? "" : "s");
    }
    app.run();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    std::signal(SIGHUP, SIG_DFL);
    app.write_outputs();
    uint64_t rx = 0, fwd = 0, busy = 0;
    for (const auto& w : app.workers()) {
      rx += w->counters().rx_packets.get();
      fwd += w->counters().forwarded.get();
      busy += w->counters().busy_cycles.get();
    }
    std::printf("router: %" PRIu64 " packets received, %" PRIu64 " forwarded by the fast path, %.1f cycles/packet, "
                "%.2f s -> %s\n",
                rx, fwd, rx ? double(busy) / rx : 0.0, app.summary().wall_seconds, cfg.output_dir.c_str());
  } catch (const ConfigError& e) {
    say_error(e.what());
    rc = 2;
  } catch (const std::exception& e) {
    say_error(e.what());
    rc = 1;
  }
  rte_eal_cleanup();
  return rc;
}
