// PatternRouter: route -> classify -> enqueue -> schedule, as in the Flexplane
// pattern API. Each stage is one virtual call per batch; the per-packet loops
// are inside the components' CRTP bases, so they inline the scheme's code.
//
// Cost per router packet-hop, saturated rack (issue 24; docs/performance.md,
// "The saturated hot path"): measured 11.5 ns/hop = 30 TSC cycles (2.6 GHz)
// and 174 instructions/hop for DropTail on one core of the 2-vCPU AMD EPYC
// VM, 2026-11-27, at 3103291 before the sprint's merge (base e758587: 13.6 ns,
// 210 instructions; merged main 5a40eb0: 11.7 ns in a 9-round A/B). Command:
//   perf record -e cpu-clock build/flexplane_bench
//     --benchmark_filter='BM_Engine_DropTail/cores:1/xlat:1/racks:0' --benchmark_min_time=1
//   valgrind --tool=callgrind (same, --benchmark_min_time=0.01)
//   stage                                   share  cycles/hop  instructions/hop
//   enqueue: count, DropTail, bank push      35 %     10.6          64
//   schedule: port bitmap, FIFO, bank pop    34 %     10.1          58
//   input: rotation, route (direct table)    10 %      3.1          22
//   source emit (BacklogTraffic)             10 %      3.0          20
//   run_core + timeslot timer                 5 %      1.5           2
//   node steps, output, dispatch, sink        4 %      1.3           8
// No PMU in this VM: shares are cpu-clock samples, instructions callgrind's.
// The bank's push and pop are ~20 instructions each; the rest of enqueue and
// schedule is the framework's accounting (arrived, settled, Verdicts context,
// port masks) and the loops. DCTCP: 178 instructions/hop (enqueue 68).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "api/classifier.h"
#include "api/load_balancer.h"
#include "api/pfc.h"
#include "api/queue_manager.h"
#include "api/router.h"
#include "api/scheduler.h"

namespace flexplane {

class alignas(kCacheLine) PatternRouter final : public Router {
 public:
  // `lb` null, or one that is flow_hash_only(): ECMP, inline.
  PatternRouter(std::unique_ptr<ClassifierBase> cls, std::unique_ptr<QueueManagerBase> qm,
                std::unique_ptr<SchedulerBase> sched, std::unique_ptr<LoadBalancerBase> lb = nullptr)
      : cls_(std::move(cls)), qm_(std::move(qm)), sched_(std::move(sched)), lb_(std::move(lb)) {
    num_components_ = lb_ ? 4 : 3;
    spreads_ = lb_ && !lb_->flow_hash_only();
  }

  // Lossless: PFC on this router (api/pfc.h), before bind(). Throws
  // ConfigError (naming `where`) if the components cannot honour pauses.
  void enable_pfc(const PfcParams& p, const std::string& where) {
    if (cls_->num_queues() > QueueBank::kPfcPriorities)
      throw ConfigError(where + ": PFC has " + std::to_string(QueueBank::kPfcPriorities) +
                        " priorities, one per queue, but the classifier '" + cls_->registered_name() + "' makes " +
                        std::to_string(cls_->num_queues()) + " queues per port");
    if (cls_->num_queues() > 1 && !sched_->honours_pause())
      throw ConfigError(where + ": with several queues per port PFC needs a scheduler that honours pauses "
                        "(priority, round_robin); '" + std::string(sched_->registered_name()) + "' does not");
    pfc_ = std::make_unique<PfcState>();
    pfc_params_ = p;
  }

  void bind(const RouterEnv& env) override {
    routes_ = env.routes;
    const bool stamps = cls_->uses_enqueue_time() || qm_->uses_enqueue_time() || sched_->uses_enqueue_time();
    bank_.reset(env.num_ports, cls_->num_queues(), qm_->queue_capacity_pkts(), stamps);
    rng_.reseed(env.seed, 0x1000000ull + env.router_id);
    if (pfc_) {
      bank_.keep_ingress();
      pfc_->bind(pfc_params_, &bank_, env.num_ports);
    }
    verdicts_ = Verdicts(&bank_, env.router_id, env.sink);
    for (int i = 0; i < num_components_; ++i)
      labels_[i] = std::string(kKinds[i]) + " '" + components()[i]->registered_name() + "' (router " +
                   std::to_string(env.router_id) + ")";
    ComponentEnv cenv;
    cenv.shape = RouterShape{env.router_id, env.num_ports, cls_->num_queues(), env.mtu_bytes};
    cenv.time = env.time;
    cenv.bank = &bank_;
    cenv.rng = &rng_;
    cenv.verdicts = &verdicts_;
    cenv.label = labels_[0].c_str();
    cls_->bind(cenv);
    cenv.label = labels_[1].c_str();
    qm_->bind(cenv);
    cenv.dequeuer = qm_->acts_at_dequeue() ? qm_.get() : nullptr;
    cenv.label = labels_[2].c_str();
    sched_->bind(cenv);
    if (lb_) {  // its own random stream: choosing one leaves the others' draws as they were
      lb_rng_.reseed(env.seed, 0x2000000ull + env.router_id);
      cenv.rng = &lb_rng_;
      cenv.dequeuer = nullptr;
      cenv.label = labels_[3].c_str();
      lb_->set_routes(env.routes);
      lb_->bind(cenv);
    }
    ports_.resize(kBatch);
    queues_.resize(kBatch);
    live_words_.assign(bank_.port_words(), 0);
    single_queue_ = cls_->single_queue();
    stats_.clear();
    for (int i = 0; i < num_components_; ++i) {
      const std::vector<StatDesc> d = components()[i]->stat_descs();
      stat_counts_[i] = static_cast<unsigned>(d.size());
      stats_.insert(stats_.end(), d.begin(), d.end());
    }
  }

