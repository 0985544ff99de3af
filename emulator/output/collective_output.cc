// collective.csv: a collective workload's iterations (docs/output-format.md).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "emulator/output/output.h"
#include "emulator/workload/collective.h"

namespace flexplane {

CollectiveSummary write_collective_csv(const std::string& path, double timeslot_ns, const FlowTraffic& traffic) {
  CollectiveSummary sum;
  const FlowDeps* deps = traffic.dependencies();
  if (!deps || deps->empty()) return sum;
  struct Iteration {
    uint64_t flows = 0, finished = 0;
    Timeslot start = ~Timeslot{0}, end = 0;
  };
  std::vector<Iteration> it(deps->iterations);
  const auto& flows = traffic.flows();
  for (size_t i = 0; i < flows.size(); ++i) {
    Iteration& x = it[deps->iteration[i]];
    ++x.flows;
    x.start = std::min(x.start, traffic.release()[i]);
    if (traffic.finished(static_cast<uint32_t>(i))) {
      ++x.finished;
      x.end = std::max(x.end, traffic.states()[i].finish);
    }
  }
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(path + ": cannot write");
  std::fprintf(f, "iteration,flows,finished,start_timeslot,end_timeslot,start_us,end_us,comm_us,iteration_us\n");
  const double ts_us = timeslot_ns / 1000.0;
  sum.iterations = deps->iterations;
  bool previous_done = true;  // iteration_us needs the previous iteration's end
  Timeslot previous_end = 0;
  double total = 0;
  for (uint32_t k = 0; k < it.size(); ++k) {
    const Iteration& x = it[k];
    const bool done = x.flows > 0 && x.finished == x.flows;
    std::fprintf(f, "%u,%llu,%llu,", k, static_cast<unsigned long long>(x.flows),
                 static_cast<unsigned long long>(x.finished));
    if (x.flows == 0) {  // a label no send used
      std::fprintf(f, ",,,,,\n");
      previous_done = false;
      continue;
    }
    std::fprintf(f, "%llu,", static_cast<unsigned long long>(x.start));
    if (!done) {
      std::fprintf(f, ",%.4f,,,\n", x.start * ts_us);
      previous_done = false;
      continue;
    }
    // The end is the timeslot its last packet arrived: + 1 counts that timeslot (as flows.csv's FCT does).
    const double end_us = (x.end + 1) * ts_us;
    std::fprintf(f, "%llu,%.4f,%.4f,%.4f,", static_cast<unsigned long long>(x.end), x.start * ts_us, end_us,
                 (x.end + 1 - x.start) * ts_us);
    if (previous_done) {
      const double iter_us = (x.end + 1 - (k == 0 ? 0 : previous_end + 1)) * ts_us;
      std::fprintf(f, "%.4f", iter_us);
      ++sum.completed;
      total += iter_us;
      sum.max_iteration_us = std::max(sum.max_iteration_us, iter_us);
      sum.end_us = end_us;
    }
    std::fprintf(f, "\n");
    previous_done = previous_done && done;
    previous_end = x.end;
  }
  if (sum.completed) sum.mean_iteration_us = total / sum.completed;
  if (std::fclose(f) != 0) throw std::runtime_error(path + ": cannot write");
  return sum;
}

}  // namespace flexplane
