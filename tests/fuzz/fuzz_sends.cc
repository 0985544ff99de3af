// libFuzzer target: a send list (a collective's sends and dependencies), as
// `check` and `run` read it (read_send_list against a 16-endpoint topology).
// A ConfigError is a correct answer; anything else (a crash, a sanitizer
// report, another exception) is a bug. scripts/fuzz_config.sh builds and runs it.
#include <cstdint>
#include <sstream>
#include <string>

#include "api/params.h"
#include "emulator/workload/collective.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    flexplane::FlowDeps deps;
    const flexplane::FlowList flows = flexplane::read_send_list(in, "fuzz.csv", 16, &deps);
    // The reader's contract (emulator/workload/collective.h): dense ids sorted by start, every
    // dependency an earlier flow that is a send or a receive of the waiting flow's source.
    if (deps.after_begin.size() != flows.size() + 1 || deps.gap.size() != flows.size()) __builtin_trap();
    for (size_t i = 0; i < flows.size(); ++i) {
      const flexplane::FlowSpec& f = flows[i];
      if (f.id != i || f.src >= 16 || f.dst >= 16 || f.src == f.dst || f.size_pkts == 0 ||
          (i && flows[i - 1].start > f.start) || deps.iteration[i] >= deps.iterations)
        __builtin_trap();
      for (uint32_t j = deps.after_begin[i]; j < deps.after_begin[i + 1]; ++j) {
        const uint32_t d = deps.after[j];
        if (d >= i || (flows[d].src != f.src && flows[d].dst != f.src) || flows[d].start > f.start) __builtin_trap();
      }
    }
  } catch (const flexplane::ConfigError&) {
  }
  return 0;
}
