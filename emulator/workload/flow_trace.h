// Flow traces: a FlowList as CSV, so a workload can be generated once, saved,
// edited or produced by another tool, and replayed exactly.
//
// Format (one flow per line, all fields unsigned decimal integers):
//   flow_id,src,dst,size_pkts,start_timeslot
//   0,3,7,12,0
//   1,5,2,1,4
// - The first non-comment line must be exactly that header.
// - Blank lines and lines whose first non-blank character is '#' are ignored.
// - src and dst are endpoint indices (< the topology's endpoint count), src != dst;
//   size_pkts >= 1 (abstract packets); start_timeslot is when the flow arrives
//   at its source; flow_id values must be unique.
// Reading sorts flows by (start_timeslot, flow_id) and renumbers them densely
// 0..n-1 in that order (the engine's contract, emulator/flow.h); a trace that
// write_flow_trace produced reads back unchanged.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "api/flow.h"

namespace flexplane {

inline constexpr const char* kFlowTraceHeader = "flow_id,src,dst,size_pkts,start_timeslot";

// Throws ConfigError("<path>:<line>: ...") for any malformed or invalid line.
FlowList read_flow_trace(const std::string& path, uint32_t num_endpoints);
FlowList read_flow_trace(std::istream& in, const std::string& name, uint32_t num_endpoints);

// Writes the header and one line per flow, in list order. Throws ConfigError
// if the file cannot be written.
void write_flow_trace(const std::string& path, const FlowList& flows);
void write_flow_trace(std::ostream& out, const FlowList& flows);

}  // namespace flexplane
