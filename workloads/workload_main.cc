// flexplane-workload: the lab's traffic over real TCP (docs/lab.md).
//
//   flexplane-workload serve  [--bind IP] [--port P] [--cc ALGO] [--hints PATH] [--duration-s S]
//   flexplane-workload rpc    --servers A,B,... --sizes SPEC (--rate R | --load L --link-gbps G)
//                             --duration-s S --out FILE [--seed N] [--cc ALGO] [--drain-s S]
//   flexplane-workload bulk   --servers A,B,... --duration-s S --out FILE [--interval-ms I] [--cc ALGO]
//   flexplane-workload incast --servers A,B,... --size BYTES --queries N --out FILE [--gap-ms G] [--cc ALGO]
//
// Every request is one TCP connection: the client sends a 16-byte request,
// the server answers with the bytes asked for (wire.h). Output formats:
// docs/lab.md. Exit status: 0 done (flows that failed are in the output),
// 1 socket errors, 2 bad arguments.
#include <CLI/CLI.hpp>

#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <random>

#include "api/version.h"
#include "workloads/requester.h"
#include "workloads/server.h"
#include "workloads/size_sampler.h"

using namespace flexplane::workloads;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct ClientOptions {
  std::vector<std::string> servers;
  uint16_t port = 5001;
  std::string cc, out;
  double duration_s = 10, drain_s = 10;
};

std::vector<Endpoint> parse_servers(const ClientOptions& o) {
  std::vector<Endpoint> v;
  for (const auto& s : o.servers) {
    Endpoint e;
    if (!Endpoint::parse(s, o.port, &e)) throw std::invalid_argument("--servers: bad address '" + s + "'");
    v.push_back(e);
  }
  if (v.empty()) throw std::invalid_argument("--servers: at least one server");
  return v;
}

FILE* open_out(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(path + ": cannot write");
  std::setvbuf(f, nullptr, _IOFBF, 1 << 16);
  return f;
}

double us(uint64_t a, uint64_t b) { return a && b >= a ? double(b - a) / 1000.0 : -1; }

// One row per request (rpc, incast).
void write_flow_row(FILE* f, const Flow& x, const std::vector<Endpoint>& servers) {
  std::fprintf(f, "%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%d,%" PRIu64 ",", x.id, x.tag, servers[x.server].text.c_str(),
               x.req.size, x.req.dscp == kNoDscp ? -1 : int(x.req.dscp), x.start_real);
  auto col = [f](double v) { v < 0 ? std::fprintf(f, ",") : std::fprintf(f, "%.3f,", v); };
  col(us(x.start_mono, x.connected_mono));
  col(us(x.start_mono, x.first_byte_mono));
  col(x.status == FlowStatus::kOk ? us(x.start_mono, x.done_mono) : -1);
  std::fprintf(f, "%" PRIu64 ",%s,%d\n", x.received, status_name(x.status), x.error);
}
const char* kFlowHeader =
    "request,tag,server,size_bytes,dscp,start_real_ns,connect_us,first_byte_us,fct_us,received_bytes,status,errno\n";

int run_rpc(const ClientOptions& o, const std::string& sizes_spec, double rate, double load, double link_gbps,
            uint64_t seed, uint32_t max_inflight) {
  const SizeSampler sizes = SizeSampler::parse(sizes_spec);
  if (rate <= 0) {
    if (load <= 0 || link_gbps <= 0) throw std::invalid_argument("give --rate, or --load and --link-gbps");
    rate = load * link_gbps * 1e9 / 8.0 / sizes.mean_bytes();
  }
  Requester r(parse_servers(o), o.cc);
  FILE* out = open_out(o.out);
  std::fprintf(out, "%s", kFlowHeader);
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_int_distribution<uint32_t> pick(0, uint32_t(r.servers().size() - 1));
  uint64_t started = 0, ok = 0, failed = 0, skipped = 0;
  auto done = [&](const Flow& f) {
    write_flow_row(out, f, r.servers());
    (f.status == FlowStatus::kOk ? ok : failed)++;
  };
  const uint64_t t0 = mono_ns(), end = t0 + uint64_t(o.duration_s * 1e9);
  uint64_t next = t0 + uint64_t(gap(rng) * 1e9);
  std::fprintf(stderr, "rpc: %.2f requests/s (mean response %.0f B) to %zu servers for %.1f s\n", rate,
               sizes.mean_bytes(), r.servers().size(), o.duration_s);
  while (!g_stop) {
    uint64_t now = mono_ns();
    while (next <= now && next < end) {
      const SizeSampler::Sample s = sizes.sample(rng);
      const uint32_t server = pick(rng);
      if (r.running() >= max_inflight) {
        ++skipped;  // open loop beyond what the client may hold: counted, not queued
      } else {
        Request q;
        q.size = s.bytes;
        q.dscp = s.dscp;
        r.start(server, q);
        ++started;
      }
      next += uint64_t(gap(rng) * 1e9);
    }
    if (now >= end && (r.running() == 0 || now >= end + uint64_t(o.drain_s * 1e9))) break;
    const uint64_t wait_ns = next > now && next < end ? next - now : 20'000'000;
    r.poll(int(std::min<uint64_t>(wait_ns / 1'000'000, 20)), done);
  }
  r.abort_all(FlowStatus::kUnfinished, done);
  std::fclose(out);
  std::printf("rpc: started %" PRIu64 ", ok %" PRIu64 ", failed or unfinished %" PRIu64 ", skipped (over %u in flight) %" PRIu64
              " -> %s\n",
              started, ok, failed, max_inflight, skipped, o.out.c_str());
  return 0;
}

