// Registration by name: schemes declare themselves once, configs pick them by
// name at run time, with typed parameters.
//
//   FLEXPLANE_REGISTER_QUEUE_MANAGER(DctcpQueueManager, "dctcp", "mark above K",
//       param(&DctcpParams::k_pkts, "k_pkts", "mark when longer than this, packets"));
//   FLEXPLANE_REGISTER_SCHEME("dctcp", "DCTCP switch: ...", "single", "dctcp", "fifo");
//
// A *scheme* is a named preset of classifier + queue manager + scheduler (and
// the endpoint stamping it expects), so configs can say `scheme: dctcp` and
// still override any component or parameter.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/classifier.h"
#include "api/load_balancer.h"
#include "api/params.h"
#include "api/queue_manager.h"
#include "api/router.h"
#include "api/scheduler.h"

namespace flexplane {

template <class Base> struct KindName;
template <> struct KindName<ClassifierBase> { static const char* get() { return "classifier"; } };
template <> struct KindName<QueueManagerBase> { static const char* get() { return "queue_manager"; } };
template <> struct KindName<SchedulerBase> { static const char* get() { return "scheduler"; } };
template <> struct KindName<LoadBalancerBase> { static const char* get() { return "load_balancer"; } };
template <> struct KindName<Router> { static const char* get() { return "router"; } };

using ResolvedParams = std::vector<std::pair<std::string, std::string>>;

template <class Base>
struct ComponentInfo {
  std::string name;
  std::string doc;
  std::vector<ParamDesc> params;
  // Build with parsed parameters; `resolved` receives name=value of every
  // parameter after defaults (for run metadata). Throws ConfigError.
  std::function<std::unique_ptr<Base>(const ParamValues&, ResolvedParams* resolved)> make;
};

template <class Base>
class Registry {
 public:
  static Registry& instance() {
    static Registry r;
    return r;
  }
  void add(ComponentInfo<Base> info) {
    std::string key = info.name;
    entries_[key] = std::move(info);
  }
  const ComponentInfo<Base>* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }
  const std::map<std::string, ComponentInfo<Base>>& all() const { return entries_; }

  // Find or throw a ConfigError listing what is registered.
  const ComponentInfo<Base>& get(const std::string& name, const std::string& where) const {
    if (const auto* info = find(name)) return *info;
    std::string known;
    for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError(where + ": unknown " + KindName<Base>::get() + " '" + name + "' (known: " + known + ")");
  }

 private:
  std::map<std::string, ComponentInfo<Base>> entries_;
};

template <class Base, class C>
bool register_component(const char* name, const char* doc, std::vector<ParamDesc> descs) {
  using P = typename C::Params;
  auto schema = std::make_shared<ParamSchema<P>>(std::move(descs));
  ComponentInfo<Base> info;
  info.name = name;
  info.doc = doc;
  info.params = schema->descs();
  const std::string label = std::string(KindName<Base>::get()) + " '" + name + "'";
  info.make = [schema, label, name](const ParamValues& values, ResolvedParams* resolved) -> std::unique_ptr<Base> {
    P p = schema->parse(values, label);
    if (resolved) *resolved = schema->show(p);
    auto c = std::make_unique<C>();
    c->set_params(p);
    if constexpr (std::is_base_of_v<ComponentBase, C>) c->set_registered_name(name);
    return c;
  };
  Registry<Base>::instance().add(std::move(info));
  return true;
}

// Small parameters that make a component act within the generic tests' short
// overload (schemes/invariants_test.cc: 4 ports, about one arrival per port per
// 1 µs timeslot for 2000 timeslots, so queues stay short and a 1024-packet
// buffer never fills): small buffers, thresholds and targets. Declared beside
// the registration, so adding a scheme needs no edit elsewhere:
//   FLEXPLANE_TEST_PARAMS(QueueManagerBase, "dctcp", {"k_pkts", "10"}, {"capacity_pkts", "40"});
template <class Base>
class TestParams {
 public:
  static TestParams& instance() {
    static TestParams t;
    return t;
  }
  bool add(const char* name, std::vector<std::pair<std::string, std::string>> params) {
    by_name_[name] = std::move(params);
    return true;
  }
  // What `name` declared; none (its defaults) if it declared nothing.
  std::vector<std::pair<std::string, std::string>> get(const std::string& name) const {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? std::vector<std::pair<std::string, std::string>>{} : it->second;
  }
  bool declared(const std::string& name) const { return by_name_.count(name) != 0; }

 private:
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_name_;
};

