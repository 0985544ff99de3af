#include "emulator/workload/flow_trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "api/params.h"

namespace flexplane {

namespace {

// Strict unsigned decimal: digits only (no sign, no spaces inside, no hex).
bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno) return false;
  out = v;
  return true;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    size_t comma = line.find(',', begin);
    out.push_back(params_detail::trim(line.substr(begin, comma - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

// A cell or line quoted in a message: at most 40 bytes of it (a binary file
// may have no line breaks at all). Control bytes are escaped where the
// message is printed (emulator/config/printable.h).
std::string clip(const std::string& s) { return s.size() <= 40 ? s : s.substr(0, 40) + "..."; }

}  // namespace

FlowList read_flow_trace(const std::string& path, uint32_t num_endpoints) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open flow trace");
  return read_flow_trace(in, path, num_endpoints);
}

FlowList read_flow_trace(std::istream& in, const std::string& name, uint32_t num_endpoints) {
  static const char* kFields[] = {"flow_id", "src", "dst", "size_pkts", "start_timeslot"};
  struct Row {
    uint64_t id;
    FlowSpec flow;
  };
  std::vector<Row> rows;
  std::unordered_map<uint64_t, size_t> id_line;
  bool have_header = false;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string loc = name + ":" + std::to_string(line_no);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string text = params_detail::trim(line);
    if (text.empty() || text[0] == '#') continue;
    if (!have_header) {
      if (text != kFlowTraceHeader)
        throw ConfigError(loc + ": expected the header '" + std::string(kFlowTraceHeader) + "', got '" + clip(text) + "'");
      have_header = true;
      continue;
    }
    const auto f = split_csv(text);
    if (f.size() != 5)
      throw ConfigError(loc + ": expected 5 comma-separated fields (" + kFlowTraceHeader + "), got " +
                        std::to_string(f.size()));
    uint64_t v[5];
    for (int i = 0; i < 5; ++i)
      if (!parse_u64(f[i], v[i]))
        throw ConfigError(loc + ": " + kFields[i] + " '" + clip(f[i]) + "' is not an unsigned integer");
    const uint64_t id = v[0], src = v[1], dst = v[2], size = v[3], start = v[4];
    if (src >= num_endpoints)
      throw ConfigError(loc + ": src " + f[1] + " is not an endpoint (the topology has " +
                        std::to_string(num_endpoints) + ", numbered 0.." + std::to_string(num_endpoints - 1) + ")");
    if (dst >= num_endpoints)
      throw ConfigError(loc + ": dst " + f[2] + " is not an endpoint (the topology has " +
                        std::to_string(num_endpoints) + ", numbered 0.." + std::to_string(num_endpoints - 1) + ")");
    if (src == dst) throw ConfigError(loc + ": src and dst are both " + f[1] + " (a flow needs two endpoints)");
    if (size == 0) throw ConfigError(loc + ": size_pkts is 0 (a flow carries at least 1 packet)");
    if (size > std::numeric_limits<uint32_t>::max())
      throw ConfigError(loc + ": size_pkts " + f[3] + " is larger than " +
                        std::to_string(std::numeric_limits<uint32_t>::max()));
    if (auto [it, fresh] = id_line.emplace(id, line_no); !fresh)
      throw ConfigError(loc + ": flow_id " + f[0] + " already used on line " + std::to_string(it->second));
    FlowSpec flow;
    flow.src = static_cast<EndpointId>(src);
    flow.dst = static_cast<EndpointId>(dst);
    flow.size_pkts = static_cast<uint32_t>(size);
    flow.start = start;
    rows.push_back({id, flow});
  }
  if (in.bad()) throw ConfigError(name + ": read error");
  if (!have_header) throw ConfigError(name + ": empty flow trace (no '" + std::string(kFlowTraceHeader) + "' header)");
  if (rows.size() > std::numeric_limits<uint32_t>::max())
    throw ConfigError(name + ": too many flows (" + std::to_string(rows.size()) + ")");

  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.flow.start != b.flow.start ? a.flow.start < b.flow.start : a.id < b.id;
  });
  FlowList flows;
  flows.reserve(rows.size());
  for (auto& r : rows) {
    r.flow.id = static_cast<uint32_t>(flows.size());
    flows.push_back(r.flow);
  }
  return flows;
}

void write_flow_trace(std::ostream& out, const FlowList& flows) {
  out << kFlowTraceHeader << '\n';
  for (const auto& f : flows)
    out << f.id << ',' << f.src << ',' << f.dst << ',' << f.size_pkts << ',' << f.start << '\n';
}

void write_flow_trace(const std::string& path, const FlowList& flows) {
  std::ofstream out(path);
  if (!out) throw ConfigError(path + ": cannot create flow trace");
  write_flow_trace(out, flows);
  out.flush();
  if (!out) throw ConfigError(path + ": write error");
}

}  // namespace flexplane
