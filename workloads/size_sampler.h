// Response sizes for the RPC workload, from a spec string:
//   fixed:BYTES                       every response BYTES
//   mix:BYTES@P[@DSCP],BYTES@P...     a discrete mix (probabilities sum to 1),
//                                     optionally a DSCP per class
//   cdf:FILE                          a flow-size CDF in packets
//                                     (experiments/data/flow-sizes/), 1460
//                                     payload bytes per packet
#pragma once

#include <cmath>
#include <memory>
#include <cstdint>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "emulator/workload/size_distribution.h"
#include "workloads/wire.h"

namespace flexplane::workloads {

inline constexpr uint32_t kPayloadPerPacket = 1460;  // the CDF files' unit (experiments/data/flow-sizes/README.md)

class SizeSampler {
 public:
  struct Sample {
    uint64_t bytes;
    uint8_t dscp;  // kNoDscp = default
  };

  // Throws std::invalid_argument naming the problem.
  static SizeSampler parse(const std::string& spec) {
    SizeSampler s;
    s.spec_ = spec;
    const auto colon = spec.find(':');
    const std::string kind = spec.substr(0, colon), rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
    if (kind == "fixed") {
      s.classes_.push_back({parse_bytes(rest, spec), 1.0, kNoDscp});
    } else if (kind == "mix") {
      std::stringstream ss(rest);
      std::string item;
      double total = 0;
      while (std::getline(ss, item, ',')) {
        std::vector<std::string> f;
        std::stringstream is(item);
        std::string x;
        while (std::getline(is, x, '@')) f.push_back(x);
        if (f.size() < 2 || f.size() > 3) throw std::invalid_argument(spec + ": expected BYTES@PROB[@DSCP] items");
        Class c{parse_bytes(f[0], spec), std::stod(f[1]), kNoDscp};
        if (!(c.prob > 0 && c.prob <= 1)) throw std::invalid_argument(spec + ": probability must be in (0, 1]");
        if (f.size() == 3) {
          const int d = std::stoi(f[2]);
          if (d < 0 || d > 63) throw std::invalid_argument(spec + ": DSCP must be 0..63");
          c.dscp = static_cast<uint8_t>(d);
        }
        total += c.prob;
        s.classes_.push_back(c);
      }
      if (s.classes_.empty() || std::fabs(total - 1.0) > 1e-6)
        throw std::invalid_argument(spec + ": mix probabilities must sum to 1 (they sum to " + std::to_string(total) + ")");
    } else if (kind == "cdf") {
      s.cdf_ = std::make_shared<SizeDistribution>(SizeDistribution::load(rest));
    } else {
      throw std::invalid_argument(spec + ": expected fixed:BYTES, mix:BYTES@PROB,... or cdf:FILE");
    }
    return s;
  }

  Sample sample(std::mt19937_64& rng) const {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    if (cdf_) return {uint64_t(cdf_->quantile(std::min(u(rng), 0.999999999))) * kPayloadPerPacket, kNoDscp};
    double x = u(rng);
    for (const auto& c : classes_) {
      if (x < c.prob) return {c.bytes, c.dscp};
      x -= c.prob;
    }
    return {classes_.back().bytes, classes_.back().dscp};
  }

  double mean_bytes() const {
    if (cdf_) return cdf_->mean_pkts() * kPayloadPerPacket;
    double m = 0;
    for (const auto& c : classes_) m += c.prob * double(c.bytes);
    return m;
  }
  const std::string& spec() const { return spec_; }

 private:
  struct Class {
    uint64_t bytes;
    double prob;
    uint8_t dscp;
  };
  static uint64_t parse_bytes(const std::string& s, const std::string& spec) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 15)
      throw std::invalid_argument(spec + ": '" + s + "' is not a byte count");
    const uint64_t v = std::stoull(s);
    if (v == 0) throw std::invalid_argument(spec + ": sizes must be > 0");
    return v;
  }

  std::string spec_;
  std::vector<Class> classes_;
  std::shared_ptr<SizeDistribution> cdf_;
};

}  // namespace flexplane::workloads
