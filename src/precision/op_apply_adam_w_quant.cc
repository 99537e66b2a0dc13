// ApplyAdamWQuant in the kit: the fp64 golden (the AdamW step in double on the dequantized
// moments, each new moment coded by its nearest map entry) and golden32 (the documented fp32
// steps and the search as CANN's kernel runs it, a scalar transcription sharing no code with the
// kernel).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kVar, kGrad, kM, kV, kQmapM, kQmapV, kAbsmaxM, kAbsmaxV, kStep };
enum { kLr, kBeta1, kBeta2, kWeightDecay, kEps, kGnormScale, kQuantMode, kBlockSize };

struct Hyper {
  float lr, beta1, beta2, weight_decay, eps, gnorm_scale;
  int64_t block;
  double t;  // the step computed: step + 1
};

Hyper hyper(const OpInputs& in) {
  auto f = [&](int k) { return static_cast<float>(in.attrs[k].f); };
  return {f(kLr),
          f(kBeta1),
          f(kBeta2),
          f(kWeightDecay),
          f(kEps),
          f(kGnormScale),
          in.attrs[kBlockSize].i,
          in.tensors[kStep].value(0) + 1.0};
}

int64_t code_of(const HostTensor& codes, int64_t i) { return static_cast<int64_t>(codes.value(i)); }

// The nearest entry of an ascending map, the lower index on a tie (the contract's result for an
// ascending map); then m's sign rule.
int64_t nearest64(const std::vector<double>& map, double x, bool sign_rule) {
  if (std::isnan(x)) return 0;
  int64_t best = 0;
  for (int64_t k = 1; k < 256; ++k) {
    if (std::fabs(x - map[static_cast<std::size_t>(k)]) <
        std::fabs(x - map[static_cast<std::size_t>(best)])) {
      best = k;
    }
  }
  if (sign_rule) {
    const double e = map[static_cast<std::size_t>(best)];
    if (x > 0 && e < 0 && best < 255) ++best;
    if (x < 0 && e > 0 && best > 0) --best;
  }
  return best;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &var = in.tensors[kVar], &grad = in.tensors[kGrad], &m = in.tensors[kM],
                   &v = in.tensors[kV];
  const Hyper h = hyper(in);
  const double lr = h.lr, b1 = h.beta1, b2 = h.beta2, wd = h.weight_decay, eps = h.eps;
  std::vector<double> map_m(256), map_v(256);
  for (int64_t k = 0; k < 256; ++k) {
    map_m[static_cast<std::size_t>(k)] = in_f64(in.tensors[kQmapM], k);
    map_v[static_cast<std::size_t>(k)] = in_f64(in.tensors[kQmapV], k);
  }
  const double bias1 = 1 - std::pow(b1, h.t), bias2 = 1 - std::pow(b2, h.t);
  const int64_t n = var.numel();
  const int64_t blocks = (n + h.block - 1) / h.block;
  std::vector<double> var_out(static_cast<std::size_t>(n)), m_out(var_out.size()),
      v_out(var_out.size()), am_out(static_cast<std::size_t>(blocks)), av_out(am_out.size());
  std::vector<double> mm(var_out.size()), vv(var_out.size());
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * h.block, end = std::min(n, begin + h.block);
    double am = 0, av = 0;
    for (int64_t i = begin; i < end; ++i) {
      const auto u = static_cast<std::size_t>(i);
      const double g = in_f64(grad, i) * h.gnorm_scale;
      mm[u] =
          b1 * map_m[static_cast<std::size_t>(code_of(m, i))] * in_f64(in.tensors[kAbsmaxM], b) +
          (1 - b1) * g;
      vv[u] =
          b2 * map_v[static_cast<std::size_t>(code_of(v, i))] * in_f64(in.tensors[kAbsmaxV], b) +
          (1 - b2) * g * g;
      // m_hat / (sqrt(v_hat) + eps), the decay applied to the updated var where wd > 0.
      double x = in_f64(var, i) - lr * (mm[u] / bias1) / (std::sqrt(vv[u] / bias2) + eps);
      if (wd > 0) x *= 1 - lr * wd;
      var_out[u] = x;
      am = std::isnan(mm[u]) || std::isnan(am) ? NAN : std::fmax(am, std::fabs(mm[u]));
      av = std::isnan(vv[u]) || std::isnan(av) ? NAN : std::fmax(av, std::fabs(vv[u]));
    }
    am_out[static_cast<std::size_t>(b)] = am;
    av_out[static_cast<std::size_t>(b)] = av;
    for (int64_t i = begin; i < end; ++i) {
      const auto u = static_cast<std::size_t>(i);
      m_out[u] = static_cast<double>(nearest64(map_m, mm[u] / am, true));
      v_out[u] = static_cast<double>(nearest64(map_v, vv[u] / av, false));
    }
  }
  return {var_out, m_out, v_out, am_out, av_out};
}

