// The userspace endpoint driver: plays one endpoint of a live emulation.
//
// It requests, over the flexplane wire protocol (docs/protocol.md, state
// machine in proto/fp_endpoint_conn.h), one verdict per abstract packet of the
// flows its endpoint sends, at the wall-clock time each flow starts, and
// records what comes back. Header-only so that the unit tests (live_tests)
// can drive it without linking the flexplane-endpoint executable.
//
//   Driver d(opts, flows);          // flows: this endpoint's flows (src == id)
//   int fd = d.open_socket();       // or hand in any connected UDP socket
//   DriverResult r = d.run(fd);     // returns when every request has a verdict
//   d.write_outputs(dir, ...);      // flows.csv, verdicts.csv, endpoint_counters.csv
//
// Time: the protocol runs on CLOCK_MONOTONIC; flow start times are
// `start_at` (CLOCK_REALTIME ns, shared by every endpoint) + start x timeslot.
// The loop sleeps in ppoll() until the next datagram, the protocol's next
// deadline or the next flow start: no busy spinning unless opts.busy_poll.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/endpoint_contract.h"
#include "api/flow.h"
#include "proto/fp_endpoint_conn.h"

namespace flexplane::endpoint {

inline uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}
inline uint64_t real_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

// Parses "a.b.c.d" or "a.b.c.d:port" (port defaults to default_port).
inline bool parse_addr(const std::string& text, uint16_t default_port, sockaddr_in* out) {
  std::string host = text;
  uint32_t port = default_port;
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) {
    host = text.substr(0, colon);
    const std::string p = text.substr(colon + 1);
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
    port = static_cast<uint32_t>(std::stoul(p));
    if (port == 0 || port > 65535) return false;
  }
  std::memset(out, 0, sizeof(*out));
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(port));
  return inet_pton(AF_INET, host.c_str(), &out->sin_addr) == 1;
}

struct DriverOptions {
  uint32_t id = 0;                 // this endpoint's index (requests carry no src: the emulator knows it by address)
  sockaddr_in emulator{};          // where to send
  sockaddr_in bind{};              // local address (port 0 = any)
  uint64_t start_at_real_ns = 0;   // CLOCK_REALTIME of timeslot 0; 0 = when run() starts
  uint64_t limit_ns = 0;           // give up this long after max(start, now); 0 = last flow start + 60 s
  double timeslot_ns = 1200;       // flow.start is in timeslots
  EndpointStamping stamping;       // ECT, priority, bytes per abstract packet
  uint8_t features = 0;            // FP_FEAT_* offered in HELLO (adapted on REJECT FEATURES)
  uint8_t req_custom_len = 0, verdict_custom_len = 0;
  uint16_t window = 1024;          // requests in flight (power of two)
  uint64_t rto_ns = 2'000'000;     // protocol timers (docs/protocol.md §7), raised for a virtualised lab
  uint64_t rto_max_ns = 100'000'000;
  uint64_t ack_delay_ns = 20'000;
  uint64_t probe_ns = 10'000'000;
  uint64_t hello_rto_ns = 50'000'000;
  uint64_t hello_rto_max_ns = 500'000'000;
  // Test hooks: drop this fraction of outgoing / incoming protocol datagrams.
  double drop_tx = 0, drop_rx = 0;
  uint64_t seed = 1;
  bool busy_poll = false;          // spin instead of sleeping (lowest latency, burns a core)
  bool quiet = false;
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

// Counters summed over every protocol connection the run used.
struct DriverCounters {
  fp_ep_stats proto{};
  uint64_t conn_restarts = 0;          // connection re-created after an adaptable REJECT
  uint64_t dropped_tx_injected = 0, dropped_rx_injected = 0;
  uint64_t send_errors = 0;
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
  Driver(DriverOptions opts, const FlowList& my_flows) : o_(std::move(opts)), rng_(o_.seed) {
    if (o_.window == 0 || (o_.window & (o_.window - 1))) throw std::invalid_argument("window must be a power of two");
    for (const auto& f : my_flows) {
      FlowRecord r;
      r.spec = f;
      flows_.push_back(r);
      total_ += f.size_pkts;
    }
    std::stable_sort(flows_.begin(), flows_.end(),
                     [](const FlowRecord& a, const FlowRecord& b) { return a.spec.start < b.spec.start; });
    slots_.resize(o_.window);
  }

