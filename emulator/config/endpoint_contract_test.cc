#include "emulator/config/endpoint_contract.h"

#include <catch2/catch.hpp>

using namespace flexplane;

namespace {
ResolvedRouter router(const std::string& priority, uint8_t req, uint8_t verdict) {
  ResolvedRouter r;
  r.endpoint_priority = priority;
  r.request_custom_bytes = req;
  r.verdict_custom_bytes = verdict;
  return r;
}
}  // namespace

TEST_CASE("endpoint contract: stamping and custom sizes come from the routers' schemes", "[config]") {
  RunConfig c;
  c.file = "exp.yaml";
  auto k = endpoint_contract(c, {router("none", 0, 0), router("remaining_size", 4, 2), router("none", 8, 0)});
  REQUIRE(k.priority == PriorityStamp::kRemainingSize);
  REQUIRE(k.request_custom_bytes == 8);  // the largest any scheme declares
  REQUIRE(k.verdict_custom_bytes == 2);
  REQUIRE(endpoint_contract(c, {router("none", 0, 0)}).priority == PriorityStamp::kNone);
  // Schemes that disagree need the config to choose...
  REQUIRE_THROWS_WITH(endpoint_contract(c, {router("flow_size", 0, 0), router("remaining_size", 0, 0)}),
                      Catch::Matchers::Contains("exp.yaml: endpoint.priority") &&
                          Catch::Matchers::Contains("set endpoint.priority explicitly"));
  // ...and an explicit choice wins.
  c.endpoint_priority = "flow_size";
  REQUIRE(endpoint_contract(c, {router("flow_size", 0, 0), router("remaining_size", 0, 0)}).priority ==
          PriorityStamp::kFlowSize);
}
