// HPCC: the window from in-band telemetry (transport.h; switch side in
// schemes/hpcc.cc, tested in schemes/hpcc_test.cc). ACKs are fed by hand with
// the U a path would have stamped.
#include <catch2/catch.hpp>

#include "transports/tcp_sender.h"
#include "transports/test_loop.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

constexpr uint64_t kUnit = TcpSender::kCwndUnit;

TransportSettings hpcc_settings() {
  TransportSettings s = reno_settings(10);
  s.kind = TransportKind::kHpcc;
  s.hpcc_eta = 0.95;
  s.hpcc_max_stage = 2;
  s.hpcc_wai_pkts = 1;
  return s;
}

Ack ack(uint32_t cum, double u) {
  Ack a(cum, cum - 1);
  a.telemetry = static_cast<uint32_t>(u * kTelemetryOne);
  return a;
}

void send_all(TcpSender& s, Timeslot now) {
  while (s.next_send(now)) {
  }
}

}  // namespace

TEST_CASE("hpcc: starts at the path's BDP; additive below eta, multiplicative above, Wc once per RTT",
          "[transports][hpcc]") {
  TcpSender s(hpcc_settings(), 1000, /*base_rtt=*/10);
  REQUIRE(s.cwnd_units() == 10 * kUnit);  // W_init: the BDP, 10 packets
  send_all(s, 0);
  REQUIRE(s.snd_nxt() == 10);
  // First ACK beyond the last update's snd_nxt (0): an update. U 0.5 < eta, stage 0 < 2:
  // W = Wc + W_AI = 11, Wc = 11, stage 1, next update after snd_nxt = 10.
  s.on_ack(ack(1, 0.5), 10);
  REQUIRE(s.cwnd_units() == 11 * kUnit);
  send_all(s, 10);
  // Not an update (cum 2 <= 10): W = Wc + 1 = 12 from Wc = 11; Wc stays.
  s.on_ack(ack(2, 0.5), 11);
  REQUIRE(s.cwnd_units() == 12 * kUnit);
  // U = 1.9 = 2 eta: W = Wc / 2 + 1 = 6.5 (not an update: Wc stays 11).
  s.on_ack(ack(3, 1.9), 12);
  REQUIRE(s.cwnd_units() == static_cast<uint64_t>(6.5 * kUnit));
  send_all(s, 12);
  // cum 11 > 10: an update at U = 1.9: W = 11 / 2 + 1 = 6.5 = Wc, stage 0.
  s.on_ack(ack(11, 1.9), 20);
  REQUIRE(s.cwnd_units() == static_cast<uint64_t>(6.5 * kUnit));
  const uint32_t next_update = s.snd_nxt();
  send_all(s, 20);
  // Below eta again: additive from Wc = 6.5: 7.5 (an update only beyond next_update).
  s.on_ack(ack(next_update, 0.2), 21);
  REQUIRE(s.cwnd_units() == static_cast<uint64_t>(7.5 * kUnit));
  REQUIRE(s.stats().delay_reductions == 2);  // the ACKs at U >= eta
}

TEST_CASE("hpcc: after max_stage additive updates the update is multiplicative, even below eta",
          "[transports][hpcc]") {
  // max_stage 2: updates 1 and 2 are additive (stage 0 -> 1 -> 2); the third, at U = 0.475
  // (eta / 2), is multiplicative: W = Wc / 0.5 + 1, and resets the stage.
  TcpSender s(hpcc_settings(), 100000, 4);
  REQUIRE(s.cwnd_units() == 4 * kUnit);
  double wc = 4;
  Timeslot now = 0;
  for (int update = 1; update <= 3; ++update) {
    send_all(s, now);
    const uint32_t cum = s.snd_nxt();  // acknowledges everything: beyond the last update's snd_nxt
    s.on_ack(ack(cum, 0.475), ++now);
    wc = update <= 2 ? wc + 1 : wc / 0.5 + 1;
    INFO("update " << update);
    REQUIRE(s.cwnd_units() == static_cast<uint64_t>(wc * kUnit + 0.5));
  }
  REQUIRE(wc == 13);  // 4 -> 5 -> 6 -> 13
}

TEST_CASE("hpcc: needs the path's base RTT", "[transports][hpcc]") {
  REQUIRE_THROWS_AS(TcpSender(hpcc_settings(), 10, 0), ConfigError);
}
