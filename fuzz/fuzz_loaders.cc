// The readers of the tools on arbitrary bytes: .npy (mantissa calibrate), CSV, per-layer
// precision policies and checkpoints (mantissa train), and the loss scaler's saved state (the
// C++ API). Every input gives a value or a status, never a crash or a huge allocation; what a
// reader accepts, its writer writes back and the reader reads again to the same value.
//
// The first byte picks the reader: odd, .npy (as before, so the corpus keeps its meaning); even,
// by (byte >> 1) % 4: CSV, policy JSON, scaler state, checkpoint. For a checkpoint, bit 3 of the
// first byte picks the model's mode (fp32 or bf16 with Kahan compensation) and bit 4 whether the
// run expects the header the bytes carry (so the fuzzer gets past the configuration checks) or a
// fixed one; the harness appends the checksum, so the fuzzer explores the fields, not FNV-1a.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "mantissa/amp/loss_scaler.h"
#include "mantissa/calibrate.h"
#include "trainer/mlp/checkpoint.h"
#include "trainer/mlp/model.h"
#include "trainer/train.h"
#include "trainer/train_policy.h"

namespace {

using namespace mantissa;

void policy(std::string_view text) {
  const std::vector<std::string> layers = train::layer_names(train::TrainOptions{});
  train::PrecisionPolicy p;
  if (!train::parse_policy(text, layers, &p).ok()) return;
  // Accepted: written back, it reads again to the same file.
  const std::string again = train::policy_json(p);
  train::PrecisionPolicy q;
  if (!train::parse_policy(again, layers, &q).ok() || train::policy_json(q) != again) {
    __builtin_trap();
  }
}

void scaler_state(std::string_view text) {
  amp::DynamicLossScaler s;
  if (!s.load_state(text).ok()) return;
  const std::string again = s.state();
  amp::DynamicLossScaler t;
  if (!t.load_state(again).ok() || t.state() != again) __builtin_trap();
}

void checkpoint(uint8_t selector, const uint8_t* data, std::size_t size) {
  const train::Mode mode = (selector & 8) ? train::Mode::kBf16Kahan : train::Mode::kFp32;
  const int64_t widths[] = {4, 3, 2};
  train::detail::Mlp model(widths, train::Activation::kRelu, train::detail::precision_of(mode),
                           train::Optimizer::kAdamW, 1);
  amp::DynamicLossScaler scaler;
  std::vector<std::vector<float>> residuals(2, std::vector<float>(5, 0.0f));
  std::string bytes(reinterpret_cast<const char*>(data), size);
  train::detail::CheckpointHeader expect;
  expect.ranks = 2;
  expect.mode = static_cast<int32_t>(mode);
  // The header sits after the 8-byte magic and the 4-byte version.
  if ((selector & 16) && bytes.size() >= 12 + sizeof(expect)) {
    std::memcpy(&expect, bytes.data() + 12, sizeof(expect));
  }
  const uint64_t sum = train::detail::checkpoint_checksum(bytes);
  bytes.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
  train::detail::CheckpointHeader got;
  (void)train::detail::parse_checkpoint(bytes, "fuzz.ckpt", expect, &scaler, &model, &residuals,
                                        &got);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (selector & 1) {
    const mantissa::fuzz::MemFile file(data + 1, size - 1);
    if (!file.ok()) return 0;
    mantissa::calib::NpyArray a;
    (void)mantissa::calib::read_npy(file.path(), &a);
    return 0;
  }
  switch ((selector >> 1) % 4) {
    case 0: {
      const mantissa::fuzz::MemFile file(data + 1, size - 1);
      if (!file.ok()) return 0;
      mantissa::train::Dataset d;
      mantissa::train::DataOptions o;
      o.spec = file.path();
      (void)mantissa::train::load_dataset(o, &d);
      return 0;
    }
    case 1: policy(text); return 0;
    case 2: scaler_state(text); return 0;
    default: checkpoint(selector, data + 1, size - 1); return 0;
  }
}
