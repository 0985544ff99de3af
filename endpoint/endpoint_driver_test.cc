// The endpoint driver against a fake emulator over loopback UDP: the test
// plays the emulator with the protocol core's fp_emu_conn and decides every
// request itself (no engine), so exactly-once delivery, loss recovery,
// emulator restarts and the time limit can be checked without DPDK.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "endpoint/endpoint_driver.h"
#include "proto/fp_emu_conn.h"

using namespace flexplane;
using namespace flexplane::endpoint;

namespace {

// The action the fake emulator gives (flow, id): deterministic, so the test
// can check the driver recorded the right one.
uint8_t expected_action(uint32_t flow, uint32_t id) {
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
};

class FakeEmulator {
 public:
  explicit FakeEmulator(FakeEmulatorOptions o) : o_(o), rng_(99) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof addr_;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr_), &len);
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
    h.v.action = expected_action(req->flow, req->id);
    if (h.v.action == FP_ACT_MARK && !(req->flags & FP_REQ_ECT)) h.v.action = FP_ACT_RELEASE;
    self->held_.push_back(h);
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
  std::thread thread_;
};

FlowList test_flows(uint32_t n) {
  FlowList flows;
  for (uint32_t i = 0; i < n; ++i) {
    FlowSpec f;
    f.id = 3 * i + 1;  // sparse ids: the driver must not assume they index anything
    f.src = 0;
    f.dst = 1 + i % 3;
    f.size_pkts = 1 + (i * 13) % 40;
    f.start = i * 5;
    flows.push_back(f);
  }
  return flows;
}

DriverOptions test_options(const sockaddr_in& emu) {
  DriverOptions o;
  o.emulator = emu;
  o.bind.sin_family = AF_INET;
  o.bind.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  o.timeslot_ns = 20'000;  // 20 us
  o.window = 64;
  o.rto_ns = 1'000'000;
  o.probe_ns = 5'000'000;
  o.limit_ns = 20'000'000'000ull;
  o.quiet = true;
  return o;
}

void check_exactly_once(const Driver& d, const FlowList& flows) {
  std::map<std::pair<uint32_t, uint32_t>, int> seen;
  for (const auto& v : d.verdict_log()) {
    ++seen[{v.flow, v.seq}];
    CHECK(v.action == expected_action(v.flow, v.seq));
  }
  uint64_t total = 0;
  for (const auto& f : flows) {
    for (uint32_t s = 0; s < f.size_pkts; ++s) {
      INFO("flow " << f.id << " packet " << s);
      CHECK(seen[{f.id, s}] == 1);
    }
    total += f.size_pkts;
  }
  CHECK(seen.size() == total);
  CHECK(d.verdict_log().size() == total);
  CHECK(d.counters().verdict_unexpected == 0);
  for (const auto& r : d.flows()) {
    CHECK(r.verdicts == r.spec.size_pkts);
    CHECK(r.finish_mono >= r.start_mono);
    CHECK(r.first_sent_mono >= r.start_mono);
  }
}

}  // namespace

TEST_CASE("endpoint driver: every request gets exactly one verdict over loopback", "[endpoint]") {
  FakeEmulator emu({});
  const FlowList flows = test_flows(30);
  Driver d(test_options(emu.addr()), flows);
  const int fd = d.open_socket();
  const DriverResult r = d.run(fd);
  close(fd);
  INFO(r.message);
  REQUIRE(r.status == DriverStatus::kDone);
  CHECK(r.outstanding == 0);
  check_exactly_once(d, flows);
  CHECK(d.counters().proto.sessions == 1);
  CHECK(emu.accepted() == d.total_requests());  // no restart: the engine saw each request once
}

TEST_CASE("endpoint driver: 20% loss in both directions on both sides", "[endpoint]") {
  FakeEmulatorOptions eo;
  eo.drop_tx = eo.drop_rx = 0.2;
  FakeEmulator emu(eo);
  const FlowList flows = test_flows(30);
  DriverOptions o = test_options(emu.addr());
  o.drop_tx = o.drop_rx = 0.2;
  o.seed = 5;
  Driver d(o, flows);
  const int fd = d.open_socket();
  const DriverResult r = d.run(fd);
  close(fd);
  INFO(r.message);
  REQUIRE(r.status == DriverStatus::kDone);
  check_exactly_once(d, flows);
  const DriverCounters c = d.counters();
  CHECK(c.dropped_tx_injected > 0);
  CHECK(c.dropped_rx_injected > 0);
  CHECK(c.proto.requests_resent > 0);
  CHECK(emu.accepted() == d.total_requests());
}

