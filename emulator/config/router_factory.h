// Builds a router from its configuration: a scheme preset and/or explicit
// classifier / queue manager / scheduler (each with parameters), or a generic
// router registered with FLEXPLANE_REGISTER_ROUTER.
#pragma once

#include <memory>
#include <string>

#include "api/params.h"
#include "api/registry.h"

namespace flexplane {

struct ComponentSpec {
  std::string name;    // empty: take it from the scheme preset (or the default)
  ParamValues params;
};

struct RouterSpec {
  std::string where;   // "config.yaml: routers.tor" (for error messages)
  std::string scheme;  // preset name, optional
  std::string router;  // generic router name, optional; excludes the three below
  ParamValues router_params;
  ComponentSpec classifier, queue_manager, scheduler;
  ComponentSpec load_balancer;  // empty name: ecmp
  bool pfc = false;             // lossless: PFC on this router (api/pfc.h)
  ParamValues pfc_params;
};

// What was actually built, with every parameter resolved (for run metadata).
struct ResolvedRouter {
  std::string scheme;
  std::string router;
  std::string classifier, queue_manager, scheduler, load_balancer;
  ResolvedParams router_params, classifier_params, queue_manager_params, scheduler_params, load_balancer_params;
  bool pfc = false;
  ResolvedParams pfc_params;
  std::string endpoint_priority = "none";  // what the preset asks endpoints to stamp
  uint8_t request_custom_bytes = 0;        // scheme data per request / verdict (from the preset)
  uint8_t verdict_custom_bytes = 0;
};

// Throws ConfigError naming spec.where and the bad field.
std::unique_ptr<Router> build_router(const RouterSpec& spec, ResolvedRouter* resolved = nullptr);

}  // namespace flexplane
