// ns-3 reference for flexplane's closed-loop transports: N hosts on one
// switch (flexplane's `single_rack`) or, with --topology=fat-tree, flexplane's
// k-ary fat tree with its per-flow ECMP (validation/ns3_fat_tree.h: the same
// routing tables and flow hash, so every flow takes flexplane's path),
// replaying a flexplane flow trace with
// TCP NewReno (optionally ECN) or DCTCP, through DropTail or DCTCP-marking
// (RED with min = max = K) egress queues. Writes per-flow FCTs and sampled
// switch-port backlog in flexplane's units (docs/output-format.md).
//
// The mapping from flexplane's model (docs/validation.md has the reasoning):
// - one timeslot = one full-sized frame on one link: abstract_packet_bytes on
//   the wire = 2 (PPP) + 20 (IP) + 20 (TCP, no options) + the segment, so
//   SegmentSize = abstract_packet_bytes - 42 and the link rate is link_gbps;
// - link latency L timeslots (a packet sent at t is forwarded at t + L) =
//   one frame's transmission + (L - 1) timeslots of propagation;
// - a port's backlog = the queue disc + the device's one-packet transmit
//   queue (the frame being transmitted is on the wire in both models), so a
//   capacity of C packets is a queue disc of C - 1 and DCTCP's "mark arrivals
//   that find more than K queued" is RED marking at K queue-disc packets;
// - flexplane's transports have no handshake: FCT is measured from the moment
//   the connection is established (the first data can leave) to the arrival
//   of the last byte, plus one timeslot (flexplane counts finish - start + 1).
//   The FCT including the handshake is written too. With --preconnect every
//   connection is opened at time 0 and each flow's data is written at its
//   start: FCT then counts from the start, as flexplane's does, including
//   any wait in the sender's NIC FIFO, and no flow has a handshake in it.
// - --ack-priority (a diagnostic, not flexplane's model): header-only segments
//   (pure ACKs, SYN, FIN) go ahead of data in every host NIC and switch port,
//   in a band of their own that takes no room in the data queue and counts
//   in no K. ns-3's reverse path then comes close to flexplane's default
//   (ACKs that no data delays: `ack_queueing: none`), which isolates how
//   much of the difference is the reverse path (docs/validation.md).
//
// Build and run: validation/run_ns3.sh (--help for the options).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "emulator/workload/flow_trace.h"
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "validation/ns3_fat_tree.h"

using namespace ns3;

