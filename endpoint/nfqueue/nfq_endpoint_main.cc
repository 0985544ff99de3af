// flexplane-nfq-endpoint: one endpoint of the lab's netns backend. Real
// packets an endpoint sends are queued by netfilter (NFQUEUE) and held here
// while the emulator decides their fate over the wire protocol; each is then
// accepted, accepted with ECN CE set, or dropped (docs/lab.md).
//
//   flexplane-nfq-endpoint --config CONFIG --id N [--queue Q] [--queue-netns NS]
//                          [--hold-ms MS] [--fallback open|closed] [--hints PATH] [--out DIR] ...
//
// Exit status: 0 after SIGINT / SIGTERM (counters written); 1 the emulator
// refused the session or a socket failed; 2 bad arguments or configuration.
#include <poll.h>
#include <sys/resource.h>
#include <signal.h>

#include <CLI/CLI.hpp>

#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>

#include "api/version.h"
#include "endpoint/clock.h"
#include "emulator/config/printable.h"
#include "endpoint/endpoint_setup.h"
#include "endpoint/nfqueue/hint_socket.h"
#include "endpoint/nfqueue/nfqueue_socket.h"
#include "endpoint/nfqueue/packet_holder.h"
#include "endpoint/protocol_session.h"
#include "endpoint/stage_trace.h"
#include "endpoint/udp_socket.h"

using namespace flexplane;
using namespace flexplane::endpoint;
using namespace flexplane::endpoint::nfq;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "flexplane-nfq-endpoint: %s\n(see --help)\n", msg.c_str());
  return 2;
}

class QueueSink final : public VerdictSink {
 public:
  explicit QueueSink(NfQueueSocket* q) : q_(q) {}
  void verdict(uint32_t id, Action a, const uint8_t* payload, size_t len) override {
    q_->add_verdict(id, a == Action::kDrop ? NfVerdict::kDrop : NfVerdict::kAccept, payload, len);
  }

 private:
  NfQueueSocket* q_;
};

