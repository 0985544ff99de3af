// The synthetic-flow driver of `flexplane-endpoint`: plays one endpoint of a
// live emulation from a flow list (the config's workload or a trace).
//
// For every abstract packet of the flows its endpoint sends it requests a
// verdict over the wire protocol (a ProtocolSession) at the wall-clock time
// each flow starts, and records what comes back. Header-only so that the
// unit tests (live_tests) can drive it without linking the executable.
//
//   Driver d(opts, flows);          // flows: this endpoint's flows (src == id)
//   int fd = d.open_socket();       // or hand in any connected UDP socket
//   DriverResult r = d.run(fd);     // returns when every request has a verdict
//   d.write_flows_csv(...); d.write_verdicts_csv(...); d.write_counters_csv(...);
//
// Time: the protocol runs on CLOCK_MONOTONIC; flow start times are
// `start_at` (CLOCK_REALTIME ns, shared by every endpoint) + start x timeslot.
// The loop sleeps in ppoll() until the next datagram, the protocol's next
// deadline or the next flow start: no busy spinning unless opts.busy_poll.
#pragma once

#include <poll.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/flow.h"
#include "api/endpoint_contract.h"
#include "endpoint/clock.h"
#include "endpoint/protocol_session.h"
#include "endpoint/stage_trace.h"
#include "endpoint/udp_socket.h"

namespace flexplane::endpoint {

struct DriverOptions {
  uint32_t id = 0;                 // this endpoint's index (requests carry no src: the emulator knows it by address)
  sockaddr_in emulator{};          // where to send
  sockaddr_in bind{};              // local address (port 0 = any)
  uint64_t start_at_real_ns = 0;   // CLOCK_REALTIME of timeslot 0; 0 = when run() starts
  uint64_t limit_ns = 0;           // give up this long after max(start, now); 0 = last flow start + 60 s
  double timeslot_ns = 1200;       // flow.start is in timeslots
  EndpointStamping stamping;       // ECT, priority, bytes per abstract packet
  SessionOptions session;          // window, features, custom sizes, timers, test hooks
  bool busy_poll = false;          // spin instead of sleeping (lowest latency, burns a core)
  bool trace_requests = false;     // keep each request's submit time (write_requests_csv)
};

struct FlowRecord {
  FlowSpec spec;
  uint64_t start_mono = 0;       // when it was due
  uint64_t first_sent_mono = 0;  // first packet handed to the protocol window (0 = never)
  uint64_t finish_mono = 0;      // last verdict arrived (0 = not yet)
  uint32_t verdicts = 0, released = 0, marked = 0, dropped = 0;
};

struct VerdictRecord {
  uint64_t recv_mono;
  uint8_t action;  // FP_ACT_*
  uint32_t flow, seq;
  uint16_t dst;
};

// The driver's own counters; the protocol's are in SessionCounters.
struct DriverCounters {
  uint64_t verdicts_release = 0, verdicts_mark = 0, verdicts_drop = 0;
  uint64_t verdict_unexpected = 0;     // a second verdict for one packet (must stay 0)
};

enum class DriverStatus { kDone, kTimeout, kRejected, kSocketError };

struct DriverResult {
  DriverStatus status = DriverStatus::kDone;
  uint64_t requests = 0, outstanding = 0;
  std::string message;
};

inline const char* action_text(uint8_t a) {
  switch (a) {
    case FP_ACT_RELEASE: return "release";
    case FP_ACT_MARK: return "mark";
    case FP_ACT_DROP: return "drop";
  }
  return "invalid";
}

class Driver {
 public:
  Driver(DriverOptions opts, const FlowList& my_flows) : o_(std::move(opts)), session_(o_.session) {
    if (o_.trace_requests) trace_ = std::make_unique<StageTrace>();
    for (const auto& f : my_flows) {
      FlowRecord r;
      r.spec = f;
      flows_.push_back(r);
      total_ += f.size_pkts;
    }
    std::stable_sort(flows_.begin(), flows_.end(),
                     [](const FlowRecord& a, const FlowRecord& b) { return a.spec.start < b.spec.start; });
  }

