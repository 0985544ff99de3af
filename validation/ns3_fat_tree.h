// The fat tree of validation/ns3_star.cc (--topology=fat-tree --k=K): flexplane's
// k-ary fat tree built of ns-3 nodes and point-to-point links, each switch
// forwarding by flexplane's own per-flow ECMP.
//
// Principles:
// - topology and routes come from validation/fat_tree_routes.h (flexplane's
//   numbering, port layout, RoutingTable and flow hash), so router r's port p
//   here is flexplane's router r port p, named as flexplane names it in
//   occupancy.csv and counters.csv;
// - a switch forwards a segment on the port flexplane's table gives its flow:
//   FlexplaneEcmpRouting reads the TCP ports (the first 4 bytes after the IP
//   header), and the program's resolver turns (addresses, ports) into the
//   flexplane flow id and destination endpoint. The reverse direction (ACKs)
//   hashes the same flow towards the sender, as flexplane's data_path ACK
//   latency walks Topology::path(dst, src, flow);
// - links, queue discs and every per-port trace are the star's: this file
//   only creates devices and hands each to the program's callbacks (one per
//   host NIC, one per switch port), so both topologies share that code.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "validation/fat_tree_routes.h"

namespace flexplane_ns3 {

using namespace ns3;
using flexplane::validation::FatTreeRoutes;

// (source address, destination address, source port, destination port) ->
// flexplane's flow id and the endpoint the segment is going to; false if the
// segment belongs to no flow of the trace.
using FlowResolver = std::function<bool(Ipv4Address, Ipv4Address, uint16_t, uint16_t, uint32_t*, uint32_t*)>;

// One switch: each forwarded segment goes out of the port flexplane's
// routing table picks for its flow. Installed in the switch's Ipv4ListRouting
// above the static and global protocols; that list delivers to the switch's
// own addresses (nothing is addressed to a switch here) before asking it.
class FlexplaneEcmpRouting : public Ipv4RoutingProtocol {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("flexplane::FlexplaneEcmpRouting").SetParent<Ipv4RoutingProtocol>();
    return tid;
  }
  FlexplaneEcmpRouting(const FatTreeRoutes* tree, uint32_t router, FlowResolver resolve)
      : tree_(tree), router_(router), resolve_(std::move(resolve)) {}

  // Port p leaves through `dev` towards `gateway` (the peer's address on that link).
  void SetPort(uint16_t port, Ptr<NetDevice> dev, Ipv4Address source, Ipv4Address gateway) {
    if (port >= routes_.size()) routes_.resize(port + 1);
    Ptr<Ipv4Route> r = Create<Ipv4Route>();
    r->SetSource(source);
    r->SetGateway(gateway);
    r->SetOutputDevice(dev);
    routes_[port] = r;
  }
  // Segments that no flow of the trace owns (none are expected); routed as flow 0.
  uint64_t unresolved() const { return unresolved_; }

  Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header&, Ptr<NetDevice>, Socket::SocketErrno& err) override {
    err = Socket::ERROR_NOROUTETOHOST;  // a switch originates nothing
    return nullptr;
  }
  bool RouteInput(Ptr<const Packet> p, const Ipv4Header& header, Ptr<const NetDevice>, UnicastForwardCallback ucb,
                  MulticastForwardCallback, LocalDeliverCallback, ErrorCallback) override {
    uint8_t ports[4] = {0, 0, 0, 0};
    if (header.GetProtocol() != 6 || p->CopyData(ports, 4) != 4) return false;
    const uint16_t sport = static_cast<uint16_t>(ports[0] << 8 | ports[1]);
    const uint16_t dport = static_cast<uint16_t>(ports[2] << 8 | ports[3]);
    uint32_t flow = 0, dst = 0;
    if (!resolve_(header.GetSource(), header.GetDestination(), sport, dport, &flow, &dst)) {
      ++unresolved_;
      flow = 0;
    }
    const uint16_t port = tree_->route(router_, flow, dst);
    if (port >= routes_.size() || !routes_[port]) return false;
    Ptr<Ipv4Route> r = routes_[port];
    r->SetDestination(header.GetDestination());
    ucb(r, p, header);
    return true;
  }
  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
  void SetIpv4(Ptr<Ipv4>) override {}
  void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const override {
    *stream->GetStream() << "flexplane fat-tree ECMP, router " << tree_->name(router_) << "\n";
  }

 private:
  const FatTreeRoutes* tree_;
  uint32_t router_;
  FlowResolver resolve_;
  std::vector<Ptr<Ipv4Route>> routes_;  // by flexplane port
  uint64_t unresolved_ = 0;
};

