#include "emulator/workload/size_distribution.h"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "api/params.h"

using namespace flexplane;

namespace {

SizeDistribution parse_text(const std::string& text) {
  std::istringstream in(text);
  return SizeDistribution::parse(in, "t.cdf");
}

std::string error_of(const std::string& text) {
  try {
    parse_text(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kDataDir = std::string(FLEXPLANE_SOURCE_DIR) + "/experiments/data/flow-sizes/";

}  // namespace

TEST_CASE("size CDF: parses comments, point masses, and exact means", "[workload]") {
  // Half the flows are 1 packet; the rest uniform on (1, 3] packets, i.e.
  // after rounding up: 2 packets w.p. 1/4 and 3 packets w.p. 1/4.
  auto d = parse_text("# size_packets cdf\n\n1 0\n1 0.5   # point mass\n3 1\n");
  REQUIRE(d.knots().size() == 3);
  CHECK(d.mean_continuous_pkts() == Approx(0.5 * 1 + 0.5 * 2));
  CHECK(d.mean_pkts() == Approx(0.5 * 1 + 0.25 * 2 + 0.25 * 3));
  CHECK(d.max_pkts() == 3);
  CHECK(d.quantile(0.0) == 1);
  CHECK(d.quantile(0.49) == 1);
  CHECK(d.quantile(0.5) == 1);
  CHECK(d.quantile(0.6) == 2);   // 1.4 -> 2
  CHECK(d.quantile(0.75) == 2);  // exactly 2.0 stays 2
  CHECK(d.quantile(0.9) == 3);   // 2.6 -> 3
  CHECK(d.quantile(0.999999) == 3);

  // Fractional sizes below one packet still make one-packet flows.
  auto small = parse_text("0.2 0\n0.8 1\n");
  CHECK(small.mean_pkts() == Approx(1.0));
  CHECK(small.quantile(0.3) == 1);

  // Mean of ceil over a non-integer segment: uniform on [1.5, 3.5] -> 2 w.p. 1/4, 3 w.p. 1/2, 4 w.p. 1/4.
  auto frac = parse_text("1.5 0\n3.5 1\n");
  CHECK(frac.mean_pkts() == Approx(3.0));
  CHECK(frac.mean_continuous_pkts() == Approx(2.5));
}

TEST_CASE("size CDF: fixed size", "[workload]") {
  auto d = SizeDistribution::fixed(7);
  CHECK(d.mean_pkts() == 7);
  Rng rng(3);
  for (int i = 0; i < 1000; ++i) REQUIRE(d.sample(rng) == 7);
  CHECK_THROWS_AS(SizeDistribution::fixed(0), ConfigError);
}

TEST_CASE("size CDF: errors name the file and line", "[workload]") {
  CHECK_THAT(error_of("1 0\nabc 1\n"), Catch::Contains("t.cdf:2") && Catch::Contains("size_packets 'abc'"));
  CHECK_THAT(error_of("1 0\n2 x\n"), Catch::Contains("t.cdf:2") && Catch::Contains("cdf 'x'"));
  CHECK_THAT(error_of("1 0\n2 0.5 7\n3 1\n"), Catch::Contains("t.cdf:2") && Catch::Contains("3 fields"));
  CHECK_THAT(error_of("# c\n5 0\n4 0.5\n6 1\n"),
             Catch::Contains("t.cdf:3") && Catch::Contains("size_packets 4") && Catch::Contains("non-decreasing"));
  CHECK_THAT(error_of("1 0\n2 0.6\n3 0.5\n4 1\n"),
             Catch::Contains("t.cdf:3") && Catch::Contains("cdf 0.5") && Catch::Contains("non-decreasing"));
  CHECK_THAT(error_of("1 0.1\n2 1\n"), Catch::Contains("t.cdf:1") && Catch::Contains("first point must have cdf 0"));
  CHECK_THAT(error_of("1 0\n2 0.9\n"), Catch::Contains("t.cdf:2") && Catch::Contains("last point must have cdf 1"));
  CHECK_THAT(error_of("0 0\n2 1\n"), Catch::Contains("t.cdf:1") && Catch::Contains("must be > 0"));
  CHECK_THAT(error_of("-3 0\n2 1\n"), Catch::Contains("t.cdf:1") && Catch::Contains("size_packets -3"));
  CHECK_THAT(error_of("1 0\n2 1.5\n"), Catch::Contains("t.cdf:2") && Catch::Contains("in [0, 1]"));
  CHECK_THAT(error_of("1 0\n2 nan\n"), Catch::Contains("t.cdf:2") && Catch::Contains("not a number"));
  CHECK_THAT(error_of("# nothing\n"), Catch::Contains("t.cdf") && Catch::Contains("at least two"));
  CHECK_THAT(error_of("1 0\n"), Catch::Contains("at least two"));
  // Rounding error in the endpoints is tolerated and snapped.
  CHECK(parse_text("1 0\n2 0.9999999999\n").knots().back().cdf == 1.0);

  try {
    SizeDistribution::load("/nonexistent/x.cdf");
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("/nonexistent/x.cdf") && Catch::Contains("cannot open"));
  }
}

TEST_CASE("size CDF: the shipped distributions load and sample correctly", "[workload]") {
  for (const char* file : {"web-search.cdf", "data-mining.cdf"}) {
    DYNAMIC_SECTION(file) {
      const auto d = SizeDistribution::load(kDataDir + file);
      // README: web-search mean ~1.6 MB, data-mining ~7.5 MB (1460 B payload per packet).
      const double mean_mb = d.mean_pkts() * 1460 / 1e6;
      if (std::string(file) == "web-search.cdf") CHECK((mean_mb > 1.4 && mean_mb < 1.8));
      else CHECK((mean_mb > 6.5 && mean_mb < 8.5));
      CHECK(d.mean_pkts() >= d.mean_continuous_pkts());
      CHECK(d.mean_pkts() < d.mean_continuous_pkts() + 1);

      Rng rng(12345, 7);
      const int n = 200000;
      std::vector<uint32_t> samples(n);
      double sum = 0;
      for (auto& s : samples) {
        s = d.sample(rng);
        REQUIRE(s >= 1);
        REQUIRE(s <= d.max_pkts());
        sum += s;
      }
      // data-mining is very heavy-tailed (std ~8x the mean): the standard error of
      // 200k samples is ~2%, so allow 6%; web-search's is ~0.5%, allow 3%.
      const double tol = std::string(file) == "web-search.cdf" ? 0.03 : 0.06;
      CHECK(sum / n == Approx(d.mean_pkts()).epsilon(tol));

      // Empirical CDF at the (integer) knots matches the table: rounding up keeps
      // P(size <= s) = cdf(s) at integer s.
      const auto& knots = d.knots();
      for (size_t i = 0; i < knots.size(); ++i) {
        const auto& k = knots[i];
        // With a point mass (repeated size) P(size <= s) is the last knot's cdf.
        if (i + 1 < knots.size() && knots[i + 1].size_pkts == k.size_pkts) continue;
        const auto s = static_cast<uint32_t>(k.size_pkts);
        double le = 0;
        for (auto x : samples) le += x <= s;
        INFO("knot " << k.size_pkts << " cdf " << k.cdf);
        CHECK(le / n == Approx(k.cdf).margin(0.005));
      }
    }
  }
}
