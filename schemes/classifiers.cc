// Stock classifiers: which queue of its output port a packet joins, as a pure function of the
// packet's fields. Pair them with any scheduler (priority, round_robin, drr); at most 64 queues.
#include <algorithm>
#include <string>
#include <vector>

#include "api/registry.h"

namespace flexplane {

struct NumQueuesParams {
  uint32_t num_queues = 32;  // queues per port (Flexplane racks had 32 endpoints)
};
constexpr Range kQueuesRange{1, kMaxQueuesPerPort};

// queue = src % num_queues: per-source fairness under round_robin / drr.
class BySourceClassifier : public Classifier<BySourceClassifier, NumQueuesParams> {
 public:
  uint16_t num_queues() const override { return static_cast<uint16_t>(params().num_queues); }
  QueueId classify(const Packet& p, PortId) { return static_cast<QueueId>(p.src % params().num_queues); }
};

// queue = flow_hash(flow) % num_queues: stochastic per-flow fairness under drr.
class ByFlowClassifier : public Classifier<ByFlowClassifier, NumQueuesParams> {
 public:
  uint16_t num_queues() const override { return static_cast<uint16_t>(params().num_queues); }
  QueueId classify(const Packet& p, PortId) {
    return static_cast<QueueId>(flow_hash(p.flow, ~shape().router_id) % params().num_queues);  // ~: not ECMP's salt
  }
};

struct ByDscpParams {
  uint32_t num_queues = 8;  // queues per port
  uint32_t dscp_shift = 3;  // class = dscp >> dscp_shift (3: the class-selector / IP-precedence bits)
};

// queue = num_queues-1 - min(dscp >> dscp_shift, num_queues-1): higher classes get lower
// (more urgent under `priority`) queues, so CS7 is served first and best effort (0) last.
class ByDscpClassifier : public Classifier<ByDscpClassifier, ByDscpParams> {
 public:
  uint16_t num_queues() const override { return static_cast<uint16_t>(params().num_queues); }
  QueueId classify(const Packet& p, PortId) {
    const uint32_t last = params().num_queues - 1;
    return static_cast<QueueId>(last - std::min<uint32_t>(p.dscp >> params().dscp_shift, last));
  }
};

struct ThresholdParams {
  // Ascending upper bounds on packet.priority; under priority_by_size that is the flow size in
  // packets, so queues hold flows of <=10, <=100, <=1000, <=10000 and >10000 packets (one decade of
  // the web-search size distribution each).
  std::vector<uint32_t> thresholds{10, 100, 1000, 10000};

  void validate(const std::string& where) const {
    if (thresholds.size() + 1 > kMaxQueuesPerPort)
      throw ConfigError(where + ": thresholds: at most " + std::to_string(kMaxQueuesPerPort - 1) + " entries");
    for (size_t i = 1; i < thresholds.size(); ++i)
      if (thresholds[i - 1] >= thresholds[i])
        throw ConfigError(where + ": thresholds must be strictly ascending (" + std::to_string(thresholds[i - 1]) +
                          " then " + std::to_string(thresholds[i]) + ")");
  }
};

// queue = number of thresholds below packet.priority.
class ByPriorityThresholdsClassifier : public Classifier<ByPriorityThresholdsClassifier, ThresholdParams> {
 public:
  uint16_t num_queues() const override { return static_cast<uint16_t>(params().thresholds.size() + 1); }
  QueueId classify(const Packet& p, PortId) {
    const auto& t = params().thresholds;
    return static_cast<QueueId>(std::lower_bound(t.begin(), t.end(), p.priority) - t.begin());
  }
};

FLEXPLANE_REGISTER_CLASSIFIER(BySourceClassifier, "by_source", "queue = source endpoint % num_queues",
    param(&NumQueuesParams::num_queues, "num_queues", "queues per port", kQueuesRange));
FLEXPLANE_REGISTER_CLASSIFIER(ByFlowClassifier, "by_flow", "queue = hash(flow id) % num_queues",
    param(&NumQueuesParams::num_queues, "num_queues", "queues per port", kQueuesRange));
FLEXPLANE_REGISTER_CLASSIFIER(ByDscpClassifier, "by_dscp", "queue 0 = highest DSCP class",
    param(&ByDscpParams::num_queues, "num_queues", "queues per port", kQueuesRange),
    param(&ByDscpParams::dscp_shift, "dscp_shift", "class = dscp >> dscp_shift", {0, 5}));
FLEXPLANE_REGISTER_CLASSIFIER(ByPriorityThresholdsClassifier, "by_priority_thresholds",
    "queue = number of thresholds below packet.priority",
    param(&ThresholdParams::thresholds, "thresholds", "strictly ascending packet.priority bounds, one queue more"));
// Four queues in the generic tests (schemes/invariants_test.cc), so that every scheduler has several to choose from.
FLEXPLANE_TEST_PARAMS(ClassifierBase, "by_source", {"num_queues", "4"});
FLEXPLANE_TEST_PARAMS(ClassifierBase, "by_flow", {"num_queues", "4"});
FLEXPLANE_TEST_PARAMS(ClassifierBase, "by_dscp", {"num_queues", "4"});
FLEXPLANE_TEST_PARAMS(ClassifierBase, "by_priority_thresholds", {"thresholds", "10,50"});

}  // namespace flexplane
