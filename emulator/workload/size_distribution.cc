#include "emulator/workload/size_distribution.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "api/params.h"

namespace flexplane {

namespace {

// CDF endpoints may be written with rounding error (0.99999999); within this
// they are snapped to exactly 0 / 1.
constexpr double kCdfEndTolerance = 1e-9;
constexpr double kMaxSizePkts = std::numeric_limits<uint32_t>::max();

// Strict numbers, as for every other config value (api/params.h).
bool parse_double(const std::string& s, double& out) { return params_detail::parse(s, out); }

std::string num(double v) {
  std::ostringstream os;
  os.precision(12);
  os << v;
  return os.str();
}

// Checks the knots; where[i] says where knot i came from ("file:line").
void validate(std::vector<SizeDistribution::Knot>& knots, const std::vector<std::string>& where,
              const std::string& name) {
  if (knots.size() < 2)
    throw ConfigError(name + ": a size CDF needs at least two `size_packets cdf` points (first with cdf 0, "
                      "last with cdf 1); found " + std::to_string(knots.size()));
  for (size_t i = 0; i < knots.size(); ++i) {
    const auto& k = knots[i];
    if (!(k.size_pkts > 0) || k.size_pkts > kMaxSizePkts)
      throw ConfigError(where[i] + ": size_packets " + num(k.size_pkts) + " must be > 0 and <= " +
                        num(kMaxSizePkts));
    if (!(k.cdf >= 0 && k.cdf <= 1 + kCdfEndTolerance))
      throw ConfigError(where[i] + ": cdf " + num(k.cdf) + " must be in [0, 1]");
    if (i > 0 && k.size_pkts < knots[i - 1].size_pkts)
      throw ConfigError(where[i] + ": size_packets " + num(k.size_pkts) + " is smaller than the previous point's " +
                        num(knots[i - 1].size_pkts) + " (sizes must be non-decreasing)");
    if (i > 0 && k.cdf < knots[i - 1].cdf)
      throw ConfigError(where[i] + ": cdf " + num(k.cdf) + " is smaller than the previous point's " +
                        num(knots[i - 1].cdf) + " (cdf must be non-decreasing)");
  }
  if (std::abs(knots.front().cdf) > kCdfEndTolerance)
    throw ConfigError(where.front() + ": the first point must have cdf 0 (it gives the smallest size), got " +
                      num(knots.front().cdf));
  if (std::abs(knots.back().cdf - 1) > kCdfEndTolerance)
    throw ConfigError(where.back() + ": the last point must have cdf 1, got " + num(knots.back().cdf));
  knots.front().cdf = 0;
  knots.back().cdf = 1;
  for (auto& k : knots) k.cdf = std::min(k.cdf, 1.0);
}

// Integral of ceil(t) dt over [0, x], x >= 0.
double ceil_integral(double x) {
  const double n = std::floor(x);
  return n * (n + 1) / 2 + (x - n) * (n + 1);
}

}  // namespace

SizeDistribution SizeDistribution::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open size CDF file");
  return parse(in, path);
}

SizeDistribution SizeDistribution::parse(std::istream& in, const std::string& name) {
  std::vector<Knot> knots;
  std::vector<std::string> where;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string loc = name + ":" + std::to_string(line_no);
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::vector<std::string> tok;
    for (std::string t; fields >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    if (tok.size() != 2)
      throw ConfigError(loc + ": expected two numbers `size_packets cdf`, got " + std::to_string(tok.size()) +
                        " fields: '" + params_detail::trim(line) + "'");
    Knot k{};
    if (!parse_double(tok[0], k.size_pkts))
      throw ConfigError(loc + ": size_packets '" + tok[0] + "' is not a number");
    if (!parse_double(tok[1], k.cdf)) throw ConfigError(loc + ": cdf '" + tok[1] + "' is not a number");
    knots.push_back(k);
    where.push_back(loc);
  }
  if (in.bad()) throw ConfigError(name + ": read error");
  return from_knots_at(std::move(knots), where, name);
}

SizeDistribution SizeDistribution::from_knots(std::vector<Knot> knots, const std::string& name) {
  std::vector<std::string> where;
  for (size_t i = 0; i < knots.size(); ++i) where.push_back(name + ": point " + std::to_string(i));
  return from_knots_at(std::move(knots), where, name);
}

SizeDistribution SizeDistribution::from_knots_at(std::vector<Knot> knots, const std::vector<std::string>& where,
                                                 const std::string& name) {
  validate(knots, where, name);
  SizeDistribution d;
  d.name_ = name;
  d.knots_ = std::move(knots);
  d.compute_means();
  return d;
}

SizeDistribution SizeDistribution::fixed(uint32_t size_pkts) {
  if (size_pkts == 0) throw ConfigError("fixed flow size must be >= 1 packet");
  const double s = size_pkts;
  return from_knots({{s, 0}, {s, 1}}, "fixed " + std::to_string(size_pkts) + " pkts");
}

void SizeDistribution::compute_means() {
  mean_pkts_ = 0;
  mean_continuous_pkts_ = 0;
  for (size_t i = 1; i < knots_.size(); ++i) {
    const Knot& lo = knots_[i - 1];
    const Knot& hi = knots_[i];
    const double mass = hi.cdf - lo.cdf;
    if (mass <= 0) continue;
    mean_continuous_pkts_ += mass * (lo.size_pkts + hi.size_pkts) / 2;
    if (hi.size_pkts > lo.size_pkts)  // uniform on [lo, hi]: mean of ceil
      mean_pkts_ += mass * (ceil_integral(hi.size_pkts) - ceil_integral(lo.size_pkts)) /
                    (hi.size_pkts - lo.size_pkts);
    else  // point mass
      mean_pkts_ += mass * std::max(1.0, std::ceil(lo.size_pkts));
  }
}

uint32_t SizeDistribution::quantile(double u) const {
  // First knot with cdf > u; u < 1 == last cdf, and the first cdf is 0 <= u.
  auto it = std::upper_bound(knots_.begin(), knots_.end(), u,
                             [](double v, const Knot& k) { return v < k.cdf; });
  if (it == knots_.end()) return max_pkts();
  if (it == knots_.begin()) return static_cast<uint32_t>(std::max(1.0, std::ceil(knots_.front().size_pkts)));
  const Knot& lo = *(it - 1);
  const Knot& hi = *it;
  double x = lo.size_pkts + (u - lo.cdf) / (hi.cdf - lo.cdf) * (hi.size_pkts - lo.size_pkts);
  // Keep rounding error from pushing an integer knot up by one packet.
  x = std::clamp(x, lo.size_pkts, hi.size_pkts);
  return static_cast<uint32_t>(std::max(1.0, std::ceil(x)));
}

uint32_t SizeDistribution::sample(Rng& rng) const { return quantile(rng.uniform()); }

uint32_t SizeDistribution::max_pkts() const {
  return static_cast<uint32_t>(std::max(1.0, std::ceil(knots_.back().size_pkts)));
}

}  // namespace flexplane
