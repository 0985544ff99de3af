// What every pattern-API component (classifier, queue manager, scheduler) can
// see: the router's shape, its queue bank, its own random stream, time
// (api/time.h) and the drop/mark seam; plus its typed parameters and the
// optional statistics hook (api/scheme_stats.h).
#pragma once

#include <cstdint>
#include <vector>

#include "api/cache_aligned.h"
#include "api/params.h"
#include "api/queue_bank.h"
#include "api/rng.h"
#include "api/scheme_stats.h"
#include "api/time.h"
#include "api/verdicts.h"

namespace flexplane {

struct RouterShape {
  uint32_t router_id = 0;
  uint16_t num_ports = 0;
  uint16_t queues_per_port = 1;
  uint32_t mtu_bytes = 1500;  // bytes of a full-sized packet (an abstract packet in the emulator)
};

class QueueManagerBase;

struct ComponentEnv {
  RouterShape shape;
  TimeBase time;
  QueueBank* bank = nullptr;
  Rng* rng = nullptr;
  Verdicts* verdicts = nullptr;           // the router's drop/mark seam (schedulers use it at dequeue)
  QueueManagerBase* dequeuer = nullptr;   // set for schedulers when the queue manager acts at dequeue
  const char* label = "";                 // "queue_manager 'codel' (router 3)", for the bank's messages
};

// What the router asks of every component, besides its kind's own method.
class ComponentBase {
 public:
  virtual ~ComponentBase() = default;
  virtual void bind(const ComponentEnv& env) = 0;
  // Whether the bank must record each packet's enqueue time (declare
  // `static constexpr bool kUsesEnqueueTime = true;` in the class).
  virtual bool uses_enqueue_time() const { return false; }
  // Statistics the component exports (api/scheme_stats.h); none by default.
  virtual std::vector<StatDesc> stat_descs() const { return {}; }
  virtual void sample_stats(PortId port, StatsOut& out) const {}
  // The name it was registered under (set by the registry's make; a string literal).
  const char* registered_name() const { return registered_name_ ? registered_name_ : "(unregistered)"; }
  void set_registered_name(const char* name) { registered_name_ = name; }

 private:
  const char* registered_name_ = nullptr;
};

// Holds a component's parameters and environment. `P` is a plain struct with
// in-class defaults; see api/params.h for how it is parsed.
// Cache-line aligned: components of routers on different cores are heap
// neighbours, and schemes keep per-port state in them.
template <class P>
class alignas(kCacheLine) Configured : public WithParams<P> {
 protected:
  QueueBank& bank() { return *env_.bank; }
  const QueueBank& bank() const { return *env_.bank; }
  Rng& rng() { return *env_.rng; }
  const RouterShape& shape() const { return env_.shape; }
  const TimeBase& time() const { return env_.time; }

  ComponentEnv env_{};
};

// The CRTP bases implement ComponentBase for `Derived` (uses_enqueue_time
// from Derived::kUsesEnqueueTime, bind calling Derived::on_bind).
template <class Derived>
constexpr bool uses_enqueue_time_v() {
  if constexpr (requires { Derived::kUsesEnqueueTime; })
    return Derived::kUsesEnqueueTime;
  else
    return false;
}

}  // namespace flexplane
