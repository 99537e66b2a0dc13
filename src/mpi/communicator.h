// The MPI transport of data-parallel training (mantissa/train_distributed.h): a Communicator over
// a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so a failed collective comes back as a
// Status. Built only when CMake finds MPI (MANTISSA_MPI); the library itself never links MPI.
#pragma once

#include <memory>
#include <string>

#include "trainer/train_distributed.h"

namespace mantissa::mpi {

class MpiCommunicator final : public train::Communicator {
 public:
  // Initialises MPI (once per process) and duplicates the world communicator.
  static Status create(int* argc, char*** argv, std::unique_ptr<MpiCommunicator>* out);
  ~MpiCommunicator() override;  // frees the communicator and finalises MPI
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status all_gather(const void* send, int64_t bytes, void* recv) override;
  // Ends every rank of the job with `code` (after a failure on this rank, so that the others
  // do not wait in a collective for it).
  [[noreturn]] void abort(int code);

 private:
  MpiCommunicator() = default;
  struct State;
  std::unique_ptr<State> state_;
  int rank_ = 0, size_ = 1;
};

}  // namespace mantissa::mpi
