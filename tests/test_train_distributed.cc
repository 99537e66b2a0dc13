// Data-parallel training without a transport (mantissa/train_distributed.h): one process runs
// the shards in turn through the arithmetic the MPI ranks use (tests/mpi_train.sh checks the two
// agree). One shard is the single-process trainer bit for bit; shards, compression and
// checkpoints are reproducible; invalid options and checkpoints are refused with a message.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "mantissa/runtime.h"
#include "target_support.h"
#include "trainer/train.h"
#include "trainer/train_distributed.h"

namespace mantissa::train {
namespace {

using testing::ThreadCountGuard;

TrainOptions small_options() {
  TrainOptions o;
  o.hidden = {24, 16};
  o.epochs = 3;
  o.batch_size = 32;
  o.seed = 11;
  o.lr = 0.01f;
  return o;
}

const Dataset& data() {
  static const Dataset d = [] {
    Dataset out;
    EXPECT_TRUE(load_dataset({.spec = "synthetic:320", .seed = 4}, &out).ok());
    return out;
  }();
  return d;
}

Status run(Mode mode, const TrainOptions& o, const DistributedOptions& d, ModeResult* r,
           DistributedStats* s = nullptr) {
  DistributedStats local;
  return train_distributed(data(), mode, o, d, {}, r, s != nullptr ? s : &local);
}

TEST(TrainDistributed, OneShardIsTheSingleProcessTrainer) {
  // train_model runs the loop with one shard, whose gradient is neither copied nor exchanged; an
  // injection hook aimed at a shard that does not exist sends the same shard through the
  // exchange (widened, bucketed, summed, rounded back), which must change no bit.
  DistributedOptions exchanged;
  exchanged.inject_inf_rank = 99;
  for (Mode mode : all_modes()) {
    SCOPED_TRACE(mode_name(mode));
    ModeResult plain, sharded;
    ASSERT_TRUE(train_model(data(), mode, small_options(), {}, &plain).ok());
    ASSERT_TRUE(run(mode, small_options(), exchanged, &sharded).ok());
    EXPECT_EQ(sharded.digest, plain.digest);
    EXPECT_EQ(sharded.skipped_steps, plain.skipped_steps);
    EXPECT_DOUBLE_EQ(sharded.test_accuracy, plain.test_accuracy);
  }
}

TEST(TrainDistributed, ShardsLearnAndAreReproducibleAcrossThreads) {
  ThreadCountGuard guard;
  for (Mode mode : {Mode::kFp32, Mode::kBf16Amp, Mode::kFp16Amp, Mode::kBf16Sr}) {
    SCOPED_TRACE(mode_name(mode));
    DistributedOptions d;
    d.shards = 3;  // 32 rows: shards of 10, 11 and 11 rows
    d.bucket_bytes = 1024;
    ModeResult one, two;
    DistributedStats s;
    ASSERT_TRUE(set_num_threads(1).ok());
    ASSERT_TRUE(run(mode, small_options(), d, &one, &s).ok());
    ASSERT_TRUE(set_num_threads(2).ok());
    ASSERT_TRUE(run(mode, small_options(), d, &two).ok());
    EXPECT_EQ(one.digest, two.digest);
    EXPECT_GE(one.test_accuracy, 0.9);
    EXPECT_EQ(s.ranks, 3);
    EXPECT_EQ(s.buckets, (s.gradient_values * 4 + 1023) / 1024);
    EXPECT_EQ(s.grad_bytes_per_step, 4 * s.gradient_values);
  }
}

TEST(TrainDistributed, CompressionToTheComputeDtypeIsExactAndElseRounds) {
  DistributedOptions d;
  d.shards = 2;
  ModeResult fp32_comm, bf16_comm, int8_comm;
  // bf16-amp's partial gradients are bf16 values: bf16 communication loses nothing.
  ASSERT_TRUE(run(Mode::kBf16Amp, small_options(), d, &fp32_comm).ok());
  d.grad_comm = GradComm::kBf16;
  DistributedStats s;
  ASSERT_TRUE(run(Mode::kBf16Amp, small_options(), d, &bf16_comm, &s).ok());
  EXPECT_EQ(bf16_comm.digest, fp32_comm.digest);
  EXPECT_EQ(s.grad_bytes_per_step, 2 * s.gradient_values);
  // fp32 gradients: bf16 and int8 round, and the runs still learn.
  d.grad_comm = GradComm::kFp32;
  ASSERT_TRUE(run(Mode::kFp32, small_options(), d, &fp32_comm).ok());
  d.grad_comm = GradComm::kBf16;
  ASSERT_TRUE(run(Mode::kFp32, small_options(), d, &bf16_comm).ok());
  d.grad_comm = GradComm::kInt8;
  ASSERT_TRUE(run(Mode::kFp32, small_options(), d, &int8_comm, &s).ok());
  EXPECT_NE(bf16_comm.digest, fp32_comm.digest);
  EXPECT_NE(int8_comm.digest, fp32_comm.digest);
  EXPECT_EQ(s.grad_bytes_per_step, s.gradient_values + 4 * s.buckets);
  EXPECT_NEAR(int8_comm.test_accuracy, fp32_comm.test_accuracy, 0.05);
  EXPECT_NEAR(bf16_comm.test_accuracy, fp32_comm.test_accuracy, 0.05);
  EXPECT_EQ(grad_comm_from_name("int8"), GradComm::kInt8);
  EXPECT_FALSE(grad_comm_from_name("fp8").has_value());
}

TEST(TrainDistributed, AnInfOnOneShardSkipsTheStep) {
  DistributedOptions d;
  d.shards = 2;
  ModeResult clean, injected;
  ASSERT_TRUE(run(Mode::kFp16Amp, small_options(), d, &clean).ok());
  d.inject_inf_rank = 1;
  d.inject_inf_step = 4;
  ASSERT_TRUE(run(Mode::kFp16Amp, small_options(), d, &injected).ok());
  EXPECT_EQ(injected.skipped_steps, clean.skipped_steps + 1);
  EXPECT_EQ(injected.overflow_steps, clean.overflow_steps + 1);
  EXPECT_NE(injected.digest, clean.digest);
}

TEST(TrainDistributed, InvalidOptionsAreRefused) {
  ModeResult r;
  r.digest = "unchanged";
  auto refused = [&](Mode mode, const DistributedOptions& d, const std::string& text) {
    const Status st = run(mode, small_options(), d, &r);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid) << text;
    EXPECT_NE(st.message().find(text), std::string::npos) << st.message();
    EXPECT_EQ(r.digest, "unchanged");
  };
  DistributedOptions d;
  d.shards = 0;
  refused(Mode::kFp32, d, "shards must be in [1, 4096], got 0");
  d = {};
  d.zero_stage = 1;
  refused(Mode::kFp32, d, "zero stage 1 needs a communicator");
  d.zero_stage = 2;
  refused(Mode::kFp32, d, "zero stage must be 0 or 1, got 2");
  d = {};
  d.bucket_bytes = 100;
  refused(Mode::kFp32, d, "bucket_bytes must be >= 1024, got 100");
}

class TrainCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mantissa_ckpt_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TrainCheckpoint, ResumeGivesTheUninterruptedDigest) {
  for (Mode mode : {Mode::kFp16Amp, Mode::kBf16Kahan}) {
    SCOPED_TRACE(mode_name(mode));
    DistributedOptions d;
    d.shards = 2;
    d.grad_comm = GradComm::kInt8;  // the error feedback is part of the state
    ModeResult full, first, resumed;
    ASSERT_TRUE(run(mode, small_options(), d, &full).ok());
    TrainOptions o = small_options();
    o.epochs = 1;
    d.save_checkpoint = dir_.string();
    ASSERT_TRUE(run(mode, o, d, &first).ok());
    d.save_checkpoint.clear();
    d.resume = dir_.string();
    DistributedStats s;
    ASSERT_TRUE(run(mode, small_options(), d, &resumed, &s).ok());
    EXPECT_EQ(resumed.digest, full.digest);
    EXPECT_EQ(s.first_epoch, 2);
    EXPECT_EQ(resumed.epochs.size(), 2u);
  }
}

