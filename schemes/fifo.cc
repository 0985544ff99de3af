// The trivial pieces most schemes reuse: one queue per port, served FIFO.
#include "api/registry.h"

namespace flexplane {

class SingleQueueClassifier : public Classifier<SingleQueueClassifier, NoParams> {
 public:
  uint16_t num_queues() const override { return 1; }
  QueueId classify(const Packet&, PortId) { return 0; }
  bool single_queue() const override { return true; }  // the router need not ask
};

class FifoScheduler : public Scheduler<FifoScheduler, NoParams> {
 public:
  bool schedule(PortId port, Timeslot now, Packet& out) { return dequeue(port, 0, now, out); }
};

FLEXPLANE_REGISTER_CLASSIFIER(SingleQueueClassifier, "single", "every packet joins queue 0 of its port");
FLEXPLANE_REGISTER_SCHEDULER(FifoScheduler, "fifo", "send the head of queue 0");

}  // namespace flexplane
