// experiments/configs/load_balancing_permutation.yaml: a permutation of long DCTCP flows on a
// k = 8 fat tree under ECMP and packet spraying (virtual time, the real run path).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "emulator/config/config.h"
#include "emulator/run/run.h"

using namespace flexplane;
namespace fs = std::filesystem;

namespace {

struct PermutationResult {
  std::vector<double> gbps;  // per finished flow, ascending
  uint64_t unfinished = 0, retransmits = 0, lost = 0;
  std::string flows_csv;     // the whole file, for determinism checks
};

PermutationResult read_result(const fs::path& dir) {
  std::ifstream in(dir / "flows.csv");
  std::stringstream all;
  all << in.rdbuf();
  PermutationResult r;
  r.flows_csv = all.str();
  std::stringstream lines(r.flows_csv);
  std::string line, cell;
  std::getline(lines, line);
  std::map<std::string, size_t> col;
  {
    std::stringstream ss(line);
    for (size_t i = 0; std::getline(ss, cell, ','); ++i) col[cell] = i;
  }
  while (std::getline(lines, line)) {
    std::vector<std::string> c;
    for (std::stringstream ss(line); std::getline(ss, cell, ',');) c.push_back(cell);
    c.resize(col.size());
    if (c[col.at("finished")] != "1") {
      ++r.unfinished;
      continue;
    }
    r.gbps.push_back(std::stod(c[col.at("size_bytes")]) * 8 / std::stod(c[col.at("fct_us")]) / 1e3);
    r.retransmits += std::stoull(c[col.at("retransmits")]);
    r.lost += std::stoull(c[col.at("lost_pkts")]);
  }
  std::sort(r.gbps.begin(), r.gbps.end());
  return r;
}

}  // namespace

TEST_CASE("load balancing: spraying with reordering-tolerant senders runs a permutation near line rate",
          "[outputs][load_balancer]") {
  Experiment e = load_experiment(FLEXPLANE_SOURCE_DIR "/experiments/configs/load_balancing_permutation.yaml");
  const fs::path out = fs::temp_directory_path() / "flexplane_load_balancing";
  fs::remove_all(out);
  std::map<std::string, PermutationResult> res;
  for (RunConfig& run : e.runs) {
    if (run.variant != "ecmp" && run.variant.rfind("spray", 0) != 0) continue;
    run.output_dir = (out / run.variant).string();
    execute_run(run);
    res[run.variant] = read_result(out / run.variant);
  }
  REQUIRE(res.size() == 5);
  for (const auto& [variant, r] : res) {
    INFO("variant " << variant);
    REQUIRE(r.gbps.size() == 128);  // every flow finished
    CHECK(r.lost == 0);             // DCTCP's marks keep the 256-packet queues from overflowing
    CHECK(r.gbps.back() < 10.0);    // no flow faster than its access link
  }
  const PermutationResult &ecmp = res["ecmp"], &spray = res["spray"], &tolerant = res["spray_tolerant"];
  // ECMP: hash collisions put at least two flows on one link (half rate or less).
  CHECK(ecmp.gbps.front() < 5.1);
  CHECK(ecmp.retransmits == 0);
  // Spraying with the default dupack threshold of 3: nothing was lost, yet the reordering made
  // the senders retransmit (spuriously) and halve their windows.
  CHECK(spray.retransmits > 1000);
  CHECK(spray.gbps[64] < 7.0);
  // With a threshold of 50 the reordering is tolerated: every flow near line rate, far above
  // ECMP's collided flows.
  CHECK(tolerant.gbps.front() > 8.0);
  CHECK(tolerant.gbps.front() > 1.5 * ecmp.gbps.front());
  CHECK(tolerant.retransmits < 100);
  // SACK recovery at a fixed threshold of 3 fares no better; learning the reordering from
  // SACKs and D-SACKs (max_reordering_pkts) removes nearly all spurious retransmissions and
  // brings every flow close to the fixed threshold of 50 (the first reorderings are still
  // taken for losses: no undo).
  const PermutationResult &sack = res["spray_sack"], &learning = res["spray_learning"];
  CHECK(sack.retransmits > 1000);
  CHECK(learning.retransmits < sack.retransmits / 5);
  CHECK(learning.retransmits > 0);
  CHECK(learning.gbps[64] > sack.gbps[64] + 2.0);
  CHECK(learning.gbps.front() > 1.5 * ecmp.gbps.front());
}

TEST_CASE("load balancing: sprayed runs are the same on 1 and 3 cores", "[outputs][load_balancer][determinism]") {
  Experiment e = load_experiment(FLEXPLANE_SOURCE_DIR "/experiments/configs/load_balancing_permutation.yaml");
  const fs::path out = fs::temp_directory_path() / "flexplane_load_balancing_cores";
  fs::remove_all(out);
  for (const char* variant : {"spray", "round_robin", "flowlet", "least_queue", "spray_learning"}) {
    INFO("variant " << variant);
    std::string first;
    for (uint32_t cores : {1u, 3u}) {
      RunConfig run;
      for (const RunConfig& r : e.runs)
        if (r.variant == variant) run = r;
      REQUIRE(run.variant == variant);
      run.cores = cores;
      run.output_dir = (out / (std::string(variant) + std::to_string(cores))).string();
      execute_run(run);
      const std::string flows = read_result(run.output_dir).flows_csv;
      REQUIRE(flows.size() > 1000);
      if (first.empty())
        first = flows;
      else
        CHECK(flows == first);
    }
  }
}
