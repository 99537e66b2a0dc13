// The MLP's one training loop (train_loop), single-process and data-parallel alike
// (train_distributed.h): the shards of each global batch, the bucketed exchange of partial
// gradients summed in rank order (optionally compressed, with error feedback), found_inf reduced
// across ranks before the loss scaler's update, ZeRO stage 1 and checkpoints of every rank's
// state. The transport is the caller's Communicator; without one, the shards (one by default)
// run in turn in this process through the same arithmetic.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>

#include "mantissa/amp/anomaly.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/convert.h"
#include "mantissa/optim.h"
#include "trainer/mlp/analyze.h"
#include "trainer/mlp/checkpoint.h"
#include "trainer/mlp/common.h"
#include "trainer/mlp/model.h"
#include "trainer/mlp/optimizer_step.h"
#include "trainer/mlp/rng.h"
#include "trainer/tensor.h"
#include "trainer/train_distributed.h"

namespace mantissa::train {

namespace {

Status distributed_invalid(std::string message) {
  return {StatusCode::kParamInvalid, "train (distributed): " + std::move(message)};
}

// fp32 <-> a 16-bit dtype with the library's bulk conversions (RNE).
void to_fp32(DType dtype, const void* src, float* dst, int64_t n) {
  const auto count = static_cast<std::size_t>(n);
  switch (dtype) {
    case DType::kFloat16:
      convert_fp16_to_fp32(static_cast<const uint16_t*>(src), dst, count);
      break;
    case DType::kBFloat16:
      convert_bf16_to_fp32(static_cast<const uint16_t*>(src), dst, count);
      break;
    default: std::memcpy(dst, src, count * sizeof(float)); break;
  }
}
void from_fp32(DType dtype, const float* src, void* dst, int64_t n) {
  const auto count = static_cast<std::size_t>(n);
  switch (dtype) {
    case DType::kFloat16: convert_fp32_to_fp16(src, static_cast<uint16_t*>(dst), count); break;
    case DType::kBFloat16: convert_fp32_to_bf16(src, static_cast<uint16_t*>(dst), count); break;
    default: std::memcpy(dst, src, count * sizeof(float)); break;
  }
}

// ---- Gradient codecs: one bucket of fp32 values <-> its payload ----------------------------

int64_t payload_bytes(GradComm g, int64_t n) {
  switch (g) {
    case GradComm::kFp32: return 4 * n;
    case GradComm::kBf16:
    case GradComm::kFp16: return 2 * n;
    case GradComm::kInt8: return 4 + n;  // the fp32 scale, then one byte per value
  }
  return 4 * n;
}

void encode(GradComm g, const float* x, int64_t n, unsigned char* out) {
  switch (g) {
    case GradComm::kFp32: std::memcpy(out, x, static_cast<std::size_t>(n) * 4); return;
    case GradComm::kBf16: from_fp32(DType::kBFloat16, x, out, n); return;
    case GradComm::kFp16: from_fp32(DType::kFloat16, x, out, n); return;
    case GradComm::kInt8: {
      float amax = 0.0f;
      for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
      std::memcpy(out, &scale, 4);
      for (int64_t i = 0; i < n; ++i) {
        // Nearest, ties to even (the default rounding mode), within [-127, 127].
        const float q = std::clamp(std::nearbyint(x[i] / scale), -127.0f, 127.0f);
        out[4 + i] = static_cast<unsigned char>(static_cast<int8_t>(q));
      }
      return;
    }
  }
}

void decode(GradComm g, const unsigned char* in, int64_t n, float* x) {
  switch (g) {
    case GradComm::kFp32: std::memcpy(x, in, static_cast<std::size_t>(n) * 4); return;
    case GradComm::kBf16: to_fp32(DType::kBFloat16, in, x, n); return;
    case GradComm::kFp16: to_fp32(DType::kFloat16, in, x, n); return;
    case GradComm::kInt8: {
      float scale = 0.0f;
      std::memcpy(&scale, in, 4);
      for (int64_t i = 0; i < n; ++i)
        x[i] = static_cast<float>(static_cast<int8_t>(in[4 + i])) * scale;
      return;
    }
  }
}

// ---- The exchange: this process's shards in, every shard's payload out, in rank order ------

class Exchange {
 public:
  Exchange(Communicator* comm, int local_shards) : comm_(comm), local_(local_shards) {}
  int ranks() const { return comm_ != nullptr ? comm_->size() : local_; }
  // send: this process's shards' payloads, `bytes` each, in shard order; recv: every rank's.
  Status gather(const unsigned char* send, int64_t bytes, unsigned char* recv) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st;
    if (comm_ != nullptr) {
      st = comm_->all_gather(send, bytes, recv);
    } else {
      std::memcpy(recv, send, static_cast<std::size_t>(bytes * local_));
    }
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }
  double seconds() const { return seconds_; }

