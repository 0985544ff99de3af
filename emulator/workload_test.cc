#include "emulator/workload.h"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "api/params.h"
#include "emulator/flow_trace.h"

using namespace flexplane;

namespace {

const std::string kSourceDir = FLEXPLANE_SOURCE_DIR;
const std::string kWebSearch = kSourceDir + "/experiments/data/flow-sizes/web-search.cdf";

WorkloadSpec poisson(TrafficPattern pattern, double load, Timeslot duration, uint64_t seed = 1) {
  WorkloadSpec s;
  s.pattern = pattern;
  s.load = load;
  s.size_cdf = kWebSearch;
  s.duration = duration;
  s.seed = seed;
  return s;
}

bool same(const FlowList& a, const FlowList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].id != b[i].id || a[i].src != b[i].src || a[i].dst != b[i].dst || a[i].size_pkts != b[i].size_pkts ||
        a[i].start != b[i].start)
      return false;
  return true;
}

void check_contract(const FlowList& flows, uint32_t n, Timeslot duration) {
  for (size_t i = 0; i < flows.size(); ++i) {
    const auto& f = flows[i];
    REQUIRE(f.id == i);
    REQUIRE(f.src < n);
    REQUIRE(f.dst < n);
    REQUIRE(f.src != f.dst);
    REQUIRE(f.size_pkts >= 1);
    REQUIRE(f.start < duration);
    if (i) REQUIRE(flows[i - 1].start <= f.start);
  }
}

WorkloadSpec parse(const std::string& yaml, const std::string& base_dir = "/cfg") {
  return parse_workload(YAML::Load(yaml), "exp.yaml: workload", base_dir);
}

