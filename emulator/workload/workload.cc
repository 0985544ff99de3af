#include "emulator/workload/workload.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>

#include "api/params.h"
#include "emulator/config/yaml_util.h"
#include "emulator/workload/flow_trace.h"
#include "emulator/workload/traffic_pattern.h"

namespace flexplane {

namespace {

// Rng streams of the workload ("WKLD" tag in the high bits keeps them apart
// from the small per-router stream ids).
constexpr uint64_t kStreamTag = 0x574B4C4400000000ull;
constexpr uint64_t kArrivalStream = kStreamTag | 1;
constexpr uint64_t kSizeStream = kStreamTag | 2;
constexpr uint64_t kEndpointStream = kStreamTag | 3;
constexpr uint64_t kPatternStream = kStreamTag | 4;  // the pattern's fixed state (the permutation)

constexpr uint32_t kMaxEndpoints = uint32_t{1} << (8 * sizeof(EndpointId));

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

template <class E>
struct Choice {
  const char* name;
  E value;
};
constexpr Choice<WorkloadKind> kKinds[] = {
    {"poisson", WorkloadKind::kPoisson}, {"trace", WorkloadKind::kTrace}, {"collective", WorkloadKind::kCollective}};

// Strict reading of one `key: value` of the workload map.
class Field {
 public:
  // `at` names the field and its place ("exp.yaml:5:3: workload.load").
  Field(const std::string& at, const YAML::Node& value) : at_(at), node_(value) {
    if (!value.IsScalar()) throw ConfigError(at_ + ": expected a single value, got a " + node_type());
    text_ = value.Scalar();
  }

  const std::string& at() const { return at_; }
  const std::string& text() const { return text_; }
  [[noreturn]] void fail(const std::string& why) const { throw ConfigError(at_ + ": " + why + " ('" + text_ + "')"); }

  template <class T>
  T get(const char* what) const {
    T v{};
    if (!params_detail::parse(text_, v)) fail(std::string("expected ") + what);
    return v;
  }

  template <class E, size_t N>
  E choice(const Choice<E> (&choices)[N]) const {
    std::string names;
    for (const auto& c : choices) {
      if (text_ == c.name) return c.value;
      names += (names.empty() ? "" : ", ") + std::string(c.name);
    }
    fail("unknown value, expected one of: " + names);
  }

