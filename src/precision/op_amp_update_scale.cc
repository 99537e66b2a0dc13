// AmpUpdateScale in the kit: schema, fp64 golden, golden32, and the C++ API backend.
#include <cmath>
#include <cstring>

#include "mantissa/ops/amp_update_scale.h"
#include "precision/op_defs.h"
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

AmpUpdateScaleParams params_of(const OpInputs& in) {
  AmpUpdateScaleParams p;
  p.growth_factor = in.attrs[kGrowth].f;
  p.backoff_factor = in.attrs[kBackoff].f;
  p.growth_interval = in.attrs[kInterval].i;
  return p;
}

// In place, as training loops call it: the outputs are the input buffers.
std::string run_kernel(const OpInputs& in, std::vector<HostTensor>& out) {
  HostTensor scale = in.tensors[kScale], tracker = in.tensors[kTracker];
  HostTensor found = in.tensors[kFoundInf];
  const AmpUpdateScaleTensors t{view_of(scale), view_of(tracker), view_of(found), view_of(scale),
                                view_of(tracker)};
  const Status st = amp_update_scale(t, params_of(in));
  if (!st.ok()) return st.message();
  out = {scale, tracker};
  return "";
}

}  // namespace

OpEntry amp_update_scale_entry() {
  OpEntry e;
  e.name = "AmpUpdateScale";
  using K = TensorSlot::Kind;
  using S = TensorSlot::Shape;
  e.inputs = {{"current_scale", K::kFloat, S::kOneElement, "", 0, 8},
              {"growth_tracker", K::kInt32, S::kOneElement, "", 0, 8},
              {"found_inf", K::kFloat, S::kOneElement, "", 0, 8}};
  AttrValue growth{AttrKind::kFloat, false, 0, 2.0}, backoff{AttrKind::kFloat, false, 0, 0.5},
      interval{AttrKind::kInt, false, 2000, 0.0};
  e.attrs = {{"growth_factor", AttrKind::kFloat, growth, true},
             {"backoff_factor", AttrKind::kFloat, backoff, true},
             {"growth_interval", AttrKind::kInt, interval, true}};
  e.outputs = {{"updated_scale", kScale}, {"updated_growth_tracker", kTracker}};
  e.default_standard = StandardKind::kBitwise;
  e.golden = golden;
  e.golden32 = golden32;
  e.backends[Backend::kKernel] = run_kernel;
  return e;
}

}  // namespace mantissa::precision