  // A UDP socket bound to opts.bind and connected to the emulator (so only
  // its datagrams are received). Throws std::runtime_error.
  int open_socket() const { return open_udp_socket(o_.bind, o_.emulator); }

  DriverResult run(int fd) {
    const uint64_t now0 = mono_ns();
    const uint64_t real0 = real_ns();
    start_mono_ = now0;
    if (o_.start_at_real_ns) {
      const int64_t delta = int64_t(o_.start_at_real_ns - real0);  // may be negative: start in the past
      start_mono_ = uint64_t(int64_t(now0) + delta);
    }
    real_minus_mono_ = int64_t(real0 - now0);
    uint64_t last_start = start_mono_;
    for (auto& f : flows_) {
      f.start_mono = start_mono_ + uint64_t(std::llround(double(f.spec.start) * o_.timeslot_ns));
      last_start = std::max(last_start, f.start_mono);
    }
    const uint64_t base = std::max(now0, start_mono_);
    end_mono_ = o_.limit_ns ? base + o_.limit_ns : last_start + 60'000'000'000ull;
    session_.start(fd, now0);

    DriverResult res;
    res.requests = total_;
    uint64_t linger_until = 0;
    auto fail = [&](DriverStatus st, std::string msg) {
      res.status = st;
      res.message = std::move(msg);
      res.outstanding = total_ - verdicts_;
      return res;
    };
    for (;;) {
      uint64_t now = mono_ns();
      // Flows that are due join the local queue (FIFO, like the emulated NIC).
      while (next_flow_ < flows_.size() && flows_[next_flow_].start_mono <= now) {
        const uint32_t idx = static_cast<uint32_t>(next_flow_++);
        for (uint32_t s = 0; s < flows_[idx].spec.size_pkts; ++s) backlog_.push_back(uint64_t(idx) << 32 | s);
      }
      if (std::string err = submit_backlog(now); !err.empty()) return fail(DriverStatus::kSocketError, err);
      if (std::string err = session_.flush(now); !err.empty()) return fail(DriverStatus::kSocketError, err);

      const bool all_done = next_flow_ == flows_.size() && backlog_.empty() && verdicts_ == total_;
      if (all_done) {
        // Linger briefly so the last verdicts get acknowledged (else the
        // emulator keeps retransmitting them to a departed endpoint).
        if (!linger_until) linger_until = now + 50'000'000;
        if (session_.next_deadline() == FP_TIME_NEVER || now >= linger_until) break;
      }
      if (now >= end_mono_)
        return fail(DriverStatus::kTimeout, "gave up after the time limit with " + std::to_string(total_ - verdicts_) +
                                                " of " + std::to_string(total_) + " requests still without a verdict");
      uint64_t wake = std::min<uint64_t>(session_.next_deadline(), end_mono_);
      if (next_flow_ < flows_.size()) wake = std::min(wake, flows_[next_flow_].start_mono);
      if (linger_until) wake = std::min(wake, linger_until);
      if (!o_.busy_poll) {
        pollfd p{fd, POLLIN, 0};
        timespec ts{0, 0};
        if (wake > now) {
          const uint64_t d = wake - now;
          ts.tv_sec = time_t(d / 1'000'000'000ull);
          ts.tv_nsec = long(d % 1'000'000'000ull);
        }
        if (ppoll(&p, 1, &ts, nullptr) < 0 && errno != EINTR)
          return fail(DriverStatus::kSocketError, std::string("poll: ") + std::strerror(errno));
      }
      const std::string err = session_.receive(
          mono_ns(), [this](const fp_verdict& v, const fp_request& req, uint64_t cookie) { on_verdict(v, req, cookie); });
      if (!err.empty()) return fail(DriverStatus::kSocketError, err);
      std::vector<GivenBack> given_back;
      std::string msg;
      switch (session_.check_reject(mono_ns(), &given_back, &msg)) {
        case RejectOutcome::kFatal: return fail(DriverStatus::kRejected, msg);
        case RejectOutcome::kAdopted:
          for (auto it = given_back.rbegin(); it != given_back.rend(); ++it) backlog_.push_front(it->cookie);
          break;
        case RejectOutcome::kNone: break;
      }
    }
    res.status = DriverStatus::kDone;
    res.outstanding = 0;
    return res;
  }

  // --- results ---
  const std::vector<FlowRecord>& flows() const { return flows_; }
  const std::vector<VerdictRecord>& verdict_log() const { return log_; }
  const DriverCounters& counters() const { return ctr_; }
  SessionCounters session_counters() const { return session_.counters(); }
  uint64_t total_requests() const { return total_; }
  uint64_t verdicts() const { return verdicts_; }
  uint64_t start_mono() const { return start_mono_; }
  int64_t real_minus_mono() const { return real_minus_mono_; }
  const fp_ep_conn& conn() const { return session_.conn(); }

  // flows.csv in the emulator's columns (docs/output-format.md), measured on
  // the wall clock: finish_timeslot = (last verdict - start_at) / timeslot;
  // fct_us = last verdict - flow start; finished = every packet has a verdict;
  // delivered = released + marked; lost = dropped; first_sent = when the first
  // packet entered the protocol window. ideal_fct_us as the emulator
  // computes it (path_latency[src][dst] timeslots + size).
  template <class PathLatency>
  void write_flows_csv(const std::string& path, uint32_t apkt_bytes, PathLatency&& path_latency) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    const double ts_us = o_.timeslot_ns / 1000.0;
    std::fprintf(f,
                 "flow_id,src,dst,size_pkts,size_bytes,start_timeslot,finish_timeslot,start_us,fct_us,ideal_fct_us,"
                 "slowdown,finished,delivered_pkts,marked_pkts,lost_pkts,first_sent_timeslot,network_fct_us,"
                 "network_slowdown\n");
    std::vector<const FlowRecord*> sorted;
    for (const auto& r : flows_) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->spec.id < b->spec.id; });
    for (const FlowRecord* r : sorted) {
      const FlowSpec& s = r->spec;
      const double ideal = (s.size_pkts + double(path_latency(s.src, s.dst))) * ts_us;
      std::fprintf(f, "%u,%u,%u,%u,%llu,%llu,", s.id, s.src, s.dst, s.size_pkts,
                   (unsigned long long)s.size_pkts * apkt_bytes, (unsigned long long)s.start);
      const bool done = r->finish_mono != 0;
      const double start_us = s.start * ts_us;
      if (done) {
        const double fct = double(r->finish_mono - r->start_mono) / 1000.0;
        std::fprintf(f, "%llu,%.4f,%.4f,%.4f,%.6f,1,", (unsigned long long)timeslot_of(r->finish_mono), start_us, fct,
                     ideal, fct / ideal);
      } else {
        std::fprintf(f, ",%.4f,,%.4f,,0,", start_us, ideal);
      }
      std::fprintf(f, "%u,%u,%u,", r->released + r->marked, r->marked, r->dropped);
      if (!r->first_sent_mono)
        std::fprintf(f, ",,\n");
      else if (!done)
        std::fprintf(f, "%llu,,\n", (unsigned long long)timeslot_of(r->first_sent_mono));
      else {
        const double net = double(r->finish_mono - r->first_sent_mono) / 1000.0;
        std::fprintf(f, "%llu,%.4f,%.6f\n", (unsigned long long)timeslot_of(r->first_sent_mono), net, net / ideal);
      }
    }
    if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
  }