  void input(Packet* pkts, uint32_t n, Timeslot now) override {
    bank_.set_now(now);
    // A timeslot's arrivals come "at once" but are enqueued one after
    // another. In a fixed order (input port order) the first ports would
    // always win the last free buffer slot, and a tail-dropping queue would
    // starve the others; so the batch is taken from a start that rotates
    // with the timeslot (tail first, then head: no copying), which gives
    // every input each position in turn. Deterministic: a function of `now`.
    const uint32_t start = n > 1 ? static_cast<uint32_t>(now % n) : 0;
    input_range(pkts + start, n - start, now);
    input_range(pkts, start, now);
  }

  void input_in_order(Packet* pkts, uint32_t n, Timeslot now) override {
    bank_.set_now(now);
    input_range(pkts, n, now);
  }

  // PFC: arrivals one at a time, each charged to its ingress port.
  void input_from(Packet* pkts, const PortId* ingress, uint32_t n, Timeslot now) override {
    if (!pfc_) return input(pkts, n, now);
    bank_.set_now(now);
    const uint32_t start = n > 1 ? static_cast<uint32_t>(now % n) : 0;  // rotated, as input()
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t i = k + start < n ? k + start : k + start - n;
      bank_.set_ingress(ingress[i]);
      if (input_chunk(pkts + i, 1, now)) pfc_->arrived(ingress[i], single_queue_ ? 0 : queues_[0]);
    }
  }

  uint32_t output(Timeslot now, Packet* out, PortId* out_ports) override {
    bank_.set_now(now);
    // The backlogged ports as they are before the first pick (a scheduler's
    // picks empty ports): one word per 64 ports, no list of port numbers.
    // Ports whose backlog is all paused (PFC) are left out.
    const uint32_t words = bank_.port_words();
    uint64_t any = 0;
    if (__builtin_expect(bank_.any_paused(), 0)) {
      bank_.sendable_port_words(live_words_.data());
      for (uint32_t w = 0; w < words; ++w) any |= live_words_[w];
    } else {
      const uint64_t* nonempty = bank_.nonempty_port_words();
      for (uint32_t w = 0; w < words; ++w) any |= live_words_[w] = nonempty[w];
    }
    uint32_t m = 0;
    if (any) {
      bank_.set_reader(labels_[2].c_str());
      m = sched_->schedule_ports(live_words_.data(), words, now, out, out_ports);
    }
    if (pfc_) pfc_->update(now);
    return m;
  }

  bool pauses() const override { return pfc_ != nullptr; }
  uint32_t pause_frames(Timeslot, PauseFrame* out) override { return pfc_ ? pfc_->take_frames(out) : 0; }
  void pause(PortId port, uint8_t paused, Timeslot now) override {
    if (pfc_) pfc_->received(port, paused, now);
    else if (port < bank_.num_ports()) bank_.set_paused(port, paused);
  }
  const PfcState* pfc() const override { return pfc_.get(); }

  // One virtual call for the whole burst: the scheduler's schedule() in a loop
  // (api/scheduler.h), as repeated output() calls would run it for this port.
  uint32_t dequeue_burst(PortId port, Timeslot now, uint32_t max, Packet* out) override {
    bank_.set_now(now);
    bank_.set_reader(labels_[2].c_str());
    return bank_.port_packets(port) ? sched_->schedule_burst(port, now, max, out) : 0;
  }

  // The scheduler is asked once per backlogged port, in port order.
  bool one_packet_per_port() const override { return true; }
  // Routes by the table; the scheduler is only asked for backlogged ports.
  bool forwards_by_table() const override { return true; }
  // output() with an empty bank returns before any component runs.
  bool idles_when_empty() const override { return true; }
  const QueueBank& bank() const override { return bank_; }
  const RouterLosses& losses() const override { return verdicts_.losses(); }

  std::vector<StatDesc> stat_descs() const override { return stats_; }
  void sample_stats(PortId port, StatsOut& out) const override {
    // Each component numbers its stats from 0; shift them into the router's list.
    struct Shifted final : StatsOut {
      StatsOut& to;
      unsigned first = 0;
      explicit Shifted(StatsOut& o) : to(o) {}
      void put(unsigned stat, QueueId q, double v) override { to.put(first + stat, q, v); }
    } shifted(out);
    for (int i = 0; i < num_components_; ++i) {
      if (stat_counts_[i]) components()[i]->sample_stats(port, shifted);
      shifted.first += stat_counts_[i];
    }
  }

