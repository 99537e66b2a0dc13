// SGD in the kit: schema, fp64 golden, golden32 (the spec's grouping), and the C++ API backend.
#include <cmath>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kParams, kGrad, kLr, kAccum, kMomentum, kStat };
enum { kDampening, kWeightDecay, kNesterov };

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &p = in.tensors[kParams], &gr = in.tensors[kGrad], &ac = in.tensors[kAccum],
                   &st = in.tensors[kStat];
  const double lr = in_f64(in.tensors[kLr], 0), m = in_f64(in.tensors[kMomentum], 0);
  // The attributes are fp32 in the contract; their fp32 values enter the formula.
  const double d = static_cast<float>(in.attrs[kDampening].f);
  const double wd = static_cast<float>(in.attrs[kWeightDecay].f);
  const bool nesterov = in.attrs[kNesterov].b;
  const int64_t n = p.numel();
  std::vector<double> p_out(n), accum_out(n), stat_out(n);
  for (int64_t i = 0; i < n; ++i) {
    const double param = in_f64(p, i);
    const double grad = wd != 0 ? in_f64(gr, i) + param * wd : in_f64(gr, i);
    double accum_t = in_f64(ac, i) * m + grad;
    if (d != 0) accum_t = accum_t - grad * (1 - in_f64(st, i)) * d;
    p_out[i] = nesterov ? param - (grad * lr + accum_t * m * lr) : param - accum_t * lr;
    if (m != 0) {
      accum_out[i] = accum_t;
      stat_out[i] = 0.0;
    } else {  // not written: the inputs stand
      accum_out[i] = in_f64(ac, i);
      stat_out[i] = in_f64(st, i);
    }
  }
  return {p_out, accum_out, stat_out};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &p = in.tensors[kParams], &gr = in.tensors[kGrad], &ac = in.tensors[kAccum],
                   &st = in.tensors[kStat];
  const DType dtype = p.dtype;
  const float lr = in_f32(in.tensors[kLr], 0), m = in_f32(in.tensors[kMomentum], 0);
  const auto d = static_cast<float>(in.attrs[kDampening].f);
  const auto wd = static_cast<float>(in.attrs[kWeightDecay].f);
  const bool nesterov = in.attrs[kNesterov].b;
  HostTensor p_out(dtype, p.shape), accum_out = ac, stat_out = st;
  for (int64_t i = 0; i < p.numel(); ++i) {
    const float param = in_f32(p, i);
    // It's necessary to keep the order of the operations: this is the normative grouping.
    const float grad = wd != 0.0f ? in_f32(gr, i) + (param * wd) : in_f32(gr, i);
    float accum_t = (in_f32(ac, i) * m) + grad;
    if (d != 0.0f) accum_t = accum_t - ((grad * (1.0f - in_f32(st, i))) * d);
    const float p_new =
        nesterov ? param - ((grad * lr) + ((accum_t * m) * lr)) : param - (accum_t * lr);
    p_out.set_bits(i, narrow_result(p_new, dtype));
    if (m != 0.0f) {  // NaN momentum compares unequal: it counts as non-zero
      accum_out.set_bits(i, narrow_result(accum_t, dtype));
      stat_out.set_bits(i, narrow_result(0.0f, dtype));
    }
  }
  return {p_out, accum_out, stat_out};
}

}  // namespace

template <>
Goldens goldens<detail::SgdOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