int run_bulk(const ClientOptions& o, double interval_ms) {
  Requester r(parse_servers(o), o.cc);
  FILE* out = open_out(o.out);
  std::fprintf(out, "time_s,flow,server,bytes,goodput_mbps\n");
  std::vector<Flow*> flows;
  std::vector<uint64_t> total(r.servers().size(), 0);
  std::vector<std::string> ended(r.servers().size());
  for (uint32_t i = 0; i < r.servers().size(); ++i) flows.push_back(r.start(i, Request{kNoDscp, 0}, i));
  auto done = [&](const Flow& f) {
    total[f.tag] = f.received;
    ended[f.tag] = status_name(f.status);
    flows[f.tag] = nullptr;
  };
  const uint64_t t0 = mono_ns(), end = t0 + uint64_t(o.duration_s * 1e9), step = uint64_t(interval_ms * 1e6);
  uint64_t next = t0 + step;
  while (!g_stop && r.running() > 0) {
    const uint64_t now = mono_ns();
    if (now >= next) {
      const double t = double(next - t0) / 1e9;
      r.for_each_running([&](Flow& f) {
        std::fprintf(out, "%.3f,%" PRIu64 ",%s,%" PRIu64 ",%.3f\n", t, f.tag, r.servers()[f.server].text.c_str(),
                     f.interval_bytes, f.interval_bytes * 8.0 / (interval_ms * 1e3));
        f.interval_bytes = 0;
      });
      next += step;
      if (next > end) break;
    }
    r.poll(int(std::max<uint64_t>(1, std::min<uint64_t>((next - std::min(next, mono_ns())) / 1'000'000, 50))), done);
  }
  r.for_each_running([&](Flow& f) { total[f.tag] = f.received; });
  r.abort_all(FlowStatus::kOk, [&](const Flow& f) { ended[f.tag] = "ok"; });
  std::fclose(out);
  for (size_t i = 0; i < total.size(); ++i)
    std::printf("bulk: flow %zu from %s: %" PRIu64 " bytes (%s)\n", i, r.servers()[i].text.c_str(), total[i],
                ended[i].empty() ? "ok" : ended[i].c_str());
  return 0;
}

int run_incast(const ClientOptions& o, uint64_t size, uint32_t queries, double gap_ms, const std::string& query_out) {
  Requester r(parse_servers(o), o.cc);
  FILE* out = open_out(o.out);
  std::fprintf(out, "%s", kFlowHeader);
  FILE* qout = open_out(query_out);
  std::fprintf(qout, "query,start_real_ns,servers,ok,qct_us\n");
  uint32_t q = 0;
  const uint64_t end = mono_ns() + uint64_t(o.duration_s * 1e9);
  for (; q < queries && !g_stop && mono_ns() < end; ++q) {
    const uint64_t start = mono_ns(), start_real = real_ns();
    uint32_t ok = 0;
    uint64_t last = start;
    for (uint32_t s = 0; s < r.servers().size(); ++s) r.start(s, Request{kNoDscp, size}, q);
    const uint64_t deadline = start + uint64_t(o.drain_s * 1e9);
    auto done = [&](const Flow& f) {
      write_flow_row(out, f, r.servers());
      if (f.status == FlowStatus::kOk) ++ok;
      last = std::max(last, f.done_mono);
    };
    while (r.running() > 0 && !g_stop && mono_ns() < deadline) r.poll(10, done);
    r.abort_all(FlowStatus::kUnfinished, done);
    std::fprintf(qout, "%u,%" PRIu64 ",%zu,%u,", q, start_real, r.servers().size(), ok);
    if (ok == r.servers().size())
      std::fprintf(qout, "%.3f\n", (last - start) / 1000.0);
    else
      std::fprintf(qout, "\n");
    const uint64_t resume = mono_ns() + uint64_t(gap_ms * 1e6);
    while (!g_stop && mono_ns() < resume) usleep(1000);
  }
  std::fclose(out);
  std::fclose(qout);
  std::printf("incast: %u queries of %zu x %" PRIu64 " bytes -> %s, %s\n", q, r.servers().size(), size, o.out.c_str(),
              query_out.c_str());
  return 0;
}

