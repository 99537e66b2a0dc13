// MpiCommunicator over MPI's C API (communicator.h).
#include "mpi/communicator.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>

namespace mantissa::mpi {

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
};

namespace {

Status mpi_error(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return {StatusCode::kRuntimeError,
          std::string("MPI: ") + call + " failed (a rank is gone?): " + std::string(text, length)};
}

}  // namespace

Status MpiCommunicator::create(int* argc, char*** argv, std::unique_ptr<MpiCommunicator>* out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the calling thread talks to MPI (the library's worker threads never do).
    int provided = 0;
    if (const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
        rc != MPI_SUCCESS) {
      return mpi_error("MPI_Init_thread", rc);
    }
  }
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  c->state_ = std::make_unique<State>();
  if (const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->state_->comm); rc != MPI_SUCCESS) {
    return mpi_error("MPI_Comm_dup", rc);
  }
  MPI_Comm_set_errhandler(c->state_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->state_->comm, &c->rank_);
  MPI_Comm_size(c->state_->comm, &c->size_);
  *out = std::move(c);
  return {};
}

MpiCommunicator::~MpiCommunicator() {
  if (state_ && state_->comm != MPI_COMM_NULL) MPI_Comm_free(&state_->comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status MpiCommunicator::all_gather(const void* send, int64_t bytes, void* recv) {
  if (bytes < 0 || bytes > INT_MAX) {
    return {StatusCode::kParamInvalid,
            "MPI: all_gather of " + std::to_string(bytes) + " bytes, more than one message holds"};
  }
  const int rc = MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv,
                               static_cast<int>(bytes), MPI_BYTE, state_->comm);
  if (rc != MPI_SUCCESS) return mpi_error("MPI_Allgather", rc);
  return {};
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(state_ ? state_->comm : MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace mantissa::mpi