  // A UDP socket bound to opts.bind and connected to the emulator (so only
  // its datagrams are received). Throws std::runtime_error.
  int open_socket() const {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&o_.bind), sizeof o_.bind) < 0) {
      const std::string e = std::strerror(errno);
      close(fd);
      char a[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &o_.bind.sin_addr, a, sizeof a);
      throw std::runtime_error(std::string("cannot bind to ") + a + ":" + std::to_string(ntohs(o_.bind.sin_port)) +
                               ": " + e + " (is the address configured on this host / namespace?)");
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&o_.emulator), sizeof o_.emulator) < 0) {
      const std::string e = std::strerror(errno);
      close(fd);
      throw std::runtime_error("cannot connect UDP socket to the emulator: " + e);
    }
    return fd;
  }

  DriverResult run(int fd) {
    fd_ = fd;
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
    init_conn(now0);

    DriverResult res;
    res.requests = total_;
    std::vector<uint8_t> buf(65536);
    uint64_t linger_until = 0;
    for (;;) {
      uint64_t now = mono_ns();
      // Flows that are due join the local queue (FIFO, like the emulated NIC).
      while (next_flow_ < flows_.size() && flows_[next_flow_].start_mono <= now) {
        const uint32_t idx = static_cast<uint32_t>(next_flow_++);
        for (uint32_t s = 0; s < flows_[idx].spec.size_pkts; ++s) backlog_.push_back(uint64_t(idx) << 32 | s);
      }
      if (!submit_backlog(now, &res)) return finish(res);
      if (!flush(now, buf, &res)) return finish(res);

      const bool all_done = next_flow_ == flows_.size() && backlog_.empty() && verdicts_ == total_;
      if (all_done) {
        // Linger briefly so the last verdicts get acknowledged (else the
        // emulator keeps retransmitting them to a departed endpoint).
        if (!linger_until) linger_until = now + 50'000'000;
        if (fp_ep_next_deadline(&conn_) == FP_TIME_NEVER || now >= linger_until) break;
      }
      if (now >= end_mono_) {
        res.status = DriverStatus::kTimeout;
        res.outstanding = total_ - verdicts_;
        res.message = "gave up after the time limit with " + std::to_string(res.outstanding) + " of " +
                      std::to_string(total_) + " requests still without a verdict";
        return finish(res);
      }
      uint64_t wake = std::min<uint64_t>(fp_ep_next_deadline(&conn_), end_mono_);
      if (next_flow_ < flows_.size()) wake = std::min(wake, flows_[next_flow_].start_mono);
      if (linger_until) wake = std::min(wake, linger_until);
      pollfd p{fd_, POLLIN, 0};
      if (!o_.busy_poll) {
        timespec ts{0, 0};
        if (wake > now) {
          const uint64_t d = wake - now;
          ts.tv_sec = time_t(d / 1'000'000'000ull);
          ts.tv_nsec = long(d % 1'000'000'000ull);
        }
        const int rc = ppoll(&p, 1, &ts, nullptr);
        if (rc < 0 && errno != EINTR) {
          res.status = DriverStatus::kSocketError;
          res.message = std::string("poll: ") + std::strerror(errno);
          return finish(res);
        }
      }
      // Drain the socket.
      for (;;) {
        const ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          if (errno == ECONNREFUSED) continue;  // ICMP port unreachable: emulator not up (yet)
          res.status = DriverStatus::kSocketError;
          res.message = std::string("recv: ") + std::strerror(errno);
          return finish(res);
        }
        if (o_.drop_rx > 0 && uni_(rng_) < o_.drop_rx) {
          ++ctr_.dropped_rx_injected;
          continue;
        }
        const uint64_t t = mono_ns();
        fp_ep_rx(&conn_, buf.data(), size_t(n), t, &Driver::on_verdict_cb, this);
      }
      if (!check_reject(mono_ns(), &res)) return finish(res);
    }
    res.status = DriverStatus::kDone;
    res.outstanding = 0;
    return finish(res);
  }

  // --- results ---
  const std::vector<FlowRecord>& flows() const { return flows_; }
  const std::vector<VerdictRecord>& verdict_log() const { return log_; }
  DriverCounters counters() const {
    DriverCounters c = ctr_;
    add_stats(&c.proto, conn_.stats);
    return c;
  }
  uint64_t total_requests() const { return total_; }
  uint64_t verdicts() const { return verdicts_; }
  uint64_t start_mono() const { return start_mono_; }
  int64_t real_minus_mono() const { return real_minus_mono_; }
  const fp_ep_conn& conn() const { return conn_; }

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

  // endpoint_counters.csv: counter,value.
  void write_counters_csv(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    const DriverCounters c = counters();
    const fp_ep_stats& s = c.proto;
    std::fprintf(f, "counter,value\n");
    auto row = [f](const char* k, uint64_t v) { std::fprintf(f, "%s,%llu\n", k, (unsigned long long)v); };
    row("requests", total_);
    row("requests_submitted", s.requests_submitted);
    row("requests_sent", s.requests_sent);
    row("retransmissions", s.requests_resent);
    row("verdicts", verdicts_);
    row("verdicts_release", c.verdicts_release);
    row("verdicts_mark", c.verdicts_mark);
    row("verdicts_drop", c.verdicts_drop);
    row("outstanding", total_ - verdicts_);
    row("verdict_unexpected", c.verdict_unexpected);
    row("hellos_sent", s.hellos_sent);
    row("sessions", s.sessions);
    row("resets", s.resets);
    row("rejects", s.rejects);
    row("conn_restarts", c.conn_restarts);
    row("timeouts", s.timeouts);
    row("naks", s.naks);
    row("probes", s.probes);
    row("acks_sent", s.acks_sent);
    row("tx_dgrams", s.tx_dgrams);
    row("rx_dgrams", s.rx_dgrams);
    row("rx_bad", s.rx_bad);
    row("rx_stale", s.rx_stale);
    row("verdict_dups", s.verdict_dups);
    row("verdict_gaps", s.verdict_gaps);
    row("verdict_mismatch", s.verdict_mismatch);
    row("mark_non_ect", s.mark_non_ect);
    row("injected_tx_drops", c.dropped_tx_injected);
    row("injected_rx_drops", c.dropped_rx_injected);
    row("send_errors", c.send_errors);
    if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
  }

 private:
  static void add_stats(fp_ep_stats* into, const fp_ep_stats& s) {
    static_assert(sizeof(fp_ep_stats) % sizeof(uint64_t) == 0);
    auto* a = reinterpret_cast<uint64_t*>(into);
    const auto* b = reinterpret_cast<const uint64_t*>(&s);
    for (size_t i = 0; i < sizeof(fp_ep_stats) / sizeof(uint64_t); ++i) a[i] += b[i];
  }

  uint64_t timeslot_of(uint64_t mono) const {
    if (mono <= start_mono_) return 0;
    return uint64_t(double(mono - start_mono_) / o_.timeslot_ns);
  }

  void init_conn(uint64_t now) {
    fp_ep_config cfg;
    fp_ep_config_default(&cfg);
    uint32_t inst = 0;
    while (!inst) inst = std::random_device{}();
    cfg.instance = inst;
    cfg.initial_rseq = std::random_device{}();
    cfg.window = o_.window;
    cfg.features = o_.features;
    cfg.req_custom_len = o_.req_custom_len;
    cfg.verdict_custom_len = o_.verdict_custom_len;
    cfg.rto_ns = o_.rto_ns;
    cfg.rto_max_ns = o_.rto_max_ns;
    cfg.ack_delay_ns = o_.ack_delay_ns;
    cfg.probe_ns = o_.probe_ns;
    cfg.hello_rto_ns = o_.hello_rto_ns;
    cfg.hello_rto_max_ns = o_.hello_rto_max_ns;
    cfg.reject_retry_ns = 200'000'000;
    std::fill(slots_.begin(), slots_.end(), fp_ep_slot{});
    const int rc = fp_ep_conn_init(&conn_, &cfg, slots_.data(), uint32_t(slots_.size()), now);
    if (rc) throw std::runtime_error(std::string("fp_ep_conn_init: ") + fp_strerror(rc));
    rejects_seen_ = 0;
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

  bool submit_backlog(uint64_t now, DriverResult* res) {
    while (!backlog_.empty()) {
      const uint64_t cookie = backlog_.front();
      const fp_request q = make_request(cookie);
      const int rc = fp_ep_submit(&conn_, &q, cookie, now);
      if (rc == -FP_ENOSPC || rc == -FP_EREJECTED) break;  // window full / rejected: stays queued
      if (rc) {
        res->status = DriverStatus::kSocketError;
        res->message = std::string("cannot submit a request: ") + fp_strerror(rc);
        return false;
      }
      FlowRecord& r = flows_[cookie >> 32];
      if (!r.first_sent_mono) r.first_sent_mono = now;
      backlog_.pop_front();
    }
    return true;
  }

  bool flush(uint64_t now, std::vector<uint8_t>& buf, DriverResult* res) {
    for (;;) {
      const int n = fp_ep_poll(&conn_, now, buf.data(), buf.size());
      if (n < 0) {
        res->status = DriverStatus::kSocketError;
        res->message = std::string("fp_ep_poll: ") + fp_strerror(n);
        return false;
      }
      if (n == 0) return true;
      if (o_.drop_tx > 0 && uni_(rng_) < o_.drop_tx) {
        ++ctr_.dropped_tx_injected;
        continue;
      }
      if (send(fd_, buf.data(), size_t(n), 0) < 0) {
        // Transient (no route / neighbour yet, emulator down: ECONNREFUSED,
        // buffer full): the protocol retransmits, like a lost datagram.
        ++ctr_.send_errors;
        if (errno == EBADF || errno == ENOTSOCK) {
          res->status = DriverStatus::kSocketError;
          res->message = std::string("send: ") + std::strerror(errno);
          return false;
        }
      }
    }
  }

  // REJECT: adopt the emulator's sizes / features if that is what it asked
  // for (a new connection, every pending request given back and queued
  // again); anything else is fatal.
  bool check_reject(uint64_t now, DriverResult* res) {
    if (conn_.state != FP_EP_REJECTED || conn_.stats.rejects == rejects_seen_) return true;
    rejects_seen_ = conn_.stats.rejects;
    const fp_reject& j = conn_.last_reject;
    const bool adaptable = (j.code == FP_REJ_CUSTOM_SIZE || j.code == FP_REJ_FEATURES) &&
                           (j.features & ~FP_FEAT_ALL) == 0 && j.req_custom_len <= kPacketCustomBytes &&
                           j.verdict_custom_len <= kPacketCustomBytes && ctr_.conn_restarts < 4;
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "emulator refused the session: %s (endpoint custom %u/%u features %u; emulator custom %u/%u "
                  "features %u scheme '%s')",
                  fp_reject_name(j.code), o_.req_custom_len, o_.verdict_custom_len, o_.features, j.req_custom_len,
                  j.verdict_custom_len, j.features, j.scheme);
    if (!adaptable) {
      res->status = DriverStatus::kRejected;
      res->message = msg;
      res->outstanding = total_ - verdicts_;
      return false;
    }
    if (!o_.quiet) std::fprintf(stderr, "flexplane-endpoint: %s; adopting the emulator's values\n", msg);
    std::vector<uint64_t> given_back;
    fp_ep_abort_pending(&conn_, now, &Driver::on_abort_cb, &given_back);
    for (auto it = given_back.rbegin(); it != given_back.rend(); ++it) backlog_.push_front(*it);
    add_stats(&ctr_.proto, conn_.stats);
    ++ctr_.conn_restarts;
    o_.features = j.features;
    o_.req_custom_len = j.req_custom_len;
    o_.verdict_custom_len = j.verdict_custom_len;
    init_conn(now);
    return true;
  }

  static void on_abort_cb(void* ctx, const fp_request*, uint64_t user) {
    static_cast<std::vector<uint64_t>*>(ctx)->push_back(user);
  }

  static void on_verdict_cb(void* ctx, const fp_verdict* v, const fp_request* req, uint64_t user) {
    static_cast<Driver*>(ctx)->on_verdict(v, req, user);
  }

  void on_verdict(const fp_verdict* v, const fp_request* req, uint64_t user) {
    const uint64_t now = mono_ns();
    const uint32_t idx = uint32_t(user >> 32);
    if (idx >= flows_.size()) {
      ++ctr_.verdict_unexpected;
      return;
    }
    FlowRecord& r = flows_[idx];
    log_.push_back({now, v->action, req->flow, req->id, req->dst});
    switch (v->action) {
      case FP_ACT_RELEASE: ++r.released; ++ctr_.verdicts_release; break;
      case FP_ACT_MARK: ++r.marked; ++ctr_.verdicts_mark; break;
      default: ++r.dropped; ++ctr_.verdicts_drop; break;
    }
    if (++r.verdicts > r.spec.size_pkts) ++ctr_.verdict_unexpected;
    if (r.verdicts == r.spec.size_pkts) r.finish_mono = now;
    ++verdicts_;
  }

  DriverResult finish(DriverResult res) {
    if (res.status != DriverStatus::kDone) res.outstanding = total_ - verdicts_;
    return res;
  }

  DriverOptions o_;
  std::vector<FlowRecord> flows_;
  uint64_t total_ = 0, verdicts_ = 0;
  std::vector<fp_ep_slot> slots_;
  fp_ep_conn conn_{};
  uint64_t rejects_seen_ = 0;
  std::deque<uint64_t> backlog_;  // cookies (flow index << 32 | seq) not yet in the window
  size_t next_flow_ = 0;
  std::vector<VerdictRecord> log_;
  DriverCounters ctr_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  int fd_ = -1;
  uint64_t start_mono_ = 0, end_mono_ = 0;
  int64_t real_minus_mono_ = 0;
};

}  // namespace flexplane::endpoint