 private:
  Communicator* comm_;
  int local_;
  double seconds_ = 0.0;
};

void hash_bytes(uint64_t* h, const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    *h ^= b[i];
    *h *= 0x100000001B3ull;
  }
}

// FNV-1a 64 over everything that decides the run's arithmetic but the epoch count (a resumed run
// may ask for more): the model, the optimizer and its hyper-parameters, the batch, the seed, the
// mode, the distributed options, and the data's values after the split and scaling. Ranks
// compare it at start-up and checkpoints carry it, so that neither ranks started with other
// options (an MPMD launch) nor a resume with other options goes unnoticed.
uint64_t config_hash(const TrainOptions& o, const Dataset& data, Mode mode,
                     const DistributedOptions& d) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto add = [&](const auto& v) { hash_bytes(&h, &v, sizeof v); };
  auto add_vec = [&](const auto& v) {
    add(v.size());
    if (!v.empty()) hash_bytes(&h, v.data(), v.size() * sizeof(v[0]));
  };
  add_vec(o.hidden);
  add(o.activation);
  add(o.optimizer);
  add(o.batch_size);
  add(o.lr.value_or(-1.0f));
  add(o.weight_decay);
  add(o.momentum);
  add(o.clip);
  add(o.seed);
  add(mode);
  add(d.zero_stage);
  add(d.grad_comm);
  add(d.bucket_bytes);
  add(data.features);
  add(data.classes);
  add_vec(data.x_train);
  add_vec(data.y_train);
  add_vec(data.x_test);
  add_vec(data.y_test);
  return h;
}

}  // namespace

const char* grad_comm_name(GradComm g) noexcept {
  switch (g) {
    case GradComm::kFp32: return "fp32";
    case GradComm::kBf16: return "bf16";
    case GradComm::kFp16: return "fp16";
    case GradComm::kInt8: return "int8";
  }
  return "?";
}

std::optional<GradComm> grad_comm_from_name(std::string_view name) noexcept {
  for (GradComm g : {GradComm::kFp32, GradComm::kBf16, GradComm::kFp16, GradComm::kInt8}) {
    if (name == grad_comm_name(g)) return g;
  }
  return std::nullopt;
}

Status train_distributed(const Dataset& data, Mode mode, const TrainOptions& o,
                         const DistributedOptions& d, const TrainCallbacks& cb, ModeResult* result,
                         DistributedStats* stats) {
  return detail::train_loop(data, detail::precision_of(mode), mode, o, d, cb, result, stats, {},
                            {});
}