 private:
  static constexpr uint32_t kBatch = 64;
  static constexpr const char* kKinds[4] = {"classifier", "queue_manager", "scheduler", "load_balancer"};

  // The first num_components_ are set (the load balancer last, if any).
  std::array<const ComponentBase*, 4> components() const { return {cls_.get(), qm_.get(), sched_.get(), lb_.get()}; }

  void input_range(Packet* pkts, uint32_t n, Timeslot now) {
    while (n > 0) {
      const uint32_t chunk = n < kBatch ? n : kBatch;
      input_chunk(pkts, chunk, now);
      pkts += chunk;
      n -= chunk;
    }
  }

  // Returns how many packets reached the queue manager (routed and classified).
  uint32_t input_chunk(Packet* pkts, uint32_t n, Timeslot now) {
    verdicts_.set_now(now);
    uint32_t m;
    if (spreads_) {  // the load balancer picks among each group's ports, for the whole batch
      const RoutingTable::Direct direct = routes_->direct();
      for (uint32_t i = 0; i < n; ++i) ports_[i] = direct.lookup(pkts[i].dst);
      bank_.set_reader(labels_[3].c_str());
      lb_->choose_batch(pkts, ports_.data(), n, now);
      m = route_batch<true>(pkts, n);
    } else {
      m = route_batch<false>(pkts, n);
    }
    if (!m) return 0;
    if (!single_queue_) {  // else every packet joins queue 0 (enqueue_batch gets no queues)
      bank_.set_reader(labels_[0].c_str());
      if (__builtin_expect(cls_->classify_batch(pkts, ports_.data(), queues_.data(), m), 0))
        m = drop_unclassified(pkts, m);
    }
    bank_.set_reader(labels_[1].c_str());
    if (m) qm_->enqueue_batch(pkts, ports_.data(), single_queue_ ? nullptr : queues_.data(), m, now, verdicts_);
    return m;
  }

  // Route (ECMP inline, or the ports the load balancer already wrote into
  // ports_); packets with no route are reported and squeezed out of the
  // batch. Returns how many are left. Table, port count and output array in
  // locals: the stores below may alias the members as far as the compiler knows.
  // The table's form (one flat page or pages: RoutingTable::Direct) is
  // tested once per batch, not per packet.
  template <bool kChosen>
  uint32_t route_batch(Packet* pkts, uint32_t n) {
    if constexpr (!kChosen)
      if (!routes_->direct().flat) return route_batch_as<false, false>(pkts, n);
    return route_batch_as<kChosen, !kChosen>(pkts, n);
  }
  template <bool kChosen, bool kFlat>
  uint32_t route_batch_as(Packet* pkts, uint32_t n) {
    const RoutingTable::Direct direct = routes_->direct();
    const PortId num_ports = bank_.num_ports();
    PortId* const ports = ports_.data();
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
      PortId port;
      if constexpr (kChosen) {
        port = ports[i];
      } else {
        port = kFlat ? direct.lookup_flat(pkts[i].dst) : direct.lookup_paged(pkts[i].dst);
        if (RoutingTable::is_group(port)) port = routes_->route_group(port, pkts[i]);
      }
      if (__builtin_expect(port >= num_ports, 0)) {
        verdicts_.drop_unqueued(pkts[i], kNoRoute, Reason::kNoRoute);
        continue;
      }
      if (m != i) pkts[m] = pkts[i];
      ports[m++] = port;
    }
    return m;
  }

  // Packets the classifier sent to a queue the port does not have: reported
  // and squeezed out of the batch.
  uint32_t drop_unclassified(Packet* pkts, uint32_t n) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (queues_[i] >= bank_.queues_per_port()) {
        verdicts_.drop_unqueued(pkts[i], ports_[i], Reason::kClassifierRange);
        continue;
      }
      if (m != i) pkts[m] = pkts[i], ports_[m] = ports_[i], queues_[m] = queues_[i];
      ++m;
    }
    return m;
  }

  std::unique_ptr<ClassifierBase> cls_;
  std::unique_ptr<QueueManagerBase> qm_;
  std::unique_ptr<SchedulerBase> sched_;
  std::unique_ptr<LoadBalancerBase> lb_;  // null: ECMP inline
  std::unique_ptr<PfcState> pfc_;         // null: no PFC (enable_pfc)
  PfcParams pfc_params_;
  bool spreads_ = false;                  // lb_ is not flow_hash_only(): it chooses every group's port
  int num_components_ = 3;
  const RoutingTable* routes_ = nullptr;
  QueueBank bank_;
  Rng rng_;
  Rng lb_rng_;
  Verdicts verdicts_;
  cache_vector<PortId> ports_;
  cache_vector<QueueId> queues_;
  cache_vector<uint64_t> live_words_;  // output(): the backlogged ports, by bit
  bool single_queue_ = false;          // the classifier puts every packet in queue 0
  std::vector<StatDesc> stats_;  // the components' stats, in order
  std::string labels_[4];        // "queue_manager 'codel' (router 3)": who reads the bank (set_reader)
  unsigned stat_counts_[4] = {};
};

}  // namespace flexplane
