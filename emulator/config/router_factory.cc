#include "emulator/config/router_factory.h"

#include <algorithm>

#include "api/endpoint_contract.h"
#include "api/pattern_router.h"

namespace flexplane {

namespace {
std::string known_schemes() {
  std::string s;
  for (const auto& [name, preset] : SchemeRegistry::instance().all()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

template <class Base>
std::unique_ptr<Base> make(const ComponentSpec& c, const std::string& fallback, const std::string& where,
                           std::string* name, ResolvedParams* resolved) {
  *name = c.name.empty() ? fallback : c.name;
  const std::string field = where + "." + KindName<Base>::get();
  ParamValues values = c.params;
  values.where = field;
  return Registry<Base>::instance().get(*name, field).make(values, resolved);
}
}  // namespace

std::unique_ptr<Router> build_router(const RouterSpec& spec, ResolvedRouter* resolved) {
  ResolvedRouter local;
  ResolvedRouter& out = resolved ? *resolved : local;
  out = ResolvedRouter{};
  out.scheme = spec.scheme;

  if (!spec.router.empty()) {
    if (!spec.scheme.empty() || !spec.classifier.name.empty() || !spec.queue_manager.name.empty() ||
        !spec.scheduler.name.empty())
      throw ConfigError(spec.where + ": 'router' (a generic router) excludes 'scheme', 'classifier', "
                        "'queue_manager' and 'scheduler'");
    if (!spec.load_balancer.name.empty() && spec.load_balancer.name != "ecmp")
      throw ConfigError(spec.where + ".load_balancer: a generic router ('router') routes by ECMP itself; '" +
                        spec.load_balancer.name + "' needs a pattern router (scheme or components)");
    if (spec.pfc)
      throw ConfigError(spec.where + ".pfc: a generic router ('router') does not pause; PFC needs a pattern router "
                        "(scheme or components)");
    out.router = spec.router;
    ParamValues values = spec.router_params;
    values.where = spec.where + ".router";
    return Registry<Router>::instance().get(spec.router, values.where).make(values, &out.router_params);
  }

  std::string cls = "single", qm = "droptail", sched = "fifo";
  if (!spec.scheme.empty()) {
    const SchemePreset* p = SchemeRegistry::instance().find(spec.scheme);
    if (!p) throw ConfigError(spec.where + ".scheme: unknown scheme '" + spec.scheme + "' (known: " + known_schemes() + ")");
    cls = p->classifier;
    qm = p->queue_manager;
    sched = p->scheduler;
    out.endpoint_priority = p->endpoint_priority;
    out.request_custom_bytes = p->request_custom_bytes;
    out.verdict_custom_bytes = p->verdict_custom_bytes;
    check_custom_bytes(std::max(p->request_custom_bytes, p->verdict_custom_bytes),
                       spec.where + ".scheme: scheme '" + spec.scheme + "' declares");
  }
  auto c = make<ClassifierBase>(spec.classifier, cls, spec.where, &out.classifier, &out.classifier_params);
  auto q = make<QueueManagerBase>(spec.queue_manager, qm, spec.where, &out.queue_manager, &out.queue_manager_params);
  auto s = make<SchedulerBase>(spec.scheduler, sched, spec.where, &out.scheduler, &out.scheduler_params);
  auto lb = make<LoadBalancerBase>(spec.load_balancer, "ecmp", spec.where, &out.load_balancer, &out.load_balancer_params);
  auto router = std::make_unique<PatternRouter>(std::move(c), std::move(q), std::move(s), std::move(lb));
  if (spec.pfc) {
    ParamValues values = spec.pfc_params;
    values.where = spec.where + ".pfc";
    const PfcParams p = pfc_schema().parse(values, "pfc");
    router->enable_pfc(p, values.where);
    out.pfc = true;
    out.pfc_params = pfc_schema().show(p);
  }
  return router;
}

}  // namespace flexplane
