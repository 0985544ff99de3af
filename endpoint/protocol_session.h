// One endpoint's protocol session with the emulator, over a connected UDP
// socket: the plumbing every endpoint program shares (the synthetic-flow
// driver `flexplane-endpoint` and the NFQUEUE endpoint `flexplane-nfq-endpoint`).
//
// It owns the fp_ep_conn (proto/fp_endpoint_conn.h) and its slot array, and
// does what the protocol core leaves to its caller: sending what
// fp_ep_poll() produces, feeding received datagrams to fp_ep_rx(), and the
// reaction to a REJECT — adopt the emulator's custom sizes / features (a new
// connection; the caller re-submits the requests given back) or give up.
// Counters are summed over every connection the session used.
//
//   ProtocolSession s(opts);
//   s.start(fd, now);
//   s.submit(req, cookie, now);                     // per abstract packet
//   s.flush(now);                                    // send what is due
//   s.receive(now, [&](const fp_verdict&, const fp_request&, uint64_t cookie) {...});
//   switch (s.check_reject(now, &given_back, &msg)) ...
//   sleep until s.next_deadline() or the socket is readable
//
// Test hooks drop a fraction of outgoing / incoming datagrams (seeded).
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/packet.h"
#include "proto/fp_endpoint_conn.h"

namespace flexplane::endpoint {

struct SessionOptions {
  uint8_t features = 0;            // FP_FEAT_* offered in HELLO (adapted on REJECT FEATURES)
  uint8_t req_custom_len = 0, verdict_custom_len = 0;
  uint16_t window = 1024;          // requests in flight (power of two)
  uint64_t rto_ns = 2'000'000;     // protocol timers (docs/protocol.md §7), raised for a virtualised lab
  uint64_t rto_max_ns = 100'000'000;
  uint64_t ack_delay_ns = 20'000;
  uint64_t batch_delay_ns = 0;     // 0 = the protocol default
  uint64_t probe_ns = 10'000'000;
  uint64_t hello_rto_ns = 50'000'000;
  uint64_t hello_rto_max_ns = 500'000'000;
  double drop_tx = 0, drop_rx = 0; // test hooks: drop this fraction of datagrams
  uint64_t seed = 1;
  bool quiet = false;
  std::string who = "flexplane-endpoint";  // log prefix
};

struct SessionCounters {
  fp_ep_stats proto{};
  uint64_t conn_restarts = 0;          // connection re-created after an adaptable REJECT
  uint64_t dropped_tx_injected = 0, dropped_rx_injected = 0;
  uint64_t send_errors = 0;            // transient send failures (the protocol retransmits)
};

enum class RejectOutcome { kNone, kAdopted, kFatal };

// A request handed back by check_reject() for the caller to submit again.
struct GivenBack {
  fp_request req;
  uint64_t cookie;
};

class ProtocolSession {
 public:
  explicit ProtocolSession(SessionOptions o) : o_(std::move(o)), rng_(o_.seed) {
    if (o_.window == 0 || (o_.window & (o_.window - 1))) throw std::invalid_argument("window must be a power of two");
    slots_.resize(o_.window);
  }
  ProtocolSession(const ProtocolSession&) = delete;
  ProtocolSession& operator=(const ProtocolSession&) = delete;

  void start(int fd, uint64_t now) {
    fd_ = fd;
    init_conn(now);
  }

  // fp_ep_submit: 0, -FP_ENOSPC (window full), -FP_EREJECTED, or another error.
  int submit(const fp_request& q, uint64_t cookie, uint64_t now) { return fp_ep_submit(&conn_, &q, cookie, now); }

  // Sends every datagram that is due. Returns "" or a fatal error.
  std::string flush(uint64_t now) {
    uint8_t buf[FP_DEFAULT_MAX_DGRAM + 64];
    for (;;) {
      const int n = fp_ep_poll(&conn_, now, buf, sizeof buf);
      if (n < 0) return std::string("fp_ep_poll: ") + fp_strerror(n);
      if (n == 0) return "";
      if (o_.drop_tx > 0 && uni_(rng_) < o_.drop_tx) {
        ++ctr_.dropped_tx_injected;
        continue;
      }
      if (send(fd_, buf, size_t(n), 0) < 0) {
        // Transient (no route / neighbour yet, emulator down: ECONNREFUSED,
        // buffer full): the protocol retransmits, like a lost datagram.
        ++ctr_.send_errors;
        if (errno == EBADF || errno == ENOTSOCK) return std::string("send: ") + std::strerror(errno);
      }
    }
  }