struct Options {
  std::string config, variant, emulator, bind_ip, queue_netns, fallback = "closed", hints, out_dir;
  std::vector<std::string> peers, bypass;
  uint32_t id = 0;
  int queue = -1;
  uint32_t queue_maxlen = 65536;
  double hold_ms = 3000, rto_us = 2000, connect_timeout_s = 2, stats_s = 0, drain_ms = 300;
  uint32_t window = 4096;
  bool quiet = false;
  bool trace_stages = false;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flexplane-nfq-endpoint " FLEXPLANE_VERSION
               ": holds an endpoint's real packets (netfilter NFQUEUE) while flexplane-emulator live\n"
               "decides their fate, then accepts, CE-marks or drops each (docs/lab.md). Runs until SIGINT/SIGTERM;\n"
               "writes OUT/endpoint_counters.csv. Exit status: 0 stopped by a signal; 1 session refused or socket\n"
               "error; 2 bad arguments or configuration."};
  app.set_version_flag("--version", FLEXPLANE_VERSION " (" FLEXPLANE_GIT_COMMIT ")");
  Options a;
  app.add_option("--config", a.config, "emulator config (YAML, docs/config.md): live: addresses, schemes")->required();
  app.add_option("--id", a.id, "this endpoint's index in the topology")->required();
  app.add_option("--variant", a.variant, "use this variant of the config (default: the first run)");
  app.add_option("--queue", a.queue, "NFQUEUE number to bind (default: the endpoint id)")->check(CLI::Range(0, 65535));
  app.add_option("--queue-netns", a.queue_netns,
                 "network namespace (name in /var/run/netns, or a path) whose netfilter queues the packets "
                 "(default: this one)");
  app.add_option("--queue-maxlen", a.queue_maxlen, "packets the kernel queue holds before dropping (default 65536)");
  app.add_option("--emulator", a.emulator, "emulator IP[:PORT] (default live.emulator_ip:live.udp_port)");
  app.add_option("--bind", a.bind_ip, "local IPv4 address for the protocol (default live.endpoint_ips[ID])");
  app.add_option("--peer", a.peers, "ADDRESS=ENDPOINT_ID: another address of an endpoint (e.g. IPv6); repeatable");
  app.add_option("--bypass", a.bypass,
                 "never hold this traffic: tcp|udp|icmp|icmpv6|N[:PORT] or ADDRESS/LEN (destination); repeatable");
  app.add_option("--hold-ms", a.hold_ms, "longest a packet waits for its verdicts before the fallback (default 3000)")
      ->check(CLI::Range(1.0, 600000.0));
  app.add_option("--fallback", a.fallback, "for packets whose verdicts do not come: open (accept) or closed (drop)")
      ->check(CLI::IsMember({"open", "closed"}));
  app.add_option("--hints", a.hints, "Unix socket path where applications send flow-size hints (flow_hints.h)");
  app.add_option("--out", a.out_dir, "output folder for endpoint_counters.csv (default endpoint-ID)");
  app.add_option("--window", a.window, "protocol requests in flight, a power of two (default 4096)")
      ->check(CLI::Range(1u, 32768u));
  app.add_option("--rto-us", a.rto_us, "initial protocol retransmission timeout, microseconds (default 2000)")
      ->check(CLI::Range(10.0, 1e7));
  app.add_option("--connect-timeout-s", a.connect_timeout_s,
                 "report the emulator unreachable after this long without a session (default 2)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--drain-ms", a.drain_ms, "on SIGTERM, wait this long for outstanding verdicts (default 300)")
      ->check(CLI::Range(0.0, 60000.0));
  app.add_option("--stats-s", a.stats_s, "print a counters line this often (0 = never)")->check(CLI::Range(0.0, 3600.0));
  app.add_flag("--quiet,-q", a.quiet, "only errors");
  app.add_flag("--trace-stages", a.trace_stages,
               "also write OUT/requests.csv: each held packet's NFQUEUE read, request, verdict and release times "
               "(CLOCK_MONOTONIC ns; docs/live.md, 'Where a round trip goes')");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (a.window & (a.window - 1)) return usage_error("--window must be a power of two");
  const std::string who = "flexplane-nfq-endpoint " + std::to_string(a.id);

  // --- configuration: the same contract and addresses as the emulator ---
  HolderConfig hc;
  SessionOptions so;
  sockaddr_in emu{}, bind{};
  try {
    const EndpointSetup s = endpoint_setup(a.config, a.variant, a.id, a.emulator, a.bind_ip);
    const RunConfig& c = s.run;
    const uint32_t n = c.topology.num_endpoints;
    if (n > 4096) return usage_error("at most 4096 endpoints (flow ids carry the endpoint id in 12 bits)");
    apply_contract(s.contract, &so);
    hc.priority = s.contract.priority;
    hc.apkt_bytes = static_cast<uint16_t>(c.network.abstract_packet_bytes);
    hc.endpoint_id = a.id;
    for (uint32_t i = 0; i < c.live.endpoint_ips.size(); ++i)  // parsed and checked by the config
      hc.peers.emplace_back(net::IpAddress::v4(c.live.endpoint_ips[i].host), i);
    for (const auto& p : a.peers) {
      const auto eq = p.find('=');
      net::IpAddress ip;
      if (eq == std::string::npos || !net::IpAddress::parse(p.substr(0, eq), &ip) ||
          p.find_first_not_of("0123456789", eq + 1) != std::string::npos || eq + 1 == p.size())
        return usage_error("--peer '" + p + "': expected ADDRESS=ENDPOINT_ID");
      const unsigned long pid = std::stoul(p.substr(eq + 1));
      if (pid >= n) return usage_error("--peer '" + p + "': no endpoint " + std::to_string(pid));
      hc.peers.emplace_back(ip, static_cast<uint32_t>(pid));
    }
    for (const auto& spec : a.bypass) {
      BypassRule r;
      std::string err;
      if (!BypassRule::parse(spec, &r, &err)) return usage_error(err);
      hc.bypass.push_back(r);
    }
    emu = s.emulator;
    bind = s.bind;
    hc.emulator = net::IpAddress::v4(ntohl(emu.sin_addr.s_addr));
    hc.emulator_port = ntohs(emu.sin_port);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-nfq-endpoint: %s\n", printable(e.what()).c_str());  // messages quote inputs
    return 2;
  }
  hc.hold_timeout_ns = static_cast<uint64_t>(a.hold_ms * 1e6);
  hc.fallback = a.fallback == "open" ? Fallback::kOpen : Fallback::kClosed;
  so.window = static_cast<uint16_t>(a.window);
  so.rto_ns = static_cast<uint64_t>(a.rto_us * 1000);
  so.quiet = a.quiet;
  so.who = who;
  if (a.out_dir.empty()) a.out_dir = "endpoint-" + std::to_string(a.id);

  // --- sockets: protocol UDP here, the queue (maybe) in another namespace ---
  NfQueueSocket queue;
  HintSocket hints;
  int udp = -1;
  try {
    std::filesystem::create_directories(a.out_dir);
    udp = open_udp_socket(bind, emu);
    QueueOptions qo;
    qo.queue_num = static_cast<uint16_t>(a.queue >= 0 ? a.queue : a.id);
    qo.netns = a.queue_netns;
    qo.max_len = a.queue_maxlen;
    qo.fail_open = hc.fallback == Fallback::kOpen;
    queue.open(qo);
    if (!a.hints.empty()) hints.open(a.hints);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return 1;
  }

  QueueSink sink(&queue);
  PacketHolder holder(hc, &sink);
  ProtocolSession session(so);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<StageTrace> trace = a.trace_stages ? std::make_unique<StageTrace>() : nullptr;
  const uint64_t t0 = mono_ns();
  session.start(udp, t0);
  std::deque<OutRequest> backlog;
  uint64_t hint_bad = 0;
  bool established_once = false, unreachable = false, was_established = false;
  uint64_t stop_deadline = 0, next_stats = a.stats_s > 0 ? t0 + uint64_t(a.stats_s * 1e9) : 0;
  uint64_t next_sweep = t0 + 10'000'000'000ull;
  int exit_code = 0;
  std::string fatal;
  if (!a.quiet)
    std::fprintf(stderr, "%s: queue %d%s%s -> emulator %s, hold %.0f ms, fallback %s\n", who.c_str(),
                 a.queue >= 0 ? a.queue : int(a.id), a.queue_netns.empty() ? "" : " in netns ",
                 a.queue_netns.c_str(), addr_text(emu).c_str(), a.hold_ms, a.fallback.c_str());

  auto submit_backlog = [&](uint64_t now) {
    while (!backlog.empty()) {
      const OutRequest& r = backlog.front();
      if (!holder.live(r.cookie)) {  // decided by the fallback meanwhile
        backlog.pop_front();
        continue;
      }
      const int rc = session.submit(r.req, r.cookie, now);
      if (rc == -FP_ENOSPC || rc == -FP_EREJECTED) return std::string();
      if (rc) return std::string("cannot submit a request: ") + fp_strerror(rc);
      if (trace) trace->sent(r.cookie, r.req, now);
      backlog.pop_front();
    }
    return std::string();
  };
  auto report = [&](uint64_t now) {
    const HolderCounters& k = holder.counters();
    std::fprintf(stderr,
                 "%s: t=%.1fs held=%" PRIu64 " holding=%" PRIu64 " released=%" PRIu64 " marked=%" PRIu64
                 " dropped=%" PRIu64 " timeout=%" PRIu64 " bypassed=%" PRIu64 " backlog=%zu pending=%u %s\n",
                 who.c_str(), (now - t0) / 1e9, k.held, k.holding, k.released, k.marked, k.dropped,
                 k.timeout_accepted + k.timeout_dropped, k.bypassed_total(), backlog.size(), session.pending(),
                 session.established() ? "established" : "no session");
  };

  for (;;) {
    uint64_t now = mono_ns();
    if (g_stop && !stop_deadline) stop_deadline = now + uint64_t(a.drain_ms * 1e6);
    if (stop_deadline && (holder.counters().holding == 0 || now >= stop_deadline)) break;

    uint64_t wake = std::min(session.next_deadline(), holder.next_expiry());
    if (next_stats) wake = std::min(wake, next_stats);
    if (stop_deadline) wake = std::min(wake, stop_deadline);
    if (!unreachable) wake = std::min<uint64_t>(wake, now + uint64_t(a.connect_timeout_s * 1e9 / 4));
    wake = std::min<uint64_t>(wake, now + 1'000'000'000ull);
    pollfd fds[3] = {{queue.fd(), POLLIN, 0}, {udp, POLLIN, 0}, {hints.fd(), POLLIN, 0}};
    timespec ts{0, 0};
    if (wake > now) {
      ts.tv_sec = time_t((wake - now) / 1'000'000'000ull);
      ts.tv_nsec = long((wake - now) % 1'000'000'000ull);
    }
    if (ppoll(fds, hints.fd() >= 0 ? 3 : 2, &ts, nullptr) < 0 && errno != EINTR) {
      fatal = std::string("poll: ") + std::strerror(errno);
      exit_code = 1;
      break;
    }
    now = mono_ns();
    auto take_hint = [&](const FlowHint& h) { holder.on_hint(h, now); };
    hints.drain(take_hint, &hint_bad);
    // Packets: a hint sent before a packet was queued is in the hint socket
    // by the time the packet is read, so drain hints before each one.
    queue.receive([&](const QueuedPacket& p) {
      hints.drain(take_hint, &hint_bad);
      const size_t before = backlog.size();
      holder.on_packet(p.id, p.data, p.len, now, &backlog);
      if (trace)
        for (size_t i = before; i < backlog.size(); ++i) trace->held(backlog[i].cookie, now);
    });
    std::string err = submit_backlog(now);
    if (err.empty()) err = session.flush(now);
    if (err.empty())
      err = session.receive(now, [&](const fp_verdict& v, const fp_request&, uint64_t cookie) {
        holder.on_verdict(cookie, v.action, now);
        if (trace) trace->verdict(cookie, v.action, now);
      });
    if (!err.empty()) {
      fatal = err;
      exit_code = 1;
      break;
    }
    std::vector<GivenBack> given_back;
    std::string msg;
    const RejectOutcome ro = session.check_reject(now, &given_back, &msg);
    if (ro == RejectOutcome::kFatal) {
      fatal = msg;
      exit_code = 1;
      break;
    }
    if (ro == RejectOutcome::kAdopted)  // the new session asks again, oldest first
      for (auto it = given_back.rbegin(); it != given_back.rend(); ++it) backlog.push_front({it->req, it->cookie});
    if (std::string e = submit_backlog(now); !e.empty()) {
      fatal = e;
      exit_code = 1;
      break;
    }
    if (std::string e = session.flush(now); !e.empty()) {
      fatal = e;
      exit_code = 1;
      break;
    }
    holder.expire(now);
    queue.flush();
    if (trace) trace->released(mono_ns());

    // Reachability reports, once per change.
    const bool est = session.established();
    const uint64_t timeout_ns = uint64_t(a.connect_timeout_s * 1e9);
    if (est && !was_established) {
      const uint16_t apkt = session.conn().apkt_bytes;
      if (apkt && apkt != hc.apkt_bytes) {
        std::fprintf(stderr, "%s: emulator says %u bytes per abstract packet (config: %u); using %u\n", who.c_str(),
                     apkt, hc.apkt_bytes, apkt);
        holder.set_apkt_bytes(apkt);
      }
      if (!a.quiet || unreachable)
        std::fprintf(stderr, "%s: session %s with %s (endpoint id %u, window %u, %u B per abstract packet)\n",
                     who.c_str(), established_once ? "re-established" : "established", addr_text(emu).c_str(),
                     session.conn().endpoint_id, session.conn().win, apkt ? apkt : hc.apkt_bytes);
      established_once = true;
      unreachable = false;
    }
    was_established = est;
    const bool silent = est ? session.pending() > 0 && now - session.conn().last_rx >= timeout_ns
                            : now - t0 >= timeout_ns;
    if (silent && !unreachable) {
      std::fprintf(stderr,
                   "%s: cannot reach the emulator at %s: %s; packets are held up to %.0f ms, then %s (fallback %s)\n",
                   who.c_str(), addr_text(emu).c_str(),
                   est ? ("no answer for " + std::to_string(a.connect_timeout_s) + " s with " +
                          std::to_string(session.pending()) + " requests pending").c_str()
                       : ("no session after " + std::to_string(a.connect_timeout_s) + " s (" +
                          std::to_string(session.counters().proto.hellos_sent) + " HELLOs sent)").c_str(),
                   a.hold_ms, hc.fallback == Fallback::kOpen ? "accepted" : "dropped", a.fallback.c_str());
      unreachable = true;
    } else if (est && unreachable && now - session.conn().last_rx < timeout_ns) {
      std::fprintf(stderr, "%s: the emulator answers again\n", who.c_str());
      unreachable = false;
    }
    if (next_stats && now >= next_stats) {
      report(now);
      next_stats = now + uint64_t(a.stats_s * 1e9);
    }
    if (now >= next_sweep) {
      holder.sweep_flows(now);
      next_sweep = now + 10'000'000'000ull;
    }
  }

  // Shutdown: every packet still held gets the fallback; then counters.
  const uint64_t now = mono_ns();
  holder.release_all(now);
  queue.flush();
  if (!fatal.empty()) std::fprintf(stderr, "%s: %s\n", who.c_str(), fatal.c_str());
  const KernelQueueStats ks = queue.kernel_stats();
  try {
    const std::string path = a.out_dir + "/endpoint_counters.csv";
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::fprintf(f, "counter,value\n");
    holder.write_counter_rows(f);
    session.write_counter_rows(f);
    auto row = [f](const char* k, uint64_t v) { std::fprintf(f, "%s,%llu\n", k, (unsigned long long)v); };
    row("backlog_at_exit", backlog.size());
    row("hint_datagrams_bad", hint_bad);
    row("netlink_errors", queue.netlink_errors());
    row("netlink_overruns", queue.recv_overruns());
    row("verdict_batches", queue.verdict_batches());
    row("verdicts_to_kernel", queue.verdicts_sent());
    row("kernel_queue_dropped", ks.queue_dropped);
    row("kernel_user_dropped", ks.user_dropped);
    row("kernel_waiting_at_exit", ks.waiting);
    row("runtime_ms", (now - t0) / 1'000'000);
    // This process's CPU time (the per-packet cost of holding and releasing:
    // docs/lab.md, "The link rate"); the kernel's NFQUEUE work in the
    // senders' context is not in it.
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    row("cpu_user_us", uint64_t(ru.ru_utime.tv_sec) * 1'000'000 + uint64_t(ru.ru_utime.tv_usec));
    row("cpu_sys_us", uint64_t(ru.ru_stime.tv_sec) * 1'000'000 + uint64_t(ru.ru_stime.tv_usec));
    if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
    if (trace) trace->write(a.out_dir + "/requests.csv");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    exit_code = 1;
  }
  queue.close();
  close(udp);
  if (!a.quiet) report(now);
  return exit_code;
}
