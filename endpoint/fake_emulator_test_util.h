// Test helper: a fake emulator on loopback UDP built from the protocol
// core's fp_emu_conn. It decides every request itself (no engine) after a
// fixed delay, can lose datagrams, "restart" (forget every session), and
// insist on features / custom sizes, so endpoint programs can be tested
// without DPDK. Used by the endpoint tests in live_tests.
#pragma once

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "endpoint/clock.h"
#include "proto/fp_emu_conn.h"

namespace flexplane::endpoint::testing {


// The action the fake emulator gives (flow, id): deterministic, so the test
// can check the driver recorded the right one.
// A non-blocking UDP socket on 127.0.0.1, on a free port (written to *addr).
inline int loopback_udp_socket(sockaddr_in* addr) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof *addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(addr), &len);
  return fd;
}

inline uint8_t expected_action(uint32_t flow, uint32_t id) {
  switch ((flow * 7 + id) % 3) {
    case 0: return FP_ACT_RELEASE;
    case 1: return FP_ACT_MARK;
    default: return FP_ACT_DROP;
  }
}

struct FakeEmulatorOptions {
  uint64_t verdict_delay_ns = 200'000;  // requests sit "in the engine" this long
  double drop_tx = 0, drop_rx = 0;      // loss on the emulator's side
  uint64_t restart_after = 0;           // forget everything after this many accepted requests (0 = never)
  uint8_t features = 0;                 // what the emulator insists on (FP_FEAT_*)
  uint8_t req_custom_len = 0;
  // The action for a request; default expected_action(flow, id). A MARK
  // for a request without ECT becomes RELEASE, as a scheme would do.
  std::function<uint8_t(const fp_request&)> decide;
};

class FakeEmulator {
 public:
  explicit FakeEmulator(FakeEmulatorOptions o) : o_(o), rng_(99) {
    fd_ = loopback_udp_socket(&addr_);
    start_conn(1000);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeEmulator() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  sockaddr_in addr() const { return addr_; }
  uint64_t accepted() const { return accepted_.load(); }
  uint64_t restarts() const { return restarts_.load(); }
  // Requests seen, in arrival order (read after the endpoint is done).
  std::vector<fp_request> requests() const {
    std::lock_guard<std::mutex> g(mu_);
    return requests_;
  }

 private:
  struct Held {
    uint64_t due;
    fp_emu_token tok;
    fp_verdict v;
  };

  void start_conn(uint32_t epoch_seed) {
    fp_emu_config cfg;
    fp_emu_config_default(&cfg);
    cfg.endpoint_id = 0;
    cfg.apkt_bytes = 1500;
    cfg.epoch_seed = epoch_seed;
    cfg.rto_ns = 2'000'000;
    cfg.features = o_.features;
    cfg.req_custom_len = o_.req_custom_len;
    ring_.assign(256, fp_verdict{});
    REQUIRE(fp_emu_conn_init(&conn_, &cfg, ring_.data(), 256, mono_ns()) == 0);
    held_.clear();
  }

  static int on_request(void* ctx, const fp_emu_token* tok, const fp_request* req) {
    auto* self = static_cast<FakeEmulator*>(ctx);
    Held h;
    h.due = mono_ns() + self->o_.verdict_delay_ns;
    h.tok = *tok;
    std::memset(&h.v, 0, sizeof h.v);
    h.v.flow = req->flow;
    h.v.id = req->id;
    h.v.action = self->o_.decide ? self->o_.decide(*req) : expected_action(req->flow, req->id);
    if (h.v.action == FP_ACT_MARK && !(req->flags & FP_REQ_ECT)) h.v.action = FP_ACT_RELEASE;
    self->held_.push_back(h);
    {
      std::lock_guard<std::mutex> g(self->mu_);
      self->requests_.push_back(*req);
    }
    ++self->accepted_;
    return 0;
  }

  void loop() {
    std::vector<uint8_t> buf(65536);
    sockaddr_in peer{};
    bool have_peer = false;
    uint64_t accepted_at_restart = 0;
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      timespec ts{0, 100'000};
      ppoll(&p, 1, &ts, nullptr);
      for (;;) {
        sockaddr_in from{};
        socklen_t fl = sizeof from;
        const ssize_t n = recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
        if (n < 0) break;
        if (uni_(rng_) < o_.drop_rx) continue;
        peer = from;
        have_peer = true;
        fp_emu_rx(&conn_, buf.data(), size_t(n), mono_ns(), &FakeEmulator::on_request, this);
      }
      const uint64_t now = mono_ns();
      if (o_.restart_after && accepted_ - accepted_at_restart >= o_.restart_after && restarts_ < 2) {
        // "Kill and restart": the engine's requests and all session state are gone.
        accepted_at_restart = accepted_;
        ++restarts_;
        start_conn(1000 + 7777 * uint32_t(restarts_.load()));
      }
      while (!held_.empty() && held_.front().due <= now) {
        fp_emu_push_verdict(&conn_, &held_.front().tok, &held_.front().v, now);
        held_.pop_front();
      }
      int n;
      while ((n = fp_emu_poll(&conn_, now, buf.data(), buf.size())) > 0)
        if (have_peer && uni_(rng_) >= o_.drop_tx)
          sendto(fd_, buf.data(), size_t(n), 0, reinterpret_cast<sockaddr*>(&peer), sizeof peer);
    }
  }

  FakeEmulatorOptions o_;
  int fd_ = -1;
  sockaddr_in addr_{};
  fp_emu_conn conn_{};
  std::vector<fp_verdict> ring_;
  std::deque<Held> held_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0}, restarts_{0};
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  mutable std::mutex mu_;
  std::vector<fp_request> requests_;
  std::thread thread_;
};

}  // namespace flexplane::endpoint::testing