  // Feeds every datagram waiting on the socket to the protocol; each verdict
  // is handed to fn(const fp_verdict&, const fp_request&, uint64_t cookie)
  // exactly once. Returns "" or a fatal socket error.
  template <class Fn>
  std::string receive(uint64_t now, Fn&& fn) {
    struct Ctx {
      Fn* fn;
    } ctx{&fn};
    auto cb = [](void* c, const fp_verdict* v, const fp_request* req, uint64_t user) {
      (*static_cast<Ctx*>(c)->fn)(*v, *req, user);
    };
    uint8_t buf[65536];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return "";
        if (errno == ECONNREFUSED) continue;  // ICMP port unreachable: emulator not up (yet)
        return std::string("recv: ") + std::strerror(errno);
      }
      if (o_.drop_rx > 0 && uni_(rng_) < o_.drop_rx) {
        ++ctr_.dropped_rx_injected;
        continue;
      }
      fp_ep_rx(&conn_, buf, size_t(n), now, cb, &ctx);
    }
  }

  // After a REJECT: if the emulator asked for other custom sizes or
  // features, adopt them (a new connection; every request without a verdict
  // is appended to *given_back, oldest first, for the caller to submit again)
  // and return kAdopted; any other REJECT is kFatal with *message set.
  RejectOutcome check_reject(uint64_t now, std::vector<GivenBack>* given_back, std::string* message) {
    if (conn_.state != FP_EP_REJECTED || conn_.stats.rejects == rejects_seen_) return RejectOutcome::kNone;
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
    *message = msg;
    if (!adaptable) return RejectOutcome::kFatal;
    if (!o_.quiet) std::fprintf(stderr, "%s: %s; adopting the emulator's values\n", o_.who.c_str(), msg);
    fp_ep_abort_pending(&conn_, now, &ProtocolSession::on_abort, given_back);
    add_stats(&ctr_.proto, conn_.stats);
    ++ctr_.conn_restarts;
    o_.features = j.features;
    o_.req_custom_len = j.req_custom_len;
    o_.verdict_custom_len = j.verdict_custom_len;
    init_conn(now);
    return RejectOutcome::kAdopted;
  }

  uint64_t next_deadline() const { return fp_ep_next_deadline(&conn_); }
  bool established() const { return conn_.state == FP_EP_ESTABLISHED; }
  uint32_t pending() const { return fp_ep_pending(&conn_); }
  const fp_ep_conn& conn() const { return conn_; }
  const SessionOptions& options() const { return o_; }
  int fd() const { return fd_; }

  SessionCounters counters() const {
    SessionCounters c = ctr_;
    add_stats(&c.proto, conn_.stats);
    return c;
  }

  // The session's rows of an endpoint_counters.csv ("counter,value").
  void write_counter_rows(FILE* f) const {
    const SessionCounters c = counters();
    const fp_ep_stats& s = c.proto;
    auto row = [f](const char* k, uint64_t v) { std::fprintf(f, "%s,%llu\n", k, (unsigned long long)v); };
    row("requests_submitted", s.requests_submitted);
    row("requests_sent", s.requests_sent);
    row("retransmissions", s.requests_resent);
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
  }

 private:
  static void add_stats(fp_ep_stats* into, const fp_ep_stats& s) {
    static_assert(sizeof(fp_ep_stats) % sizeof(uint64_t) == 0);
    auto* a = reinterpret_cast<uint64_t*>(into);
    const auto* b = reinterpret_cast<const uint64_t*>(&s);
    for (size_t i = 0; i < sizeof(fp_ep_stats) / sizeof(uint64_t); ++i) a[i] += b[i];
  }

  static void on_abort(void* ctx, const fp_request* req, uint64_t user) {
    static_cast<std::vector<GivenBack>*>(ctx)->push_back({*req, user});
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
    if (o_.batch_delay_ns) cfg.batch_delay_ns = o_.batch_delay_ns;
    cfg.probe_ns = o_.probe_ns;
    cfg.hello_rto_ns = o_.hello_rto_ns;
    cfg.hello_rto_max_ns = o_.hello_rto_max_ns;
    cfg.reject_retry_ns = 200'000'000;
    std::fill(slots_.begin(), slots_.end(), fp_ep_slot{});
    const int rc = fp_ep_conn_init(&conn_, &cfg, slots_.data(), uint32_t(slots_.size()), now);
    if (rc) throw std::runtime_error(std::string("fp_ep_conn_init: ") + fp_strerror(rc));
    rejects_seen_ = 0;
  }

  SessionOptions o_;
  std::vector<fp_ep_slot> slots_;
  fp_ep_conn conn_{};
  uint64_t rejects_seen_ = 0;
  SessionCounters ctr_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  int fd_ = -1;
};

}  // namespace flexplane::endpoint
