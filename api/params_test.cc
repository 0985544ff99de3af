#include "api/params.h"
#include "api/registry.h"

#include <catch2/catch.hpp>

using namespace flexplane;

namespace {
struct P {
  uint32_t k_pkts = 65;
  double max_p = 0.1;
  bool ecn = false;
  std::vector<uint32_t> thresholds{10, 100};
  void validate(const std::string& where) const {
    if (max_p > 0.5 && !ecn) throw ConfigError(where + ": max_p > 0.5 needs ecn");
  }
};
const ParamSchema<P> schema({
    param(&P::k_pkts, "k_pkts", "threshold, packets", {1, 1000}),
    param(&P::max_p, "max_p", "probability", {0, 1}),
    param(&P::ecn, "ecn", "mark instead of drop"),
    param(&P::thresholds, "thresholds", "list"),
});
ParamValues values(std::vector<std::pair<std::string, std::string>> kv) {
  ParamValues v;
  v.where = "exp.yaml: routers.tor";
  for (auto& [k, x] : kv) v.set(k, x);
  return v;
}
}  // namespace

TEST_CASE("params: defaults, parsing and resolved view", "[params]") {
  P p = schema.parse(values({}), "queue_manager 'x'");
  REQUIRE(p.k_pkts == 65);
  REQUIRE(schema.descs()[1].default_text == "0.1");
  p = schema.parse(values({{"k_pkts", "20"}, {"ecn", "true"}, {"max_p", "0.75"}, {"thresholds", "1, 2,3"}}), "qm");
  REQUIRE(p.k_pkts == 20);
  REQUIRE(p.ecn);
  REQUIRE(p.max_p == Approx(0.75));
  REQUIRE(p.thresholds == std::vector<uint32_t>{1, 2, 3});
  auto shown = schema.show(p);
  REQUIRE(shown[3] == std::make_pair(std::string("thresholds"), std::string("1,2,3")));
}

TEST_CASE("params: errors name the field, the value and the place", "[params][config-errors]") {
  using Catch::Matchers::Contains;
  REQUIRE_THROWS_WITH(schema.parse(values({{"k", "1"}}), "qm"),
                      Contains("exp.yaml: routers.tor") && Contains("unknown parameter 'k'") && Contains("k_pkts"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"k_pkts", "abc"}}), "qm"),
                      Contains("'k_pkts'") && Contains("'abc'") && Contains("uint32"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"k_pkts", "-3"}}), "qm"), Contains("cannot parse '-3'"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"k_pkts", "5000"}}), "qm"), Contains("outside [1, 1000]"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"max_p", "nan"}}), "qm"), Contains("'max_p'"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"ecn", "maybe"}}), "qm"), Contains("bool"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"thresholds", "1,x"}}), "qm"), Contains("list<uint32>"));
  REQUIRE_THROWS_WITH(schema.parse(values({{"max_p", "0.9"}}), "qm"), Contains("needs ecn"));
}

TEST_CASE("params: list shows each parameter's range", "[params]") {
  const auto& d = schema.descs();
  CHECK(param_range_text(d[0]) == "[1, 1000]");
  CHECK(param_range_text(d[1]) == "[0, 1]");
  CHECK(param_range_text(d[2]).empty());
  CHECK(param_range_text(param(&P::k_pkts, "k", "k", {0, 1 << 20})) == "[0, 1048576]");
  CHECK(param_range_text(param(&P::max_p, "p", "p", {0, 1e9})) == "[0, 1e+09]");
  CHECK(param_range_text(param(&P::max_p, "p", "p", {0.5})) == ">= 0.5");
  CHECK(param_list_line(d[0]) ==
        "k_pkts                uint32        default 65        [1, 1000]             threshold, packets");
  CHECK(param_list_line(d[2]) ==
        "ecn                   bool          default false     true|false            mark instead of drop");
}
