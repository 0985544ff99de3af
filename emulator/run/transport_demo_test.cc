// The built-in comparison (experiments/configs/scheduler_comparison.yaml) runs closed loop:
// a shortened copy of it, through the real config and run path.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "emulator/config/config.h"
#include "emulator/run/run.h"

using namespace flexplane;
namespace fs = std::filesystem;

namespace {
// Median of the non-empty samples of the port with the largest total occupancy.
uint32_t busiest_port_median(const fs::path& occupancy_csv) {
  std::ifstream in(occupancy_csv);
  std::string line;
  std::getline(in, line);  // timeslot,time_us,router,port,packets,bytes
  std::map<std::string, std::vector<uint32_t>> by_port;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string ts, us, router, port, packets;
    std::getline(ss, ts, ',');
    std::getline(ss, us, ',');
    std::getline(ss, router, ',');
    std::getline(ss, port, ',');
    std::getline(ss, packets, ',');
    by_port[router + ":" + port].push_back(static_cast<uint32_t>(std::stoul(packets)));
  }
  const std::vector<uint32_t>* best = nullptr;
  uint64_t best_sum = 0;
  for (const auto& [name, v] : by_port) {
    uint64_t sum = 0;
    for (uint32_t x : v) sum += x;
    if (!best || sum > best_sum) best = &v, best_sum = sum;
  }
  REQUIRE(best);
  std::vector<uint32_t> busy;
  for (uint32_t x : *best)
    if (x) busy.push_back(x);
  REQUIRE(!busy.empty());
  std::sort(busy.begin(), busy.end());
  return busy[busy.size() / 2];
}
}  // namespace

TEST_CASE("the built-in comparison with DCTCP senders: every flow finishes; DropTail >> RED-ECN > DCTCP queues",
          "[outputs][transports]") {
  YAML::Node root = YAML::LoadFile(FLEXPLANE_SOURCE_DIR "/experiments/configs/scheduler_comparison.yaml");
  REQUIRE(root["transport"]["kind"].as<std::string>() == "dctcp");
  root["run"]["duration_ms"] = 40;
  root["run"]["drain_ms"] = 40;
  root["run"]["cores"] = 1;
  root["output"]["occupancy"] = "csv";  // read below as text
  root["topology"]["file"] = FLEXPLANE_SOURCE_DIR "/topologies/leaf_spine_2x16.yaml";
  root["workload"]["size_cdf"] = FLEXPLANE_SOURCE_DIR "/experiments/data/flow-sizes/web-search.cdf";
  YAML::Node keep;
  for (const char* v : {"fifo_droptail", "red_ecn", "dctcp"}) keep[v] = root["variants"][v];
  root["variants"] = keep;
  const fs::path dir = fs::temp_directory_path() / ("flexplane_transport_demo." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  { std::ofstream(dir / "demo.yaml") << YAML::Dump(root) << "\n"; }
  Experiment e = load_experiment((dir / "demo.yaml").string());
  REQUIRE(e.runs.size() == 3);
  std::map<std::string, uint32_t> median;
  for (RunConfig& run : e.runs) {
    INFO("variant " << run.variant);
    run.output_dir = (dir / run.variant).string();
    const RunSummary s = execute_run(run);
    REQUIRE(s.flows > 50);
    REQUIRE(s.finished == s.flows);  // closed loop: marks slow senders, losses are resent
    median[run.variant] = busiest_port_median(dir / run.variant / "occupancy.csv");
  }
  INFO("medians: droptail " << median["fifo_droptail"] << ", red_ecn " << median["red_ecn"] << ", dctcp "
                            << median["dctcp"]);
  CHECK(median["fifo_droptail"] > 2 * median["red_ecn"]);
  CHECK(median["red_ecn"] > median["dctcp"]);
  fs::remove_all(dir);
}