namespace {

constexpr uint32_t kHeaderBytes = 42;  // PPP 2 + IPv4 20 + TCP 20 (no SACK, no timestamps)
constexpr uint16_t kSinkPort = 5000;

struct Options {
  std::string trace;
  std::string topology = "star";  // star | fat-tree
  uint32_t k = 8;                 // fat-tree: ports per switch (k^3/4 hosts)
  uint32_t hosts = 16;
  uint32_t incast_senders = 0;
  uint32_t incast_size_pkts = 10000;
  std::string transport = "dctcp";  // newreno | ecn | dctcp
  std::string queue = "dctcp";      // droptail | dctcp
  uint32_t capacity_pkts = 1024;
  uint32_t k_pkts = 65;
  double link_gbps = 10;
  uint32_t packet_bytes = 1500;
  uint32_t link_latency_timeslots = 1;
  double min_rto_us = 1000;
  uint32_t initial_cwnd_pkts = 10;
  double duration_ms = 5;
  double drain_ms = 5;
  double occupancy_interval_us = 0;
  bool preconnect = false;
  bool ack_priority = false;
  std::string ack_priority_at = "all";  // all | nic (host NICs only) | switch (switch ports only)
  uint32_t dctcp_min_ssthresh_pkts = 0;
  bool first_sent = false;
  bool queue_bytes = false;
  bool sack = false;
  bool ack_wait = false;
  bool port_counts = false;
  std::string out = "results/ns3";
};

struct Flow {
  flexplane::FlowSpec spec;
  uint64_t size_bytes = 0;  // TCP payload
  uint64_t received = 0;
  double connected_s = -1;
  double first_sent_s = -1;  // the first data segment starts on the sender's wire (after its NIC queue)
  double finish_s = -1;
  Ptr<Socket> socket;
  uint64_t to_send = 0;
  bool written = false;  // the application has handed over its data (to_send counts down)
  // The sender's congestion-state entries (TcpSocketBase's "CongState"
  // trace): CA_LOSS = a retransmission timeout, CA_RECOVERY = a fast
  // retransmit, CA_CWR = an ECN window reduction.
  uint32_t timeouts = 0, fast_recoveries = 0, cwr = 0;
  uint64_t nic_key = 0;                // (source address, port): its segments in nic_queued
  uint32_t timeouts_with_data_in_nic = 0;  // --ack-wait: RTOs while a segment of it waited in its NIC
};

Options opt;
double timeslot_s = 0;
std::vector<Flow> flows;
std::map<std::pair<uint32_t, uint16_t>, uint32_t> flow_by_src_port;  // (host, port) -> flow
std::unordered_map<uint32_t, uint32_t> host_by_ip;
std::unordered_map<Socket*, uint32_t> flow_by_socket;
uint32_t finished = 0;
NodeContainer hosts;
// Every switch egress port, in flexplane's order (routers by id, ports
// ascending): the data queue disc (occupancy, drops, marks) and the device's
// one-packet transmit queue.
struct SwitchPort {
  uint32_t router = 0;
  std::string name;  // flexplane's router name: tor0 on the star, edge<p>_<i> etc. on the fat tree
  uint32_t port = 0;
  Ptr<QueueDisc> qdisc;
  Ptr<Queue<Packet>> devq;
  // --port-counts: data frames the port sent (retransmissions included), as
  // flexplane's counters.csv `dequeued` counts them.
  std::shared_ptr<uint64_t> data_sent = std::make_shared<uint64_t>(0);
};
std::vector<SwitchPort> switch_ports;
std::vector<Ptr<QueueDisc>> host_qdiscs;
int trace_flow = -1;
std::ofstream occupancy;
// Switch drops and marks of data segments only (ns-3's queue disc counts
// pure ACKs too): an item larger than a header-only frame carries data.
uint64_t data_drops = 0, data_marks = 0;
constexpr uint32_t kHeaderOnlyBytes = 100;
void DataDrop(Ptr<const QueueDiscItem> item) {
  if (item->GetSize() > kHeaderOnlyBytes) ++data_drops;
}
void DataMark(Ptr<const QueueDiscItem> item, const char*) {
  if (item->GetSize() > kHeaderOnlyBytes) ++data_marks;
}
void DataSent(uint64_t* sent, Ptr<const Packet> frame) {
  if (frame->GetSize() > kHeaderOnlyBytes) ++*sent;
}

// --ack-wait: how long each header-only segment (pure ACKs, mostly) waits
// in the host NIC it leaves by and in the switch port it crosses, from the
// queue disc's enqueue to the start of its transmission, in timeslots.
// flexplane's `ack_queueing: delay` computes the same two waits from the
// backlogs (summary.yaml's ack_queueing block); this is the reference for
// them. ACKs are keyed by packet uid (each is a new packet). Data segments'
// waits in the host NICs are logged too, keyed by (source address, port,
// sequence number), first in first out: ns-3 cuts segments out of the
// application's writes, and fragments share their write's uid.
struct WaitLog {
  bool data = false;                                        // data segments, or header-only ones
  std::unordered_map<uint64_t, std::deque<double>> since;  // key -> enqueue times (s), oldest first
  std::vector<double> waits;                               // timeslots
};
WaitLog nic_acks, switch_acks, nic_data{true};
std::unordered_map<uint64_t, uint32_t> nic_queued;  // flow (FlowKey) -> its data segments in its host's NIC
std::unordered_map<uint64_t, uint32_t> frames_sent;  // flow (FlowKey) -> data frames sent, retransmissions included
uint64_t FlowKey(Ipv4Address src, uint16_t port) { return (uint64_t{src.Get()} << 16) | port; }
// A data segment: every host address is in 10.0.0.0/16, so the port can
// take the address's constant upper 16 bits without two flows colliding.
uint64_t DataKey(Ipv4Address src, const TcpHeader& tcp) {
  return (uint64_t{src.Get()} << 32) ^ (uint64_t{tcp.GetSourcePort()} << 48) ^ tcp.GetSequenceNumber().GetValue();
}
void WaitEnqueue(WaitLog* log, Ptr<const QueueDiscItem> item) {
  if ((item->GetSize() > kHeaderOnlyBytes) != log->data) return;
  uint64_t key = item->GetPacket()->GetUid();
  if (log->data) {
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    TcpHeader tcp;
    if (!ip || ip->GetHeader().GetProtocol() != 6 || !item->GetPacket()->PeekHeader(tcp)) return;
    key = DataKey(ip->GetHeader().GetSource(), tcp);
    ++nic_queued[FlowKey(ip->GetHeader().GetSource(), tcp.GetSourcePort())];
    if (trace_flow >= 0) {
      const auto h = host_by_ip.find(ip->GetHeader().GetSource().Get());
      const auto f = h == host_by_ip.end() ? flow_by_src_port.end() : flow_by_src_port.find({h->second, tcp.GetSourcePort()});
      if (f != flow_by_src_port.end() && int(f->second) == trace_flow)
        std::cerr << "Q " << Simulator::Now().GetMicroSeconds() << " seq " << tcp.GetSequenceNumber() << " nic "
                  << host_qdiscs[h->second]->GetNPackets() << "\n";
    }
  }
  log->since[key].push_back(Simulator::Now().GetSeconds());
}
// A frame on a point-to-point link, parsed: false unless it carries TCP.
// `payload` is what follows the TCP header.
bool ParseTcpFrame(Ptr<const Packet> frame, Ipv4Header* ip, TcpHeader* tcp, uint32_t* payload) {
  Ptr<Packet> p = frame->Copy();
  PppHeader ppp;
  p->RemoveHeader(ppp);
  p->RemoveHeader(*ip);
  if (ip->GetProtocol() != 6) return false;
  p->RemoveHeader(*tcp);
  *payload = p->GetSize();
  return true;
}
void WaitTxBegin(WaitLog* log, Ptr<const Packet> frame) {
  if ((frame->GetSize() > kHeaderOnlyBytes) != log->data) return;
  uint64_t key = frame->GetUid();
  if (log->data) {
    Ipv4Header ip;
    TcpHeader tcp;
    uint32_t payload = 0;
    if (!ParseTcpFrame(frame, &ip, &tcp, &payload)) return;
    key = DataKey(ip.GetSource(), tcp);
    --nic_queued[FlowKey(ip.GetSource(), tcp.GetSourcePort())];
    ++frames_sent[FlowKey(ip.GetSource(), tcp.GetSourcePort())];
  }
  const auto it = log->since.find(key);
  if (it == log->since.end()) return;
  log->waits.push_back((Simulator::Now().GetSeconds() - it->second.front()) / timeslot_s);
  it->second.pop_front();
  if (it->second.empty()) log->since.erase(it);
}
// "name: {count, mean, p50, p90, p99, max}" in timeslots.
std::string WaitSummary(std::vector<double> w) {
  if (w.empty()) return "{count: 0}";
  std::sort(w.begin(), w.end());
  double sum = 0;
  for (double x : w) sum += x;
  auto q = [&](double p) { return w[std::min(w.size() - 1, static_cast<size_t>(p * (w.size() - 1) + 0.5))]; };
  char buf[200];
  std::snprintf(buf, sizeof buf, "{count: %zu, mean: %.2f, p50: %.2f, p90: %.2f, p99: %.2f, max: %.2f}", w.size(),
                sum / w.size(), q(0.5), q(0.9), q(0.99), w.back());
  return buf;
}

// --dctcp-min-ssthresh-pkts: ns-3.37's TcpDctcp sets ssthresh (and so cwnd
// on leaving CWR) to (1 - alpha / 2) * cwnd with no floor. A flow marked in
// several windows in a row (alpha starts at 1) falls below one segment, sends
// nothing with nothing in flight, and waits for its RTO; the one segment the
// RTO sends is marked again. Linux floors DCTCP's ssthresh at 2 segments
// (tcp_dctcp.c), as flexplane's DCTCP does; this subclass adds that floor.
class TcpDctcpFloor : public TcpDctcp {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("flexplane::TcpDctcpFloor").SetParent<TcpDctcp>().AddConstructor<TcpDctcpFloor>();
    return tid;
  }
  TcpDctcpFloor() = default;
  TcpDctcpFloor(const TcpDctcpFloor& other) = default;
  uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t bytes_in_flight) override {
    return std::max(TcpDctcp::GetSsThresh(tcb, bytes_in_flight), opt.dctcp_min_ssthresh_pkts * tcb->m_segmentSize);
  }
  Ptr<TcpCongestionOps> Fork() override { return CopyObject<TcpDctcpFloor>(this); }
};
NS_OBJECT_ENSURE_REGISTERED(TcpDctcpFloor);

