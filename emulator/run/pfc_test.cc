// Lossless Ethernet end to end (api/pfc.h; experiments/configs/pfc_incast.yaml):
// an incast that overflows DropTail drops nothing with PFC, pauses reach the
// senders' NICs, a victim flow to another destination is stalled by the
// pauses (congestion spreading), and the outputs do not depend on cores or
// lookahead. The router side is schemes/pfc_test.cc.
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

using Rows = std::vector<std::map<std::string, std::string>>;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Rows read_csv(const fs::path& p) {
  std::stringstream lines(slurp(p));
  std::string line, cell;
  std::getline(lines, line);
  std::vector<std::string> head;
  for (std::stringstream ss(line); std::getline(ss, cell, ',');) head.push_back(cell);
  Rows rows;
  while (std::getline(lines, line)) {
    std::map<std::string, std::string> r;
    std::stringstream ss(line);
    for (const auto& h : head) {
      std::getline(ss, cell, ',');
      r[h] = cell;
    }
    rows.push_back(r);
  }
  return rows;
}

uint64_t num(const std::map<std::string, std::string>& r, const char* k) { return std::stoull(r.at(k)); }

struct Result {
  RunSummary summary;
  fs::path dir;
};

Result run(RunConfig c, const std::string& tag, uint32_t cores = 1, bool lookahead = true) {
  c.cores = cores;
  c.lookahead = lookahead;
  Result r;
  r.dir = fs::temp_directory_path() / "flexplane_pfc" / (c.variant + tag);
  fs::remove_all(r.dir);
  c.output_dir = r.dir.string();
  r.summary = execute_run(c);
  return r;
}

}  // namespace

TEST_CASE("pfc: an incast that overflows DropTail is lossless with PFC, and stalls a victim flow", "[pfc][outputs]") {
  Experiment e = load_experiment(FLEXPLANE_SOURCE_DIR "/experiments/configs/pfc_incast.yaml");
  std::map<std::string, Result> res;
  for (const RunConfig& c : e.runs) res[c.variant] = run(c, "");
  REQUIRE(res.size() == 3);

  const Result& lossy = res.at("lossy");
  CHECK(lossy.summary.drops > 100);
  CHECK(lossy.summary.pfc.routers == 0);
  CHECK_FALSE(fs::exists(lossy.dir / "pfc.csv"));

  for (const char* v : {"pfc", "pfc_dynamic"}) {
    INFO("variant " << v);
    const Result& r = res.at(v);
    CHECK(r.summary.finished == 9);
    CHECK(r.summary.drops == 0);
    CHECK(r.summary.pfc.routers == 20);
    CHECK(r.summary.pfc.headroom_overruns == 0);
    uint64_t to_hosts = 0, from_receiver_tor = 0, core_paused = 0;
    for (const auto& row : read_csv(r.dir / "pfc.csv")) {
      CHECK(num(row, "headroom_overruns") == 0);
      CHECK(num(row, "pauses_sent") == num(row, "resumes_sent"));  // all resumed by the end
      if (row.at("neighbour").rfind("host", 0) == 0) to_hosts += num(row, "pauses_sent");
      if (row.at("router") == "edge0_0") from_receiver_tor += num(row, "pauses_sent");
      if (row.at("router").rfind("core", 0) == 0) core_paused += num(row, "pauses_received");
    }
    CHECK(from_receiver_tor > 0);  // the congested ToR pauses its aggregation switches ...
    CHECK(core_paused > 0);        // ... the pauses climb to the cores ...
    CHECK(to_hosts > 0);           // ... and down to the senders' NICs
    for (const auto& row : read_csv(r.dir / "flows.csv")) CHECK(num(row, "retransmits") == 0);
  }

  // The victim (flow 8: host 12 -> host 2, whose ToR is not congested)
  // crosses a core and an aggregation switch that the pauses stop.
  auto victim_fct = [&](const Result& r) {
    for (const auto& row : read_csv(r.dir / "flows.csv"))
      if (row.at("flow_id") == "8") return std::stod(row.at("fct_us"));
    FAIL("no victim flow");
    return 0.0;
  };
  const double ideal = 1000 * 0.12;  // 1,000 packets at one per 0.12 us timeslot
  CHECK(victim_fct(res.at("pfc")) > 1.3 * victim_fct(lossy));
  CHECK(victim_fct(res.at("pfc")) > 4 * ideal);
}

TEST_CASE("pfc: open-loop endpoints hold their NICs too: no drops without a transport", "[pfc][outputs]") {
  Experiment e = load_experiment(FLEXPLANE_SOURCE_DIR "/experiments/configs/pfc_incast.yaml");
  std::map<std::string, Result> res;
  for (RunConfig c : e.runs) {
    if (c.variant == "pfc_dynamic") continue;
    c.transport.enabled = false;  // packets at line rate, never resent
    res[c.variant] = run(c, "-open");
  }
  CHECK(res.at("lossy").summary.drops > 1000);
  CHECK(res.at("lossy").summary.unfinished_lost > 0);
  const Result& pfc = res.at("pfc");
  CHECK(pfc.summary.drops == 0);
  CHECK(pfc.summary.finished == 9);
  uint64_t to_hosts = 0;
  for (const auto& row : read_csv(pfc.dir / "pfc.csv"))
    if (row.at("neighbour").rfind("host", 0) == 0) to_hosts += num(row, "pauses_sent");
  CHECK(to_hosts > 0);
}

TEST_CASE("pfc: outputs are identical on 1, 2 and 4 cores, with and without lookahead", "[pfc][engine]") {
  Experiment e = load_experiment(FLEXPLANE_SOURCE_DIR "/experiments/configs/pfc_incast.yaml");
  for (const RunConfig& c : e.runs) {
    if (c.variant == "lossy") continue;
    INFO("variant " << c.variant);
    const Result one = run(c, "-1");
    for (auto [cores, lookahead] : {std::pair{2u, true}, std::pair{4u, true}, std::pair{4u, false}}) {
      INFO(cores << " cores, lookahead " << lookahead);
      const Result n = run(c, "-" + std::to_string(cores) + (lookahead ? "" : "-nolook"), cores, lookahead);
      CHECK(slurp(n.dir / "flows.csv") == slurp(one.dir / "flows.csv"));
      CHECK(slurp(n.dir / "pfc.csv") == slurp(one.dir / "pfc.csv"));
      CHECK(slurp(n.dir / "counters.csv") == slurp(one.dir / "counters.csv"));
    }
  }
}