// The search exactly as documented: lower 0, upper 255; eight comparisons of x with the entry at
// pivot = (lower + upper) / 2 (the first at 127), x > entry raising lower to the pivot and any
// other outcome lowering upper to it; then the nearer of the two ends, lower on a tie.
int64_t search32(const HostTensor& map, float x) {
  int64_t lower = 0, upper = 255;
  for (int round = 0; round < 8; ++round) {
    const int64_t pivot = (lower + upper) / 2;
    if (x > in_f32(map, pivot)) {
      lower = pivot;
    } else {
      upper = pivot;
    }
  }
  const float to_lower = std::fabs(x - in_f32(map, lower));
  const float to_upper = std::fabs(x - in_f32(map, upper));
  return to_lower <= to_upper ? lower : upper;
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &var = in.tensors[kVar], &grad = in.tensors[kGrad], &m = in.tensors[kM],
                   &v = in.tensors[kV], &qm = in.tensors[kQmapM], &qv = in.tensors[kQmapV];
  const Hyper h = hyper(in);
  // The per-call constants, in double from the fp32 attributes, each rounded once.
  const double t = h.t, lr = h.lr, b1 = h.beta1, b2 = h.beta2;
  const double c2 = std::sqrt(1 - std::pow(b2, t));
  const auto step_size = static_cast<float>(-lr * c2 / (1 - std::pow(b1, t)));
  const auto eps_c2 = static_cast<float>(h.eps * c2);
  const auto decay = static_cast<float>(1 - lr * static_cast<double>(h.weight_decay));
  const auto one_m_b1 = static_cast<float>(1 - b1), one_m_b2 = static_cast<float>(1 - b2);
  const int64_t n = var.numel();
  const int64_t blocks = (n + h.block - 1) / h.block;
  HostTensor var_out(var.dtype, var.shape), m_out(m.dtype, m.shape), v_out(v.dtype, v.shape);
  HostTensor am_out = in.tensors[kAbsmaxM], av_out = in.tensors[kAbsmaxV];
  std::vector<float> mm(static_cast<std::size_t>(h.block)), vv(mm.size());
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * h.block, end = std::min(n, begin + h.block);
    const float am = in_f32(in.tensors[kAbsmaxM], b), av = in_f32(in.tensors[kAbsmaxV], b);
    float new_am = 0.0f, new_av = 0.0f;
    bool nan_m = false, nan_v = false;
    for (int64_t i = begin; i < end; ++i) {
      // It's necessary to keep the order of the operations: this is the normative grouping.
      const float g = in_f32(grad, i) * h.gnorm_scale;
      const float m0 = in_f32(qm, code_of(m, i)) * am;
      const float v0 = in_f32(qv, code_of(v, i)) * av;
      const float m1 = (m0 * h.beta1) + (g * one_m_b1);
      const float v1 = (v0 * h.beta2) + ((g * g) * one_m_b2);
      float x = in_f32(var, i) + ((m1 * step_size) / (std::sqrt(v1) + eps_c2));
      if (h.weight_decay > 0.0f) x = x * decay;
      var_out.set_bits(i, narrow_result(x, var.dtype));
      mm[static_cast<std::size_t>(i - begin)] = m1;
      vv[static_cast<std::size_t>(i - begin)] = v1;
      nan_m = nan_m || std::isnan(m1);
      nan_v = nan_v || std::isnan(v1);
      new_am = std::max(new_am, std::fabs(m1));
      new_av = std::max(new_av, std::fabs(v1));
    }
    if (nan_m) new_am = std::numeric_limits<float>::quiet_NaN();
    if (nan_v) new_av = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = begin; i < end; ++i) {
      const float xm = mm[static_cast<std::size_t>(i - begin)] / new_am;
      const float xv = vv[static_cast<std::size_t>(i - begin)] / new_av;
      int64_t cm = search32(qm, xm);
      // m's sign rule: an entry of the opposite sign moves one code towards x's sign.
      const float entry = in_f32(qm, cm);
      if (xm > 0.0f && entry < 0.0f) cm = std::min<int64_t>(cm + 1, 255);
      if (xm < 0.0f && entry > 0.0f) cm = std::max<int64_t>(cm - 1, 0);
      m_out.set_bits(i, static_cast<uint32_t>(cm));
      v_out.set_bits(i, static_cast<uint32_t>(search32(qv, xv)));
    }
    am_out.set_bits(b, narrow_result(new_am, DType::kFloat32));
    av_out.set_bits(b, narrow_result(new_av, DType::kFloat32));
  }
  return {var_out, m_out, v_out, am_out, av_out};
}

}  // namespace

template <>
Goldens goldens<detail::ApplyAdamWQuantOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
