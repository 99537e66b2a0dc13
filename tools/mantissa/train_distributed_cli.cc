// `mantissa train --distributed` (train_distributed_cli.h).
#include "mantissa/train_distributed_cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <csignal>
#include <cstdio>

#include "mantissa/cli_checks.h"

#ifdef MANTISSA_HAVE_MPI
#include "mpi/communicator.h"
#endif

namespace mantissa::tool {

namespace tr = mantissa::train;

struct DistributedSession::Mpi {
#ifdef MANTISSA_HAVE_MPI
  std::unique_ptr<mpi::MpiCommunicator> comm;
#endif
};

DistributedSession::DistributedSession() : mpi_(std::make_unique<Mpi>()) {}
DistributedSession::~DistributedSession() = default;

void add_distributed_options(CLI::App* cmd, DistributedCli* o) {
  cmd->add_flag("--distributed", o->distributed,
                "Data-parallel over MPI: run under mpirun -np N, each rank trains on its shard "
                "of every batch");
  cmd->add_option("--shards", o->shards,
                  "One process: split every batch into N shards and sum their gradients in "
                  "shard order, as N ranks do (default 1)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--zero", o->zero,
                  "ZeRO stage: 1 shards the optimizer state across ranks by tensor (default 0)")
      ->check(CLI::Range(0, 1));
  cmd->add_option("--grad-comm", o->grad_comm,
                  "Gradient communication: fp32, bf16, fp16 or int8 (with error feedback)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16", "int8"}));
  cmd->add_option("--bucket-mib", o->bucket_mib, "fp32 gradient per message in MiB (default 4)")
      ->check(tool::kFinite)
      ->check(CLI::Range(0.001, 1024.0));
  cmd->add_option("--save-checkpoint", o->save_checkpoint,
                  "Write every rank's state (shard, loss scaler, step) to this directory after "
                  "every epoch (--model gpt: the run's state to this file after every "
                  "evaluation)");
  cmd->add_option("--resume", o->resume,
                  "Continue from a --save-checkpoint directory (--model gpt: file)");
  cmd->add_option("--inject-inf-rank", o->inject_inf_rank,
                  "Test: put an Inf into this rank's (shard's) gradient at --inject-inf-step");
  cmd->add_option("--inject-inf-step", o->inject_inf_step, "Test: the step (1-based, whole run)");
  cmd->add_option("--abort-rank", o->abort_rank,
                  "Test: this rank kills itself (SIGKILL) after --abort-step");
  cmd->add_option("--abort-step", o->abort_step, "Test: the step (1-based, whole run)");
}

int DistributedSession::start(const DistributedCli& o, std::size_t modes) {
  o_ = o;
  data_parallel_ = o.distributed || o.shards > 1 || o.zero != 0 || o.grad_comm != "fp32" ||
                   !o.save_checkpoint.empty() || !o.resume.empty() || o.inject_inf_rank >= 0;
  if (!data_parallel_) return 0;
  if ((!o.save_checkpoint.empty() || !o.resume.empty()) && modes != 1) {
    fmt::print(stderr,
               "mantissa train: --save-checkpoint and --resume take one --precision mode\n");
    return 2;
  }
  if (o.distributed) {
#ifdef MANTISSA_HAVE_MPI
    if (Status st = mpi::MpiCommunicator::create(nullptr, nullptr, &mpi_->comm); !st.ok()) {
      fmt::print(stderr, "mantissa train: {}\n", st.message());
      return 1;
    }
    rank_ = mpi_->comm->rank();
    options_.comm = mpi_->comm.get();
    if (rank_ != 0) {
      std::fflush(stdout);
      if (std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
    }
#else
    fmt::print(stderr,
               "mantissa train: --distributed: this build has no MPI (install libopenmpi-dev "
               "and configure again)\n");
    return 2;
#endif
  }
  options_.shards = o.shards;
  options_.zero_stage = o.zero;
  options_.grad_comm = *tr::grad_comm_from_name(o.grad_comm);
  options_.bucket_bytes = static_cast<int64_t>(o.bucket_mib * 1048576.0);
  options_.save_checkpoint = o.save_checkpoint;
  options_.resume = o.resume;
  options_.inject_inf_rank = o.inject_inf_rank;
  options_.inject_inf_step = o.inject_inf_step;
  return 0;
}

Status DistributedSession::train(const tr::Dataset& data, tr::Mode mode, const tr::TrainOptions& to,
                                 tr::TrainCallbacks cb, tr::ModeResult* result) {
  if (o_.abort_rank >= 0 && o_.abort_rank == rank_) {
    // A rank that dies without a word, as a crashed node does.
    int64_t steps = 0;
    cb.on_step = [&, inner = cb.on_step](const tr::StepProgress& p) {
      if (inner) inner(p);
      if (++steps == o_.abort_step) std::raise(SIGKILL);
    };
  }
  if (!data_parallel_) return tr::train_model(data, mode, to, cb, result);
  return tr::train_distributed(data, mode, to, options_, cb, result, &stats_);
}

void DistributedSession::fail(int code) {
#ifdef MANTISSA_HAVE_MPI
  if (mpi_->comm) {
    std::fflush(stdout);
    std::fflush(stderr);
    mpi_->comm->abort(code);
  }
#endif
  (void)code;
}

void DistributedSession::report(nlohmann::json* final_record) const {
  if (!data_parallel_) return;
  const tr::DistributedStats& s = stats_;
  fmt::print(
      "{} {} ({}), grad-comm {}: {} gradient values in {} buckets, {} B sent per rank per step "
      "(gradients){}, {} collectives per step; optimizer state {} B on this rank of {} B{} (per "
      "rank: {}); {:.3f} s in collectives\n",
      s.ranks, o_.distributed ? "ranks" : "shards", o_.distributed ? "MPI" : "one process",
      o_.grad_comm, s.gradient_values, s.buckets, s.grad_bytes_per_step,
      s.param_bytes_per_step > 0
          ? fmt::format(" + {} B (ZeRO-1 parameters)", s.param_bytes_per_step)
          : std::string(),
      s.messages_per_step, s.optimizer_state_bytes, s.optimizer_state_bytes_full,
      o_.zero == 1 ? " (ZeRO-1)" : "", fmt::join(s.optimizer_state_bytes_per_rank, " "),
      s.comm_seconds);
  if (s.ranks_agree) {
    fmt::print("every rank ended with the same digest, skipped steps and loss scale\n");
  }
  if (final_record != nullptr) {
    (*final_record)["ranks_agree"] = s.ranks_agree;
    (*final_record)["ranks"] = s.ranks;
    (*final_record)["distributed"] = o_.distributed;
    (*final_record)["zero"] = o_.zero;
    (*final_record)["grad_comm"] = o_.grad_comm;
    (*final_record)["grad_bytes_per_step"] = s.grad_bytes_per_step;
    (*final_record)["param_bytes_per_step"] = s.param_bytes_per_step;
    (*final_record)["buckets"] = s.buckets;
    (*final_record)["optimizer_state_bytes"] = s.optimizer_state_bytes;
    (*final_record)["optimizer_state_bytes_full"] = s.optimizer_state_bytes_full;
    (*final_record)["optimizer_state_bytes_per_rank"] = s.optimizer_state_bytes_per_rank;
    (*final_record)["comm_seconds"] = s.comm_seconds;
    (*final_record)["first_epoch"] = s.first_epoch;
  }
}

}  // namespace mantissa::tool
