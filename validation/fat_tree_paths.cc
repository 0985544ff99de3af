// Prints the path flexplane's fat_tree routing gives each flow of a trace, or
// the data packets each router port would carry if every packet were sent
// once (no loss, no retransmission): what the ns-3 reference routes by
// (validation/fat_tree_routes.h), made visible without ns-3.
//
//   fat_tree_paths K TRACE ports   ->  router,port,packets   (ports that carry any)
//   fat_tree_paths K TRACE flows   ->  flow_id,src,dst,size_pkts,path   (path: router:port;...)
//
// tests/test_validation.py compares `ports` with a flexplane run's
// counters.csv (dequeued per router port) on a small trace where nothing is
// retransmitted: equal counts on every port mean equal paths. C++17, so it
// builds beside the ns-3 program: g++ -std=c++17 -O2 -I. validation/fat_tree_paths.cc
// emulator/workload/flow_trace.cc -o fat_tree_paths
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <string>

#include "emulator/workload/flow_trace.h"
#include "validation/fat_tree_routes.h"

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[3] : "";
  if (mode != "ports" && mode != "flows") {
    std::cerr << "usage: fat_tree_paths K TRACE ports|flows\n";
    return 2;
  }
  const int k = std::atoi(argv[1]);
  if (k < 4 || k > 32 || k % 2) {
    std::cerr << "fat_tree_paths: K must be even, 4..32\n";
    return 2;
  }
  const flexplane::validation::FatTreeRoutes tree(static_cast<uint32_t>(k));
  flexplane::FlowList flows;
  try {
    flows = flexplane::read_flow_trace(argv[2], tree.num_endpoints());
  } catch (const std::exception& e) {
    std::cerr << "fat_tree_paths: " << e.what() << "\n";
    return 2;
  }
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> packets;  // (router, port) -> data packets
  if (mode == "flows") std::cout << "flow_id,src,dst,size_pkts,path\n";
  for (const flexplane::FlowSpec& f : flows) {
    const auto hops = tree.path(f.src, f.dst, f.id);
    if (mode == "flows") std::cout << f.id << ',' << f.src << ',' << f.dst << ',' << f.size_pkts << ',';
    for (size_t i = 0; i < hops.size(); ++i) {
      packets[{hops[i].first, hops[i].second}] += f.size_pkts;
      if (mode == "flows") std::cout << (i ? ";" : "") << tree.name(hops[i].first) << ':' << hops[i].second;
    }
    if (mode == "flows") std::cout << '\n';
  }
  if (mode == "ports") {
    std::cout << "router,port,packets\n";
    for (const auto& [where, n] : packets) std::cout << tree.name(where.first) << ',' << where.second << ',' << n << '\n';
  }
  return 0;
}
