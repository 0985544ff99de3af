// RFC 6298 estimator by hand, and the transport parameters (schema, units).
#include <catch2/catch.hpp>

#include "transports/rtt_estimator.h"
#include "transports/transport.h"

using namespace flexplane;

TEST_CASE("rtt estimator: RFC 6298 by hand, backoff and its reset", "[transports][rtt]") {
  RttEstimator e(1, 1000, 50);
  REQUIRE(e.rto() == 50);  // no sample yet: initial RTO
  e.sample(10);            // SRTT 10, RTTVAR 5: RTO = 10 + 4 x 5 = 30
  REQUIRE(e.srtt_x8() == 80);
  REQUIRE(e.rttvar_x8() == 40);
  REQUIRE(e.rto() == 30);
  e.sample(20);  // RTTVAR = 3/4 x 5 + 1/4 x |10 - 20| = 6.25; SRTT = 7/8 x 10 + 1/8 x 20 = 11.25
  REQUIRE(e.rttvar_x8() == 50);
  REQUIRE(e.srtt_x8() == 90);
  REQUIRE(e.rto() == 37);  // ceil(11.25 + 25) = ceil(36.25)
  e.backoff();
  REQUIRE(e.rto() == 74);
  e.backoff();
  REQUIRE(e.rto() == 148);
  REQUIRE(e.backoffs() == 2);
  e.sample(10);  // RTTVAR = (3 x 50 + |90 - 80|) / 4 = 40 (5.0); SRTT = floor((7 x 90 + 80) / 8) = 88 (11.0)
  REQUIRE(e.rttvar_x8() == 40);
  REQUIRE(e.srtt_x8() == 88);
  REQUIRE(e.rto() == 31);  // 11 + 20; the backoff is gone
  REQUIRE(e.backoffs() == 0);
}

TEST_CASE("rtt estimator: the clock granularity G and the bounds", "[transports][rtt]") {
  // Constant RTT 1: RTTVAR decays 0.5, 0.375, 0.25 (floors in eighths: 4, 3, 2, 1, 0)
  // and the RTO bottoms out at SRTT + G = 2.
  RttEstimator e(1, 1000, 50);
  for (int i = 0; i < 6; ++i) e.sample(1);
  REQUIRE(e.rttvar_x8() == 0);
  REQUIRE(e.rto() == 2);
  RttEstimator bounded(10, 40, 5);
  REQUIRE(bounded.rto() == 10);  // initial below min: raised
  bounded.sample(100);
  REQUIRE(bounded.rto() == 40);  // 300 above max: capped
  bounded.backoff();
  REQUIRE(bounded.rto() == 40);
  REQUIRE(bounded.backoffs() == 0);  // already at the cap: nothing to double
}

TEST_CASE("transport params: µs become whole timeslots, rounded up", "[transports][params]") {
  TransportParams p;  // defaults: min RTO 1000 µs, delayed ACK 40 µs
  const TransportSettings s = resolve_transport(TransportKind::kDctcp, p, 1200.0);
  REQUIRE(s.min_rto == 834);      // 1 000 000 ns / 1200 = 833.3
  REQUIRE(s.initial_rto == 834);  // 0 = min_rto
  REQUIRE(s.delayed_ack == 34);   // 40 000 / 1200 = 33.3
  REQUIRE(s.max_rto == 50000000);
  REQUIRE(s.pfabric_rto == 0);    // 0 = 3 x base RTT, decided per flow
  REQUIRE(us_to_timeslots(1.2, 1200.0) == 1);
  REQUIRE(us_to_timeslots(0.001, 1200.0) == 1);
  REQUIRE(us_to_timeslots(2.4, 1200.0) == 2);
}

TEST_CASE("transport params: parsed strictly, errors name the field", "[transports][params]") {
  const auto& schema = transport_param_schema();
  ParamValues v;
  v.where = "exp.yaml: transport";
  v.set("min_rto_us", "250");
  v.set("dctcp_g", "0.125");
  const TransportParams p = schema.parse(v, "dctcp");
  REQUIRE(p.min_rto_us == 250);
  REQUIRE(p.dctcp_g == 0.125);

  ParamValues bad;
  bad.set("min_rto_us", "soon");
  REQUIRE_THROWS_WITH(schema.parse(bad, "dctcp"), Catch::Contains("min_rto_us") && Catch::Contains("soon"));
  ParamValues unknown;
  unknown.set("rto_min", "1");
  REQUIRE_THROWS_WITH(schema.parse(unknown, "dctcp"), Catch::Contains("unknown parameter 'rto_min'"));
  ParamValues big;
  big.set("initial_cwnd_pkts", "100");
  big.set("max_cwnd_pkts", "50");
  REQUIRE_THROWS_WITH(schema.parse(big, "dctcp"), Catch::Contains("max_cwnd_pkts"));
  REQUIRE(parse_transport_kind("dctcp", "x") == TransportKind::kDctcp);
  REQUIRE_THROWS_WITH(parse_transport_kind("cubic", "exp.yaml: transport.kind"),
                      Catch::Contains("unknown transport 'cubic'") && Catch::Contains("reno, ecn, dctcp, pfabric"));
  for (auto k : {TransportKind::kReno, TransportKind::kEcn, TransportKind::kDctcp, TransportKind::kPfabric})
    REQUIRE(parse_transport_kind(transport_kind_name(k), "x") == k);
}
