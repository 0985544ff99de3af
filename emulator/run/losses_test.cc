// Every kind of loss outside a queue reaches the outputs (losses.csv, metadata.yaml's
// results.losses, packets.csv): link collisions, sends on unconnected ports, packets sent to the
// wrong endpoint, packets arriving where no flow expects them, classifier results out of range,
// destinations without a route.
// Each scenario runs a config end to end with a component registered here for the purpose.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "api/registry.h"
#include "emulator/config/config.h"
#include "emulator/run/run.h"
#include "emulator/topology/topology.h"

using namespace flexplane;
namespace fs = std::filesystem;

namespace {

// A generic router holding a timeslot's arrivals and sending each on `port_of(p)` next
// timeslot, plus whatever `extra` adds.
class HoldingRouter : public Router, public WithParams<NoParams> {
 public:
  void bind(const RouterEnv& env) override {
    bank_.reset(env.num_ports, 1, 16);
    ports_ = env.num_ports;
  }
  void input(Packet* pkts, uint32_t n, Timeslot) override { held_.insert(held_.end(), pkts, pkts + n); }
  uint32_t output(Timeslot, Packet* out, PortId* out_ports) override {
    uint32_t m = 0;
    for (const Packet& p : held_) {
      out[m] = p;
      out_ports[m++] = port_of(p);
    }
    held_.clear();
    return m;
  }
  const QueueBank& bank() const override { return bank_; }
  const RouterLosses& losses() const override { return losses_; }

 protected:
  virtual PortId port_of(const Packet& p) const = 0;
  uint16_t ports_ = 0;
  std::vector<Packet> held_;

 private:
  QueueBank bank_;
  RouterLosses losses_;
};

// Sends every packet to endpoint 2's port: one link collision per extra packet in a
// timeslot, and packets for other endpoints delivered where no flow expects them.
class AllToPortTwo final : public HoldingRouter {
  PortId port_of(const Packet&) const override { return 2; }
};
// Sends packets of odd flows on a port the router does not have.
class OddFlowsNowhere final : public HoldingRouter {
  PortId port_of(const Packet& p) const override { return p.flow % 2 ? PortId{99} : p.dst; }
};
// Sends every packet where it belongs, twice (in two timeslots): the second copy arrives
// after its flow already has all its packets.
class Duplicating final : public HoldingRouter {
  uint32_t output(Timeslot, Packet* out, PortId* out_ports) override {
    if (held_.empty()) return 0;
    out[0] = held_.front();
    out_ports[0] = port_of(held_.front());
    if (++copies_ == 2) {
      held_.erase(held_.begin());
      copies_ = 0;
    }
    return 1;
  }
  PortId port_of(const Packet& p) const override { return p.dst; }  // single rack: port = endpoint
  int copies_ = 0;
};
// A classifier that picks queue 5 of a one-queue port for every packet of flow 0.
class QueueFiveForFlowZero final : public Classifier<QueueFiveForFlowZero, NoParams> {
 public:
  QueueId classify(const Packet& p, PortId) { return p.flow == 0 ? 5 : 0; }
};
// A single rack of 4 whose ToR has no route to endpoint 3.
class RackWithoutRouteToThree final : public TopologyKindOf<NoParams> {
 public:
  Topology build() const override {
    Topology t = make_single_rack(4, 1);
    RoutingTable routes(4, 0);
    for (EndpointId e = 0; e < 3; ++e) routes.set(e, {e});
    t.routers[0].routes = routes;
    return t;
  }
};

FLEXPLANE_REGISTER_ROUTER(AllToPortTwo, "test_all_to_port_two", "test: every packet to port 2");
FLEXPLANE_REGISTER_ROUTER(Duplicating, "test_duplicating", "test: every packet twice");
FLEXPLANE_REGISTER_ROUTER(OddFlowsNowhere, "test_odd_flows_nowhere", "test: odd flows to port 99");
FLEXPLANE_REGISTER_CLASSIFIER(QueueFiveForFlowZero, "test_queue_five_for_flow_zero", "test: flow 0 to queue 5");
FLEXPLANE_REGISTER_TOPOLOGY(RackWithoutRouteToThree, "test_no_route_to_three", "test: no route to endpoint 3");

struct Outcome {
  std::map<std::string, uint64_t> losses;          // losses.csv summed over `where`
  std::map<std::string, uint64_t> meta_losses;     // metadata.yaml results.losses
  std::map<std::string, uint64_t> dropped_packets;  // packets.csv drops by reason
  RunSummary summary;
};

// Flows (src, dst, size) all starting at timeslot 0, on `topology`, with `routers`.
Outcome run(const std::string& name, const std::string& topology, const std::string& routers,
            const std::vector<std::array<uint32_t, 3>>& flows) {
  const fs::path dir = fs::temp_directory_path() / ("flexplane_losses_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream trace(dir / "flows.csv");
    trace << "flow_id,src,dst,size_pkts,start_timeslot\n";
    for (size_t i = 0; i < flows.size(); ++i)
      trace << i << ',' << flows[i][0] << ',' << flows[i][1] << ',' << flows[i][2] << ",0\n";
    std::ofstream cfg(dir / "exp.yaml");
    cfg << "topology: " << topology << "\nrouters: " << routers
        << "\nworkload: {kind: trace, trace: flows.csv}\nrun: {duration_ms: 0.01, drain_ms: 0.05, packet_log: true}\n"
        << "output: {dir: " << (dir / "out").string() << "}\n";
  }
  Experiment e = load_experiment((dir / "exp.yaml").string());
  Outcome o;
  o.summary = execute_run(e.runs.at(0));
  std::ifstream losses(dir / "out" / "losses.csv");
  std::string line;
  std::getline(losses, line);
  REQUIRE(line == "where,kind,packets");
  while (std::getline(losses, line)) {
    const size_t a = line.find(','), b = line.rfind(',');
    o.losses[line.substr(a + 1, b - a - 1)] += std::stoull(line.substr(b + 1));
  }
  const YAML::Node meta = YAML::LoadFile((dir / "out" / "metadata.yaml").string());
  for (const auto& kv : meta["results"]["losses"]) o.meta_losses[kv.first.as<std::string>()] = kv.second.as<uint64_t>();
  std::ifstream packets(dir / "out" / "packets.csv");
  std::getline(packets, line);
  while (std::getline(packets, line))
    if (line.find(",dropped,") != std::string::npos) ++o.dropped_packets[line.substr(line.rfind(',', line.size() - 2) + 1, line.size() - line.rfind(',', line.size() - 2) - 2)];
  fs::remove_all(dir);
  return o;
}

void require_only(const Outcome& o, const std::string& kind, uint64_t n) {
  for (const auto& [k, v] : o.losses) {
    INFO("losses.csv " << k);
    REQUIRE(v == (k == kind ? n : 0));
    REQUIRE(o.meta_losses.at(k) == v);
  }
  REQUIRE(o.losses.count(kind) == 1);
  REQUIRE(o.summary.losses.total() == n);
}

}  // namespace

