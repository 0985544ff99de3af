// Runs across processes on MPI (partition.h): one process per rank, each
// running its share of the engine's cores on threads, with the state
// between ranks sent as MPI messages batched per pump round (every message
// from one rank to another holds all it had new for that rank: link slots,
// ACKs, then watermarks, promises and stop-when-done posts).
// docs/design.md, "Runs across processes (MPI)"; docs/mpi.md for users.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "emulator/engine/partition.h"

namespace flexplane {

class MpiPartition final : public Partition {
 public:
  // Whether this process was started by an MPI launcher (mpirun, srun):
  // the environment names a world size.
  static bool launched_by_mpi();
  // MPI_Init_thread (funneled: only the thread that calls run() uses MPI).
  // Call once, before anything else reads argv.
  static void init(int* argc, char*** argv);
  static uint32_t world_rank();
  static uint32_t world_size();
  static void finalize();

  explicit MpiPartition(uint32_t cores_per_rank);
  ~MpiPartition() override;

  uint32_t rank() const override { return rank_; }
  uint32_t ranks() const override { return ranks_; }
  uint32_t cores_per_rank() const override { return cores_per_rank_; }
  void attach(const PartitionView* view) override;
  CoreLauncher& launcher() override { return *launcher_; }
  bool cores_share_cpus() const override { return share_cpus_; }
  bool pump() override;
  void finish() override;
  std::vector<std::string> gather(const std::string& mine) override;


 private:
  struct Sent;  // what was last sent to one rank
  // A clear error from this rank, then the whole job ends (MPI_Abort).
  [[noreturn]] void abort(const std::string& why);
  bool send_round(bool final_round);
  bool receive_all();
  void apply(const char* data, size_t n, int from);
  void complete_sends(bool wait);

  uint32_t rank_ = 0, ranks_ = 1, cores_per_rank_ = 1;
  uint32_t local_rank_ = 0, local_size_ = 1;
  bool share_cpus_ = false;
  std::unique_ptr<CoreLauncher> launcher_;
  const PartitionView* view_ = nullptr;
  std::vector<uint32_t> rank_of_core_;
  std::vector<Timeslot> core_shipped_;              // by core: its sends before this were shipped
  std::vector<std::vector<uint32_t>> item_ranks_;   // by item: the ranks it is sent to from here
  std::vector<uint32_t> ship_data_, ship_marks_;    // items collected here, by kind
  std::vector<std::unique_ptr<Sent>> sent_;         // by rank
  struct Pending {
    MPI_Request req;
    std::string buf;
  };
  std::vector<std::unique_ptr<Pending>> pending_;
  std::vector<std::string> out_;  // by rank: this round's message (its data)
  // The rest of a round's scratch (send_round), kept between rounds.
  struct Snap {
    Timeslot next = 0, finished = 0;
    std::vector<Timeslot> promise;  // by core
  };
  std::vector<Snap> snap_;                        // by core: its watermarks this round
  std::vector<std::string> marks_, item_marks_;   // by rank: the engine's and traffic's watermarks
  std::string item_bytes_;
  std::string recv_buf_;
  uint32_t done_from_ = 0;

};

}  // namespace flexplane