 private:
  std::string node_type() const {
    if (node_.IsMap()) return "mapping";
    if (node_.IsSequence()) return "sequence";
    return "null";
  }
  std::string at_;
  YAML::Node node_;
  std::string text_;
};

std::string resolve(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p(path);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  return p.lexically_normal().string();
}

}  // namespace

const char* to_string(WorkloadKind kind) {
  for (const auto& c : kKinds)
    if (c.value == kind) return c.name;
  return "?";
}

WorkloadSpec parse_workload(const YAML::Node& node, const std::string& where, const std::string& base_dir,
                            const std::string& file) {
  if (!node.IsMap()) throw ConfigError(where + ": expected a mapping of workload settings");
  static const char* kKeys[] = {"kind",         "pattern",      "load",       "size_cdf",
                                "fixed_size_pkts", "trace",     "seed",       "duration_timeslots",
                                "max_flows",    "collective",   "sends",      "ranks",
                                "rank_stride",  "message_pkts", "iterations", "compute_gap_timeslots"};
  WorkloadSpec spec;
  spec.where = where;
  std::vector<std::string> seen;
  std::string cdf_at, trace_at, sends_at;
  // Where a key was written: its own line and column when the file is known.
  auto key_at = [&](const YAML::Node& k, const std::string& key) {
    return file.empty() || k.Mark().line < 0 ? where + "." + key : yaml::where(file, k, "workload." + key);
  };
  // The pattern first: its parameters are keys of this map too.
  if (const YAML::Node p = node["pattern"]) spec.pattern = Field(where + ".pattern", p).text();
  const ComponentInfo<TrafficPattern>& pattern =
      Registry<TrafficPattern>::instance().get(spec.pattern, where + ".pattern ('" + spec.pattern + "')");
  // A collective's parameters are keys of this map too (kind: collective).
  const ComponentInfo<Collective>* collective = nullptr;
  if (const YAML::Node c = node["collective"]) {
    spec.collective = Field(where + ".collective", c).text();
    collective = &Registry<Collective>::instance().get(spec.collective, where + ".collective ('" + spec.collective + "')");
  }
  auto declares = [](const auto& info, const std::string& key) {
    return std::any_of(info.params.begin(), info.params.end(), [&](const ParamDesc& d) { return d.name == key; });
  };
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      if (collective && declares(*collective, key)) {  // a parameter of the collective
        spec.collective_params.set(key, Field(key_at(kv.first, key), kv.second).text(), key_at(kv.first, key));
        seen.push_back(key);
        continue;
      }
      if (declares(pattern, key)) {  // a parameter of the pattern
        spec.pattern_params.set(key, Field(key_at(kv.first, key), kv.second).text(), key_at(kv.first, key));
        seen.push_back(key);
        continue;
      }
      std::string patterns, collectives, known;
      for (const auto& [name, info] : Registry<TrafficPattern>::instance().all())
        if (declares(info, key)) patterns += (patterns.empty() ? "" : ", ") + name;
      for (const auto& [name, info] : Registry<Collective>::instance().all())
        if (declares(info, key)) collectives += (collectives.empty() ? "" : ", ") + name;
      if (!patterns.empty()) throw ConfigError(key_at(kv.first, key) + ": only applies with pattern: " + patterns);
      if (!collectives.empty()) throw ConfigError(key_at(kv.first, key) + ": only applies with collective: " + collectives);
      for (const char* k : kKeys) known += (known.empty() ? "" : ", ") + std::string(k);
      for (const auto& d : pattern.params) known += ", " + d.name;
      throw ConfigError(key_at(kv.first, key) + ": unknown key '" + key + "' (known: " + known + ")");
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw ConfigError(where + "." + key + ": given twice");
    seen.push_back(key);
    const Field f(key_at(kv.first, key), kv.second);
    if (key == "kind") {
      spec.kind = f.choice(kKinds);
    } else if (key == "pattern") {  // read above
    } else if (key == "load") {
      spec.load = f.get<double>("a number");
      if (!(spec.load > 0 && spec.load <= 1)) f.fail("offered load must be in (0, 1] (fraction of access-link rate)");
    } else if (key == "size_cdf") {
      if (f.text().empty()) f.fail("expected a file path");
      spec.size_cdf = resolve(f.text(), base_dir);
      cdf_at = f.at();
    } else if (key == "fixed_size_pkts") {
      spec.fixed_size_pkts = f.get<uint32_t>("a whole number of packets");
      if (spec.fixed_size_pkts == 0) f.fail("must be >= 1 packet");
    } else if (key == "trace") {
      if (f.text().empty()) f.fail("expected a file path");
      spec.trace_path = resolve(f.text(), base_dir);
      trace_at = f.at();
    } else if (key == "seed") {
      spec.seed = f.get<uint64_t>("an unsigned integer");
    } else if (key == "duration_timeslots") {
      spec.duration = f.get<uint64_t>("a whole number of timeslots");
    } else if (key == "max_flows") {
      spec.max_flows = f.get<uint64_t>("a whole number");
      if (spec.max_flows == 0) f.fail("must be >= 1");
    } else if (key == "collective") {  // read above
    } else if (key == "sends") {
      if (f.text().empty()) f.fail("expected a file path");
      spec.sends_path = resolve(f.text(), base_dir);
      sends_at = f.at();
    } else if (key == "ranks") {
      spec.shape.ranks = f.get<uint32_t>("a whole number of ranks");
      if (spec.shape.ranks < 2) f.fail("a collective needs >= 2 ranks");
    } else if (key == "rank_stride") {
      spec.shape.rank_stride = f.get<uint32_t>("a whole number of endpoints");
      if (spec.shape.rank_stride == 0) f.fail("must be >= 1");
    } else if (key == "message_pkts") {
      spec.shape.message_pkts = f.get<uint32_t>("a whole number of packets");
      if (spec.shape.message_pkts == 0) f.fail("must be >= 1 packet");
    } else if (key == "iterations") {
      spec.shape.iterations = f.get<uint32_t>("a whole number");
      if (spec.shape.iterations == 0) f.fail("must be >= 1");
    } else if (key == "compute_gap_timeslots") {
      spec.shape.compute_gap = f.get<uint64_t>("a whole number of timeslots");
    }
  }
  auto has = [&](const char* k) { return std::find(seen.begin(), seen.end(), k) != seen.end(); };
  auto only_with = [&](const char* k, const std::string& condition) {
    if (has(k)) throw ConfigError(where + "." + k + ": only applies with " + condition);
  };

