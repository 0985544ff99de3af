// Test harness for the protocol core: one endpoint connection and one
// emulator connection joined by two simulated lossy channels (seeded loss,
// duplication, reordering), a toy engine that decides each request after a
// random service time, and a virtual clock. Used by the *_test.cc files here
// and by nothing else.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "fp_emu_conn.h"
#include "fp_endpoint_conn.h"
#include "fp_wire.h"
}

namespace fptest {

// splitmix64: deterministic on every platform (std distributions are not).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  bool chance_ppm(uint32_t ppm) { return below(1000000) < ppm; }
};

inline fp_ep_config ep_config(uint8_t req_custom = 4, uint8_t verdict_custom = 2,
                              uint8_t features = 0, const char* scheme = "dctcp") {
  fp_ep_config c;
  fp_ep_config_default(&c);
  c.instance = 0xE1E1E1E1u;
  c.req_custom_len = req_custom;
  c.verdict_custom_len = verdict_custom;
  c.features = features;
  std::strncpy(c.scheme, scheme, FP_SCHEME_NAME_MAX);
  return c;
}

inline fp_emu_config emu_config(uint8_t req_custom = 4, uint8_t verdict_custom = 2,
                                uint8_t features = 0, const char* scheme = "dctcp") {
  fp_emu_config c;
  fp_emu_config_default(&c);
  c.endpoint_id = 7;
  c.apkt_bytes = 1500;
  c.req_custom_len = req_custom;
  c.verdict_custom_len = verdict_custom;
  c.features = features;
  c.epoch_seed = 0x1000;
  std::strncpy(c.scheme, scheme, FP_SCHEME_NAME_MAX);
  return c;
}

// Request number i of a workload, fully determined by i.
inline fp_request make_request(uint32_t i) {
  fp_request r;
  std::memset(&r, 0, sizeof(r));
  r.flow = 1000 + i % 37;
  r.id = i / 37;
  r.dst = (uint16_t)(i % 5);
  r.size_bytes = (uint16_t)(i % 7 == 0 ? 200 : 1500);
  r.flags = (r.flow % 2 == 0) ? FP_REQ_ECT : 0;
  r.dscp = (uint8_t)(i % 64);
  r.priority = i * 3 + 1;
  for (unsigned k = 0; k < FP_MAX_CUSTOM; k++) r.custom[k] = (uint8_t)(i * 7 + k * 13);
  return r;
}

// The toy engine's decision for a request: a pure function of it, so the
// endpoint can check that every verdict matches the request it answers.
inline uint8_t action_for(const fp_request& r) {
  uint32_t h = r.flow * 2654435761u ^ r.id * 40503u;
  switch (h % 3) {
    case 0: return FP_ACT_RELEASE;
    case 1: return (r.flags & FP_REQ_ECT) ? FP_ACT_MARK : FP_ACT_DROP;
    default: return FP_ACT_DROP;
  }
}
inline uint8_t custom_for(const fp_request& r, unsigned k) {
  return (uint8_t)(r.custom[k] ^ 0x5a ^ (uint8_t)(r.id + k));
}

struct SimConfig {
  uint64_t seed = 1;
  uint32_t loss_ppm = 0;        // per datagram, both directions
  uint32_t dup_ppm = 0;         // probability of an extra copy
  uint64_t delay_ns = 5000;     // one-way base delay
  uint64_t jitter_ns = 0;       // + uniform [0, jitter]: reorders datagrams
  uint32_t nreq = 1000;
  uint64_t submit_gap_ns = 500; // one request every gap (if a slot is free)
  uint32_t ep_slots = 512;
  uint16_t ep_window = 256;
  uint32_t emu_ring = 256;
  uint8_t req_custom = 4, verdict_custom = 2, features = 0;
  uint32_t initial_rseq = 0, initial_vseq = 0;
  std::vector<uint64_t> restarts; // emulator restart times (state and engine lost)
  uint64_t service_min_ns = 1000, service_max_ns = 30000;
  uint32_t long_service_ppm = 0;  // some requests wait long in the engine
  uint64_t long_service_ns = 5000000;
  uint64_t time_limit_ns = 120ull * 1000000000ull;
};

class Sim {
 public:
  explicit Sim(const SimConfig& cfg)
      : cfg_(cfg), rng_(cfg.seed), ep_slots_(cfg.ep_slots), ring_(cfg.emu_ring) {
    fp_ep_config ec = ep_config(cfg.req_custom, cfg.verdict_custom, cfg.features);
    ec.window = cfg.ep_window;
    ec.initial_rseq = cfg.initial_rseq;
    if (fp_ep_conn_init(&ep_, &ec, ep_slots_.data(), cfg.ep_slots, 0) != 0) error = "ep init";
    start_emulator(0);
    verdicts_.assign(cfg.nreq, 0);
  }

