// The records of a live run that a replay reads back (docs/live.md):
// arrivals.csv (every request as it entered its emulated endpoint) and
// verdicts.csv (every verdict, sorted), written by `live --record` and by
// `replay`.
#pragma once

#include <string>
#include <vector>

#include "emulator/traffic/live_traffic.h"

namespace flexplane {

void write_arrivals_csv(const std::string& path, const std::vector<RecordedArrival>& arrivals);
std::vector<RecordedArrival> read_arrivals_csv(const std::string& path);  // throws std::runtime_error
// Sorts (sort_verdicts) and writes timeslot,action,reason,src,dst,flow,seq.
void write_verdicts_csv(const std::string& path, std::vector<LiveVerdict> verdicts);

}  // namespace flexplane
