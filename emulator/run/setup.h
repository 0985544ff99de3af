// What every way of running a config shares: picking the run (variant) out of
// an experiment file and building its routers exactly as configured. Virtual-
// time runs (run.h), replays (replay.h) and live emulation (live/) all set
// their engines up through here.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/router.h"
#include "emulator/config/config.h"
#include "emulator/config/printable.h"
#include "emulator/config/router_factory.h"
#include "emulator/engine/engine.h"

namespace flexplane {

// A bad command-line argument (exit status 2, like a ConfigError).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs `body`, turning errors into a message on stderr and an exit status:
// 2 for bad arguments or configuration, `other` for anything else. Messages
// quote inputs, so they are printed through printable().
template <class Fn>
int exit_status_of(Fn&& body, int other) {
  auto say = [](const std::exception& e) { std::fprintf(stderr, "error: %s\n", printable(e.what()).c_str()); };
  try {
    return body();
  } catch (const UsageError& e) {
    say(e);
    return 2;
  } catch (const ConfigError& e) {
    say(e);
    return 2;
  } catch (const std::invalid_argument& e) {
    say(e);
    return 2;
  } catch (const std::exception& e) {
    say(e);
    return other;
  }
}

// A warning on stderr (through printable()).
inline void warn(const std::string& message) { std::fprintf(stderr, "warning: %s\n", printable(message).c_str()); }

// Throws UsageError unless every name in `names` is a variant of `exp`.
void check_variant_names(const Experiment& exp, const std::vector<std::string>& names);

// The run of `file` named `variant` ("" for a file without variants).
// Throws UsageError if there is no such variant (or none was named where
// several exist), ConfigError for a bad file. Only that variant is loaded and
// validated (validate_run; its warnings are printed).
RunConfig pick_run(const std::string& file, const std::string& variant);

// Everything a run checks before it simulates, shared by `check` and `run`
// (and by replay and live, through pick_run): builds every router and the
// endpoint contract, resolves the transport, and checks the workload against
// the topology (a trace is read in full; a generated workload's pattern, sizes
// and flow count). Cores beyond one per router have nothing to run and only
// slow every timeslot's synchronisation, so c.cores is capped at the number
// of routers, with a warning. Throws ConfigError; returns the warnings.
std::vector<std::string> validate_run(RunConfig& c);

// One router per topology router, from the config; `resolved` receives what
// was built (for metadata and the endpoint contract).
std::vector<std::unique_ptr<Router>> build_routers(const RunConfig& c, std::vector<ResolvedRouter>* resolved);

// The engine options a config asks for (seed, tick, lookahead, occupancy
// sampling, packet log), on `cores` cores; live runs add the real-time clock.
EngineOptions engine_options(const RunConfig& c, uint32_t cores);

}  // namespace flexplane
