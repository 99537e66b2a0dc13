// `mantissa train --distributed` and its options (docs/training.md, "Data-parallel training"):
// the MPI communicator when the tool is built with MPI, the dispatch between the single-process
// trainer and the data-parallel one, and rank 0 as the only rank that prints or writes.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/train.h"
#include "trainer/train_distributed.h"

namespace mantissa::tool {

struct DistributedCli {
  bool distributed = false;
  int shards = 1;
  int zero = 0;
  std::string grad_comm = "fp32";
  double bucket_mib = 4.0;
  std::string save_checkpoint, resume;
  int inject_inf_rank = -1;
  int64_t inject_inf_step = 0;
  int abort_rank = -1;
  int64_t abort_step = 0;
};

void add_distributed_options(CLI::App* cmd, DistributedCli* o);

class DistributedSession {
 public:
  DistributedSession();
  ~DistributedSession();
  // Validates the options and, with --distributed, joins the MPI job; every rank but 0 is then
  // quiet (stdout to /dev/null). Returns 0, or the exit code after printing why.
  int start(const DistributedCli& o, std::size_t modes);
  bool quiet() const { return rank_ != 0; }
  bool active() const { return data_parallel_; }  // sharded or distributed
  // The MPI communicator with --distributed (null otherwise).
  train::Communicator* communicator() const { return options_.comm; }
  // train_model, or train_distributed when the options ask for shards or ranks.
  Status train(const train::Dataset& data, train::Mode mode, const train::TrainOptions& to,
               train::TrainCallbacks cb, train::ModeResult* result);
  // After a failed run: on an MPI job, ends every rank (so none waits for this one).
  void fail(int code);
  // A line on stdout and fields for the log's `final` record (nothing for a plain run).
  void report(nlohmann::json* final_record) const;

 private:
  DistributedCli o_;
  bool data_parallel_ = false;
  int rank_ = 0;
  train::DistributedOptions options_;
  train::DistributedStats stats_;
  struct Mpi;
  std::unique_ptr<Mpi> mpi_;
};

}  // namespace mantissa::tool
