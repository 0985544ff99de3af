// incast: each event picks a receiver uniformly and fan_in distinct other senders, each of which
// starts one flow (its own sampled size) to the receiver in the same timeslot. The generator
// scales the event rate by 1/fan_in, so the average load offered per sender is still `load`; the
// receiver's access link is what gets overloaded.
#include <algorithm>

#include "emulator/workload/traffic_pattern.h"

namespace flexplane {

struct IncastParams {
  uint32_t fan_in = 0;  // senders per event (required)

  void validate(const std::string& where) const {
    if (fan_in == 0) throw ConfigError(where + ": pattern: incast needs `fan_in: <senders per event>`");
  }
};

class Incast final : public TrafficPatternOf<IncastParams> {
 public:
  uint32_t flows_per_event() const override { return params().fan_in; }
  void prepare(uint32_t num_endpoints, Rng&, const std::string& where) override {
    const uint32_t k = params().fan_in;
    if (k < 1 || k > num_endpoints - 1)
      throw ConfigError(where + ".fan_in: incast needs 1 <= fan_in <= num_endpoints - 1 = " +
                        std::to_string(num_endpoints - 1) + " ('" + std::to_string(k) + "')");
    n_ = num_endpoints;
    others_.resize(num_endpoints - 1);
  }
  void event(Rng& rng, std::pair<EndpointId, EndpointId>* out) override {
    const uint32_t k = params().fan_in;
    const auto dst = static_cast<EndpointId>(rng.below(n_));
    // Senders: a partial Fisher-Yates over the non-receivers, then in id order.
    for (uint32_t i = 0; i + 1 < n_; ++i) others_[i] = static_cast<EndpointId>(i < dst ? i : i + 1);
    for (uint32_t i = 0; i < k; ++i) std::swap(others_[i], others_[i + rng.below(n_ - 1 - i)]);
    std::sort(others_.begin(), others_.begin() + k);
    for (uint32_t i = 0; i < k; ++i) out[i] = {others_[i], dst};
  }

 private:
  uint32_t n_ = 2;
  std::vector<EndpointId> others_;
};

FLEXPLANE_REGISTER_TRAFFIC_PATTERN(Incast, "incast", "fan_in distinct senders start a flow each to one receiver",
    param(&IncastParams::fan_in, "fan_in", "senders per event", {1, 65535}));

}  // namespace flexplane