TEST_F(TrainCheckpoint, MismatchedAndCorruptCheckpointsAreRefused) {
  DistributedOptions d;
  d.shards = 2;
  d.save_checkpoint = dir_.string();
  TrainOptions o = small_options();
  o.epochs = 1;
  ModeResult r;
  ASSERT_TRUE(run(Mode::kFp32, o, d, &r).ok());
  d.save_checkpoint.clear();
  d.resume = dir_.string();
  auto refused = [&](Mode mode, const DistributedOptions& dd, const std::string& text) {
    ModeResult out;
    out.digest = "unchanged";
    const Status st = run(mode, small_options(), dd, &out);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_NE(st.message().find(text), std::string::npos) << st.message();
    EXPECT_EQ(out.digest, "unchanged");
  };
  DistributedOptions three = d;
  three.shards = 3;
  refused(Mode::kFp32, three, "was written by 2 ranks, this run has 3");
  refused(Mode::kBf16Amp, d, "another configuration");
  DistributedOptions missing = d;
  missing.resume = (dir_ / "nothing").string();
  refused(Mode::kFp32, missing, "cannot be read");
  const auto file = dir_ / "rank-0.ckpt";
  // Counters out of range in a crafted file whose checksum is recomputed (FNV-1a detects damage,
  // not a forgery): a negative optimizer step count (NaN weights before) or epoch (1004 epochs
  // run before) is refused. Offsets: the magic and version (12 bytes), then the header's epoch at
  // 24 and optimizer_steps at 32.
  std::string original;
  {
    std::ifstream in(file, std::ios::binary);
    original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto crafted = [&](std::size_t offset, int64_t value, std::size_t width) {
    std::string bytes = original;
    std::memcpy(bytes.data() + offset, &value, width);  // little-endian: the low bytes first
    uint64_t h = 0xCBF29CE484222325ull;
    for (std::size_t i = 0; i + 8 < bytes.size(); ++i) {
      h ^= static_cast<unsigned char>(bytes[i]);
      h *= 0x100000001B3ull;
    }
    std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  crafted(12 + 32, -3, 8);
  refused(Mode::kFp32, d, "counters out of range");
  crafted(12 + 24, -1000, 4);
  refused(Mode::kFp32, d, "counters out of range");
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(original.data(), static_cast<std::streamsize>(original.size()));
  }
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(120);
    f.put('\x5a');
  }
  refused(Mode::kFp32, d, "is corrupt: checksum mismatch");
  std::filesystem::resize_file(file, 10);
  refused(Mode::kFp32, d, "is corrupt: not a mantissa checkpoint");
}

}  // namespace
}  // namespace mantissa::train
