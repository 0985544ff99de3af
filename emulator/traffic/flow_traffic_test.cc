#include "emulator/traffic/flow_traffic.h"

#include <catch2/catch.hpp>

#include "api/rng.h"

using namespace flexplane;

TEST_CASE("a flow source keeps its promise not to send out of its group", "[traffic][lookahead]") {
  // 8 endpoints; the source serves group {0..3}. Mostly flows inside the
  // group, a few to outside, with gaps between them.
  Rng rng(11);
  FlowList flows;
  Timeslot start = 0;
  for (uint32_t i = 0; i < 400; ++i) {
    FlowSpec f;
    f.id = i;
    f.src = static_cast<EndpointId>(rng.below(4));
    const bool remote = rng.below(10) == 0;
    do f.dst = static_cast<EndpointId>(remote ? 4 + rng.below(4) : rng.below(4));
    while (f.dst == f.src);
    f.size_pkts = 1 + rng.below(20);
    start += rng.below(8);
    f.start = start;
    flows.push_back(f);
  }
  FlowTraffic traffic(flows, 8, EndpointStamping{});
  auto source = traffic.make_source({0, 1, 2, 3});
  std::vector<Packet> out(4);
  std::vector<uint32_t> local(4);
  Timeslot promised = 0;  // no packet for outside the group before this
  uint64_t remote_sent = 0, promised_ahead = 0;
  for (Timeslot now = 0; now < start + 4000; ++now) {
    const uint32_t n = source->emit(now, out.data(), local.data());
    for (uint32_t i = 0; i < n; ++i)
      if (out[i].dst >= 4) {
        INFO("timeslot " << now << ", promised quiet until " << promised);
        REQUIRE(now >= promised);
        ++remote_sent;
      }
    const Timeslot p = source->remote_quiet_until(now);
    REQUIRE(p > now);
    promised_ahead += p > now + 1;
    promised = p;
  }
  REQUIRE(remote_sent > 100);           // the test sent remote traffic ...
  REQUIRE(promised_ahead > start / 4);  // ... and the source promised real quiet spells
  REQUIRE(promised == kNoRemoteTraffic);  // all sent: nothing will ever leave again
}