  static const char* kCollectiveKeys[] = {"collective",   "sends",      "ranks",
                                          "rank_stride",  "message_pkts", "iterations", "compute_gap_timeslots"};
  if (spec.kind == WorkloadKind::kCollective) {
    for (const char* k : {"pattern", "load", "size_cdf", "fixed_size_pkts", "trace", "duration_timeslots", "seed"})
      only_with(k, "kind: poisson or trace (a collective's flows start when their dependencies complete)");
    for (const auto& [k, v] : spec.pattern_params.entries) only_with(k.c_str(), "kind: poisson");
    if (has("collective") == has("sends"))
      throw ConfigError(where + ": kind: collective needs exactly one of `collective: <name>` (known: " +
                        [] {
                          std::string n;
                          for (const auto& name : Registry<Collective>::instance().names()) n += (n.empty() ? "" : ", ") + name;
                          return n;
                        }() + ") or `sends: <send list CSV>`");
    if (has("sends")) {
      for (const char* k : {"ranks", "rank_stride", "message_pkts", "iterations", "compute_gap_timeslots"})
        only_with(k, "collective: <name> (a send list fixes every send)");
      yaml::require_input_file(spec.sends_path, sends_at);
      return spec;
    }
    if (!has("message_pkts")) throw ConfigError(where + ": collective: " + spec.collective + " needs `message_pkts: <packets>`");
    ParamValues values = spec.collective_params;  // parsed now so that their errors surface at config time
    values.where = where;
    collective->make(values, nullptr);
    return spec;
  }
  for (const char* k : kCollectiveKeys) only_with(k, "kind: collective");
  if (spec.kind == WorkloadKind::kTrace) {
    for (const char* k : {"pattern", "load", "size_cdf", "fixed_size_pkts", "max_flows"})
      only_with(k, "kind: poisson (a trace fixes every flow)");
    for (const auto& [k, v] : spec.pattern_params.entries) only_with(k.c_str(), "kind: poisson (a trace fixes every flow)");
    if (!has("trace")) throw ConfigError(where + ": kind: trace needs `trace: <flow trace CSV>`");
    yaml::require_input_file(spec.trace_path, trace_at);
    return spec;
  }

  only_with("trace", "kind: trace");
  if (has("size_cdf") == has("fixed_size_pkts"))
    throw ConfigError(where + ": give exactly one of `size_cdf: <file>` or `fixed_size_pkts: <n>`");
  {  // the pattern's parameters: parsed now so that their errors surface at config time
    ParamValues values = spec.pattern_params;
    values.where = where;
    pattern.make(values, nullptr);
  }
  if (has("duration_timeslots") && spec.duration == 0)
    throw ConfigError(where + ".duration_timeslots: must be > 0 ('0')");
  if (!spec.size_cdf.empty()) {
    yaml::require_input_file(spec.size_cdf, cdf_at);
    try {
      SizeDistribution::load(spec.size_cdf);
    } catch (const ConfigError& e) {
      throw ConfigError(cdf_at + ": " + e.what());
    }
  }
  return spec;
}