  // Runs until every request has its verdict and both sides are quiet (no
  // timer armed, nothing in flight), or until a check fails / time runs out.
  bool run() {
    uint64_t next_submit = 0;
    size_t restart_idx = 0;
    uint64_t steps = 0;
    while (error.empty()) {
      if (++steps > 50000000) return fail("too many steps");
      if (now_ > cfg_.time_limit_ns) return fail("time limit: " + progress());
      if (restart_idx < cfg_.restarts.size() && cfg_.restarts[restart_idx] <= now_) {
        start_emulator(now_);
        restart_idx++;
      }
      deliver(to_emu_, true);
      deliver(to_ep_, false);
      while (!engine_.empty() && engine_.begin()->first <= now_) {
        auto ev = engine_.begin()->second;
        engine_.erase(engine_.begin());
        fp_verdict v;
        std::memset(&v, 0, sizeof(v));
        v.flow = ev.req.flow;
        v.id = ev.req.id;
        v.action = action_for(ev.req);
        for (unsigned k = 0; k < cfg_.verdict_custom; k++) v.custom[k] = custom_for(ev.req, k);
        int rc = fp_emu_push_verdict(&emu_, &ev.tok, &v, now_);
        if (rc != 0 && rc != -FP_ESTALE) return fail("push_verdict " + std::to_string(rc));
      }
      while (submitted_ < cfg_.nreq && next_submit <= now_) {
        fp_request r = make_request(submitted_);
        int rc = fp_ep_submit(&ep_, &r, submitted_, now_);
        if (rc == -FP_ENOSPC) {
          submit_blocked_ = true;  // until the next verdict frees a slot
          break;
        }
        if (rc != 0) return fail("submit " + std::to_string(rc));
        submitted_++;
        next_submit = now_ + cfg_.submit_gap_ns;
      }
      uint8_t buf[FP_DEFAULT_MAX_DGRAM];
      int n;
      while ((n = fp_ep_poll(&ep_, now_, buf, sizeof(buf))) > 0) send(to_emu_, buf, n);
      if (n < 0) return fail("ep poll " + std::to_string(n));
      while ((n = fp_emu_poll(&emu_, now_, buf, sizeof(buf))) > 0) send(to_ep_, buf, n);
      if (n < 0) return fail("emu poll " + std::to_string(n));
      if (!error.empty()) return false;

      uint64_t dep = fp_ep_next_deadline(&ep_), dem = fp_emu_next_deadline(&emu_);
      if (dep <= now_ || dem <= now_) return fail("deadline not in the future after poll");
      bool all_done = delivered_ == cfg_.nreq;
      if (all_done && restart_idx == cfg_.restarts.size() && dep == FP_TIME_NEVER &&
          dem == FP_TIME_NEVER && to_emu_.empty() && to_ep_.empty() && engine_.empty())
        return true;

      uint64_t t = std::min(dep, dem);
      if (!to_emu_.empty()) t = std::min(t, to_emu_.begin()->first);
      if (!to_ep_.empty()) t = std::min(t, to_ep_.begin()->first);
      if (!engine_.empty()) t = std::min(t, engine_.begin()->first);
      if (submitted_ < cfg_.nreq && !submit_blocked_)
        t = std::min(t, std::max(next_submit, now_ + 1));
      if (restart_idx < cfg_.restarts.size()) t = std::min(t, cfg_.restarts[restart_idx]);
      if (t == FP_TIME_NEVER) return fail("nothing scheduled but not done: " + progress());
      if (t <= now_) t = now_ + 1;
      now_ = t;
    }
    return false;
  }

  std::string progress() const {
    return "submitted=" + std::to_string(submitted_) + " delivered=" +
           std::to_string(delivered_) + " pending=" + std::to_string(fp_ep_pending(&ep_)) +
           " ep_state=" + std::to_string(ep_.state) + " emu_state=" + std::to_string(emu_.state);
  }

  bool fail(const std::string& why) {
    if (error.empty()) error = why;
    return false;
  }

  std::string error;
  uint64_t now_ = 0;
  const SimConfig cfg_;
  Rng rng_;
  std::vector<fp_ep_slot> ep_slots_;
  std::vector<fp_verdict> ring_;
  fp_ep_conn ep_;
  fp_emu_conn emu_;
  uint32_t emu_starts_ = 0;
  uint32_t submitted_ = 0, delivered_ = 0;
  bool submit_blocked_ = false;
  std::vector<uint32_t> verdicts_;                       // per request: verdicts delivered
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> engine_seen_;  // (flow,id) -> times
  uint64_t engine_requests_ = 0;
  uint64_t dgrams_sent_ = 0, dgrams_lost_ = 0, dgrams_duped_ = 0;
  fp_emu_stats emu_stats_total_{};                       // summed over restarts

