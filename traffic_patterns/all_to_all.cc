// all_to_all: each flow's source is uniform over the endpoints, its destination uniform over the
// others.
#include "emulator/workload/traffic_pattern.h"

namespace flexplane {

class AllToAll final : public TrafficPatternOf<NoParams> {
 public:
  void prepare(uint32_t num_endpoints, Rng&, const std::string&) override { n_ = num_endpoints; }
  void event(Rng& rng, std::pair<EndpointId, EndpointId>* out) override {
    const auto src = static_cast<EndpointId>(rng.below(n_));
    auto dst = static_cast<EndpointId>(rng.below(n_ - 1));
    if (dst >= src) ++dst;  // uniform over the other endpoints
    out[0] = {src, dst};
  }

 private:
  uint32_t n_ = 2;
};

FLEXPLANE_REGISTER_TRAFFIC_PATTERN(AllToAll, "all_to_all", "src uniform, dst uniform among the other endpoints");

}  // namespace flexplane