std::string parse_error(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("workload: Poisson all-to-all offers the target load", "[workload]") {
  const uint32_t n = 16;
  const double load = 0.6;
  // ~1100-packet mean flows: lambda ~ 0.0087 flows/timeslot, ~100k flows.
  const auto spec = poisson(TrafficPattern::kAllToAll, load, 12'000'000);
  WorkloadStats st;
  const auto flows = generate_flows(spec, n, &st);
  check_contract(flows, n, spec.duration);
  CHECK(st.num_flows == flows.size());
  CHECK(st.flows_per_timeslot == Approx(load * n / st.mean_size_pkts));
  CHECK(flows.size() == Approx(st.flows_per_timeslot * spec.duration).epsilon(0.02));

  double total = 0;
  for (const auto& f : flows) total += f.size_pkts;
  const double offered = total / (double(n) * spec.duration);
  CHECK(offered == Approx(load).epsilon(0.03));
  CHECK(st.offered_load == Approx(offered));
  CHECK(st.total_pkts == uint64_t(total));

  // Sources and destinations roughly uniform; every ordered pair used.
  std::vector<double> src(n), dst(n);
  std::set<std::pair<int, int>> pairs;
  for (const auto& f : flows) {
    ++src[f.src];
    ++dst[f.dst];
    pairs.insert({f.src, f.dst});
  }
  const double expect = double(flows.size()) / n;
  for (uint32_t i = 0; i < n; ++i) {
    CHECK(src[i] == Approx(expect).epsilon(0.05));
    CHECK(dst[i] == Approx(expect).epsilon(0.05));
  }
  CHECK(pairs.size() == n * (n - 1));
}

TEST_CASE("workload: Poisson inter-arrival times are exponential (CV ~ 1)", "[workload]") {
  WorkloadSpec spec;
  spec.fixed_size_pkts = 100;
  spec.load = 0.5;
  spec.duration = 2'500'000;  // lambda = 0.5 * 8 / 100 = 0.04/timeslot: ~100k flows, mean gap 25 timeslots
  spec.seed = 42;
  const auto flows = generate_flows(spec, 8);
  REQUIRE(flows.size() > 90000);
  double sum = 0, sum2 = 0;
  for (size_t i = 1; i < flows.size(); ++i) {
    const double gap = double(flows[i].start - flows[i - 1].start);
    sum += gap;
    sum2 += gap * gap;
  }
  const double m = sum / (flows.size() - 1);
  const double var = sum2 / (flows.size() - 1) - m * m;
  CHECK(m == Approx(25.0).epsilon(0.02));
  CHECK(std::sqrt(var) / m == Approx(1.0).epsilon(0.03));
  // Fixed sizes: offered load is exactly count * size.
  CHECK(flows.size() * 100.0 / (8.0 * spec.duration) == Approx(0.5).epsilon(0.02));
}

TEST_CASE("workload: permutation is a fixed derangement", "[workload]") {
  const uint32_t n = 32;
  auto spec = poisson(TrafficPattern::kPermutation, 0.5, 2'000'000, 9);
  WorkloadStats st;
  const auto flows = generate_flows(spec, n, &st);
  check_contract(flows, n, spec.duration);
  REQUIRE(st.permutation.size() == n);
  std::set<int> image;
  for (uint32_t i = 0; i < n; ++i) {
    CHECK(st.permutation[i] != i);
    image.insert(st.permutation[i]);
  }
  CHECK(image.size() == n);
  std::set<int> senders;
  for (const auto& f : flows) {
    REQUIRE(f.dst == st.permutation[f.src]);
    senders.insert(f.src);
  }
  CHECK(senders.size() == n);

  // The permutation is a function of the seed only (not of load or sizes).
  WorkloadStats st2;
  spec.load = 0.2;
  spec.size_cdf.clear();
  spec.fixed_size_pkts = 10;
  generate_flows(spec, n, &st2);
  CHECK(st2.permutation == st.permutation);
  spec.seed = 10;
  generate_flows(spec, n, &st2);
  CHECK(st2.permutation != st.permutation);

  // Uniform over derangements: for n = 3 both (1 2 0) and (2 0 1) occur; n = 2 has one.
  Rng rng(5);
  std::set<std::vector<EndpointId>> seen;
  for (int i = 0; i < 100; ++i) seen.insert(random_derangement(3, rng));
  CHECK(seen.size() == 2);
  CHECK(random_derangement(2, rng) == std::vector<EndpointId>{1, 0});
  CHECK_THROWS_AS(random_derangement(1, rng), ConfigError);
}

TEST_CASE("workload: incast events have fan_in distinct senders and one receiver", "[workload]") {
  const uint32_t n = 24, fan_in = 8;
  auto spec = poisson(TrafficPattern::kIncast, 0.4, 20'000'000, 3);
  spec.fan_in = fan_in;
  WorkloadStats st;
  const auto flows = generate_flows(spec, n, &st);
  check_contract(flows, n, spec.duration);
  REQUIRE(flows.size() % fan_in == 0);
  REQUIRE(flows.size() > 1000 * fan_in);
  std::vector<double> receivers(n);
  for (size_t e = 0; e < flows.size(); e += fan_in) {
    std::set<int> senders;
    for (size_t i = e; i < e + fan_in; ++i) {
      REQUIRE(flows[i].start == flows[e].start);
      REQUIRE(flows[i].dst == flows[e].dst);
      senders.insert(flows[i].src);
    }
    REQUIRE(senders.size() == fan_in);
    REQUIRE(senders.count(flows[e].dst) == 0);
    ++receivers[flows[e].dst];
  }
  // Receivers uniform (~ 1000+ events / 24 -> within 20%).
  const double per = double(flows.size() / fan_in) / n;
  for (auto r : receivers) CHECK(r == Approx(per).epsilon(0.2));
  // Average load offered per sender is still `load`.
  CHECK(st.offered_load == Approx(0.4).epsilon(0.05));

  spec.fan_in = n;  // more senders than there are other endpoints
  CHECK_THROWS_WITH(generate_flows(spec, n), Catch::Contains("workload.fan_in") && Catch::Contains("'24'"));
}

TEST_CASE("workload: deterministic for a seed", "[workload]") {
  for (auto pattern : {TrafficPattern::kAllToAll, TrafficPattern::kPermutation, TrafficPattern::kIncast}) {
    auto spec = poisson(pattern, 0.7, 500'000, 77);
    spec.fan_in = 4;
    const auto a = generate_flows(spec, 16);
    const auto b = generate_flows(spec, 16);
    REQUIRE(a.size() > 100);
    CHECK(same(a, b));
    spec.seed = 78;
    CHECK(!same(a, generate_flows(spec, 16)));
  }
}

TEST_CASE("workload: generation errors", "[workload]") {
  auto spec = poisson(TrafficPattern::kAllToAll, 0.5, 0);
  CHECK_THROWS_WITH(generate_flows(spec, 8), Catch::Contains("workload.duration_timeslots"));
  spec.duration = 1'000'000'000;
  spec.max_flows = 1000;
  CHECK_THROWS_WITH(generate_flows(spec, 8), Catch::Contains("workload.max_flows") && Catch::Contains("1000"));
  spec.max_flows = 1'000'000;
  CHECK_THROWS_WITH(generate_flows(spec, 1), Catch::Contains("endpoints"));
  spec.size_cdf.clear();
  CHECK_THROWS_WITH(generate_flows(spec, 8), Catch::Contains("size_cdf"));
}

TEST_CASE("workload: YAML parsing is strict and resolves paths", "[workload]") {
  auto s = parse("{pattern: incast, load: 0.3, size_cdf: ../data/ws.cdf, fan_in: 5, duration_timeslots: 1000, "
                 "seed: 9, max_flows: 77}",
                 "");
  // (base_dir "" leaves relative paths as written; the CDF does not exist, so use a real one below)
  (void)s;
}