  // verdicts.csv: recv_ns (CLOCK_REALTIME), action, flow, seq, dst; arrival order.
  void write_verdicts_csv(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
    std::fprintf(f, "recv_ns,action,flow,seq,dst\n");
    for (const auto& v : log_)
      std::fprintf(f, "%llu,%s,%u,%u,%u\n", (unsigned long long)(int64_t(v.recv_mono) + real_minus_mono_),
                   action_text(v.action), v.flow, v.seq, v.dst);
    if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
  }

  // requests.csv (--trace-stages): each request's send and verdict times (StageTrace).
  void write_requests_csv(const std::string& path) const {
    if (!trace_) throw std::logic_error("write_requests_csv: the driver was built without trace_requests");
    trace_->write(path);
  }

  // endpoint_counters.csv: counter,value.
  void write_counters_csv(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::fprintf(f, "counter,value\n");
    auto row = [f](const char* k, uint64_t v) { std::fprintf(f, "%s,%llu\n", k, (unsigned long long)v); };
    row("requests", total_);
    row("verdicts", verdicts_);
    row("verdicts_release", ctr_.verdicts_release);
    row("verdicts_mark", ctr_.verdicts_mark);
    row("verdicts_drop", ctr_.verdicts_drop);
    row("outstanding", total_ - verdicts_);
    row("verdict_unexpected", ctr_.verdict_unexpected);
    session_.write_counter_rows(f);
    if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
  }

