// libFuzzer target: a flow trace, as `check` and `run` read it
// (read_flow_trace against a 16-endpoint topology). A ConfigError is a correct
// answer; anything else (a crash, a sanitizer report, another exception) is a
// bug. scripts/fuzz_config.sh builds and runs it.
#include <cstdint>
#include <sstream>
#include <string>

#include "api/params.h"
#include "emulator/workload/flow_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const flexplane::FlowList flows = flexplane::read_flow_trace(in, "fuzz.csv", 16);
    for (size_t i = 0; i < flows.size(); ++i)  // the reader's contract (emulator/workload/flow_trace.h)
      if (flows[i].id != i || flows[i].src >= 16 || flows[i].dst >= 16 || flows[i].src == flows[i].dst ||
          flows[i].size_pkts == 0 || (i && flows[i - 1].start > flows[i].start))
        __builtin_trap();
  } catch (const flexplane::ConfigError&) {
  }
  return 0;
}
