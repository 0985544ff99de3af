// experiments/configs/fq_codel_isolation.yaml: four short flows into a port that two elephants
// overload, under FIFO DropTail, CoDel and FQ-CoDel (virtual time, the real run path).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "emulator/config/config.h"
#include "emulator/run/run.h"

using namespace flexplane;
namespace fs = std::filesystem;

namespace {
// flows.csv as (flow id -> column -> text).
std::map<uint32_t, std::map<std::string, std::string>> read_flows(const fs::path& path) {
  std::ifstream in(path);
  std::string line, cell;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, cell, ',');) header.push_back(cell);
  std::map<uint32_t, std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    size_t i = 0;
    std::stringstream ss(line);
    while (std::getline(ss, cell, ',')) row[header.at(i++)] = cell;
    rows[std::stoul(row.at("flow_id"))] = row;
  }
  return rows;
}
}  // namespace

TEST_CASE("fq_codel isolates short flows from elephants; FIFO and CoDel do not", "[outputs][fq_codel]") {
  Experiment e = load_experiment(FLEXPLANE_SOURCE_DIR "/experiments/configs/fq_codel_isolation.yaml");
  REQUIRE(e.runs.size() == 3);
  const fs::path out = fs::temp_directory_path() / "flexplane_fq_codel_isolation";
  fs::remove_all(out);
  for (RunConfig& run : e.runs) {
    INFO("variant " << run.variant);
    run.output_dir = (out / run.variant).string();
    execute_run(run);
    const auto flows = read_flows(out / run.variant / "flows.csv");
    REQUIRE(flows.size() == 6);
    for (uint32_t f = 2; f <= 5; ++f) {  // the short flows (20 packets, 2 links of 1 timeslot: ideal 22)
      INFO("flow " << f);
      const auto& row = flows.at(f);
      if (run.variant == "fq_codel") {
        // A new queue is served at once and then gets one packet in three (DRR with the two
        // elephants): all 20 packets are out within 3 x 20 timeslots, + 2 of path.
        REQUIRE(row.at("finished") == "1");
        REQUIRE(row.at("lost_pkts") == "0");
        CHECK(std::stod(row.at("network_slowdown")) <= 62.0 / 22.0);
      } else {
        REQUIRE(row.at("finished") == "0");  // FIFO: full queue; CoDel: drops whoever is at the head
        REQUIRE(std::stoul(row.at("lost_pkts")) > 0);
      }
    }
  }
  fs::remove_all(out);
}