// The MLP's one training loop: one process (one shard, or several in turn) or N ranks.
Status detail::train_loop(const Dataset& data, const Precision& precision, Mode mode,
                          const TrainOptions& o, const DistributedOptions& d,
                          const TrainCallbacks& cb, ModeResult* result, DistributedStats* stats,
                          const AfterTraining& after, const PrepareModel& prepare) {
  // ---- Validation, before anything runs -------------------------------------------------
  if (result == nullptr || stats == nullptr)
    return distributed_invalid("result and stats must not be null");
  if (data.train_rows() == 0 || data.test_rows() == 0 || data.features <= 0 || data.classes < 2) {
    return distributed_invalid("the data set needs train and test rows, features and 2 classes");
  }
  if (o.epochs < 0 || o.batch_size <= 0) {
    return distributed_invalid("epochs must be >= 0 and batch_size > 0, got " +
                               std::to_string(o.epochs) + " and " + std::to_string(o.batch_size));
  }
  for (int64_t w : o.hidden) {
    if (w <= 0 || w > 65536) return distributed_invalid("hidden width " + std::to_string(w));
  }
  if (!(o.clip >= 0.0)) return distributed_invalid("clip must be >= 0");
  Communicator* comm = d.comm;
  if (comm != nullptr && (comm->size() < 1 || comm->rank() < 0 || comm->rank() >= comm->size())) {
    return distributed_invalid("communicator rank " + std::to_string(comm->rank()) + " of " +
                               std::to_string(comm->size()));
  }
  if (comm == nullptr && (d.shards < 1 || d.shards > 4096)) {
    return distributed_invalid("shards must be in [1, 4096], got " + std::to_string(d.shards));
  }
  if (comm != nullptr && d.shards != 1 && d.shards != comm->size()) {
    return distributed_invalid("shards (" + std::to_string(d.shards) +
                               ") must be 1 or the rank count (" + std::to_string(comm->size()) +
                               ") in a distributed run");
  }
  if (d.zero_stage != 0 && d.zero_stage != 1) {
    return distributed_invalid("zero stage must be 0 or 1, got " + std::to_string(d.zero_stage));
  }
  if (d.zero_stage == 1 && comm == nullptr)
    return distributed_invalid("zero stage 1 needs a communicator");
  if (d.zero_stage == 1 && mode == Mode::kBf16Sr) {
    // Stochastic rounding keys its bits by the tensor's position in the optimizer's list,
    // which a shard of the tensors changes.
    return distributed_invalid(
        "zero stage 1 does not support bf16-sr (its rounding bits depend on the "
        "tensor's position in the full list)");
  }
  if (d.bucket_bytes < 1024) {
    return distributed_invalid("bucket_bytes must be >= 1024, got " +
                               std::to_string(d.bucket_bytes));
  }
  const int ranks = comm != nullptr ? comm->size() : d.shards;
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int local_shards = comm != nullptr ? 1 : d.shards;
  const int first_shard = comm != nullptr ? rank : 0;

  // ---- Model, scaler, detector as train_model -------------------------------------------
  std::vector<int64_t> widths{data.features};
  widths.insert(widths.end(), o.hidden.begin(), o.hidden.end());
  widths.push_back(data.classes);
  detail::Mlp model(widths, o.activation, precision, o.optimizer, o.seed);
  if (prepare) prepare(model);
  detail::OptimizerStep optimizer(o, &model);
  amp::LossScalerOptions so;
  so.enabled = precision.loss_scaling;
  amp::DynamicLossScaler scaler;
  TRAINER_TRY(amp::DynamicLossScaler::create(so, &scaler));
  detail::StepGuard guard(precision, model.param_names());

  // ---- The flattened gradient, its buckets, ZeRO's owners -------------------------------
  const std::span<detail::Parameter> params = model.params();
  std::vector<int64_t> offset(params.size() + 1, 0);
  for (std::size_t i = 0; i < params.size(); ++i)
    offset[i + 1] = offset[i] + params[i].grad.numel();
  const int64_t total = offset.back();
  const int64_t bucket_values = std::max<int64_t>(1, d.bucket_bytes / 4);
  const int64_t buckets = (total + bucket_values - 1) / bucket_values;
  std::vector<int64_t> bucket_payload_at(buckets + 1, 0);  // payload offsets within a shard
  for (int64_t b = 0; b < buckets; ++b) {
    const int64_t n = std::min(bucket_values, total - b * bucket_values);
    bucket_payload_at[b + 1] = bucket_payload_at[b] + payload_bytes(d.grad_comm, n);
  }
  const int64_t shard_payload = bucket_payload_at.back();

  int64_t full_state = 0;
  for (const detail::Parameter& p : params)
    full_state += p.m.bytes() + p.v.bytes() + p.compensation.bytes();
  // ZeRO stage 1, by tensor: parameter i belongs to the rank whose equal share of the
  // flattened parameter space holds the tensor's middle element.
  std::vector<int> owner(params.size(), 0);
  std::vector<int64_t> state_per_rank(ranks, full_state);
  std::vector<char> owned;
  int64_t param_payload = 0;  // ZeRO: the largest per-rank parameter payload (padded to it)
  if (d.zero_stage == 1) {
    owned.assign(params.size(), 0);
    std::vector<int64_t> per_rank(ranks, 0);
    std::fill(state_per_rank.begin(), state_per_rank.end(), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const int64_t mid = offset[i] + params[i].grad.numel() / 2;
      owner[i] =
          static_cast<int>(std::min<int64_t>(ranks - 1, mid * ranks / std::max<int64_t>(1, total)));
      owned[i] = owner[i] == rank ? 1 : 0;
      per_rank[owner[i]] += params[i].var.bytes() + params[i].working.bytes();
      state_per_rank[owner[i]] +=
          params[i].m.bytes() + params[i].v.bytes() + params[i].compensation.bytes();
      if (!owned[i]) {  // another rank keeps this tensor's optimizer state
        params[i].m = detail::Buffer();
        params[i].v = detail::Buffer();
        params[i].compensation = detail::Buffer();
      }
    }
    param_payload = *std::max_element(per_rank.begin(), per_rank.end());
  }
  int64_t own_state = 0;
  for (const detail::Parameter& p : params)
    own_state += p.m.bytes() + p.v.bytes() + p.compensation.bytes();

  DistributedStats ds;
  ds.ranks = ranks;
  ds.gradient_values = total;
  ds.buckets = buckets;
  ds.grad_bytes_per_step = shard_payload;
  ds.param_bytes_per_step = param_payload;
  ds.messages_per_step = buckets + 1 + (d.zero_stage == 1 ? 1 : 0);
  ds.optimizer_state_bytes = own_state;
  ds.optimizer_state_bytes_full = full_state;
  ds.optimizer_state_bytes_per_rank = state_per_rank;

  // Error feedback: per local shard, what compression left out last time.
  const bool compressed = d.grad_comm != GradComm::kFp32;
  // One shard in all, uncompressed: the sum of one partial is the partial itself (widened to
  // fp32 and rounded back, exactly), so the gradient is neither copied nor exchanged. This is the
  // single-process trainer's path.
  const bool alone = ranks == 1 && !compressed && d.inject_inf_rank < 0;
  std::vector<std::vector<float>> residuals(
      compressed ? local_shards : 0, std::vector<float>(static_cast<std::size_t>(total), 0.0f));

  Exchange exchange(comm, local_shards);
  // Every rank learns whether every rank's status is ok, and the first failure's message: a
  // rank that fails a check makes all of them fail together (instead of leaving the others
  // waiting in a collective), and each of them can say why, rank 0 included (whose output is the
  // one people read, and which may end the job before the failing rank has printed).
  auto agree = [&](const Status& st) -> Status {
    constexpr std::size_t kText = 480;
    struct Vote {
      unsigned char ok;
      char text[kText];
    };
    Vote v{};
    v.ok = st.ok() ? 1 : 0;
    if (!st.ok()) std::strncpy(v.text, st.message().c_str(), kText - 1);
    std::vector<Vote> mine(static_cast<std::size_t>(local_shards), v),
        all(static_cast<std::size_t>(ranks));
    TRAINER_TRY(exchange.gather(reinterpret_cast<const unsigned char*>(mine.data()), sizeof(Vote),
                                reinterpret_cast<unsigned char*>(all.data())));
    for (int q = 0; q < ranks; ++q) {
      const Vote& a = all[static_cast<std::size_t>(q)];
      if (a.ok == 0) {
        return distributed_invalid("rank " + std::to_string(q) +
                                   " failed: " + std::string(a.text, strnlen(a.text, kText)));
      }
    }
    return {};
  };

  // ---- Every rank the same run -------------------------------------------------------------
  // One collective at start-up: each rank's hash of its options and data. Ranks launched with
  // different options (mpirun's MPMD form) or different data all stop here, naming the ranks.
  const uint64_t config = config_hash(o, data, mode, d);
  {
    std::vector<uint64_t> mine(static_cast<std::size_t>(local_shards), config),
        all(static_cast<std::size_t>(ranks));
    TRAINER_TRY(exchange.gather(reinterpret_cast<const unsigned char*>(mine.data()),
                                sizeof(uint64_t), reinterpret_cast<unsigned char*>(all.data())));
    std::string differ;
    int count = 0;
    for (int q = 1; q < ranks; ++q) {
      if (all[static_cast<std::size_t>(q)] != all[0]) {
        differ += (differ.empty() ? "" : ", ") + std::to_string(q);
        ++count;
      }
    }
    if (!differ.empty()) {
      return distributed_invalid(
          (count == 1 ? "rank " + differ + " was" : "ranks " + differ + " were") +
          " started with other options or data than rank 0 (a hash of the model, optimizer, "
          "batch, seed, mode and data differs); every rank must run the same command on the "
          "same data");
    }
  }

  // ---- Resume -----------------------------------------------------------------------------
  detail::CheckpointHeader expect;
  expect.config = config;
  expect.ranks = static_cast<uint32_t>(ranks);
  expect.rank = static_cast<uint32_t>(rank);
  expect.mode = static_cast<int32_t>(mode);
  expect.optimizer = static_cast<int32_t>(o.optimizer);
  expect.zero = d.zero_stage;
  expect.grad_comm = static_cast<int32_t>(d.grad_comm);
  expect.seed = o.seed;
  ModeResult r;
  r.mode = mode;
  int first_epoch = 1;
  int64_t global_step = 0;
  if (!d.resume.empty()) {
    detail::CheckpointHeader got;
    const Status st = detail::load_checkpoint(d.resume, expect, &scaler, &model, &residuals, &got);
    const Status everyone = agree(st);  // collective: every rank calls it
    TRAINER_TRY(st);
    TRAINER_TRY(everyone);
    // A torn set (a rank killed between two ranks' writes leaves files of different epochs):
    // every rank compares every file's counters, and all refuse it together, naming the files.
    struct Counters {
      int64_t epoch, steps, optimizer_steps;
    };
    const Counters c{got.epoch, got.steps, got.optimizer_steps};
    std::vector<Counters> mine(static_cast<std::size_t>(local_shards), c),
        all(static_cast<std::size_t>(ranks));
    TRAINER_TRY(exchange.gather(reinterpret_cast<const unsigned char*>(mine.data()),
                                sizeof(Counters), reinterpret_cast<unsigned char*>(all.data())));
    for (int q = 1; q < ranks; ++q) {
      const Counters& a = all[0];
      const Counters& b = all[static_cast<std::size_t>(q)];
      if (a.epoch != b.epoch || a.steps != b.steps || a.optimizer_steps != b.optimizer_steps) {
        return distributed_invalid(
            "checkpoint set " + d.resume + " is torn: " + detail::checkpoint_path(d.resume, 0) +
            " holds epoch " + std::to_string(a.epoch) + " (step " + std::to_string(a.steps) +
            "), " + detail::checkpoint_path(d.resume, q) + " epoch " + std::to_string(b.epoch) +
            " (step " + std::to_string(b.steps) +
            "); a rank stopped between the writes: resume from a set written at one epoch");
      }
    }
    if (got.epoch > o.epochs) {
      return distributed_invalid("checkpoint holds " + std::to_string(got.epoch) +
                                 " epochs, more than the " + std::to_string(o.epochs) +
                                 " asked for");
    }
    optimizer.set_steps_taken(got.optimizer_steps);
    r.overflow_steps = got.overflow_steps;
    r.findings = got.findings;
    global_step = got.steps;
    first_epoch = got.epoch + 1;
  }
  ds.first_epoch = first_epoch;

  // ---- Epochs -----------------------------------------------------------------------------
  const int64_t rows = data.train_rows();
  const int64_t steps_per_epoch = (rows + o.batch_size - 1) / o.batch_size;
  std::vector<int64_t> order(rows);
  std::vector<float> bx(o.batch_size * data.features);
  std::vector<int32_t> by(o.batch_size);
  std::vector<float> partial(static_cast<std::size_t>(total)),
      summed(static_cast<std::size_t>(total));
  std::vector<std::vector<float>> corrected(local_shards,
                                            std::vector<float>(static_cast<std::size_t>(total)));
  std::vector<unsigned char> send(static_cast<std::size_t>(shard_payload * local_shards));
  std::vector<unsigned char> recv(static_cast<std::size_t>(shard_payload * ranks));
  std::vector<float> decoded(static_cast<std::size_t>(bucket_values));
  std::vector<unsigned char> local(
      static_cast<std::size_t>(payload_bytes(d.grad_comm, bucket_values) * local_shards));
  std::vector<unsigned char> param_send(static_cast<std::size_t>(param_payload)),
      param_recv(static_cast<std::size_t>(param_payload * ranks));
  double total_seconds = 0.0;
  // The weights before each applied step, to count the ones it leaves bit for bit unchanged.
  std::vector<unsigned char> snapshot;
  int64_t var_bytes = 0, total_stalled = 0, total_weights = 0;
  for (const detail::Parameter& p : params) var_bytes += p.var.bytes();
  model.set_grad_rows(0);
  for (int epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    std::iota(order.begin(), order.end(), 0);
    detail::Rng rng(detail::stream_seed(o.seed, 1000 + static_cast<uint64_t>(epoch)));
    for (int64_t i = rows - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    double loss_sum = 0.0;
    int64_t correct_sum = 0, seen = 0, epoch_stalled = 0, epoch_weights = 0;
    const int64_t values_before = model.grad_values(), underflows_before = model.grad_underflows();
    for (int64_t step = 0; step < steps_per_epoch; ++step) {
      ++global_step;
      const int64_t b0 = step * o.batch_size;
      const int64_t n = std::min(o.batch_size, rows - b0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t src = order[b0 + i];
        std::copy_n(data.x_train.data() + src * data.features, data.features,
                    bx.data() + i * data.features);
        by[i] = data.y_train[src];
      }
      // This process's shards: forward, loss and backward on the shard's rows, the gradient
      // normalised by the global batch; widened, plus the error feedback, then encoded.
      std::vector<double> step_stats(3 * static_cast<std::size_t>(local_shards), 0.0);
      double shard_loss = 0.0;
      for (int ls = 0; ls < local_shards; ++ls) {
        const int s = first_shard + ls;
        const int64_t lo = n * s / ranks, hi = n * (s + 1) / ranks;
        if (!alone) std::fill(partial.begin(), partial.end(), 0.0f);
        if (hi > lo) {
          model.set_grad_rows(n);
          TRAINER_TRY(model.forward(bx.data() + lo * data.features, hi - lo));
          double loss = 0.0;
          int64_t correct = 0;
          TRAINER_TRY(model.loss(by.data() + lo, hi - lo, scaler.scale(), &loss, &correct));
          TRAINER_TRY(model.backward());
          model.set_grad_rows(0);
          step_stats[3 * ls] = loss * static_cast<double>(hi - lo);
          shard_loss = loss;
          step_stats[3 * ls + 1] = static_cast<double>(correct);
          for (std::size_t i = 0; i < params.size() && !alone; ++i) {
            to_fp32(params[i].grad.dtype(), params[i].grad.data(), partial.data() + offset[i],
                    params[i].grad.numel());
          }
        }
        if (alone) continue;  // the model's gradient is the step's
        if (s == d.inject_inf_rank && global_step == d.inject_inf_step) {
          partial[0] = std::numeric_limits<float>::infinity();
        }
        bool finite = true;
        for (float v : partial) finite = finite && std::isfinite(v);
        step_stats[3 * ls + 2] = finite ? 0.0 : 1.0;
        std::vector<float>& c = corrected[ls];
        for (int64_t i = 0; i < total; ++i)
          c[i] = compressed ? partial[i] + residuals[ls][i] : partial[i];
        if (finite) {
          for (int64_t b = 0; b < buckets; ++b) {
            const int64_t at = b * bucket_values, len = std::min(bucket_values, total - at);
            encode(d.grad_comm, c.data() + at, len,
                   send.data() + ls * shard_payload + bucket_payload_at[b]);
          }
        }
      }
      // The step's statistics (loss sum, correct rows, found_inf) from every shard, in rank
      // order: found_inf is their maximum, so every rank skips the same steps.
      std::vector<double> all_stats(3 * static_cast<std::size_t>(ranks));
      TRAINER_TRY(exchange.gather(reinterpret_cast<unsigned char*>(step_stats.data()),
                                  static_cast<int64_t>(3 * sizeof(double)),
                                  reinterpret_cast<unsigned char*>(all_stats.data())));
      double loss_total = 0.0, found_inf = 0.0;
      int64_t correct = 0;
      for (int k = 0; k < ranks; ++k) {
        loss_total += all_stats[3 * k];
        correct += static_cast<int64_t>(all_stats[3 * k + 1]);
        found_inf = std::max(found_inf, all_stats[3 * k + 2]);
      }
      // One shard: its own mean loss (loss * n / n could differ from it in the last bit).
      const double loss =
          ranks == 1 && local_shards == 1 ? shard_loss : loss_total / static_cast<double>(n);
      if (!alone) std::fill(summed.begin(), summed.end(), 0.0f);
      if (alone) {
        // Nothing to sum: the model's gradient stays as the backward pass left it (with any
        // Inf or NaN in it for the detector to report and the loss scaler to skip).
      } else if (found_inf != 0.0) {
        // Some rank overflowed: no gradient travels, every rank sees the same non-finite
        // gradient, and the loss scaler skips the step and backs off on all of them alike. The
        // error feedback keeps its last values.
        summed[0] = std::numeric_limits<float>::infinity();
      } else {
        // Bucket by bucket: every rank's payload, decoded and summed in rank order in fp32.
        for (int64_t b = 0; b < buckets; ++b) {
          const int64_t at = b * bucket_values, len = std::min(bucket_values, total - at);
          const int64_t bytes = bucket_payload_at[b + 1] - bucket_payload_at[b];
          // Gathered contiguously per bucket: [rank 0's payload][rank 1's]...
          for (int ls = 0; ls < local_shards; ++ls) {
            std::memcpy(local.data() + ls * bytes,
                        send.data() + ls * shard_payload + bucket_payload_at[b],
                        static_cast<std::size_t>(bytes));
          }
          TRAINER_TRY(exchange.gather(local.data(), bytes, recv.data()));
          for (int k = 0; k < ranks; ++k) {
            decode(d.grad_comm, recv.data() + k * bytes, len, decoded.data());
            float* out = summed.data() + at;
            if (k == 0) {  // rank 0's value as it is (a -0 stays -0), then the others added
              std::copy_n(decoded.data(), len, out);
            } else {
              for (int64_t i = 0; i < len; ++i) out[i] += decoded[i];
            }
            // This process's own shards: what the compression left out, for the next step.
            const int ls = k - first_shard;
            if (compressed && ls >= 0 && ls < local_shards) {
              for (int64_t i = 0; i < len; ++i) {
                // A value the 16-bit payload overflowed carries nothing forward.
                const float e = corrected[ls][at + i] - decoded[i];
                residuals[ls][at + i] = std::isfinite(e) ? e : 0.0f;
              }
            }
          }
        }
      }
      for (std::size_t i = 0; i < params.size() && !alone; ++i) {
        from_fp32(params[i].grad.dtype(), summed.data() + offset[i], params[i].grad.data(),
                  params[i].grad.numel());
      }
      loss_sum += loss * static_cast<double>(n);
      correct_sum += correct;
      seen += n;

      // From here on every rank holds the same gradient: the detector, clipping, the scaler
      // and the optimizer decide alike everywhere.
      const std::vector<TensorView> grads = model.grad_views();
      std::optional<float> clip_coef;
      TRAINER_TRY(guard.inspect(grads, loss, scaler, o, cb, epoch, step + 1, &r, &clip_coef));
      snapshot.resize(static_cast<std::size_t>(var_bytes));
      {
        std::size_t at = 0;
        for (const detail::Parameter& p : params) {
          std::memcpy(snapshot.data() + at, p.var.data(), static_cast<std::size_t>(p.var.bytes()));
          at += static_cast<std::size_t>(p.var.bytes());
        }
      }
      const int64_t taken_before = optimizer.steps_taken();
      TRAINER_TRY(scaler.step_fused(
          grads, [&](const amp::StepScaling& sc) { return optimizer.run(sc, clip_coef, owned); }));
      if (d.zero_stage == 1 && optimizer.steps_taken() != taken_before) {
        // Every owner's new parameters (var, then the working copy), to every rank.
        std::size_t at = 0;
        for (std::size_t i = 0; i < params.size(); ++i) {
          if (!owned[i]) continue;
          for (detail::Buffer* b : {&params[i].var, &params[i].working}) {
            if (b->bytes() == 0) continue;  // no working copy
            std::memcpy(param_send.data() + at, b->data(), static_cast<std::size_t>(b->bytes()));
            at += static_cast<std::size_t>(b->bytes());
          }
        }
        TRAINER_TRY(exchange.gather(param_send.data(), param_payload, param_recv.data()));
        std::vector<std::size_t> read(ranks, 0);
        for (std::size_t i = 0; i < params.size(); ++i) {
          const int k = owner[i];
          for (detail::Buffer* b : {&params[i].var, &params[i].working}) {
            if (b->bytes() == 0) continue;  // no working copy
            if (k != rank) {
              std::memcpy(b->data(), param_recv.data() + k * param_payload + read[k],
                          static_cast<std::size_t>(b->bytes()));
            }
            read[k] += static_cast<std::size_t>(b->bytes());
          }
        }
      }
      if (optimizer.steps_taken() != taken_before) {
        std::size_t at = 0;
        for (const detail::Parameter& p : params) {
          epoch_stalled += trainer::count_equal(p.var.data(), snapshot.data() + at, p.var.numel(),
                                                dtype_size(p.var.dtype()));
          at += static_cast<std::size_t>(p.var.bytes());
          epoch_weights += p.var.numel();
        }
      }
      TRAINER_TRY(scaler.update());
      if (cb.on_step) {
        cb.on_step(
            {.epoch = epoch,
             .step = step + 1,
             .steps_per_epoch = steps_per_epoch,
             .loss = loss,
             .running_accuracy = static_cast<double>(correct_sum) / static_cast<double>(seen),
             .loss_scale = scaler.scale(),
             .skipped_steps = scaler.stats().skipped_steps});
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_seconds += seconds;
    EpochRecord e;
    TRAINER_TRY(detail::epoch_record(model, data, o, scaler, r, epoch,
                                     {loss_sum, correct_sum, seen},
                                     {values_before, underflows_before}, seconds, &e));
    e.stalled_updates =
        epoch_weights > 0 ? static_cast<double>(epoch_stalled) / static_cast<double>(epoch_weights)
                          : 0.0;
    total_stalled += epoch_stalled;
    total_weights += epoch_weights;
    r.epochs.push_back(e);
    if (cb.on_epoch) cb.on_epoch(e);
    if (!d.save_checkpoint.empty()) {
      detail::CheckpointHeader h = expect;
      h.epoch = epoch;
      h.optimizer_steps = optimizer.steps_taken();
      h.overflow_steps = r.overflow_steps;
      h.findings = r.findings;
      h.steps = global_step;
      const Status st = detail::save_checkpoint(d.save_checkpoint, h, scaler, model, residuals);
      if (!st.ok()) {
        (void)agree(st);
        return st;
      }
      TRAINER_TRY(agree(Status{}));
    }
  }
  if (r.epochs.empty()) {
    TRAINER_TRY(detail::evaluate(model, data.x_test, data.y_test, data.features, o.batch_size,
                                 &r.test_loss, &r.test_accuracy));
  } else {
    r.test_loss = r.epochs.back().test_loss;
    r.test_accuracy = r.epochs.back().test_accuracy;
  }
  r.skipped_steps = scaler.stats().skipped_steps;
  r.grad_underflow = model.grad_values() > 0 ? static_cast<double>(model.grad_underflows()) /
                                                   static_cast<double>(model.grad_values())
                                             : 0.0;
  r.stalled_updates = total_weights > 0
                          ? static_cast<double>(total_stalled) / static_cast<double>(total_weights)
                          : 0.0;
  r.seconds_per_epoch =
      r.epochs.empty() ? 0.0 : total_seconds / static_cast<double>(r.epochs.size());
  r.state_bytes = model.state_bytes();
  r.digest = detail::weights_digest(model);
  // Every rank must end with the same weights, skipped steps and loss scale: checked, so a
  // divergence is an error rather than a silent difference between ranks.
  if (comm != nullptr) {
    struct Summary {
      char digest[16];
      int64_t skipped;
      float scale;
    } mine{}, first{};
    std::memcpy(mine.digest, r.digest.data(), std::min<std::size_t>(16, r.digest.size()));
    mine.skipped = r.skipped_steps;
    mine.scale = scaler.scale();
    std::vector<Summary> all(static_cast<std::size_t>(ranks));
    TRAINER_TRY(exchange.gather(reinterpret_cast<const unsigned char*>(&mine), sizeof(Summary),
                                reinterpret_cast<unsigned char*>(all.data())));
    first = all[0];
    for (int k = 1; k < ranks; ++k) {
      if (std::memcmp(all[k].digest, first.digest, 16) != 0 || all[k].skipped != first.skipped ||
          all[k].scale != first.scale) {
        return {StatusCode::kRuntimeError,
                "train (distributed): rank " + std::to_string(k) + " ended with digest " +
                    std::string(all[k].digest, 16) + ", " + std::to_string(all[k].skipped) +
                    " skipped steps, rank 0 with " + std::string(first.digest, 16) + ", " +
                    std::to_string(first.skipped)};
      }
    }
    ds.ranks_agree = true;
  }
  ds.comm_seconds = exchange.seconds();
  if (after) TRAINER_TRY(after(model, scaler.scale()));
  *result = std::move(r);
  *stats = std::move(ds);
  return {};
}

}  // namespace mantissa::train
