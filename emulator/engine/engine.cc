#include "emulator/engine/engine.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <map>
#include <thread>

#include "api/params.h"
#include "emulator/engine/engine_nodes.h"
#include "emulator/engine/lookahead.h"
#include "emulator/engine/pace_clock.h"

namespace flexplane {

using spin::back_off;
using spin::cpu_relax;
using spin::hand_off;
using spin::wait_until_far;

namespace {
// Across processes with one core per rank: how often (timeslots) that core
// moves state between the ranks when it does not wait.
constexpr Timeslot kPumpEvery = 16;

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void Engine::run_core(Core& core, Timeslot begin) {
  const bool real_time = options_.clock == Clock::kRealTime;
  const bool timed = options_.time_timeslots;
  const bool has_neighbours = !core.upstream.empty() || !core.downstream.empty();  // they read `next`
  const bool check_done = options_.stop_when_done;
  const bool skip_idle = options_.skip_idle;
  const Timeslot sample_every = options_.occupancy_interval;
  if (skip_idle)  // everyone runs the first timeslot and says whether it needs the next
    for (auto& n : core.nodes) core.wake_soon(begin, n->index);
  // Real time: the clock is read every timeslot and while waiting for the
  // next, so it is the TSC kept on CLOCK_MONOTONIC (pace_clock.h), not a
  // clock_gettime() per read.
  PaceClock clock(real_time ? pace_ns_per_tick_ : 1.0);
  const bool log_cross = !core.cross_sent.empty();
  const std::function<void()>* const pump = spin::wait_hook;  // across processes, one core here: see run()
  if (timed) core.timer.start();
  for (Timeslot t = begin; t < end_.load(std::memory_order_relaxed); ++t) {
    if (real_time) {
      const int64_t deadline = start_ns_ + static_cast<int64_t>((t - start_slot_) * options_.timeslot_ns);
      int64_t now = clock.now();
      const int64_t early = deadline - static_cast<int64_t>(options_.max_lead_ns) - now;
      if (early > 0) {
        if (options_.sleep_when_ahead && early > options_.sleep_threshold_ns)
          std::this_thread::sleep_for(std::chrono::nanoseconds(early - static_cast<int64_t>(options_.sleep_threshold_ns / 2)));
        while (clock.now() < deadline - static_cast<int64_t>(options_.max_lead_ns)) cpu_relax();
      } else {
        const int64_t lag = now - deadline;
        if (lag > options_.timeslot_ns) core.late.store(core.late.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (lag > core.max_lag_ns.load(std::memory_order_relaxed)) core.max_lag_ns.store(lag, std::memory_order_relaxed);
      }
    }
    // A core that runs into the window of a slower downstream core waits
    // until it has half a window of room (reading the slower core's
    // watermark once per half window, not every timeslot), but never for
    // more than the slowest core can do without us (no deadlock).
    for (auto& n : core.downstream)
      if (t + n.latency + 1 > window_ && n.seen < t + n.latency + 1 - window_)
        n.seen = wait_until_far(n.core->next, t + n.latency + 1 - window_ + std::min(window_ / 2, window_ - n.latency - 1),
                                core.may_yield);
    // Other cores see this core only through its cross-core links, all of
    // which belong to the boundary nodes: publish as soon as those have run t,
    // and run the interior while the neighbours pick that up (the hand-off
    // between cores costs ~100-150 ns here; overlapped, not waited for).
    if (log_cross) core.cross_sent[t & (core.cross_sent.size() - 1)].clear();  // shipped W timeslots ago (partition.h)
    const size_t nb = core.boundary_nodes;
    if (skip_idle) {
      while (!core.later.empty() && core.later.top().at <= t) {  // wakes asked for beyond the wheel
        const Core::LaterWake w = core.later.top();
        core.later.pop();
        core.wake_soon(t, w.node);
      }
      step_due(core, t, 0, nb);
    } else {
      for (size_t i = 0; i < nb; ++i) core.nodes[i]->step(t);
    }
    core.next.store(t + 1, std::memory_order_release);
    // Hand the watermark over only while a neighbour may need it soon.
    if (has_neighbours && core.promised_min <= t + 2 * kPromiseRecheck) hand_off(&core.next);
    if (skip_idle)
      step_due(core, t, nb, core.nodes.size());
    else
      for (size_t i = nb; i < core.nodes.size(); ++i) core.nodes[i]->step(t);
    if (sample_every && t % sample_every == 0)  // every router, run or not (an idle one's queues are as they were)
      for (RouterNode* r : core.routers) r->sample(t);
    core.finished.store(t + 1, std::memory_order_release);
    if (pump && t % kPumpEvery == 0) (*pump)();  // ship this core's progress even when it never waits
    if (core.promising && t >= core.next_promise_check) core.refresh_promises(t);
    if (timed) core.timer.tick();
    if (check_done && t == core.next_done_check && done_check(core, t)) break;
  }
  if (timed) core.timer.stop();
}

// Runs the nodes [lo, hi) due at `t` (woken, or asking for every timeslot),
// in node order, and wakes at t + 1 those that ask for it.
void Engine::step_due(Core& core, Timeslot t, size_t lo, size_t hi) {
  if (lo >= hi) return;
  uint64_t* due = &core.wake_bits[(t & core.wake_mask) * core.wake_words];
  for (size_t w = lo / 64; w * 64 < hi; ++w) {
    uint64_t bits = due[w];
    if (w == lo / 64) bits &= ~uint64_t{0} << (lo % 64);
    if ((w + 1) * 64 > hi) bits &= (uint64_t{1} << (hi % 64)) - 1;
    due[w] &= ~bits;
    for (; bits; bits &= bits - 1) {
      const uint32_t i = static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
      if (core.nodes[i]->step(t)) core.wake_soon(t + 1, i);
    }
  }
}

// Stop when done. At checkpoint j (the end of timeslot T_j = (j + 1) I - 1,
// I = done_check_interval) every core posts what its nodes still hold or owe
// (busy nodes, messages in transit), then reads every core's post of
// checkpoint j - 1: if nothing anywhere was busy and nothing was in transit
// at T_{j-1}, nothing can happen any more, and every core stops after T_j --
// the same timeslot on every core, decided from the same posts, whatever the
// number of cores or their timing. Waiting for checkpoint j - 1 (not j) means
// a core waits only for cores a whole interval behind it, which the window
// between neighbours makes rare. A post's slot (j mod 4) is rewritten at
// checkpoint j + 4 only: its writer then has read everyone's post of j + 2,
// and each core posts j + 2 after it has read the posts of j. Returns true if
// the run stops after t.
bool Engine::done_check(Core& core, Timeslot t) {
  const Timeslot interval = options_.done_check_interval;
  core.next_done_check = t + interval;
  const uint64_t j = (t + 1) / interval - 1;
  Core::DonePost& mine = core.done_post[j % 4];
  mine.busy = 0;
  mine.in_transit = 0;
  for (auto& n : core.nodes) mine.busy += n->busy_after(t, &mine.in_transit);
  mine.tag.store(j, std::memory_order_release);
  if (j == first_done_check_) return false;  // no earlier checkpoint in this run
  uint64_t busy = 0;
  int64_t in_transit = 0;
  for (auto& c : cores_) {
    if (c->nodes.empty()) continue;  // not running
    const Core::DonePost& p = c->done_post[(j - 1) % 4];
    unsigned spins = 0;
    while (p.tag.load(std::memory_order_acquire) != j - 1) spin::back_off(spins, core.may_yield);
    busy += p.busy;
    in_transit += p.in_transit;
  }
  if (busy || in_transit) return false;
  const Timeslot stop = t + 1;
  done_at_.store(stop, std::memory_order_relaxed);
  Timeslot cur = end_.load();
  while (stop < cur && !end_.compare_exchange_weak(cur, stop)) {
  }
  return true;
}

void Engine::request_stop() {
  // Across processes the ranks would have to agree on the timeslot; no
  // caller asks there (virtual-time runs end at their end, or when done).
  if (options_.partition) throw std::logic_error("engine: request_stop across processes");
  // Cores are at most one window apart: stopping one window past the fastest
  // core is a timeslot every core can still reach.
  Timeslot fastest = 0;
  for (auto& c : cores_) fastest = std::max(fastest, c->next.load(std::memory_order_acquire));
  const Timeslot stop = fastest + window_ + 1;
  Timeslot cur = end_.load();
  while (stop < cur && !end_.compare_exchange_weak(cur, stop)) {
  }
}

std::vector<CoreHealth> Engine::health() const {
  std::vector<CoreHealth> out;
  for (const auto& c : cores_) {
    CoreHealth h;
    h.timeslots = c->next.load(std::memory_order_acquire);
    h.late_timeslots = c->late.load(std::memory_order_relaxed);
    h.max_lag_ns = static_cast<double>(c->max_lag_ns.load(std::memory_order_relaxed));
    out.push_back(h);
  }
  return out;
}

void Engine::reset_max_lag() {
  for (auto& c : cores_) c->max_lag_ns.store(0, std::memory_order_relaxed);
}

void Engine::run(Timeslot end, const std::function<void(const EngineProgress&)>& progress, double period_s,
                 CoreLauncher* launcher) {
  if (end <= now_) return;
  const Timeslot begin = now_;
  end_.store(end);
  done_at_.store(0);
  stopped_when_done_ = false;
  Partition* const part = options_.partition;
  if (options_.stop_when_done) {
    if (options_.done_check_interval < 1) throw ConfigError("engine: done_check_interval must be >= 1");
    const Timeslot interval = options_.done_check_interval;
    const Timeslot first = (begin + interval) / interval * interval - 1;  // the first T_j >= begin
    first_done_check_ = (first + 1) / interval - 1;
    for (auto& c : cores_) {
      c->next_done_check = first;
      for (auto& p : c->done_post) p.tag.store(~uint64_t{0}, std::memory_order_relaxed);
    }
  }
  if (options_.occupancy_interval && options_.occupancy_samples && options_.clock == Clock::kVirtual) {
    // Room for every sample of this run up front (no regrowth copies), within reason.
    const uint64_t rows = (end - 1) / options_.occupancy_interval - begin / options_.occupancy_interval + 1;
    for (RouterNode* n : router_nodes_) {
      if (!runs_router(n->id)) continue;  // another process samples it
      OccupancyTrace& o = n->occupancy;
      const uint64_t want = std::min<uint64_t>(o.times.size() + rows, (uint64_t{1} << 26) / std::max<uint16_t>(o.ports, 1));
      o.times.reserve(want);
      o.packets.reserve(want * o.ports);
    }
  }
  start_slot_ = begin;
  if (options_.clock == Clock::kRealTime) pace_ns_per_tick_ = PaceClock::calibrate(2000000);  // 2 ms, once a run
  start_ns_ = wall_ns() + 1000000;  // real time: 1 ms for the cores to start
  ThreadLauncher threads;
  if (!launcher) launcher = part ? &part->launcher() : &threads;
  if (part && !partition_view_) attach_partition();
  std::vector<std::function<void()>> jobs;
  for (auto& c : cores_) {
    if (c->nodes.empty()) {
      c->next.store(~Timeslot{0} >> 1, std::memory_order_release);  // never waited on: no links
      continue;
    }
    if (part && !part->runs_core(c->id)) continue;  // another process's: a replica
    Core* core = c.get();
    jobs.push_back([this, core, begin] { run_core(*core, begin); });
  }
  const bool cpu_each = launcher->cpu_per_job(jobs.size());
  for (auto& c : cores_) c->may_yield = !cpu_each || (part && part->cores_share_cpus());
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto slowest = [&] {
    Timeslot m = end_.load();
    for (auto& c : cores_) m = std::min(m, c->next.load(std::memory_order_acquire));
    return m;
  };
  const bool real_time = options_.clock == Clock::kRealTime;
  std::function<void()> monitor;
  double last_progress = 0;
  // Across processes: one round of moving state, and progress now and then.
  const std::function<bool()> pump = [&] {
    const bool moved = part->pump();
    if (progress && elapsed() - last_progress >= period_s) {
      last_progress = elapsed();
      progress(EngineProgress{slowest() - begin, end_.load() - begin, last_progress, {}});
    }
    return moved;
  };
  if (part) {  // the pump on this thread while the local cores run on theirs
    monitor = [&] {
      auto local_done = [&] {
        for (auto& c : cores_)
          if (part->runs_core(c->id) && !c->nodes.empty() &&
              c->finished.load(std::memory_order_acquire) < end_.load())
            return false;
        return true;
      };
      unsigned idle = 0;
      while (!local_done()) {
        if (pump()) {
          idle = 0;
        } else if (++idle > 16) {  // yield, not sleep: a core here may be waiting for this very thread
          if (part->cores_share_cpus())
            std::this_thread::yield();
          else
            cpu_relax();
        }
      }
    };
  } else if (progress) {
    monitor = [&] {
      double last = 0;
      for (;;) {
        const Timeslot done = slowest();
        if (done >= end_.load()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (elapsed() - last >= period_s) {
          last = elapsed();
          progress(EngineProgress{slowest() - begin, end_.load() - begin, last,
                                  real_time ? health() : std::vector<CoreHealth>{}});
        }
      }
    };
  }
  if (part && jobs.size() == 1) {
    // One core in this process: it runs on this thread, the one that may
    // call MPI, and moves state itself while it waits (spin::wait_hook) and
    // every few timeslots (run_core) -- no thread for the pump to share a
    // CPU with, and no hand-off to it.
    const std::function<void()> hook = [&] { pump(); };
    spin::wait_hook = &hook;
    jobs[0]();
    spin::wait_hook = nullptr;
  } else {
    launcher->run(std::move(jobs), monitor);
  }
  if (part) part->finish();
  wall_seconds_ += elapsed();
  now_ = end_.load();
  stopped_when_done_ = done_at_.load() != 0 && now_ == done_at_.load();
  for (auto& c : cores_)  // idle cores were parked far ahead; bring them back in line
    if (c->nodes.empty()) c->next.store(now_, std::memory_order_release);
  if (progress)
    progress(EngineProgress{now_ - begin, now_ - begin, elapsed(), real_time ? health() : std::vector<CoreHealth>{}});
}

uint64_t Engine::router_packet_hops() const {
  uint64_t sum = 0;
  for (uint32_t r = 0; r < num_routers(); ++r)
    for (PortId p = 0; p < num_ports(r); ++p)
      for (QueueId q = 0; q < queues_per_port(r); ++q) sum += queue_counters(r, p, q).dequeued;
  return sum;
}

uint64_t Engine::link_collisions() const {
  uint64_t sum = 0;
  for (const RouterNode* n : router_nodes_) sum += n->link_losses.total();
  return sum;
}

const RouterLosses& Engine::link_losses(uint32_t router) const { return router_nodes_.at(router)->link_losses; }

std::vector<SchemeStatSample> Engine::scheme_stats() const {
  std::vector<SchemeStatSample> all;
  for (const auto& c : cores_) all.insert(all.end(), c->scheme_stats.begin(), c->scheme_stats.end());
  std::sort(all.begin(), all.end(), [](const SchemeStatSample& a, const SchemeStatSample& b) {
    return std::tie(a.time, a.router, a.port, a.stat, a.queue) < std::tie(b.time, b.router, b.port, b.stat, b.queue);
  });
  return all;
}

std::vector<TimeslotTiming> Engine::timeslot_timing() const {
  std::vector<TimeslotTiming> out;
  for (const auto& c : cores_) out.push_back(c->timer.timing());
  return out;
}

std::vector<CoreSyncStats> Engine::sync_stats() const {
  std::vector<CoreSyncStats> out;
  for (const auto& c : cores_) out.push_back(c->sync);
  return out;
}

// A core steps its timeslots in order, so its log is sorted by time already:
// sort each timeslot's run by the full key, then merge the cores' logs (a
// full sort of a 7 M-event drop log took ~5% of a k = 16 fat-tree run).
std::vector<PacketEvent> Engine::events() const {
  std::vector<PacketEvent> all;
  std::vector<size_t> bounds{0};
  const auto by_key = [](const PacketEvent& a, const PacketEvent& b) { return a.key() < b.key(); };
  const auto by_time = [](const PacketEvent& a, const PacketEvent& b) { return a.time < b.time; };
  for (const auto& c : cores_) {
    all.insert(all.end(), c->log.events().begin(), c->log.events().end());
    const auto first = all.begin() + static_cast<ptrdiff_t>(bounds.back()), last = all.end();
    if (!std::is_sorted(first, last, by_time)) {
      std::sort(first, last, by_key);  // not expected; still correct
    } else {
      for (auto run = first; run != last;) {
        const auto end = std::upper_bound(run, last, *run, by_time);
        std::sort(run, end, by_key);
        run = end;
      }
    }
    bounds.push_back(all.size());
  }
  for (size_t width = 1; width + 1 < bounds.size(); width *= 2)  // merge neighbouring cores' logs, pairwise
    for (size_t i = 0; i + width + 1 < bounds.size(); i += 2 * width) {
      const size_t mid = bounds[i + width], end = bounds[std::min(i + 2 * width, bounds.size() - 1)];
      std::inplace_merge(all.begin() + static_cast<ptrdiff_t>(bounds[i]), all.begin() + static_cast<ptrdiff_t>(mid),
                         all.begin() + static_cast<ptrdiff_t>(end), by_key);
    }
  return all;
}

const std::vector<PacketEvent>& Engine::core_events(uint32_t core) const { return cores_.at(core)->log.events(); }

std::vector<OccupancySample> Engine::occupancy() const {
  std::vector<OccupancySample> all;
  for (const RouterNode* n : router_nodes_) {
    const OccupancyTrace& o = n->occupancy;
    for (size_t i = 0; i < o.times.size(); ++i)
      for (PortId p = 0; p < o.ports; ++p)
        all.push_back(OccupancySample{o.times[i], n->id, p, o.packets[i * o.ports + p], o.bytes_at(i * o.ports + p)});
  }
  std::sort(all.begin(), all.end(), [](const OccupancySample& a, const OccupancySample& b) {
    return std::tie(a.time, a.router, a.port) < std::tie(b.time, b.router, b.port);
  });
  return all;
}

const OccupancyTrace& Engine::occupancy_trace(uint32_t i) const { return router_nodes_.at(i)->occupancy; }

}  // namespace flexplane