void add_client_options(CLI::App* sub, ClientOptions& o) {
  sub->add_option("--servers", o.servers, "server addresses IP[:PORT] (comma separated or repeated)")
      ->required()
      ->delimiter(',');
  sub->add_option("--port", o.port, "default server port (5001)");
  sub->add_option("--cc", o.cc, "TCP congestion control (cubic, reno, bbr, dctcp, ...; default: the host's)");
  sub->add_option("--out", o.out, "output CSV")->required();
  sub->add_option("--duration-s", o.duration_s, "how long to generate traffic")->check(CLI::Range(0.001, 86400.0));
  sub->add_option("--drain-s", o.drain_s, "afterwards, wait this long for requests in flight (rpc, incast)")
      ->check(CLI::Range(0.0, 3600.0));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flexplane-workload " FLEXPLANE_VERSION
               ": lab traffic over real TCP — one connection per request, server answers with the bytes asked "
               "for (docs/lab.md)"};
  app.require_subcommand(1);
  ServerOptions so;
  auto* serve = app.add_subcommand("serve", "answer requests until SIGINT/SIGTERM or --duration-s");
  serve->add_option("--bind", so.bind, "listen address (default 0.0.0.0; :: for IPv4 and IPv6)");
  serve->add_option("--port", so.port, "listen port (default 5001)");
  serve->add_option("--cc", so.cc, "TCP congestion control of the responses");
  serve->add_option("--hints", so.hints, "flow-hint socket of this host's NFQUEUE endpoint");
  serve->add_option("--duration-s", so.duration_s, "stop after this long (default: run until signalled)");
  serve->add_option("--syn-dscp", so.syn_dscp,
                    "DSCP of SYN-ACKs (the listening socket); responses that ask for none then get 0")
      ->check(CLI::Range(0, 63));
  serve->add_flag("--quiet,-q", so.quiet, "no start-up line");

  ClientOptions rpc_o, bulk_o, inc_o;
  std::string sizes, query_out;
  double rate = 0, load = 0, link_gbps = 0, interval_ms = 1000, gap_ms = 100;
  uint64_t seed = 1, size = 0;
  uint32_t max_inflight = 2000, queries = 10;
  auto* rpc = app.add_subcommand("rpc", "Poisson requests, one per connection, sizes from a distribution");
  add_client_options(rpc, rpc_o);
  rpc->add_option("--sizes", sizes, "fixed:BYTES | mix:BYTES@P[@DSCP],... | cdf:FILE (packets of 1460 B)")->required();
  rpc->add_option("--rate", rate, "requests per second (or --load with --link-gbps)");
  rpc->add_option("--load", load, "offered load: fraction of --link-gbps this client asks for")->check(CLI::Range(0.0, 10.0));
  rpc->add_option("--link-gbps", link_gbps, "the client's access link rate, for --load");
  rpc->add_option("--seed", seed, "arrival and size seed (default 1)");
  rpc->add_option("--max-inflight", max_inflight, "requests in flight beyond which new ones are skipped (default 2000)");
  auto* bulk = app.add_subcommand("bulk", "one long flow from each server; throughput per interval");
  add_client_options(bulk, bulk_o);
  bulk->add_option("--interval-ms", interval_ms, "throughput sample period (default 1000)")->check(CLI::Range(1.0, 60000.0));
  auto* inc = app.add_subcommand("incast", "every server answers at once; queries one after another until "
                                           "--queries or --duration-s");
  add_client_options(inc, inc_o);
  inc->add_option("--size", size, "bytes each server sends per query")->required()->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  inc->add_option("--queries", queries, "queries (default 10)");
  inc->add_option("--gap-ms", gap_ms, "pause between queries (default 100)");
  inc->add_option("--query-out", query_out, "per-query CSV (default: OUT with .queries.csv)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    if (serve->parsed()) return run_server(so);
    if (rpc->parsed()) return run_rpc(rpc_o, sizes, rate, load, link_gbps, seed, max_inflight);
    if (bulk->parsed()) return run_bulk(bulk_o, interval_ms);
    if (inc->parsed()) {
      if (query_out.empty()) query_out = inc_o.out + ".queries.csv";
      return run_incast(inc_o, size, queries, gap_ms, query_out);
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "flexplane-workload: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-workload: %s\n", e.what());
    return 1;
  }
  return 2;
}
