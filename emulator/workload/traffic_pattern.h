// Traffic patterns: who sends to whom in a generated (Poisson) workload.
//
// A pattern registers by name with typed parameters, like a scheme, and a
// config picks it with `workload.pattern`; its parameters are further keys of
// the `workload:` map (`fan_in` for incast). The generator draws arrival
// events (a Poisson process) and asks the pattern for each event's (src, dst)
// pairs; flow sizes are drawn separately. Built-in patterns are in
// traffic_patterns/; docs/writing-a-traffic-source.md shows how to add one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/packet.h"
#include "api/params.h"
#include "api/registry.h"
#include "api/rng.h"

namespace flexplane {

class TrafficPattern {
 public:
  virtual ~TrafficPattern() = default;
  // Flows started together by one arrival event (incast: fan_in). The event
  // rate is the flow rate divided by this, so the offered load stays `load`.
  virtual uint32_t flows_per_event() const { return 1; }
  // Once before generation: check that the pattern fits `num_endpoints`
  // (throw ConfigError naming `where`.<parameter> and the value) and draw
  // whatever stays fixed for the run from `fixed`, a stream of its own.
  virtual void prepare(uint32_t num_endpoints, Rng& fixed, const std::string& where) {}
  // One arrival event: flows_per_event() (src, dst) pairs with src != dst,
  // drawn from `rng`, in the order the flows are created.
  virtual void event(Rng& rng, std::pair<EndpointId, EndpointId>* out) = 0;
  // An endpoint map fixed for the run, if the pattern has one (permutation:
  // the destination of each source), for run metadata and tests.
  virtual std::vector<EndpointId> fixed_map() const { return {}; }
};

// A pattern with parameters `P` (api/params.h).
template <class P>
class TrafficPatternOf : public TrafficPattern, public WithParams<P> {};

template <> struct KindName<TrafficPattern> { static const char* get() { return "traffic pattern"; } };

// FLEXPLANE_REGISTER_TRAFFIC_PATTERN(Class, "name", "doc", param(...)...)
#define FLEXPLANE_REGISTER_TRAFFIC_PATTERN(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(TrafficPattern, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)

// A uniformly random permutation of 0..n-1 with no fixed point (n >= 2).
std::vector<EndpointId> random_derangement(uint32_t n, Rng& rng);

}  // namespace flexplane
