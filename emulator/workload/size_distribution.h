// Flow-size distribution: a piecewise-linear CDF over flow sizes in abstract
// packets, read from a text file of `size_packets cdf` lines.
//
// File format (see experiments/data/flow-sizes/README.md):
//   # comment lines and blank lines are ignored; a trailing `# ...` too
//   size_packets cdf           one knot per line, both numbers
//   - sizes are > 0 and non-decreasing; cdfs are in [0, 1] and non-decreasing;
//   - the first knot has cdf 0 and the last has cdf 1;
//   - two knots with the same size make a point mass (e.g. `1 0` then `1 0.5`:
//     half the flows are exactly 1 packet).
// Between knots the CDF is linear, so sizes are uniform within each segment.
//
// sample() draws u ~ U[0,1) and inverts the CDF (linear interpolation), then
// rounds up to a whole number of packets (>= 1): a flow of 1.3 packets still
// needs 2. Because an integer knot s has P(sample <= s) == cdf(s) exactly, the
// rounding leaves the tabulated CDF intact at integer knots.
//
// mean_pkts() is the exact mean of what sample() returns (the ceil of the
// piecewise-linear variate), computed in closed form; it is what the workload
// generator divides by to hit a target load. mean_continuous_pkts() is the
// mean of the piecewise-linear distribution itself (before rounding); the two
// differ by < 1 packet.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "api/rng.h"

namespace flexplane {

class SizeDistribution {
 public:
  struct Knot {
    double size_pkts;
    double cdf;
  };

  // Reads a CDF file; throws ConfigError("<path>:<line>: ...") on any problem.
  static SizeDistribution load(const std::string& path);
  // Same, from a stream; `name` is used in error messages in place of a path.
  static SizeDistribution parse(std::istream& in, const std::string& name);
  // Validates and builds from knots; `name` prefixes error messages.
  static SizeDistribution from_knots(std::vector<Knot> knots, const std::string& name);
  // Every flow is exactly `size_pkts` packets (>= 1).
  static SizeDistribution fixed(uint32_t size_pkts);

  // Inverse-CDF sample, rounded up to whole packets (>= 1). Uses one rng draw.
  uint32_t sample(Rng& rng) const;
  // The sample for a given u in [0, 1) (deterministic; exposed for tests).
  uint32_t quantile(double u) const;

  double mean_pkts() const { return mean_pkts_; }
  double mean_continuous_pkts() const { return mean_continuous_pkts_; }
  uint32_t max_pkts() const;
  const std::vector<Knot>& knots() const { return knots_; }
  const std::string& name() const { return name_; }

 private:
  SizeDistribution() = default;
  static SizeDistribution from_knots_at(std::vector<Knot> knots, const std::vector<std::string>& where,
                                        const std::string& name);
  void compute_means();

  std::string name_;
  std::vector<Knot> knots_;
  double mean_pkts_ = 0;
  double mean_continuous_pkts_ = 0;
};

}  // namespace flexplane
