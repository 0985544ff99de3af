// PatternRouter: route -> classify -> enqueue -> schedule, as in the Flexplane
// pattern API. Each stage is one virtual call per batch; the per-packet loops
// are inside the components' CRTP bases, so they inline the scheme's code.
#pragma once

#include <memory>
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
    bank_.reset(env.num_ports, cls_->num_queues(), qm_->queue_capacity_pkts());
    rng_.reseed(env.seed, 0x1000000ull + env.router_id);
    verdicts_ = Verdicts(&bank_, env.router_id, env.sink);
    ComponentEnv cenv{RouterShape{env.router_id, env.num_ports, cls_->num_queues(), env.mtu_bytes}, &bank_, &rng_};
    cls_->bind(cenv);
    qm_->bind(cenv);
    sched_->bind(cenv);
    ports_.resize(kBatch);
    queues_.resize(kBatch);
    live_ports_.resize(env.num_ports);
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

  uint32_t output(Timeslot now, Packet* out, PortId* out_ports) override {
    bank_.set_now(now);
    uint32_t n = 0;
    bank_.for_each_nonempty_port([&](PortId p) { live_ports_[n++] = p; });
    return n ? sched_->schedule_batch(live_ports_.data(), n, now, out, out_ports) : 0;
  }

  // The scheduler is asked once per backlogged port, in port order.
  bool one_packet_per_port() const override { return true; }
  // Routes by the table; the scheduler is only asked for backlogged ports.
  bool forwards_by_table() const override { return true; }
  const QueueBank& bank() const override { return bank_; }
  uint64_t unrouted() const override { return verdicts_.unrouted(); }

 private:
  static constexpr uint32_t kBatch = 64;

  void input_range(Packet* pkts, uint32_t n, Timeslot now) {
    while (n > 0) {
      const uint32_t chunk = n < kBatch ? n : kBatch;
      input_chunk(pkts, chunk, now);
      pkts += chunk;
      n -= chunk;
    }
  }

  void input_chunk(Packet* pkts, uint32_t n, Timeslot now) {
    // Route; packets with no route are reported and squeezed out of the batch.
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const PortId port = routes_->route(pkts[i]);
      if (__builtin_expect(port >= bank_.num_ports(), 0)) {
        verdicts_.set_context(0, 0, now);
        verdicts_.drop_unrouted(pkts[i], Reason::kNoRoute);
        continue;
      }
      if (m != i) pkts[m] = pkts[i];
      ports_[m++] = port;
    }
    if (!m) return;
    cls_->classify_batch(pkts, ports_.data(), queues_.data(), m);
    qm_->enqueue_batch(pkts, ports_.data(), queues_.data(), m, now, verdicts_);
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
};

}  // namespace flexplane
