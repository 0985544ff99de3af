// libFuzzer target: an experiment config, as `flexplane-emulator check` reads
// it: load_experiment_text (YAML, the duplicate-key and size checks, every
// section, variants and their merge), then validate_run on every run (routers,
// endpoint contract, transport, workload against the topology). Any
// ConfigError is a correct answer; a crash, a sanitizer report, another
// exception type, a hang or runaway memory is a bug. scripts/fuzz_config.sh
// builds and runs it.
//
// Relative files (size_cdf, trace, topology.file) resolve against
// FLEXPLANE_FUZZ_BASE_DIR (the script sets experiments/configs), so seeds
// taken from there find their data.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <yaml-cpp/yaml.h>

#include "emulator/config/config.h"
#include "emulator/config/yaml_util.h"
#include "emulator/run/setup.h"

namespace {

// Topologies are built while parsing, and a legitimately large one (a k = 64
// fat tree, 1024 racks) takes seconds and hundreds of megabytes: not a bug,
// but it would stall the fuzzer. Inputs whose sizing parameters exceed this
// (k: kMaxK) are skipped.
constexpr double kMaxSize = 64;
constexpr double kMaxK = 32;

bool too_large(const YAML::Node& node, int depth = 0) {
  if (depth > flexplane::yaml::kMaxDepth) return true;
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (kv.second.IsScalar() && (key == "k" || key == "racks" || key == "endpoints_per_rack" || key == "spines" ||
                                   key == "links_per_spine" || key == "endpoints")) {
        char* end = nullptr;
        const double v = std::strtod(kv.second.Scalar().c_str(), &end);
        if (!(v <= (key == "k" ? kMaxK : kMaxSize))) return true;  // NaN too
      }
      if (too_large(kv.second, depth + 1)) return true;
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node)
      if (too_large(item, depth + 1)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base_dir = [] {
    const char* d = std::getenv("FLEXPLANE_FUZZ_BASE_DIR");
    return std::string(d ? d : ".");
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    if (too_large(flexplane::yaml::parse_yaml(text, "fuzz.yaml"))) return 0;
  } catch (const flexplane::ConfigError&) {
    return 0;
  }
  try {
    flexplane::Experiment e = flexplane::load_experiment_text(text, "fuzz.yaml", base_dir);
    for (auto& r : e.runs) flexplane::validate_run(r);
  } catch (const flexplane::ConfigError&) {
  } catch (const flexplane::UsageError&) {
  }
  return 0;
}
