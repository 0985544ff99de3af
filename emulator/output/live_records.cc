#include "emulator/output/live_records.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace flexplane {

namespace {

const char* action_name(LiveVerdict::Action a) {
  switch (a) {
    case LiveVerdict::kRelease: return "release";
    case LiveVerdict::kMark: return "mark";
    default: return "drop";
  }
}

}  // namespace

void write_arrivals_csv(const std::string& path, const std::vector<RecordedArrival>& arrivals) {
  std::ofstream out(path);
  out << "timeslot,src,dst,flow,seq,size_bytes,flags,dscp,priority,custom0,custom1,custom2\n";
  for (const auto& a : arrivals) {
    const Packet& p = a.pkt;
    out << a.time << ',' << p.src << ',' << p.dst << ',' << p.flow << ',' << p.seq << ',' << p.size_bytes << ','
        << unsigned(p.flags) << ',' << unsigned(p.dscp) << ',' << p.priority << ',' << p.custom[0] << ','
        << p.custom[1] << ',' << p.custom[2] << '\n';
  }
  if (!out) throw std::runtime_error(path + ": cannot write");
}

std::vector<RecordedArrival> read_arrivals_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::vector<RecordedArrival> out;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#' || (lineno == 1 && line.rfind("timeslot", 0) == 0)) continue;
    uint64_t f[12] = {};
    size_t n = 0;
    std::stringstream ss(line);
    std::string cell;
    while (n < 12 && std::getline(ss, cell, ',')) {
      char* end = nullptr;
      f[n] = std::strtoull(cell.c_str(), &end, 10);
      if (cell.empty() || *end) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": bad number '" + cell + "'");
      ++n;
    }
    if (n != 9 && n != 12) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": expected 9 or 12 columns");
    RecordedArrival a{};
    a.time = f[0];
    a.pkt.src = static_cast<EndpointId>(f[1]);
    a.pkt.dst = static_cast<EndpointId>(f[2]);
    a.pkt.flow = static_cast<uint32_t>(f[3]);
    a.pkt.seq = static_cast<uint32_t>(f[4]);
    a.pkt.size_bytes = static_cast<uint16_t>(f[5]);
    a.pkt.flags = static_cast<uint8_t>(f[6]);
    a.pkt.dscp = static_cast<uint8_t>(f[7]);
    a.pkt.priority = static_cast<uint32_t>(f[8]);
    for (int i = 0; i < 3; ++i) a.pkt.custom[i] = static_cast<uint32_t>(f[9 + i]);
    out.push_back(a);
  }
  return out;
}

void write_verdicts_csv(const std::string& path, std::vector<LiveVerdict> v) {
  sort_verdicts(v);
  std::ofstream out(path);
  out << "timeslot,action,reason,src,dst,flow,seq\n";
  for (const auto& x : v)
    out << x.time << ',' << action_name(x.action) << ','
        << (x.action == LiveVerdict::kDrop ? reason_name(x.reason) : "-") << ',' << x.pkt.src << ',' << x.pkt.dst
        << ',' << x.pkt.flow << ',' << x.pkt.seq << '\n';
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace flexplane