// --ack-priority: band 0 for header-only segments, band 1 for data.
class HeaderOnlyFirst : public PacketFilter {
 public:
  static TypeId GetTypeId() {
    static TypeId tid =
        TypeId("flexplane::HeaderOnlyFirst").SetParent<PacketFilter>().AddConstructor<HeaderOnlyFirst>();
    return tid;
  }

 private:
  bool CheckProtocol(Ptr<QueueDiscItem>) const override { return true; }
  int32_t DoClassify(Ptr<QueueDiscItem> item) const override { return item->GetSize() > kHeaderOnlyBytes ? 1 : 0; }
};
NS_OBJECT_ENSURE_REGISTERED(HeaderOnlyFirst);

// A root with two strict-priority bands: header-only segments (a deep FIFO),
// then `data`, which the caller configures as it would the root.
uint16_t AckBands(TrafficControlHelper& tc) {
  const uint16_t root = tc.SetRootQueueDisc("ns3::PrioQueueDisc", "Priomap",
                                            StringValue("1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"));
  TrafficControlHelper::ClassIdList classes = tc.AddQueueDiscClasses(root, 2, "ns3::QueueDiscClass");
  tc.AddChildQueueDisc(root, classes[0], "ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("100000p")));
  tc.AddPacketFilter(root, "flexplane::HeaderOnlyFirst");
  return root;
}

void Pump(Ptr<Socket> s, uint32_t) {
  Flow& f = flows[flow_by_socket.at(PeekPointer(s))];
  if (f.connected_s < 0 || !f.written) return;
  while (f.to_send > 0) {
    const uint32_t room = s->GetTxAvailable();
    if (room == 0) return;
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(f.to_send, room));
    const int sent = s->Send(Create<Packet>(n));
    if (sent <= 0) return;
    f.to_send -= static_cast<uint32_t>(sent);
  }
  s->Close();  // FIN after the data
}

// A host's link starts sending a frame: note a flow's first data segment
// (first_sent_us: its wait in the host's NIC queue, as flexplane's
// first_sent_timeslot gives it).
void HostTx(uint32_t host, Ptr<const Packet> frame) {
  Ipv4Header ip;
  TcpHeader tcp;
  uint32_t payload = 0;
  if (!ParseTcpFrame(frame, &ip, &tcp, &payload)) return;
  if (payload == 0) {  // header-only
    if (trace_flow >= 0 && tcp.GetSourcePort() == kSinkPort) {
      const auto h = host_by_ip.find(ip.GetDestination().Get());
      if (h != host_by_ip.end()) {
        const auto f = flow_by_src_port.find({h->second, tcp.GetDestinationPort()});
        if (f != flow_by_src_port.end() && int(f->second) == trace_flow)
          std::cerr << "ACK " << Simulator::Now().GetMicroSeconds() << " ack " << tcp.GetAckNumber() << " flags "
                    << int(tcp.GetFlags()) << "\n";
      }
    }
    return;
  }
  const auto it = flow_by_src_port.find({host, tcp.GetSourcePort()});
  if (it != flow_by_src_port.end() && flows[it->second].first_sent_s < 0)
    flows[it->second].first_sent_s = Simulator::Now().GetSeconds();
  if (it != flow_by_src_port.end() && int(it->second) == trace_flow)
    std::cerr << "TX " << Simulator::Now().GetMicroSeconds() << " seq " << tcp.GetSequenceNumber() << " nic "
              << host_qdiscs[host]->GetNPackets() << "\n";
}

