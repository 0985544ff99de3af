#include "router/router_app.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "emulator/config/printable.h"
#include "emulator/live/dpdk_launcher.h"

namespace flexplane::router {

namespace fs = std::filesystem;

namespace {

constexpr uint16_t kRxDescriptors = 1024, kTxDescriptors = 1024;
constexpr uint32_t kSlowRing = 4096, kInjectRing = 4096;
constexpr uint32_t kTbl8Groups = 1u << 14;

int64_t mtime_ns(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec + st.st_size;
}

std::string ring_name(const char* kind, uint32_t a, uint32_t b = 0) {
  static std::atomic<uint32_t> serial{0};  // several apps may live in one test process
  return std::string("fpr_") + kind + std::to_string(a) + "_" + std::to_string(b) + "_" +
         std::to_string(serial.fetch_add(1));
}

}  // namespace

RouterApp::RouterApp(RouterConfig config, std::vector<std::string> eal_args)
    : cfg_(std::move(config)), eal_args_(std::move(eal_args)) {
  sh_.num_workers = rte_lcore_count();
  timing_.tsc_hz = rte_get_tsc_hz();
  setup_ports();

  // Workers register with the quiescent-state variable by worker index.
  const size_t qs_bytes = rte_rcu_qsbr_get_memsize(sh_.num_workers);
  sh_.qs = static_cast<rte_rcu_qsbr*>(rte_zmalloc("fpr_qsbr", qs_bytes, RTE_CACHE_LINE_SIZE));
  if (!sh_.qs || rte_rcu_qsbr_init(sh_.qs, sh_.num_workers) != 0)
    throw std::runtime_error("cannot allocate the RCU state (DPDK memory)");
  neighbors_ = std::make_unique<NeighborTable>(kRouterNeighbors);
  sh_.neighbors = neighbors_.get();
  static std::atomic<uint32_t> fib_serial{0};
  fib_ = std::make_unique<Fib>("fpr_fib" + std::to_string(fib_serial.fetch_add(1)) + "_", kRouterMaxRoutes, kTbl8Groups,
                               sh_.qs);
  sh_.fib = fib_.get();
  reload_routes(true);  // throws on a bad routes file: nothing runs with half a table
  setup_rings();

  slow_ = std::make_unique<SlowPath>(sh_, [this](uint32_t ip, uint32_t nb) {
    connected_hosts_[ip] = nb;
    republish_ = true;
  });

  // Schedulers: the owner's per port; in the unpaced baseline with enough TX
  // queues, every worker sends on its own queue (pure run to completion).
  timing_.tsc_start = rte_rdtsc();
  const uint32_t W = sh_.num_workers;
  const uint16_t np = static_cast<uint16_t>(sh_.ports.size());
  owner_sched_.assign(np, nullptr);
  std::vector<std::vector<PortScheduler*>> local(W, std::vector<PortScheduler*>(np, nullptr));
  for (uint16_t p = 0; p < np; ++p) {
    PortInfo& pi = sh_.ports[p];
    rte_eth_link link{};
    rte_eth_link_get_nowait(p, &link);
    PortTiming t = timing_;
    if (link.link_speed != RTE_ETH_SPEED_NUM_NONE && link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN)
      t.nominal_rate_mbps = link.link_speed;
    const bool per_worker_tx = !cfg_.run.queueing && tx_queues_[p] >= W;
    for (uint32_t w = 0; w < W; ++w) {
      if (!per_worker_tx && w != pi.owner) continue;
      scheds_.push_back(std::make_unique<PortScheduler>(p, per_worker_tx ? w : 0, port_settings_[p], cfg_.run, t,
                                                        cfg_.seed));
      local[w][p] = scheds_.back().get();
      if (w == pi.owner) owner_sched_[p] = pi.sched = scheds_.back().get();
    }
    if (owner_sched_[p]->resolved().endpoint_priority != "none")
      std::fprintf(stderr,
                   "warning: port %u: scheme '%s' expects endpoints to stamp packet priorities (%s); router mode "
                   "sees real packets and sets priority 0\n",
                   p, owner_sched_[p]->resolved().scheme.c_str(), owner_sched_[p]->resolved().endpoint_priority.c_str());
  }
  // RX queues: queue q of port p is polled by worker (p + q) % W.
  std::vector<std::vector<std::pair<uint16_t, uint16_t>>> rx(W);
  for (const PortInfo& pi : sh_.ports)
    for (uint16_t q = 0; q < pi.rx_queues; ++q) rx[(pi.id + q) % W].emplace_back(pi.id, q);
  for (uint32_t w = 0; w < W; ++w)
    workers_.push_back(std::make_unique<Worker>(w, sh_, cfg_.run, std::move(rx[w]), std::move(local[w])));
}

RouterApp::~RouterApp() {
  workers_.clear();
  if (slow_) slow_->release();
  auto drain_ring = [](rte_ring* r) {
    if (!r) return;
    void* obj;
    while (rte_ring_dequeue(r, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
    rte_ring_free(r);
  };
  drain_ring(sh_.slow);
  for (rte_ring* r : sh_.inject) drain_ring(r);
  for (auto& row : sh_.handoff)
    for (rte_ring* r : row) drain_ring(r);
  for (auto& s : scheds_) s->release_backlog();
  scheds_.clear();
  for (const PortInfo& p : sh_.ports) {
    rte_eth_dev_stop(p.id);
    rte_eth_dev_close(p.id);  // net_pcap flushes its tx file here
  }
  fib_.reset();
  if (sh_.qs) rte_free(sh_.qs);
  if (sh_.pool) rte_mempool_free(sh_.pool);
  if (stats_csv_) std::fclose(stats_csv_);
}

void RouterApp::setup_ports() {
  const uint16_t np = rte_eth_dev_count_avail();
  cfg_.validate(np);  // the start's validation, now with the devices the EAL created (nothing is configured yet)
  for (uint16_t p = 0; p < np; ++p)
    if (!rte_eth_dev_is_valid_port(p))
      throw std::runtime_error("DPDK port ids are not 0.." + std::to_string(np - 1) + " (port " + std::to_string(p) +
                               " is missing)");
  const uint32_t W = sh_.num_workers;
  uint32_t largest_frame = 0;
  uint64_t want_mbufs = 0;
  for (uint16_t p = 0; p < np; ++p) {
    port_settings_.push_back(cfg_.port(p));
    const PortSettings& s = port_settings_.back();
    largest_frame = std::max(largest_frame, s.mtu_bytes + 18);
    rte_eth_dev_info info;
    if (rte_eth_dev_info_get(p, &info) != 0) throw std::runtime_error("port " + std::to_string(p) + ": no device info");
    PortInfo pi;
    pi.id = p;
    pi.owner = p % W;
    pi.mtu_bytes = s.mtu_bytes;
    pi.addr = {s.has_ip, s.ip, s.prefix_length};
    pi.rx_queues = static_cast<uint16_t>(std::max<uint32_t>(1, std::min<uint32_t>(W, info.max_rx_queues)));
    tx_queues_.push_back(static_cast<uint16_t>(
        !cfg_.run.queueing ? std::max<uint32_t>(1, std::min<uint32_t>(W, info.max_tx_queues)) : 1));
    sh_.ports.push_back(pi);
    // Queue capacity is per queue and a port rarely fills all of them at
    // once: count 16 Ki packets of queueing per port (run.mbufs overrides).
    want_mbufs += kRxDescriptors * pi.rx_queues + kTxDescriptors * tx_queues_.back() + 16384;
  }
  want_mbufs += uint64_t{cfg_.run.ring_size} * (W - 1) * np + 8192;
  const uint32_t mbufs = cfg_.run.mbufs ? cfg_.run.mbufs
                                        : static_cast<uint32_t>(std::clamp<uint64_t>(want_mbufs, 8191, 131071));
  const uint16_t room = static_cast<uint16_t>(std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM, largest_frame) +
                                              RTE_PKTMBUF_HEADROOM);
  static std::atomic<uint32_t> pool_serial{0};
  const std::string pool_name = "fpr_pool" + std::to_string(pool_serial.fetch_add(1));
  sh_.pool = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, 256, 0, room, static_cast<int>(rte_socket_id()));
  if (!sh_.pool)
    throw ConfigError("cannot allocate " + std::to_string(mbufs) + " mbufs (" + rte_strerror(rte_errno) +
                      "): give DPDK more memory (EAL -m, hugepages) or set run.mbufs");

  for (uint16_t p = 0; p < np; ++p) {
    PortInfo& pi = sh_.ports[p];
    const PortSettings& s = port_settings_[p];
    rte_eth_dev_info info;
    rte_eth_dev_info_get(p, &info);
    rte_eth_conf conf{};
    if (pi.rx_queues > 1 && info.flow_type_rss_offloads) {
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_hf =
          (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
    }
    const std::string where = "port " + std::to_string(p) + " (" + info.driver_name + ")";
    int rc = rte_eth_dev_configure(p, pi.rx_queues, tx_queues_[p], &conf);
    if (rc != 0) throw std::runtime_error(where + ": configure: " + rte_strerror(-rc));
    uint16_t nrx = kRxDescriptors, ntx = kTxDescriptors;
    rte_eth_dev_adjust_nb_rx_tx_desc(p, &nrx, &ntx);
    for (uint16_t q = 0; q < pi.rx_queues; ++q)
      if ((rc = rte_eth_rx_queue_setup(p, q, nrx, rte_eth_dev_socket_id(p), nullptr, sh_.pool)) != 0)
        throw std::runtime_error(where + ": rx queue " + std::to_string(q) + ": " + rte_strerror(-rc));
    for (uint16_t q = 0; q < tx_queues_[p]; ++q)
      if ((rc = rte_eth_tx_queue_setup(p, q, ntx, rte_eth_dev_socket_id(p), nullptr)) != 0)
        throw std::runtime_error(where + ": tx queue " + std::to_string(q) + ": " + rte_strerror(-rc));
    bool software_mac = false;
    if (s.has_mac) {
      rte_ether_addr a;
      std::memcpy(a.addr_bytes, s.mac.data(), 6);
      rc = rte_eth_dev_default_mac_addr_set(p, &a);
      // Devices without a settable address (net_pcap, net_ring): the router
      // uses the configured one itself, and the device receives everything.
      software_mac = rc == -ENOTSUP;
      if (rc != 0 && !software_mac)
        throw ConfigError(s.where + ".mac: the device refused the MAC address (" + rte_strerror(-rc) + ")");
    }
    if ((rc = rte_eth_dev_start(p)) != 0) throw std::runtime_error(where + ": start: " + rte_strerror(-rc));
    if (software_mac) {
      rte_eth_promiscuous_enable(p);  // best effort: virtual devices have no filter anyway
      pi.mac = s.mac;
    } else {
      rte_ether_addr a;
      rte_eth_macaddr_get(p, &a);
      std::memcpy(pi.mac.data(), a.addr_bytes, 6);
    }
  }
}

void RouterApp::setup_rings() {
  const uint32_t W = sh_.num_workers;
  const size_t np = sh_.ports.size();
  auto make = [](const std::string& name, uint32_t size, unsigned flags) {
    rte_ring* r = rte_ring_create(name.c_str(), size, SOCKET_ID_ANY, flags);
    if (!r) throw std::runtime_error("cannot create ring " + name + ": " + rte_strerror(rte_errno));
    return r;
  };
  sh_.slow = make(ring_name("slow", 0), kSlowRing, RING_F_SC_DEQ);
  for (size_t p = 0; p < np; ++p)
    sh_.inject.push_back(make(ring_name("inj", static_cast<uint32_t>(p)), kInjectRing, RING_F_SP_ENQ | RING_F_SC_DEQ));
  sh_.handoff.assign(W, std::vector<rte_ring*>(np, nullptr));
  for (uint32_t w = 0; w < W; ++w)
    for (size_t p = 0; p < np; ++p)
      if (sh_.ports[p].owner != w)
        sh_.handoff[w][p] = make(ring_name("ho", w, static_cast<uint32_t>(p)), cfg_.run.ring_size,
                                 RING_F_SP_ENQ | RING_F_SC_DEQ);
}

void RouterApp::reload_routes(bool initial) {
  RouteSet rs;
  if (!cfg_.routes_file.empty()) {
    routes_mtime_ = mtime_ns(cfg_.routes_file);
    rs = load_routes(cfg_.routes_file);
  }
  std::vector<PortAddress> addrs;
  for (const PortInfo& p : sh_.ports) addrs.push_back(p.addr);
  const std::vector<FibEntry> entries = compile_routes(rs, addrs, connected_hosts_, *neighbors_);
  fib_->publish(entries);
  routes_ = std::move(rs);
  if (!initial) ++summary_.route_reloads;
}

uint64_t RouterApp::total_rx() const {
  uint64_t n = 0;
  for (const auto& w : workers_) n += w->counters().rx_packets.get();
  return n;
}

void RouterApp::print_stats(double t, bool header) {
  if (header) {
    if (stats_csv_)
      std::fprintf(stats_csv_,
                   "time_s,port,rx_packets,rx_missed,tx_packets,tx_bytes,arrived,dropped,marked,backlog_pkts,"
                   "backlog_bytes\n");
    return;
  }
  const double dt = cfg_.run.stats_interval_s > 0 ? cfg_.run.stats_interval_s : 1;
  std::string line;
  char buf[256];
  for (const PortInfo& p : sh_.ports) {
    rte_eth_stats st{};
    rte_eth_stats_get(p.id, &st);
    const PortSnapshot& s = owner_sched_[p.id]->snapshot();
    uint64_t tx = 0;
    for (const auto& x : scheds_)
      if (x->port() == p.id) tx += x->snapshot().sent.load(std::memory_order_relaxed);
    if (stats_csv_)
      std::fprintf(stats_csv_, "%.3f,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                   t, p.id, st.ipackets, st.imissed, tx, s.sent_bytes.load(), s.arrived.load(), s.dropped.load(),
                   s.marked.load(), s.backlog_pkts.load(), s.backlog_bytes.load());
    std::snprintf(buf, sizeof buf, " | p%u rx %.3f tx %.3f Mpps drop %" PRIu64 " mark %" PRIu64 " q %" PRIu64, p.id,
                  (st.ipackets - last_rx_[p.id]) / dt / 1e6, (tx - last_tx_[p.id]) / dt / 1e6, s.dropped.load(),
                  s.marked.load(), s.backlog_pkts.load());
    line += buf;
    last_rx_[p.id] = st.ipackets;
    last_tx_[p.id] = tx;
  }
  uint64_t slow = 0;
  for (const auto& w : workers_)
    for (const auto& e : w->counters().exceptions) slow += e.get();
  if (stats_csv_) std::fflush(stats_csv_);
  if (cfg_.run.stats_interval_s > 0) std::fprintf(stderr, "[%7.1f s] slow %" PRIu64 "%s\n", t, slow, line.c_str());
}

void RouterApp::control_loop() {
  const uint64_t hz = timing_.tsc_hz;
  const uint64_t t0 = started_tsc_;
  const double stats_every = cfg_.run.stats_interval_s > 0 ? cfg_.run.stats_interval_s : 1;
  uint64_t next_stats = t0 + static_cast<uint64_t>(stats_every * hz);
  uint64_t next_watch = t0;
  uint64_t last_rx = 0, last_rx_change = t0;
  print_stats(0, true);
  for (;;) {
    const bool stopping = sh_.rx_stop.load(std::memory_order_relaxed);
    uint32_t work = slow_->poll();
    const uint64_t now = rte_rdtsc();
    slow_->tick(now);
    if (republish_) {  // hosts resolved on connected subnets get /32 routes
      republish_ = false;
      std::vector<PortAddress> addrs;
      for (const PortInfo& p : sh_.ports) addrs.push_back(p.addr);
      try {
        fib_->publish(compile_routes(routes_, addrs, connected_hosts_, *neighbors_));
      } catch (const ConfigError& e) {
        std::fprintf(stderr, "routes: cannot add host routes: %s\n", printable(e.what()).c_str());
      }
    }
    bool reload = reload_requested_.exchange(false);
    if (cfg_.run.watch_routes && !cfg_.routes_file.empty() && now >= next_watch) {
      next_watch = now + hz / 5;
      const int64_t m = mtime_ns(cfg_.routes_file);
      reload = reload || (m >= 0 && m != routes_mtime_);
    }
    if (reload && !stopping) {
      try {
        reload_routes(false);
        if (cfg_.run.stats_interval_s > 0)
          std::fprintf(stderr, "routes: reloaded %s (%zu routes, %zu neighbours)\n", printable(cfg_.routes_file).c_str(),
                     routes_.routes.size(), routes_.neighbors.size());
      } catch (const ConfigError& e) {
        ++summary_.route_reload_failures;
        std::fprintf(stderr, "routes: reload failed, keeping the current table: %s\n", printable(e.what()).c_str());
      }
      reloads_done_.fetch_add(1, std::memory_order_release);
    }
    if (now >= next_stats) {
      next_stats += static_cast<uint64_t>(stats_every * hz);
      print_stats(static_cast<double>(now - t0) / hz, false);
    }
    if (!stopping) {
      const uint64_t rx = total_rx();
      if (rx != last_rx) last_rx = rx, last_rx_change = now;
      bool stop = stop_requested_.load(std::memory_order_acquire);
      stop = stop || (cfg_.run.duration_s > 0 && now - t0 >= cfg_.run.duration_s * hz);
      if (!stop && cfg_.run.stop_when_idle_ms > 0 && now - last_rx_change >= cfg_.run.stop_when_idle_ms * 1e-3 * hz &&
          rte_ring_count(sh_.slow) == 0 && slow_->held() == 0) {
        bool queues_empty = true;
        for (const PortScheduler* s : owner_sched_) queues_empty = queues_empty && s->snapshot().backlog_pkts.load() == 0;
        stop = queues_empty;
      }
      if (stop) sh_.rx_stop.store(true, std::memory_order_release);
    } else if (!sh_.inject_done.load(std::memory_order_relaxed) &&
               sh_.rx_done.load(std::memory_order_acquire) == sh_.num_workers) {
      // Workers receive no more: finish what reached the slow path, give up
      // on what still waits for ARP, then let the workers drain.
      while (slow_->poll()) {
      }
      summary_.held_at_exit = slow_->held();
      slow_->release();
      sh_.drain_deadline_tsc.store(now + static_cast<uint64_t>(cfg_.run.drain_timeout_ms * 1e-3 * hz));
      sh_.inject_done.store(true, std::memory_order_release);
    }
    if (done_.load(std::memory_order_acquire)) break;
    if (!work) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace flexplane::router

namespace flexplane::router {

void RouterApp::run() {
  fs::create_directories(cfg_.output_dir);
  stats_csv_ = std::fopen((fs::path(cfg_.output_dir) / "stats.csv").c_str(), "w");
  if (!stats_csv_) throw std::runtime_error(cfg_.output_dir + "/stats.csv: cannot write");
  last_rx_.assign(sh_.ports.size(), 0);
  last_tx_.assign(sh_.ports.size(), 0);
  const auto wall0 = std::chrono::steady_clock::now();
  started_tsc_ = rte_rdtsc();
  std::exception_ptr control_error;
  std::thread control([this, &control_error] {
    // Mostly asleep: any CPU will do (it inherited the main lcore's).
    cpu_set_t all;
    CPU_ZERO(&all);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);
    try {
      control_loop();
    } catch (...) {
      control_error = std::current_exception();
      sh_.rx_stop.store(true);
      sh_.inject_done.store(true);
      sh_.drain_deadline_tsc.store(0);
    }
  });
  std::vector<std::function<void()>> jobs;
  for (auto& w : workers_) jobs.push_back([wp = w.get()] { wp->run(); });
  // Worker i on the i-th worker lcore, the last one on the main lcore.
  live::DpdkLauncher launcher(live::idle_worker_lcores(), true);
  launcher.run(std::move(jobs), nullptr);
  placement_ = launcher.placement();
  done_.store(true, std::memory_order_release);
  control.join();
  summary_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  summary_.fib_publications = fib_->publications();
  for (const PortScheduler* s : owner_sched_) summary_.drain_timed_out |= !s->idle();
  print_stats(summary_.wall_seconds, false);
  if (control_error) std::rethrow_exception(control_error);
}

}  // namespace flexplane::router