 private:
  struct Ev {
    fp_emu_token tok;
    fp_request req;
  };
  using Channel = std::multimap<uint64_t, std::vector<uint8_t>>;

  void start_emulator(uint64_t now) {
    if (emu_starts_ > 0) accumulate_emu_stats();
    fp_emu_config mc = emu_config(cfg_.req_custom, cfg_.verdict_custom, cfg_.features);
    mc.initial_vseq = cfg_.initial_vseq;
    mc.epoch_seed = 0x1000u * (emu_starts_ + 1) + (uint32_t)(rng_.next() & 0xff);
    emu_starts_++;
    engine_.clear();  // the engine's state dies with the process
    if (fp_emu_conn_init(&emu_, &mc, ring_.data(), cfg_.emu_ring, now) != 0) error = "emu init";
  }

  void accumulate_emu_stats() {
    const uint64_t* src = reinterpret_cast<const uint64_t*>(&emu_.stats);
    uint64_t* dst = reinterpret_cast<uint64_t*>(&emu_stats_total_);
    for (size_t i = 0; i < sizeof(fp_emu_stats) / sizeof(uint64_t); i++) dst[i] += src[i];
  }

 public:
  fp_emu_stats emu_stats() {
    fp_emu_stats s = emu_stats_total_;
    const uint64_t* src = reinterpret_cast<const uint64_t*>(&emu_.stats);
    uint64_t* dst = reinterpret_cast<uint64_t*>(&s);
    for (size_t i = 0; i < sizeof(fp_emu_stats) / sizeof(uint64_t); i++) dst[i] += src[i];
    return s;
  }

 private:
  void send(Channel& ch, const uint8_t* p, int n) {
    dgrams_sent_++;
    if (rng_.chance_ppm(cfg_.loss_ppm)) {
      dgrams_lost_++;
      return;
    }
    int copies = rng_.chance_ppm(cfg_.dup_ppm) ? 2 : 1;
    if (copies == 2) dgrams_duped_++;
    for (int c = 0; c < copies; c++)
      ch.emplace(now_ + cfg_.delay_ns + rng_.below(cfg_.jitter_ns + 1),
                 std::vector<uint8_t>(p, p + n));
  }

  void deliver(Channel& ch, bool to_emu) {
    while (!ch.empty() && ch.begin()->first <= now_) {
      std::vector<uint8_t> d = std::move(ch.begin()->second);
      ch.erase(ch.begin());
      if (to_emu)
        fp_emu_rx(&emu_, d.data(), d.size(), now_, &Sim::on_request, this);
      else
        fp_ep_rx(&ep_, d.data(), d.size(), now_, &Sim::on_verdict, this);
    }
  }

  static int on_request(void* ctx, const fp_emu_token* tok, const fp_request* req) {
    Sim* s = static_cast<Sim*>(ctx);
    s->engine_seen_[{req->flow, req->id}]++;
    s->engine_requests_++;
    uint64_t svc = s->cfg_.service_min_ns +
                   s->rng_.below(s->cfg_.service_max_ns - s->cfg_.service_min_ns + 1);
    if (s->rng_.chance_ppm(s->cfg_.long_service_ppm)) svc = s->cfg_.long_service_ns;
    s->engine_.emplace(s->now_ + svc, Ev{*tok, *req});
    return 0;
  }

  static void on_verdict(void* ctx, const fp_verdict* v, const fp_request* req, uint64_t user) {
    Sim* s = static_cast<Sim*>(ctx);
    if (user >= s->cfg_.nreq) {
      s->fail("verdict for unknown user cookie");
      return;
    }
    fp_request want = make_request((uint32_t)user);
    for (unsigned k = s->cfg_.req_custom; k < FP_MAX_CUSTOM; k++) want.custom[k] = 0;
    if (req->flow != want.flow || req->id != want.id || v->flow != want.flow || v->id != want.id)
      s->fail("verdict / request mismatch for request " + std::to_string(user));
    if (v->action != action_for(want)) s->fail("wrong action for request " + std::to_string(user));
    for (unsigned k = 0; k < s->cfg_.verdict_custom; k++)
      if (v->custom[k] != custom_for(want, k)) s->fail("custom data corrupted");
    for (unsigned k = 0; k < s->cfg_.req_custom; k++)
      if (req->custom[k] != want.custom[k]) s->fail("request custom data corrupted");
    if (++s->verdicts_[user] > 1) s->fail("second verdict for request " + std::to_string(user));
    s->delivered_++;
    s->submit_blocked_ = false;
  }

  Channel to_emu_, to_ep_;
  std::multimap<uint64_t, Ev> engine_;
};

}  // namespace fptest