void Connected(Ptr<Socket> s) {
  flows[flow_by_socket.at(PeekPointer(s))].connected_s = Simulator::Now().GetSeconds();
  Pump(s, 0);
}

void ConnectFailed(Ptr<Socket> s) {
  std::cerr << "ns3_star: flow " << flow_by_socket.at(PeekPointer(s)) << " could not connect\n";
}

void CongState(uint32_t id, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now) {
  Flow& f = flows[id];
  if (now == TcpSocketState::CA_LOSS) {
    ++f.timeouts;
    if (opt.ack_wait && nic_queued[f.nic_key] > 0) ++f.timeouts_with_data_in_nic;
  }
  if (now == TcpSocketState::CA_RECOVERY) ++f.fast_recoveries;
  if (now == TcpSocketState::CA_CWR) ++f.cwr;
  if (int(id) == trace_flow)
    std::cerr << "STATE " << Simulator::Now().GetMicroSeconds() << " -> " << int(now) << " nic "
              << host_qdiscs[f.spec.src]->GetNPackets() << "\n";
}

// Opens the flow's connection; its data follows at once (StartFlow) or, with
// --preconnect, at the flow's start time (WriteFlow).
void OpenFlow(uint32_t id) {
  Flow& f = flows[id];
  Ptr<Node> src = hosts.Get(f.spec.src);
  f.socket = Socket::CreateSocket(src, TcpSocketFactory::GetTypeId());
  f.socket->Bind();
  Address local;
  f.socket->GetSockName(local);
  const uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
  flow_by_src_port[{f.spec.src, port}] = id;
  f.nic_key = FlowKey(src->GetObject<Ipv4>()->GetAddress(1, 0).GetLocal(), port);
  flow_by_socket[PeekPointer(f.socket)] = id;
  f.socket->SetConnectCallback(MakeCallback(&Connected), MakeCallback(&ConnectFailed));
  f.socket->SetSendCallback(MakeCallback(&Pump));
  f.socket->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CongState, id));
  Ptr<Ipv4> ip = hosts.Get(f.spec.dst)->GetObject<Ipv4>();
  f.socket->Connect(InetSocketAddress(ip->GetAddress(1, 0).GetLocal(), kSinkPort));
}

void WriteFlow(uint32_t id) {
  Flow& f = flows[id];
  f.to_send = f.size_bytes;
  f.written = true;
  Pump(f.socket, 0);
}

void StartFlow(uint32_t id) {
  OpenFlow(id);
  WriteFlow(id);
}

void Received(Ptr<const Packet> p, const Address& from, const Address&) {
  const InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
  const auto host = host_by_ip.find(a.GetIpv4().Get());
  if (host == host_by_ip.end()) return;
  const auto it = flow_by_src_port.find({host->second, a.GetPort()});
  if (it == flow_by_src_port.end()) return;
  Flow& f = flows[it->second];
  f.received += p->GetSize();
  if (f.finish_s < 0 && f.received >= f.size_bytes) {
    f.finish_s = Simulator::Now().GetSeconds();
    if (++finished == flows.size()) Simulator::Stop();
  }
}

void Sample(Time interval) {
  const double now = Simulator::Now().GetSeconds();
  const uint64_t ts = static_cast<uint64_t>(now / timeslot_s + 0.5);
  char us[32];
  std::snprintf(us, sizeof us, "%.3f", now * 1e6);
  for (const SwitchPort& sp : switch_ports) {
    const uint32_t pkts = sp.qdisc->GetNPackets() + sp.devq->GetNPackets();
    const uint32_t bytes = sp.qdisc->GetNBytes() + sp.devq->GetNBytes();
    occupancy << ts << ',' << us << ',' << sp.name << ',' << sp.port << ',' << pkts << ',' << bytes << '\n';
  }
  if (finished < flows.size()) Simulator::Schedule(interval, &Sample, interval);
}

flexplane::FlowList incast_flows() {
  flexplane::FlowList out;
  for (uint32_t i = 0; i < opt.incast_senders; ++i) {
    flexplane::FlowSpec f;
    f.id = i;
    f.src = static_cast<flexplane::EndpointId>(i + 1);
    f.dst = 0;
    f.size_pkts = opt.incast_size_pkts;
    f.start = 0;
    out.push_back(f);
  }
  return out;
}

