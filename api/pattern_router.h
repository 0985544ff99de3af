// PatternRouter: route -> classify -> enqueue -> schedule, as in the Flexplane
// pattern API. Each stage is one virtual call per batch; the per-packet loops
// are inside the components' CRTP bases, so they inline the scheme's code.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "api/classifier.h"
#include "api/queue_manager.h"
#include "api/router.h"
#include "api/scheduler.h"

namespace flexplane {

class alignas(kCacheLine) PatternRouter final : public Router {
 public:
  PatternRouter(std::unique_ptr<ClassifierBase> cls, std::unique_ptr<QueueManagerBase> qm,
                std::unique_ptr<SchedulerBase> sched)
      : cls_(std::move(cls)), qm_(std::move(qm)), sched_(std::move(sched)) {}

  void bind(const RouterEnv& env) override {
    routes_ = env.routes;
    const bool stamps = cls_->uses_enqueue_time() || qm_->uses_enqueue_time() || sched_->uses_enqueue_time();
    bank_.reset(env.num_ports, cls_->num_queues(), qm_->queue_capacity_pkts(), stamps);
    rng_.reseed(env.seed, 0x1000000ull + env.router_id);
    verdicts_ = Verdicts(&bank_, env.router_id, env.sink);
    for (int i = 0; i < 3; ++i)
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
    ports_.resize(kBatch);
    queues_.resize(kBatch);
    live_ports_.resize(env.num_ports);
    stats_.clear();
    for (int i = 0; i < 3; ++i) {
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

  uint32_t output(Timeslot now, Packet* out, PortId* out_ports) override {
    bank_.set_now(now);
    uint32_t n = 0;
    bank_.for_each_nonempty_port([&](PortId p) { live_ports_[n++] = p; });
    bank_.set_reader(labels_[2].c_str());
    return n ? sched_->schedule_batch(live_ports_.data(), n, now, out, out_ports) : 0;
  }

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
    for (int i = 0; i < 3; ++i) {
      if (stat_counts_[i]) components()[i]->sample_stats(port, shifted);
      shifted.first += stat_counts_[i];
    }
  }

 private:
  static constexpr uint32_t kBatch = 64;
  static constexpr const char* kKinds[3] = {"classifier", "queue_manager", "scheduler"};

  std::array<const ComponentBase*, 3> components() const { return {cls_.get(), qm_.get(), sched_.get()}; }

  void input_range(Packet* pkts, uint32_t n, Timeslot now) {
    while (n > 0) {
      const uint32_t chunk = n < kBatch ? n : kBatch;
      input_chunk(pkts, chunk, now);
      pkts += chunk;
      n -= chunk;
    }
  }

  void input_chunk(Packet* pkts, uint32_t n, Timeslot now) {
    verdicts_.set_now(now);
    // Route; packets with no route are reported and squeezed out of the batch.
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const PortId port = routes_->route(pkts[i]);
      if (__builtin_expect(port >= bank_.num_ports(), 0)) {
        verdicts_.drop_unqueued(pkts[i], kNoRoute, Reason::kNoRoute);
        continue;
      }
      if (m != i) pkts[m] = pkts[i];
      ports_[m++] = port;
    }
    if (!m) return;
    bank_.set_reader(labels_[0].c_str());
    if (__builtin_expect(cls_->classify_batch(pkts, ports_.data(), queues_.data(), m), 0))
      m = drop_unclassified(pkts, m);
    bank_.set_reader(labels_[1].c_str());
    if (m) qm_->enqueue_batch(pkts, ports_.data(), queues_.data(), m, now, verdicts_);
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
  const RoutingTable* routes_ = nullptr;
  QueueBank bank_;
  Rng rng_;
  Verdicts verdicts_;
  cache_vector<PortId> ports_;
  cache_vector<QueueId> queues_;
  cache_vector<PortId> live_ports_;
  std::vector<StatDesc> stats_;  // the three components' stats, in order
  std::string labels_[3];        // "queue_manager 'codel' (router 3)": who reads the bank (set_reader)
  unsigned stat_counts_[3] = {};
};

}  // namespace flexplane