// A parameter's declared range as `list` prints it: "[1, 1048576]", ">= 0",
// "<= 1"; empty when none is declared (strings, bools, unbounded numbers).
inline std::string param_range_text(const ParamDesc& p) {
  auto num = [](double v) {
    char buf[32];
    if (v == std::floor(v) && std::fabs(v) < 1e7)
      std::snprintf(buf, sizeof buf, "%.0f", v);
    else
      std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  const bool lo = std::isfinite(p.range.min), hi = std::isfinite(p.range.max);
  if (lo && hi) return "[" + num(p.range.min) + ", " + num(p.range.max) + "]";
  if (lo) return ">= " + num(p.range.min);
  if (hi) return "<= " + num(p.range.max);
  return "";
}

// One line of `flexplane-emulator list` for a parameter: name, type, default,
// range (when declared) and meaning.
inline std::string param_list_line(const ParamDesc& p) {
  std::string range = param_range_text(p);
  std::string line = p.name;
  line.resize(std::max<size_t>(line.size() + 1, 22), ' ');
  line += p.type;
  line.resize(std::max<size_t>(line.size() + 1, 36), ' ');
  line += "default " + p.default_text;
  line.resize(std::max<size_t>(line.size() + 1, 54), ' ');
  line += !range.empty() ? range : p.type == "bool" ? std::string("true|false") : std::string("any");
  line.resize(std::max<size_t>(line.size() + 1, 76), ' ');
  return line + p.doc;
}

// A named bundle of components (and the endpoint-side stamping it expects).
struct SchemePreset {
  std::string name;
  std::string doc;
  std::string classifier;
  std::string queue_manager;
  std::string scheduler;
  std::string endpoint_priority = "none";  // see docs/config.md: none | flow_size | remaining_size
  // Scheme-defined data carried in Packet::custom (at most 12 bytes): how
  // many bytes endpoints put in each request and the emulator returns in each
  // verdict. Both sides take these from the registry, and the wire protocol's
  // handshake rejects a session whose sides disagree.
  uint8_t request_custom_bytes = 0;
  uint8_t verdict_custom_bytes = 0;
};

class SchemeRegistry {
 public:
  static SchemeRegistry& instance() {
    static SchemeRegistry r;
    return r;
  }
  bool add(SchemePreset p) {
    std::string key = p.name;
    presets_[key] = std::move(p);
    return true;
  }
  const SchemePreset* find(const std::string& name) const {
    auto it = presets_.find(name);
    return it == presets_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, SchemePreset>& all() const { return presets_; }

 private:
  std::map<std::string, SchemePreset> presets_;
};

#define FLEXPLANE_CONCAT_(a, b) a##b
#define FLEXPLANE_CONCAT(a, b) FLEXPLANE_CONCAT_(a, b)
#define FLEXPLANE_REGISTER_(Base, Class, name, doc, ...)                                                   \
  [[maybe_unused]] static const bool FLEXPLANE_CONCAT(flexplane_registered_, __LINE__) =                 \
      ::flexplane::register_component<::flexplane::Base, Class>(name, doc, {__VA_ARGS__})

#define FLEXPLANE_TEST_PARAMS(Base, name, ...)                                                        \
  [[maybe_unused]] static const bool FLEXPLANE_CONCAT(flexplane_test_params_, __LINE__) =               \
      ::flexplane::TestParams<::flexplane::Base>::instance().add(name, {__VA_ARGS__})

#define FLEXPLANE_REGISTER_CLASSIFIER(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(ClassifierBase, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)
#define FLEXPLANE_REGISTER_QUEUE_MANAGER(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(QueueManagerBase, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)
#define FLEXPLANE_REGISTER_SCHEDULER(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(SchedulerBase, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)
#define FLEXPLANE_REGISTER_LOAD_BALANCER(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(LoadBalancerBase, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)
#define FLEXPLANE_REGISTER_ROUTER(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(Router, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)

// FLEXPLANE_REGISTER_SCHEME(name, doc, classifier, queue_manager, scheduler
//                           [, endpoint_priority[, request_custom_bytes, verdict_custom_bytes]])
#define FLEXPLANE_REGISTER_SCHEME(name, doc, cls, qm, sched, ...)                                            \
  [[maybe_unused]] static const bool FLEXPLANE_CONCAT(flexplane_scheme_, __LINE__) =                        \
      ::flexplane::SchemeRegistry::instance().add(::flexplane::SchemePreset{name, doc, cls, qm, sched         \
                                                                            __VA_OPT__(, ) __VA_ARGS__})

}  // namespace flexplane
