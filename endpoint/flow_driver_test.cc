// The synthetic-flow driver against a fake emulator over loopback UDP
// (fake_emulator_test_util.h), so exactly-once delivery, loss recovery,
// emulator restarts and the time limit can be checked without DPDK.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "endpoint/fake_emulator_test_util.h"
#include "endpoint/flow_driver.h"

using namespace flexplane;
using namespace flexplane::endpoint;
using testing::expected_action;
using testing::FakeEmulator;
using testing::FakeEmulatorOptions;

namespace {

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
  o.session.window = 64;
  o.session.rto_ns = 1'000'000;
  o.session.probe_ns = 5'000'000;
  o.session.quiet = true;
  o.limit_ns = 20'000'000'000ull;
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

// Runs the driver on a socket of its own; the result, with its message in the log.
DriverResult run_driver(Driver& d) {
  const int fd = d.open_socket();
  const DriverResult r = d.run(fd);
  close(fd);
  UNSCOPED_INFO(r.message);
  return r;
}

}  // namespace

TEST_CASE("endpoint driver: every request gets exactly one verdict over loopback", "[endpoint]") {
  FakeEmulator emu({});
  const FlowList flows = test_flows(30);
  Driver d(test_options(emu.addr()), flows);
  const DriverResult r = run_driver(d);
  REQUIRE(r.status == DriverStatus::kDone);
  CHECK(r.outstanding == 0);
  check_exactly_once(d, flows);
  CHECK(d.session_counters().proto.sessions == 1);
  CHECK(emu.accepted() == d.total_requests());  // no restart: the engine saw each request once
}

TEST_CASE("endpoint driver: 20% loss in both directions on both sides", "[endpoint]") {
  FakeEmulatorOptions eo;
  eo.drop_tx = eo.drop_rx = 0.2;
  FakeEmulator emu(eo);
  const FlowList flows = test_flows(30);
  DriverOptions o = test_options(emu.addr());
  o.session.drop_tx = o.session.drop_rx = 0.2;
  o.session.seed = 5;
  Driver d(o, flows);
  const DriverResult r = run_driver(d);
  REQUIRE(r.status == DriverStatus::kDone);
  check_exactly_once(d, flows);
  const SessionCounters c = d.session_counters();
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
  const DriverResult r = run_driver(d);
  REQUIRE(r.status == DriverStatus::kDone);
  check_exactly_once(d, flows);
  CHECK(emu.restarts() >= 1);
  const SessionCounters c = d.session_counters();
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
  const DriverResult r = run_driver(d);
  REQUIRE(r.status == DriverStatus::kDone);
  check_exactly_once(d, flows);
  const SessionCounters c = d.session_counters();
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
  const DriverResult r = run_driver(d);
  REQUIRE(r.status == DriverStatus::kRejected);
  CHECK_THAT(r.message, Catch::Contains("emulator custom 16/0"));
  CHECK(d.session_counters().conn_restarts == 0);
}

TEST_CASE("endpoint driver: gives up after the time limit when no emulator answers", "[endpoint]") {
  // A bound socket that never answers.
  sockaddr_in a{};
  const int silent = testing::loopback_udp_socket(&a);
  const FlowList flows = test_flows(3);
  DriverOptions o = test_options(a);
  o.limit_ns = 300'000'000;
  Driver d(o, flows);
  const uint64_t t0 = mono_ns();
  const DriverResult r = run_driver(d);
  const uint64_t took = mono_ns() - t0;
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
  // The one strict parser: the spelling the emulator's config refuses is
  // refused here too (issue 21: 10.77.0.010 and 10.77.0.10 were two texts).
  CHECK_FALSE(parse_addr("10.77.0.010", 9977, &a));
  CHECK_FALSE(parse_addr("10.77.0.010:1234", 9977, &a));
  CHECK_FALSE(parse_addr(" 10.77.0.2", 9977, &a));
  REQUIRE(parse_addr("10.77.0.10", 9977, &a));
  CHECK(a.sin_addr.s_addr == htonl(0x0a4d000a));
}