// Called as each link is made, before its addresses are assigned (so queue
// discs can still be installed on the devices).
struct FatTreeHooks {
  // A host's NIC (the host side of its access link).
  std::function<void(uint32_t host, Ptr<NetDevice> dev)> host_nic;
  // The host's address, once assigned.
  std::function<void(uint32_t host, Ipv4Address address)> host_address;
  // A switch port: flexplane's router id, its name, the port.
  std::function<void(uint32_t router, const std::string& name, uint32_t port, Ptr<NetDevice> dev)> switch_port;
};

// Builds the tree on `hosts` (k^3/4 nodes with an Internet stack): one node
// per router, a link per flexplane link, /30 subnets (access links in
// 10.0.0.0/16, in host order; router links from 10.128.0.0), a default route
// on each host, FlexplaneEcmpRouting on each switch. Returns the switches'
// routing protocols (for their unresolved() counts).
inline std::vector<Ptr<FlexplaneEcmpRouting>> BuildFatTree(const FatTreeRoutes& tree, NodeContainer& hosts,
                                                           PointToPointHelper& p2p, InternetStackHelper& stack,
                                                           const FlowResolver& resolve, const FatTreeHooks& hooks) {
  NodeContainer switches;
  switches.Create(tree.num_routers());
  stack.Install(switches);
  std::vector<Ptr<FlexplaneEcmpRouting>> routing;
  for (uint32_t r = 0; r < tree.num_routers(); ++r) {
    routing.push_back(CreateObject<FlexplaneEcmpRouting>(&tree, r, resolve));
    Ptr<Ipv4ListRouting> list = DynamicCast<Ipv4ListRouting>(switches.Get(r)->GetObject<Ipv4>()->GetRoutingProtocol());
    NS_ABORT_MSG_UNLESS(list, "the switch's routing is not an Ipv4ListRouting");
    list->AddRoutingProtocol(routing.back(), 100);
  }
  auto wire = [&](Ptr<NetDevice> dev, Ipv4Address own, Ipv4Address peer, uint32_t r, uint16_t port) {
    routing[r]->SetPort(port, dev, own, peer);
  };

  Ipv4AddressHelper addr;
  addr.SetBase("10.0.0.0", "255.255.255.252");
  Ipv4StaticRoutingHelper static_routing;
  for (uint32_t e = 0; e < tree.num_endpoints(); ++e) {
    const auto [r, port] = tree.endpoint_port(e);
    NetDeviceContainer devs = p2p.Install(hosts.Get(e), switches.Get(r));  // 0: host, 1: switch port
    hooks.host_nic(e, devs.Get(0));
    hooks.switch_port(r, tree.name(r), port, devs.Get(1));
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    addr.NewNetwork();
    Ptr<Ipv4> ip = hosts.Get(e)->GetObject<Ipv4>();
    static_routing.GetStaticRouting(ip)->SetDefaultRoute(ifs.GetAddress(1), ip->GetInterfaceForDevice(devs.Get(0)));
    wire(devs.Get(1), ifs.GetAddress(1), ifs.GetAddress(0), r, port);
    hooks.host_address(e, ifs.GetAddress(0));
  }
  addr.SetBase("10.128.0.0", "255.255.255.252");
  for (uint32_t r = 0; r < tree.num_routers(); ++r)
    for (uint16_t port = 0; port < tree.k(); ++port) {
      const FatTreeRoutes::Peer& peer = tree.peer(r, port);
      if (peer.endpoint || peer.id < r) continue;  // access links are made; each router link once
      NetDeviceContainer devs = p2p.Install(switches.Get(r), switches.Get(peer.id));
      hooks.switch_port(r, tree.name(r), port, devs.Get(0));
      hooks.switch_port(peer.id, tree.name(peer.id), peer.port, devs.Get(1));
      Ipv4InterfaceContainer ifs = addr.Assign(devs);
      addr.NewNetwork();
      wire(devs.Get(0), ifs.GetAddress(0), ifs.GetAddress(1), r, port);
      wire(devs.Get(1), ifs.GetAddress(1), ifs.GetAddress(0), peer.id, peer.port);
    }
  return routing;
}

}  // namespace flexplane_ns3
