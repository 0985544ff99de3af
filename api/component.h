// What every pattern-API component (classifier, queue manager, scheduler) can
// see: the router's shape, its queue bank and its own random stream; plus its
// typed parameters.
#pragma once

#include <cstdint>

#include "api/cache_aligned.h"
#include "api/queue_bank.h"
#include "api/rng.h"

namespace flexplane {

struct RouterShape {
  uint32_t router_id = 0;
  uint16_t num_ports = 0;
  uint16_t queues_per_port = 1;
  uint32_t mtu_bytes = 1500;  // bytes per abstract packet (timeslot size)
};

struct ComponentEnv {
  RouterShape shape;
  QueueBank* bank = nullptr;
  Rng* rng = nullptr;
};

// Holds a component's parameters and environment. `P` is a plain struct with
// in-class defaults; see api/params.h for how it is parsed.
// Cache-line aligned: components of routers on different cores are heap
// neighbours, and schemes keep per-port state in them.
template <class P>
class alignas(kCacheLine) Configured {
 public:
  using Params = P;
  const P& params() const { return params_; }
  void set_params(const P& p) { params_ = p; }

 protected:
  QueueBank& bank() { return *env_.bank; }
  const QueueBank& bank() const { return *env_.bank; }
  Rng& rng() { return *env_.rng; }
  const RouterShape& shape() const { return env_.shape; }

  P params_{};
  ComponentEnv env_{};
};

}  // namespace flexplane