TEST_CASE("losses: link collisions and packets delivered where no flow expects them", "[outputs][losses]") {
  // Flows 0 -> 2 and 1 -> 3, one packet each, arrive at the ToR together: both are sent on
  // port 2, so the second collides; the first (flow 0, for endpoint 2) is delivered. Flow 2,
  // 3 -> 1 alone, is delivered at endpoint 2: misdelivered.
  const Outcome a = run("collide", "{kind: single_rack, endpoints: 4}", "{default: {router: test_all_to_port_two}}",
                        {{0, 2, 1}, {1, 3, 1}});
  require_only(a, "link_collision", 1);
  REQUIRE(a.dropped_packets.at("link_collision") == 1);
  REQUIRE(a.summary.finished == 1);
  REQUIRE(a.summary.unfinished_lost == 1);  // counted as lost, not "still in flight"
  const Outcome b = run("misdeliver", "{kind: single_rack, endpoints: 4}", "{default: {router: test_all_to_port_two}}",
                        {{3, 1, 2}});
  require_only(b, "misdelivered", 2);
  REQUIRE(b.dropped_packets.at("misdelivered") == 2);
  REQUIRE(b.summary.finished == 0);
}

TEST_CASE("losses: packets arriving after their flow has all its packets", "[outputs][losses]") {
  // Every packet is delivered twice: flow 0 (3 packets) finishes, and its 3 second copies arrive
  // where no flow expects them. They are not drops: packets.csv has none.
  const Outcome o = run("duplicate", "{kind: single_rack, endpoints: 4}", "{default: {router: test_duplicating}}",
                        {{0, 1, 3}});
  require_only(o, "unexpected_arrivals", 3);
  REQUIRE(o.dropped_packets.empty());
  REQUIRE(o.summary.finished == 1);
}

TEST_CASE("losses: a router sending on a port it does not have", "[outputs][losses]") {
  const Outcome o = run("nolink", "{kind: single_rack, endpoints: 4}", "{default: {router: test_odd_flows_nowhere}}",
                        {{0, 1, 3}, {2, 3, 2}});
  require_only(o, "no_link", 2);  // flow 1's two packets
  REQUIRE(o.dropped_packets.at("no_link") == 2);
  REQUIRE(o.summary.finished == 1);
}

TEST_CASE("losses: a classifier choosing a queue the port does not have", "[outputs][losses]") {
  const Outcome o = run("classifier", "{kind: single_rack, endpoints: 4}",
                        "{default: {classifier: test_queue_five_for_flow_zero}}", {{0, 1, 4}, {2, 3, 1}});
  require_only(o, "classifier_out_of_range", 4);
  REQUIRE(o.dropped_packets.at("classifier_out_of_range") == 4);
  REQUIRE(o.summary.finished == 1);
}

TEST_CASE("losses: a destination the routing table does not know", "[outputs][losses]") {
  const Outcome o = run("noroute", "{kind: test_no_route_to_three}", "{default: {scheme: droptail}}",
                        {{0, 3, 2}, {1, 2, 1}});
  require_only(o, "no_route", 2);
  REQUIRE(o.dropped_packets.at("no_route") == 2);
  REQUIRE(o.summary.finished == 1);
}
