// AmpUpdateScale in the kit: schema, fp64 golden, golden32, and the C++ API backend.
#include <cmath>
#include <cstring>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kScale, kTracker, kFoundInf };
enum { kGrowth, kBackoff, kInterval };

int32_t tracker_in(const OpInputs& in) {
  return static_cast<int32_t>(in.tensors[kTracker].bits(0));
}

// int32 two's-complement increment without undefined behaviour.
int32_t wrap_increment(int32_t t) { return static_cast<int32_t>(static_cast<uint32_t>(t) + 1u); }

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const DType dtype = in.tensors[kScale].dtype;
  double s = in_f64(in.tensors[kScale], 0);
  int32_t t = tracker_in(in);
  // The attributes are applied in fp32 (the contract): their fp32 values enter the formula.
  const double g = static_cast<float>(in.attrs[kGrowth].f);
  const double b = static_cast<float>(in.attrs[kBackoff].f);
  const int64_t interval = in.attrs[kInterval].i;
  if (in_f64(in.tensors[kFoundInf], 0) != 0.0) {
    s = s * b;
    t = 0;
  } else {
    const int32_t successful = wrap_increment(t);
    if (successful == interval) {
      const double n = s * g;
      if (std::isfinite(round_to_dtype(n, dtype))) s = n;
      t = 0;
    } else {
      t = successful;
    }
  }
  return {{s}, {static_cast<double>(t)}};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const DType dtype = in.tensors[kScale].dtype;
  float s = in_f32(in.tensors[kScale], 0);
  int32_t t = tracker_in(in);
  const auto g = static_cast<float>(in.attrs[kGrowth].f);
  const auto b = static_cast<float>(in.attrs[kBackoff].f);
  const int64_t interval = in.attrs[kInterval].i;
  if (in_f32(in.tensors[kFoundInf], 0) != 0.0f) {
    s = s * b;
    t = 0;
  } else {
    const int32_t successful = wrap_increment(t);
    if (successful == interval) {
      const float n = s * g;
      if (!bits_is_inf(narrow_float(n, dtype), dtype) && !std::isnan(n)) s = n;
      t = 0;
    } else {
      t = successful;
    }
  }
  HostTensor scale(dtype, in.tensors[kScale].shape),
      tracker(DType::kInt32, in.tensors[kTracker].shape);
  scale.set_bits(0, narrow_result(s, dtype));
  tracker.set_bits(0, static_cast<uint32_t>(t));
  return {scale, tracker};
}

// In place, as training loops call it: the outputs are the input buffers.

}  // namespace

template <>
Goldens goldens<detail::AmpUpdateScaleOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
