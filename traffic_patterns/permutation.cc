// permutation: a random derangement, fixed for the run (seeded), maps every endpoint to the one it
// sends to; each flow's source is uniform, so every endpoint sends to exactly one other and
// receives from exactly one.
#include <numeric>

#include "emulator/workload/traffic_pattern.h"

namespace flexplane {

std::vector<EndpointId> random_derangement(uint32_t n, Rng& rng) {
  constexpr uint32_t kMaxEndpoints = uint32_t{1} << (8 * sizeof(EndpointId));
  if (n < 2 || n > kMaxEndpoints)
    throw ConfigError("a permutation without fixed points needs 2.." + std::to_string(kMaxEndpoints) +
                      " endpoints, got " + std::to_string(n));
  // Rejection: shuffle until no fixed point. A random permutation is a
  // derangement with probability ~1/e, so ~2.7 shuffles on average, and the
  // result is uniform over derangements.
  std::vector<EndpointId> perm(n);
  while (true) {
    std::iota(perm.begin(), perm.end(), EndpointId{0});
    for (uint32_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
    bool fixed_point = false;
    for (uint32_t i = 0; i < n && !fixed_point; ++i) fixed_point = perm[i] == i;
    if (!fixed_point) return perm;
  }
}

class Permutation final : public TrafficPatternOf<NoParams> {
 public:
  void prepare(uint32_t num_endpoints, Rng& fixed, const std::string&) override {
    perm_ = random_derangement(num_endpoints, fixed);
  }
  void event(Rng& rng, std::pair<EndpointId, EndpointId>* out) override {
    const auto src = static_cast<EndpointId>(rng.below(static_cast<uint32_t>(perm_.size())));
    out[0] = {src, perm_[src]};
  }
  std::vector<EndpointId> fixed_map() const override { return perm_; }

 private:
  std::vector<EndpointId> perm_;
};

FLEXPLANE_REGISTER_TRAFFIC_PATTERN(Permutation, "permutation",
    "a random derangement fixed for the run: src uniform, dst = perm[src]");

}  // namespace flexplane