int fail(const std::string& msg) {
  std::cerr << "ns3_star: " << msg << "\n";
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  CommandLine cmd(__FILE__);
  cmd.Usage("ns-3 reference scenario for flexplane: N hosts on one switch, a flexplane flow trace\n"
            "(or an N->1 incast), TCP NewReno/ECN/DCTCP, DropTail or DCTCP marking.");
  cmd.AddValue("trace", "flexplane flow trace CSV (flow_id,src,dst,size_pkts,start_timeslot)", opt.trace);
  cmd.AddValue("topology", "star (N hosts on one switch: flexplane's single_rack) | fat-tree (flexplane's fat_tree)",
               opt.topology);
  cmd.AddValue("k", "fat-tree: ports per switch, even, 4..32 (k^3/4 hosts; --hosts is then ignored)", opt.k);
  cmd.AddValue("hosts", "star: hosts on the switch (flexplane topology.endpoints)", opt.hosts);
  cmd.AddValue("incast-senders", "instead of a trace: hosts 1..N send to host 0 at time 0", opt.incast_senders);
  cmd.AddValue("incast-size-pkts", "incast: packets per sender", opt.incast_size_pkts);
  cmd.AddValue("transport", "newreno | ecn (NewReno + RFC 3168) | dctcp", opt.transport);
  cmd.AddValue("queue", "switch egress: droptail | dctcp (RED marking at K)", opt.queue);
  cmd.AddValue("capacity-pkts", "switch port buffer, packets (flexplane capacity_pkts)", opt.capacity_pkts);
  cmd.AddValue("k-pkts", "dctcp queue: mark arrivals finding more than K queued", opt.k_pkts);
  cmd.AddValue("link-gbps", "every link's rate (flexplane network.link_rate_gbps)", opt.link_gbps);
  cmd.AddValue("packet-bytes", "frame size of a full segment = one timeslot (network.abstract_packet_bytes)",
               opt.packet_bytes);
  cmd.AddValue("link-latency-timeslots", "flexplane topology.link_latency_timeslots (>= 1)",
               opt.link_latency_timeslots);
  cmd.AddValue("min-rto-us", "TCP minimum RTO (also the SYN timeout)", opt.min_rto_us);
  cmd.AddValue("initial-cwnd-pkts", "TCP initial window", opt.initial_cwnd_pkts);
  cmd.AddValue("duration-ms", "flows start before this (trace rows beyond are ignored)", opt.duration_ms);
  cmd.AddValue("drain-ms", "then run this much longer; the run also ends when every flow finished", opt.drain_ms);
  cmd.AddValue("occupancy-interval-us", "sample every switch port's backlog this often (0 = off)",
               opt.occupancy_interval_us);
  cmd.AddValue("preconnect",
               "open every connection at time 0 and write each flow's data at its start time, so that "
               "fct_us counts from the flow's start like flexplane's (no handshake in it)",
               opt.preconnect);
  cmd.AddValue("ack-priority",
               "diagnostic: header-only segments (ACKs) ahead of data in every NIC and switch port, in a "
               "band that takes no room and counts in no K (an ideal reverse path)",
               opt.ack_priority);
  cmd.AddValue("ack-priority-at", "with --ack-priority: all, nic (host NICs only) or switch (switch ports only)",
               opt.ack_priority_at);
  cmd.AddValue("dctcp-min-ssthresh-pkts",
               "floor DCTCP's ssthresh at this many segments, as Linux does at 2 (0: ns-3.37's TcpDctcp as "
               "shipped, no floor: cwnd can fall below one segment and wait for an RTO)",
               opt.dctcp_min_ssthresh_pkts);
  cmd.AddValue("queue-bytes",
               "size switch queues and K in bytes (capacity and K that many full data packets; an ACK counts its "
               "40 bytes) instead of packets (an ACK counts as a packet)",
               opt.queue_bytes);
  cmd.AddValue("sack",
               "SACK on (off by default, as flexplane's senders have none). Without SACK ns-3.37 guesses a "
               "scoreboard from duplicate ACKs (TcpTxBuffer::AddRenoSack); after spurious duplicates it marks "
               "each new head lost and resends it, which Linux's NewReno does not (docs/validation.md)",
               opt.sack);
  cmd.AddValue("first-sent", "write first_sent_us (each flow's first data segment on its sender's wire)",
               opt.first_sent);
  cmd.AddValue("port-counts",
               "counters.csv also gets each switch port's dequeued packets and data frames sent (data_sent: "
               "flexplane's `dequeued`), to check that both simulators route each flow the same way",
               opt.port_counts);
  cmd.AddValue("ack-wait",
               "write ack_wait_nic / ack_wait_switch to summary.yaml: header-only segments' waits in host NICs and "
               "switch ports (timeslots; count, mean, percentiles)",
               opt.ack_wait);
  cmd.AddValue("trace-flow", "diagnostic: print this flow's transmissions and state changes on stderr", trace_flow);
  cmd.AddValue("out", "output folder (flows.csv, occupancy.csv, counters.csv, summary.yaml)", opt.out);
  cmd.Parse(argc, argv);

  if (opt.topology != "star" && opt.topology != "fat-tree") return fail("--topology must be star or fat-tree");
  std::unique_ptr<flexplane::validation::FatTreeRoutes> tree;
  if (opt.topology == "fat-tree") {
    if (opt.k < 4 || opt.k > 32 || opt.k % 2) return fail("--k must be even, 4..32 (flexplane's fat_tree)");
    tree = std::make_unique<flexplane::validation::FatTreeRoutes>(opt.k);
    opt.hosts = tree->num_endpoints();
    if (opt.incast_senders) return fail("--incast-senders is for the star");
  }
  if (opt.hosts < 2) return fail("--hosts must be at least 2");
  if (opt.ack_priority_at != "all" && opt.ack_priority_at != "nic" && opt.ack_priority_at != "switch")
    return fail("--ack-priority-at must be all, nic or switch");
  if (opt.packet_bytes <= kHeaderBytes + 1) return fail("--packet-bytes must exceed the 42 header bytes");
  if (opt.link_latency_timeslots < 1) return fail("--link-latency-timeslots must be at least 1");
  if (opt.transport != "newreno" && opt.transport != "ecn" && opt.transport != "dctcp")
    return fail("--transport must be newreno, ecn or dctcp (got '" + opt.transport + "')");
  if (opt.queue != "droptail" && opt.queue != "dctcp")
    return fail("--queue must be droptail or dctcp (got '" + opt.queue + "')");
  if (opt.capacity_pkts < 2) return fail("--capacity-pkts must be at least 2");
  if (opt.queue == "dctcp" && (opt.k_pkts < 2 || opt.k_pkts >= opt.capacity_pkts))
    return fail("--k-pkts must be in [2, capacity-pkts)");
  if (opt.trace.empty() == (opt.incast_senders == 0)) return fail("give exactly one of --trace and --incast-senders");
  if (opt.incast_senders >= opt.hosts) return fail("--incast-senders must be below --hosts");

  flexplane::FlowList specs;
  try {
    specs = opt.trace.empty() ? incast_flows() : flexplane::read_flow_trace(opt.trace, opt.hosts);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  std::error_code ec;
  std::filesystem::create_directories(opt.out, ec);
  if (ec) return fail("cannot create " + opt.out + ": " + ec.message());
  std::ofstream probe(opt.out + "/flows.csv");
  if (!probe) return fail("cannot write " + opt.out + "/flows.csv");
  probe.close();

  timeslot_s = opt.packet_bytes * 8.0 / (opt.link_gbps * 1e9);
  const uint32_t segment = opt.packet_bytes - kHeaderBytes;
  const double end_s = (opt.duration_ms + opt.drain_ms) * 1e-3;
  for (const auto& s : specs) {
    if (s.start * timeslot_s >= opt.duration_ms * 1e-3) continue;
    Flow f;
    f.spec = s;
    f.spec.id = static_cast<uint32_t>(flows.size());
    f.size_bytes = uint64_t{s.size_pkts} * segment;
    flows.push_back(f);
  }
  if (flows.empty()) return fail("no flow starts within --duration-ms");

  // TCP: the variant, no SACK or timestamps (flexplane's senders have
  // neither), classic NewReno recovery, an ACK per packet, big buffers.
  const std::string socket_type = opt.transport != "dctcp"            ? "ns3::TcpNewReno"
                                  : opt.dctcp_min_ssthresh_pkts > 0 ? "flexplane::TcpDctcpFloor"
                                                                    : "ns3::TcpDctcp";
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName(socket_type)));
  Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TcpClassicRecovery::GetTypeId()));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
  Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(opt.initial_cwnd_pkts));
  Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1u << 26));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1u << 26));
  Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(MicroSeconds(opt.min_rto_us)));
  Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(1000));
  Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(opt.sack));
  Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
  Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MicroSeconds(opt.min_rto_us)));
  Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(Seconds(timeslot_s)));
  Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(opt.transport == "newreno" ? "Off" : "On"));

  hosts.Create(opt.hosts);
  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<uint64_t>(opt.link_gbps * 1e9))));
  p2p.SetDeviceAttribute("Mtu", UintegerValue(opt.packet_bytes - 2));
  p2p.SetChannelAttribute("Delay", TimeValue(Seconds(timeslot_s * (opt.link_latency_timeslots - 1))));
  p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
  InternetStackHelper stack;
  stack.Install(hosts);

  TrafficControlHelper host_tc;  // the host NIC: a deep FIFO
  TrafficControlHelper switch_tc;
  // The data queue: the root, or with --ack-priority the second band under it.
  const bool ack_first_nic = opt.ack_priority && opt.ack_priority_at != "switch";
  const bool ack_first_switch = opt.ack_priority && opt.ack_priority_at != "nic";
  auto data_queue = [](bool ack_first, TrafficControlHelper& tc, const std::string& type, auto&&... args) {
    if (!ack_first) {
      tc.SetRootQueueDisc(type, args...);
    } else {
      const uint16_t root = AckBands(tc);
      tc.AddChildQueueDisc(root, 1, type, args...);
    }
  };
  data_queue(ack_first_nic, host_tc, "ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize("100000p")));
  // Packets (ns-3's default: an ACK counts as one packet in K and in the
  // capacity) or, with --queue-bytes, bytes as switch ASICs count them: the
  // capacity and K are those many full data packets (IP bytes), an ACK
  // counts its 40 bytes.
  const uint32_t ip_packet = opt.packet_bytes - 2;
  const QueueSize qdisc_size = opt.queue_bytes
                                   ? QueueSize(QueueSizeUnit::BYTES, (opt.capacity_pkts - 1) * ip_packet)
                                   : QueueSize(QueueSizeUnit::PACKETS, opt.capacity_pkts - 1);
  const double k_threshold = opt.queue_bytes ? double(opt.k_pkts) * ip_packet : double(opt.k_pkts);
  if (opt.queue == "droptail") {
    data_queue(ack_first_switch, switch_tc, "ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(qdisc_size));
  } else {
    data_queue(ack_first_switch, switch_tc, "ns3::RedQueueDisc", "MaxSize", QueueSizeValue(qdisc_size), "MinTh",
                               DoubleValue(k_threshold), "MaxTh", DoubleValue(k_threshold), "QW", DoubleValue(1.0),
                               "Gentle", BooleanValue(false), "UseEcn", BooleanValue(true), "UseHardDrop",
                               BooleanValue(false), "MeanPktSize", UintegerValue(opt.packet_bytes),
                               "LinkBandwidth", DataRateValue(DataRate(static_cast<uint64_t>(opt.link_gbps * 1e9))),
                               "LinkDelay", TimeValue(Seconds(timeslot_s * (opt.link_latency_timeslots - 1))));
  }

  // A host's NIC and a switch port: their queue discs and traces, the same on
  // either topology (called before the link's addresses are assigned).
  auto add_host_nic = [&](uint32_t i, Ptr<NetDevice> dev) {
    host_qdiscs.push_back(host_tc.Install(dev).Get(0));
    if (opt.first_sent || trace_flow >= 0)  // a parse of every frame: off for the speed comparison
      dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&HostTx, i));
    if (opt.ack_wait) {
      host_qdiscs.back()->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&WaitEnqueue, &nic_acks));
      dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&WaitTxBegin, &nic_acks));
      host_qdiscs.back()->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&WaitEnqueue, &nic_data));
      dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&WaitTxBegin, &nic_data));
    }
  };
  auto add_switch_port = [&](uint32_t router, const std::string& name, uint32_t port, Ptr<NetDevice> dev) {
    QueueDiscContainer q = switch_tc.Install(dev);
    if (opt.ack_wait) {
      q.Get(0)->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&WaitEnqueue, &switch_acks));
      dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&WaitTxBegin, &switch_acks));
    }
    // The data queue: occupancy, drops and marks are read there (the ACK band's are not counted).
    Ptr<QueueDisc> data = ack_first_switch ? q.Get(0)->GetQueueDiscClass(1)->GetQueueDisc() : q.Get(0);
    data->TraceConnectWithoutContext("Drop", MakeCallback(&DataDrop));
    data->TraceConnectWithoutContext("Mark", MakeCallback(&DataMark));
    switch_ports.push_back(SwitchPort{router, name, port, data, DynamicCast<PointToPointNetDevice>(dev)->GetQueue()});
    if (opt.port_counts)
      dev->TraceConnectWithoutContext("PhyTxBegin", MakeBoundCallback(&DataSent, switch_ports.back().data_sent.get()));
  };

  std::vector<Ptr<flexplane_ns3::FlexplaneEcmpRouting>> ecmp;
  if (!tree) {  // the star: host i on switch port i
    Ptr<Node> sw = CreateObject<Node>();
    stack.Install(sw);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    for (uint32_t i = 0; i < opt.hosts; ++i) {
      NetDeviceContainer devs = p2p.Install(hosts.Get(i), sw);  // 0: host side, 1: switch port i
      add_host_nic(i, devs.Get(0));
      add_switch_port(0, "tor0", i, devs.Get(1));
      Ipv4InterfaceContainer ifs = addr.Assign(devs);
      addr.NewNetwork();
      host_by_ip[ifs.GetAddress(0).Get()] = i;
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
  } else {
    // A segment's flow: data goes from the flow's (source host, port) to the
    // sink's port, ACKs come back from the sink's port to it.
    auto resolve = [](Ipv4Address src, Ipv4Address dst, uint16_t sport, uint16_t dport, uint32_t* flow,
                      uint32_t* to) {
      const auto s = host_by_ip.find(src.Get()), d = host_by_ip.find(dst.Get());
      if (s == host_by_ip.end() || d == host_by_ip.end()) return false;
      const bool data = dport == kSinkPort;
      const auto f = data ? flow_by_src_port.find({s->second, sport}) : flow_by_src_port.find({d->second, dport});
      if (f == flow_by_src_port.end()) return false;
      *flow = f->second;
      *to = d->second;
      return true;
    };
    flexplane_ns3::FatTreeHooks hooks;
    hooks.host_nic = add_host_nic;
    hooks.host_address = [](uint32_t i, Ipv4Address a) { host_by_ip[a.Get()] = i; };
    hooks.switch_port = add_switch_port;
    ecmp = flexplane_ns3::BuildFatTree(*tree, hosts, p2p, stack, resolve, hooks);
    // flexplane's order: routers by id, ports ascending (links are made in another order).
    std::vector<size_t> order(switch_ports.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [](size_t a, size_t b) {
      return std::make_pair(switch_ports[a].router, switch_ports[a].port) <
             std::make_pair(switch_ports[b].router, switch_ports[b].port);
    });
    std::vector<SwitchPort> sorted;
    for (size_t i : order) sorted.push_back(switch_ports[i]);
    switch_ports = sorted;
  }

  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), kSinkPort));
  ApplicationContainer sinks = sink.Install(hosts);
  for (uint32_t i = 0; i < sinks.GetN(); ++i)
    sinks.Get(i)->TraceConnectWithoutContext("RxWithAddresses", MakeCallback(&Received));
  sinks.Start(Seconds(0));

  for (uint32_t i = 0; i < flows.size(); ++i) {
    const Time start = Seconds(flows[i].spec.start * timeslot_s);
    if (opt.preconnect) {
      Simulator::ScheduleNow(&OpenFlow, i);
      Simulator::Schedule(start, &WriteFlow, i);
    } else {
      Simulator::Schedule(start, &StartFlow, i);
    }
  }
  if (opt.occupancy_interval_us > 0) {
    occupancy.open(opt.out + "/occupancy.csv");
    occupancy << "timeslot,time_us,router,port,packets,bytes\n";
    const Time interval = Seconds(opt.occupancy_interval_us * 1e-6);
    Simulator::Schedule(interval, &Sample, interval);
  }
  Simulator::Stop(Seconds(end_s));

  const auto t0 = std::chrono::steady_clock::now();
  Simulator::Run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double sim_end = Simulator::Now().GetSeconds();

  // flows.csv: flexplane's columns where they apply (docs/validation.md).
  std::ofstream out(opt.out + "/flows.csv");
  out << "flow_id,src,dst,size_pkts,size_bytes,start_timeslot,start_us,connected_us,finish_us,fct_us,"
         "ideal_fct_us,slowdown,fct_with_handshake_us,finished,timeouts,fast_recoveries,ecn_reductions,"
         "first_sent_us,data_frames,timeouts_with_data_in_nic\n";
  const double ts_us = timeslot_s * 1e6;
  for (const Flow& f : flows) {
    const double start_us = f.spec.start * ts_us;
    const double ideal = (f.spec.size_pkts + 2.0 * opt.link_latency_timeslots) * ts_us;
    out << f.spec.id << ',' << f.spec.src << ',' << f.spec.dst << ',' << f.spec.size_pkts << ','
        << uint64_t{f.spec.size_pkts} * opt.packet_bytes << ',' << f.spec.start << ',' << start_us << ',';
    if (f.connected_s >= 0) out << f.connected_s * 1e6;
    out << ',';
    if (f.finish_s >= 0) {
      // From the later of the flow's start and its connection (the
      // connection, unless --preconnect opened it before the start).
      const double fct = (f.finish_s - std::max(f.connected_s, f.spec.start * timeslot_s)) * 1e6 + ts_us;
      out << f.finish_s * 1e6 << ',' << fct << ',' << ideal << ',' << fct / ideal << ','
          << (f.finish_s * 1e6 - start_us) + ts_us << ",1";
    } else {
      out << ",," << ideal << ",,,0";
    }
    out << ',' << f.timeouts << ',' << f.fast_recoveries << ',' << f.cwr << ',';
    if (f.first_sent_s >= 0) out << f.first_sent_s * 1e6;
    out << ',';
    if (opt.ack_wait) out << frames_sent[f.nic_key] << ',' << f.timeouts_with_data_in_nic;
    else out << ',';
    out << '\n';
  }

  std::ofstream counters(opt.out + "/counters.csv");
  counters << "router,port,queue,dropped,marked" << (opt.port_counts ? ",dequeued,data_sent" : "") << "\n";
  uint64_t drops = 0, marks = 0;
  for (const SwitchPort& sp : switch_ports) {
    const QueueDisc::Stats& st = sp.qdisc->GetStats();
    counters << sp.name << ',' << sp.port << ",0," << st.nTotalDroppedPackets << ',' << st.nTotalMarkedPackets;
    if (opt.port_counts) counters << ',' << st.nTotalDequeuedPackets << ',' << *sp.data_sent;
    counters << '\n';
    drops += st.nTotalDroppedPackets;
    marks += st.nTotalMarkedPackets;
  }

  std::ofstream summary(opt.out + "/summary.yaml");
  summary << "simulator: ns-3.37 (Debian)\n"
          << "transport: " << opt.transport << "\nqueue: " << opt.queue << "\nhosts: " << opt.hosts
          << "\ncapacity_pkts: " << opt.capacity_pkts << "\nk_pkts: " << opt.k_pkts
          << "\nlink_gbps: " << opt.link_gbps << "\npacket_bytes: " << opt.packet_bytes
          << "\nsegment_bytes: " << segment << "\nlink_latency_timeslots: " << opt.link_latency_timeslots
          << "\ntimeslot_ns: " << timeslot_s * 1e9 << "\nmin_rto_us: " << opt.min_rto_us
          << "\npreconnect: " << (opt.preconnect ? "true" : "false")
          << "\nack_priority: " << (opt.ack_priority ? opt.ack_priority_at : std::string("false"))
          << "\ndctcp_min_ssthresh_pkts: " << opt.dctcp_min_ssthresh_pkts << "\nsack: " << (opt.sack ? "true" : "false")
          << "\nqueue_bytes: " << (opt.queue_bytes ? "true" : "false") << "\nflows: " << flows.size()
          << "\nfinished: " << finished << "\nswitch_drops: " << drops
          << "\nswitch_marks: " << marks << "\nswitch_drops_data: " << data_drops
          << "\nswitch_marks_data: " << data_marks;
  if (opt.ack_wait)
    summary << "\nack_wait_nic: " << WaitSummary(nic_acks.waits) << "\nack_wait_switch: " << WaitSummary(switch_acks.waits)
            << "\ndata_wait_nic: " << WaitSummary(nic_data.waits);
  if (opt.ack_wait) {
    uint64_t busy = 0;
    for (const Flow& f : flows) busy += f.timeouts_with_data_in_nic;
    summary << "\ntimeouts_with_data_in_nic: " << busy;
  }
  if (tree) {
    uint64_t unresolved = 0;  // segments of no flow, routed as flow 0: none expected
    for (const auto& r : ecmp) unresolved += r->unresolved();
    summary << "\ntopology: fat-tree\nk: " << opt.k << "\nrouters: " << tree->num_routers()
            << "\nunresolved_segments: " << unresolved;
  }
  summary << "\nsimulated_ms: " << sim_end * 1e3 << "\nwall_s: " << wall << "\n";
  std::cout << "ns3_star: " << finished << "/" << flows.size() << " flows finished in " << sim_end * 1e3
            << " ms simulated, " << wall << " s wall; switch drops " << drops << ", marks " << marks << "\n";
  Simulator::Destroy();
  return 0;
}