TEST_CASE("endpoint driver: emulator restarts mid-run, endpoint re-joins", "[endpoint]") {
  FakeEmulatorOptions eo;
  eo.restart_after = 150;
  eo.verdict_delay_ns = 2'000'000;  // requests are in the engine when it "dies"
  FakeEmulator emu(eo);
  const FlowList flows = test_flows(40);
  Driver d(test_options(emu.addr()), flows);
  const int fd = d.open_socket();
  const DriverResult r = d.run(fd);
  close(fd);
  INFO(r.message);
  REQUIRE(r.status == DriverStatus::kDone);
  check_exactly_once(d, flows);
  CHECK(emu.restarts() >= 1);
  const DriverCounters c = d.counters();
  CHECK(c.proto.resets >= 1);
  CHECK(c.proto.sessions >= 2);
  // Requests that were inside the old engine were emulated again.
  CHECK(emu.accepted() >= d.total_requests());
}

TEST_CASE("endpoint driver: adopts the emulator's features and sizes after a REJECT", "[endpoint]") {
  FakeEmulatorOptions eo;
  eo.features = FP_FEAT_PRIO;
  eo.req_custom_len = 4;
  FakeEmulator emu(eo);
  const FlowList flows = test_flows(10);
  Driver d(test_options(emu.addr()), flows);  // offers no PRIO, no custom bytes
  const int fd = d.open_socket();
  const DriverResult r = d.run(fd);
  close(fd);
  INFO(r.message);
  REQUIRE(r.status == DriverStatus::kDone);
  check_exactly_once(d, flows);
  const DriverCounters c = d.counters();
  CHECK(c.proto.rejects >= 1);
  CHECK(c.conn_restarts >= 1);
  CHECK(d.conn().cfg.features == FP_FEAT_PRIO);
  CHECK(d.conn().cfg.req_custom_len == 4);
}

TEST_CASE("endpoint driver: refuses an emulator asking for more custom data than a packet carries", "[endpoint]") {
  // The protocol allows 16 bytes; the abstract packet keeps 12 (kPacketCustomBytes): the
  // driver does not adopt 16, it stops with the emulator's refusal and both sides' sizes.
  FakeEmulatorOptions eo;
  eo.req_custom_len = 16;
  FakeEmulator emu(eo);
  const FlowList flows = test_flows(3);
  Driver d(test_options(emu.addr()), flows);
  const int fd = d.open_socket();
  const DriverResult r = d.run(fd);
  close(fd);
  REQUIRE(r.status == DriverStatus::kRejected);
  CHECK_THAT(r.message, Catch::Contains("emulator custom 16/0"));
  CHECK(d.counters().conn_restarts == 0);
}

TEST_CASE("endpoint driver: gives up after the time limit when no emulator answers", "[endpoint]") {
  // A bound socket that never answers.
  const int silent = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
  const FlowList flows = test_flows(3);
  DriverOptions o = test_options(a);
  o.limit_ns = 300'000'000;
  Driver d(o, flows);
  const int fd = d.open_socket();
  const uint64_t t0 = mono_ns();
  const DriverResult r = d.run(fd);
  const uint64_t took = mono_ns() - t0;
  close(fd);
  close(silent);
  CHECK(r.status == DriverStatus::kTimeout);
  CHECK(r.outstanding == d.total_requests());
  CHECK(r.message.find("without a verdict") != std::string::npos);
  CHECK(took < 2'000'000'000ull);
}

TEST_CASE("endpoint driver: address parsing", "[endpoint]") {
  sockaddr_in a;
  REQUIRE(parse_addr("10.77.0.2", 9977, &a));
  CHECK(ntohs(a.sin_port) == 9977);
  REQUIRE(parse_addr("10.77.0.2:1234", 9977, &a));
  CHECK(ntohs(a.sin_port) == 1234);
  CHECK_FALSE(parse_addr("10.77.0", 9977, &a));
  CHECK_FALSE(parse_addr("10.77.0.2:", 9977, &a));
  CHECK_FALSE(parse_addr("10.77.0.2:99999", 9977, &a));
  CHECK_FALSE(parse_addr("host:12", 9977, &a));
}