namespace {

// A registered pattern's or collective's parameters, defaults included, appended to `out`.
template <class Base>
void add_resolved(const std::string& name, const ParamValues& given, const std::string& where,
                  std::vector<std::pair<std::string, std::string>>& out) {
  ResolvedParams resolved;
  if (const auto* info = Registry<Base>::instance().find(name)) {
    ParamValues values = given;
    values.where = where;
    info->make(values, &resolved);
  }
  for (auto& kv : resolved) out.push_back(kv);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> describe(const WorkloadSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("kind", to_string(spec.kind));
  if (spec.kind == WorkloadKind::kCollective) {
    if (!spec.sends_path.empty()) {
      out.emplace_back("sends", spec.sends_path);
    } else {
      out.emplace_back("collective", spec.collective);
      add_resolved<Collective>(spec.collective, spec.collective_params, spec.where, out);
      out.emplace_back("ranks", std::to_string(spec.shape.ranks));
      out.emplace_back("rank_stride", std::to_string(spec.shape.rank_stride));
      out.emplace_back("message_pkts", std::to_string(spec.shape.message_pkts));
      out.emplace_back("iterations", std::to_string(spec.shape.iterations));
      out.emplace_back("compute_gap_timeslots", std::to_string(spec.shape.compute_gap));
    }
    out.emplace_back("max_flows", std::to_string(spec.max_flows));
    return out;
  }
  if (spec.kind == WorkloadKind::kTrace) {
    out.emplace_back("trace", spec.trace_path);
    out.emplace_back("duration_timeslots", std::to_string(spec.duration));
    return out;
  }
  out.emplace_back("pattern", spec.pattern);
  out.emplace_back("load", fmt(spec.load));
  if (spec.fixed_size_pkts) out.emplace_back("fixed_size_pkts", std::to_string(spec.fixed_size_pkts));
  else out.emplace_back("size_cdf", spec.size_cdf);
  add_resolved<TrafficPattern>(spec.pattern, spec.pattern_params, spec.where, out);
  out.emplace_back("duration_timeslots", std::to_string(spec.duration));
  out.emplace_back("seed", std::to_string(spec.seed));
  out.emplace_back("max_flows", std::to_string(spec.max_flows));
  return out;
}

void describe(const WorkloadSpec& spec, YAML::Emitter& out) {
  out << YAML::BeginMap;
  for (const auto& [k, v] : describe(spec)) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
}

SizeDistribution size_distribution(const WorkloadSpec& spec) {
  if (spec.fixed_size_pkts) return SizeDistribution::fixed(spec.fixed_size_pkts);
  if (spec.size_cdf.empty())
    throw ConfigError(spec.where + ": no flow sizes: give `size_cdf: <file>` or `fixed_size_pkts: <n>`");
  return SizeDistribution::load(spec.size_cdf);
}

namespace {

// What generation needs of a poisson spec against `num_endpoints`, checked
// without generating: the pattern fits (prepared from its own stream, as
// generation does), the sizes load, the flow count stays under max_flows.
struct PoissonSetup {
  std::unique_ptr<TrafficPattern> pattern;
  SizeDistribution sizes;
  double flows_per_timeslot = 0;
  double expected_flows = 0;
};

PoissonSetup poisson_setup(const WorkloadSpec& spec, uint32_t num_endpoints) {
  const std::string& where = spec.where;
  if (spec.duration == 0)
    throw ConfigError(where + ".duration_timeslots: a poisson workload needs a duration > 0 timeslots");
  if (!(spec.load > 0 && spec.load <= 1))
    throw ConfigError(where + ".load: offered load must be in (0, 1] ('" + fmt(spec.load) + "')");
  ParamValues pattern_values = spec.pattern_params;
  pattern_values.where = where;
  PoissonSetup s{Registry<TrafficPattern>::instance().get(spec.pattern, where + ".pattern").make(pattern_values, nullptr),
                 size_distribution(spec)};
  Rng pattern_rng(spec.seed, kPatternStream);
  s.pattern->prepare(num_endpoints, pattern_rng, where);
  s.flows_per_timeslot = spec.load * num_endpoints / s.sizes.mean_pkts();
  s.expected_flows = s.flows_per_timeslot * static_cast<double>(spec.duration);
  if (s.expected_flows > static_cast<double>(spec.max_flows))
    throw ConfigError(where + ".max_flows: the workload would generate ~" + fmt(std::round(s.expected_flows)) +
                      " flows, more than max_flows = " + std::to_string(spec.max_flows) +
                      " (raise max_flows, or lower load or duration_timeslots)");
  return s;
}

void check_endpoints(const WorkloadSpec& spec, uint32_t num_endpoints) {
  if (num_endpoints < 2 || num_endpoints > kMaxEndpoints)
    throw ConfigError(spec.where + ": a workload needs 2.." + std::to_string(kMaxEndpoints) +
                      " endpoints, the topology has " + std::to_string(num_endpoints));
}

// A collective's flows and dependencies (kind collective).
FlowList collective_flows(const WorkloadSpec& spec, uint32_t num_endpoints, FlowDeps* deps) {
  FlowList flows;
  if (!spec.sends_path.empty()) {
    flows = read_send_list(spec.sends_path, num_endpoints, deps);
    if (flows.size() > spec.max_flows)
      throw ConfigError(spec.where + ".max_flows: the send list has " + std::to_string(flows.size()) +
                        " sends, more than max_flows = " + std::to_string(spec.max_flows));
    return flows;
  }
  ParamValues values = spec.collective_params;
  values.where = spec.where;
  const auto c = Registry<Collective>::instance().get(spec.collective, spec.where + ".collective").make(values, nullptr);
  return expand_collective(*c, spec.shape, num_endpoints, spec.max_flows, spec.where, deps);
}

}  // namespace

void validate_workload(const WorkloadSpec& spec, uint32_t num_endpoints) {
  check_endpoints(spec, num_endpoints);
  if (spec.kind == WorkloadKind::kCollective) {
    FlowDeps deps;
    collective_flows(spec, num_endpoints, &deps);
  } else if (spec.kind == WorkloadKind::kTrace)
    read_flow_trace(spec.trace_path, num_endpoints);  // every row, against this topology
  else
    poisson_setup(spec, num_endpoints);
}

FlowList generate_flows(const WorkloadSpec& spec, uint32_t num_endpoints, WorkloadStats* stats, FlowDeps* deps) {
  const std::string& where = spec.where;
  check_endpoints(spec, num_endpoints);
  WorkloadStats local;
  WorkloadStats& st = stats ? *stats : local;
  st = WorkloadStats{};

  FlowList flows;
  if (spec.kind == WorkloadKind::kCollective) {
    if (!deps)
      throw ConfigError(where + ".kind: a collective's sends wait for each other, which only virtual-time runs with a "
                        "closed-loop transport drive (flexplane-emulator run)");
    flows = collective_flows(spec, num_endpoints, deps);
    st.num_flows = flows.size();
    for (const auto& f : flows) st.total_pkts += f.size_pkts;
    return flows;  // offered load: not known before the run (starts depend on completions)
  }
  if (spec.kind == WorkloadKind::kTrace) {
    flows = read_flow_trace(spec.trace_path, num_endpoints);
    if (spec.duration) {  // sorted by start, ids dense in that order: truncating keeps both
      auto end = std::partition_point(flows.begin(), flows.end(),
                                      [&](const FlowSpec& f) { return f.start < spec.duration; });
      flows.erase(end, flows.end());
    }
  } else {
    PoissonSetup setup = poisson_setup(spec, num_endpoints);
    TrafficPattern* pattern = setup.pattern.get();
    st.permutation = pattern->fixed_map();
    const uint32_t flows_per_event = pattern->flows_per_event();
    const SizeDistribution& sizes = setup.sizes;
    st.mean_size_pkts = sizes.mean_pkts();
    st.flows_per_timeslot = setup.flows_per_timeslot;
    const double events_per_timeslot = st.flows_per_timeslot / flows_per_event;
    const double expected_flows = setup.expected_flows;

    Rng arrival_rng(spec.seed, kArrivalStream);
    Rng size_rng(spec.seed, kSizeStream);
    Rng endpoint_rng(spec.seed, kEndpointStream);
    std::vector<std::pair<EndpointId, EndpointId>> pairs(flows_per_event);

    flows.reserve(static_cast<size_t>(expected_flows * 1.01) + 16);
    auto add = [&](EndpointId src, EndpointId dst, Timeslot start) {
      if (flows.size() >= spec.max_flows)
        throw ConfigError(where + ".max_flows: more than " + std::to_string(spec.max_flows) +
                          " flows generated (raise max_flows, or lower load or duration_timeslots)");
      FlowSpec f;
      f.id = static_cast<uint32_t>(flows.size());
      f.src = src;
      f.dst = dst;
      f.size_pkts = sizes.sample(size_rng);
      f.start = start;
      flows.push_back(f);
    };

    const double duration = static_cast<double>(spec.duration);
    double t = 0;
    while (true) {
      t += -std::log1p(-arrival_rng.uniform()) / events_per_timeslot;  // Exp(rate); 1-u in (0, 1]
      if (!(t < duration)) break;
      const Timeslot start = std::min(static_cast<Timeslot>(t), spec.duration - 1);
      pattern->event(endpoint_rng, pairs.data());
      for (const auto& [src, dst] : pairs) add(src, dst, start);
    }
  }

  st.num_flows = flows.size();
  Timeslot horizon = spec.duration;
  for (const auto& f : flows) {
    st.total_pkts += f.size_pkts;
    if (!spec.duration) horizon = std::max(horizon, f.start + 1);
  }
  if (horizon) st.offered_load = static_cast<double>(st.total_pkts) / (static_cast<double>(num_endpoints) * horizon);
  return flows;
}

}  // namespace flexplane