 private:
  uint64_t timeslot_of(uint64_t mono) const {
    if (mono <= start_mono_) return 0;
    return uint64_t(double(mono - start_mono_) / o_.timeslot_ns);
  }

  fp_request make_request(uint64_t cookie) const {
    const FlowRecord& r = flows_[cookie >> 32];
    const uint32_t seq = uint32_t(cookie);
    fp_request q;
    std::memset(&q, 0, sizeof q);
    q.flow = r.spec.id;
    q.id = seq;
    q.dst = r.spec.dst;
    q.size_bytes = o_.stamping.packet_bytes;
    q.flags = o_.stamping.ect ? FP_REQ_ECT : 0;
    q.dscp = 0;
    q.priority = o_.stamping.priority == PriorityStamp::kFlowSize        ? r.spec.size_pkts
                 : o_.stamping.priority == PriorityStamp::kRemainingSize ? r.spec.size_pkts - seq
                                                                         : 0;
    return q;
  }

  // Moves queued packets into the protocol window while it has room.
  std::string submit_backlog(uint64_t now) {
    while (!backlog_.empty()) {
      const uint64_t cookie = backlog_.front();
      const fp_request q = make_request(cookie);
      const int rc = session_.submit(q, cookie, now);
      if (rc == -FP_ENOSPC || rc == -FP_EREJECTED) break;  // window full / rejected: stays queued
      if (rc) return std::string("cannot submit a request: ") + fp_strerror(rc);
      FlowRecord& r = flows_[cookie >> 32];
      if (!r.first_sent_mono) r.first_sent_mono = now;
      if (trace_) trace_->sent(cookie, q, now);
      backlog_.pop_front();
    }
    return "";
  }

  void on_verdict(const fp_verdict& v, const fp_request& req, uint64_t cookie) {
    const uint64_t now = mono_ns();
    const uint32_t idx = uint32_t(cookie >> 32);
    if (idx >= flows_.size()) {
      ++ctr_.verdict_unexpected;
      return;
    }
    FlowRecord& r = flows_[idx];
    log_.push_back({now, v.action, req.flow, req.id, req.dst});
    if (trace_) trace_->verdict(cookie, v.action, now);
    switch (v.action) {
      case FP_ACT_RELEASE: ++r.released; ++ctr_.verdicts_release; break;
      case FP_ACT_MARK: ++r.marked; ++ctr_.verdicts_mark; break;
      default: ++r.dropped; ++ctr_.verdicts_drop; break;
    }
    if (++r.verdicts > r.spec.size_pkts) ++ctr_.verdict_unexpected;
    if (r.verdicts == r.spec.size_pkts) r.finish_mono = now;
    ++verdicts_;
  }

  DriverOptions o_;
  ProtocolSession session_;
  std::vector<FlowRecord> flows_;
  uint64_t total_ = 0, verdicts_ = 0;
  std::deque<uint64_t> backlog_;  // cookies (flow index << 32 | seq) not yet in the window
  std::unique_ptr<StageTrace> trace_;  // o_.trace_requests only
  size_t next_flow_ = 0;
  std::vector<VerdictRecord> log_;
  DriverCounters ctr_;
  uint64_t start_mono_ = 0, end_mono_ = 0;
  int64_t real_minus_mono_ = 0;
};

}  // namespace flexplane::endpoint
