#include "emulator/workload/workload.h"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "api/params.h"
#include "emulator/workload/flow_trace.h"
#include "emulator/workload/traffic_pattern.h"

using namespace flexplane;

namespace {

const std::string kSourceDir = FLEXPLANE_SOURCE_DIR;
const std::string kWebSearch = kSourceDir + "/experiments/data/flow-sizes/web-search.cdf";

WorkloadSpec poisson(const std::string& pattern, double load, Timeslot duration, uint64_t seed = 1) {
  WorkloadSpec s;
  s.pattern = pattern;
  s.load = load;
  s.size_cdf = kWebSearch;
  s.duration = duration;
  s.seed = seed;
  return s;
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
  const auto spec = poisson("all_to_all", load, 12'000'000);
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
  auto spec = poisson("permutation", 0.5, 2'000'000, 9);
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
  auto spec = poisson("incast", 0.4, 20'000'000, 3);
  spec.pattern_params.set("fan_in", std::to_string(fan_in));
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

  spec.pattern_params = ParamValues{};
  spec.pattern_params.set("fan_in", std::to_string(n));  // more senders than there are other endpoints
  CHECK_THROWS_WITH(generate_flows(spec, n), Catch::Contains("workload.fan_in") && Catch::Contains("'24'"));
}

TEST_CASE("workload: deterministic for a seed", "[workload]") {
  for (auto pattern : {"all_to_all", "permutation", "incast"}) {
    auto spec = poisson(pattern, 0.7, 500'000, 77);
    if (std::string(pattern) == "incast") spec.pattern_params.set("fan_in", "4");
    const auto a = generate_flows(spec, 16);
    const auto b = generate_flows(spec, 16);
    REQUIRE(a.size() > 100);
    CHECK(a == b);
    spec.seed = 78;
    CHECK(a != generate_flows(spec, 16));
  }
}

TEST_CASE("workload: generation errors", "[workload]") {
  auto spec = poisson("all_to_all", 0.5, 0);
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
  const std::string exp_dir = kSourceDir + "/experiments/configs";
  auto s = parse("{pattern: incast, load: 0.3, size_cdf: ../data/flow-sizes/web-search.cdf, fan_in: 5, "
                 "duration_timeslots: 1000, seed: 9, max_flows: 77}",
                 exp_dir);
  CHECK(s.kind == WorkloadKind::kPoisson);
  CHECK(s.pattern == "incast");
  CHECK(s.load == 0.3);
  CHECK(s.size_cdf == kWebSearch);  // resolved against base_dir and normalised
  REQUIRE(s.pattern_params.entries.size() == 1);  // the pattern's own parameter
  CHECK(s.pattern_params.entries[0] == std::pair<std::string, std::string>("fan_in", "5"));
  CHECK(s.duration == 1000);
  CHECK(s.seed == 9);
  CHECK(s.max_flows == 77);
  CHECK(s.where == "exp.yaml: workload");

  // Defaults; absolute paths are kept.
  auto d = parse("{size_cdf: " + kWebSearch + "}");
  CHECK(d.pattern == "all_to_all");
  CHECK(d.load == 0.5);
  CHECK(d.seed == 1);
  CHECK(d.duration == 0);
  CHECK(parse("{fixed_size_pkts: 4}").fixed_size_pkts == 4);

  // describe(): the resolved spec, only the keys that apply.
  const auto kv = describe(s);
  std::map<std::string, std::string> m(kv.begin(), kv.end());
  CHECK(kv.front().first == "kind");
  CHECK(m.at("kind") == "poisson");
  CHECK(m.at("pattern") == "incast");
  CHECK(m.at("load") == "0.3");
  CHECK(m.at("size_cdf") == kWebSearch);
  CHECK(m.at("fan_in") == "5");
  CHECK(m.at("duration_timeslots") == "1000");
  CHECK(m.at("seed") == "9");
  CHECK(m.count("fixed_size_pkts") == 0);
  CHECK(m.count("trace") == 0);
  YAML::Emitter out;
  describe(s, out);
  const YAML::Node back = YAML::Load(out.c_str());
  CHECK(back["pattern"].as<std::string>() == "incast");
  CHECK(back["load"].as<double>() == 0.3);

  // Errors name <where>.<key> and the value.
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, bogus: 1}"),
             Catch::Contains("exp.yaml: workload.bogus: unknown key 'bogus'") && Catch::Contains("known: kind"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, load: 1.5}"),
             Catch::Contains("exp.yaml: workload.load") && Catch::Contains("'1.5'"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, load: 0}"), Catch::Contains("workload.load") && Catch::Contains("'0'"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, load: high}"),
             Catch::Contains("workload.load: expected a number ('high')"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, pattern: ring}"),
             Catch::Contains("workload.pattern") && Catch::Contains("'ring'") && Catch::Contains("all_to_all"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, kind: replay}"),
             Catch::Contains("workload.kind") && Catch::Contains("'replay'"));
  CHECK_THAT(parse_error("{fixed_size_pkts: -4}"), Catch::Contains("workload.fixed_size_pkts") && Catch::Contains("'-4'"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 0}"), Catch::Contains("workload.fixed_size_pkts: must be >= 1"));
  CHECK_THAT(parse_error("{fixed_size_pkts: [1, 2]}"),
             Catch::Contains("workload.fixed_size_pkts: expected a single value"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, seed: x}"), Catch::Contains("workload.seed") && Catch::Contains("'x'"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, duration_timeslots: 0}"),
             Catch::Contains("workload.duration_timeslots: must be > 0"));
  CHECK_THAT(parse_error("{load: 0.5}"), Catch::Contains("exactly one of `size_cdf"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, size_cdf: " + kWebSearch + "}"), Catch::Contains("exactly one of"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, fan_in: 3}"),
             Catch::Contains("workload.fan_in: only applies with pattern: incast"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, pattern: incast}"), Catch::Contains("needs `fan_in"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, fan_in: 0, pattern: incast}"),
             Catch::Contains("exp.yaml: workload") && Catch::Contains("'fan_in'") && Catch::Contains("outside [1"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, fan_in: many, pattern: incast}"),
             Catch::Contains("'fan_in'") && Catch::Contains("'many'"));
  CHECK_THAT(parse_error("{fixed_size_pkts: 4, trace: t.csv}"),
             Catch::Contains("workload.trace: only applies with kind: trace"));
  CHECK_THAT(parse_error("{kind: trace}"), Catch::Contains("needs `trace:"));
  CHECK_THAT(parse_error("{kind: trace, trace: t.csv}"),
             Catch::Contains("workload.trace: cannot open '/cfg/t.csv'"));
  CHECK_THAT(parse_error("{kind: trace, trace: t.csv, load: 0.5}"),
             Catch::Contains("workload.load: only applies with kind: poisson"));
  CHECK_THAT(parse_error("{size_cdf: missing.cdf}"),
             Catch::Contains("workload.size_cdf") && Catch::Contains("/cfg/missing.cdf"));
  CHECK_THAT(parse_error("[1, 2]"), Catch::Contains("exp.yaml: workload: expected a mapping"));

  // A malformed CDF reports both the config key and the CDF's file:line.
  const auto dir = std::filesystem::temp_directory_path() / "flexplane_workload_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.cdf") << "1 0\n2 0.7\n3 0.6\n4 1\n";
  try {
    parse_workload(YAML::Load("{size_cdf: bad.cdf}"), "exp.yaml: workload", dir.string());
    FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("workload.size_cdf") && Catch::Contains("bad.cdf:3"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("workload: trace kind replays a written trace", "[workload]") {
  auto spec = poisson("all_to_all", 0.5, 300'000, 5);
  const auto flows = generate_flows(spec, 12);
  REQUIRE(flows.size() > 50);
  const auto dir = std::filesystem::temp_directory_path() / "flexplane_workload_trace_test";
  std::filesystem::create_directories(dir);
  write_flow_trace((dir / "flows.csv").string(), flows);

  auto t = parse_workload(YAML::Load("{kind: trace, trace: flows.csv, seed: 3}"), "w", dir.string());
  CHECK(t.kind == WorkloadKind::kTrace);
  CHECK(t.trace_path == (dir / "flows.csv").string());
  WorkloadStats st;
  CHECK(generate_flows(t, 12, &st) == flows);
  CHECK(st.num_flows == flows.size());
  const auto kv = describe(t);
  CHECK(kv.size() == 3);  // kind, trace, duration_timeslots

  // duration_timeslots keeps only the flows that start before it.
  t.duration = flows[flows.size() / 2].start;
  const auto cut = generate_flows(t, 12);
  REQUIRE(!cut.empty());
  CHECK(cut.size() <= flows.size() / 2);
  CHECK(cut.back().start < t.duration);
  CHECK(cut == FlowList(flows.begin(), flows.begin() + cut.size()));

  // Endpoints are validated against the topology.
  CHECK_THROWS_WITH(generate_flows(t, 4), Catch::Contains("flows.csv:") && Catch::Contains("not an endpoint"));
  std::filesystem::remove_all(dir);
}
