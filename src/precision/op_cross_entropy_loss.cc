// CrossEntropyLoss and CrossEntropyLossGrad in the kit. The fp64 goldens evaluate the formulas in
// long double with std::exp / std::log (lse = max + log(sum), log_prob = x - lse), sharing nothing
// with the kernels. The golden32s write the kernels' rounding order out in scalar code
// (docs/ops/cross_entropy_loss.md): exact max, exp(x - m) by the library's exp_f32, the fp64 sum in
// the documented order (row_sums.h), L = log_f32 of its fp32 rounding hi plus (S - hi) / hi in
// fp64, rounded to fp32, then (x - m) - L in fp32; the loss in
// fp64, rounded once to the dtype; the gradient's row coefficients in fp64 rounded to fp32 and its
// elements in fp32 in the documented order. label_smoothing and lse_square_scale_for_zloss enter
// both with their fp32 values, as the contract applies them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mantissa/math.h"
#include "mantissa/tensor.h"
#include "precision/fp.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

enum { kInput, kTarget, kWeight };                                   // forward inputs
enum { kGradLoss, kLogProb, kGTarget, kGWeight, kGradZloss, kLse };  // gradient inputs
enum { kReduction, kIgnoreIndex, kLabelSmoothing, kZlossScale };     // attributes
enum { kNone = 0, kMean = 1, kSum = 2 };

// Target i as an integer (int64 read exactly).
int64_t target_at(const HostTensor& t, int64_t i) {
  if (t.dtype == DType::kInt64) {
    int64_t v;
    std::memcpy(&v, t.bytes.data() + i * 8, 8);
    return v;
  }
  return static_cast<int32_t>(t.bits(i));
}

// Row i's class, -1 when ignored, -2 when out of range (the operator refuses the call; the
// goldens then give that row NaN).
int64_t class_of(const HostTensor& target, int64_t i, int64_t classes, int64_t ignore_index) {
  const int64_t v = target_at(target, i);
  if (v == ignore_index) return -1;
  return v >= 0 && v < classes ? v : -2;
}

double weight_at(const HostTensor& w, int64_t j) { return absent(w) ? 1.0 : in_f64(w, j); }

// A double rounded once to the dtype's bits, NaN canonical.
uint32_t once_bits(double v, DType dtype) {
  return std::isnan(v) ? quiet_nan_bits(dtype, false) : round_to_bits(v, dtype);
}

// fp64 -> fp32, nearest even; beyond FLT_MAX and half its ulp: inf.
float fp32_of(double v) {
  if (std::fabs(v) >= 0x1.ffffffp+127) return v > 0 ? HUGE_VALF : -HUGE_VALF;
  return static_cast<float>(v);
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kInput], &target = in.tensors[kTarget], &w = in.tensors[kWeight];
  const int64_t reduction = in.attrs[kReduction].i, ignore = in.attrs[kIgnoreIndex].i;
  const long double eps = fp32_of(in.attrs[kLabelSmoothing].f),
                    s = fp32_of(in.attrs[kZlossScale].f);
  const int64_t rows = x.shape[0], n = x.shape[1];
  std::vector<double> log_prob(static_cast<std::size_t>(rows * n)), lse(rows);
  std::vector<long double> ce(rows), z(rows);
  long double weight_sum = 0.0L, kept = 0.0L;
  for (int64_t r = 0; r < rows; ++r) {
    long double max = -std::numeric_limits<long double>::infinity();
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) {
      const long double v = in_f64(x, r * n + j);
      nan |= std::isnan(v);
      if (v > max) max = v;
    }
    if (nan) max = std::numeric_limits<long double>::quiet_NaN();
    long double sum = 0.0L;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(in_f64(x, r * n + j) - max);
    const long double l = max + std::log(sum);
    lse[r] = static_cast<double>(l);
    long double smooth = 0.0L;
    for (int64_t j = 0; j < n; ++j) {
      const long double lp = in_f64(x, r * n + j) - l;
      log_prob[r * n + j] = static_cast<double>(lp);
      smooth -= weight_at(w, j) * lp;
    }
    const int64_t t = class_of(target, r, n, ignore);
    if (t == -1) continue;  // ignored: contributes nothing
    if (t == -2) {
      ce[r] = std::numeric_limits<long double>::quiet_NaN();
      continue;
    }
    const long double wt = weight_at(w, t);
    const long double nll = -wt * (in_f64(x, r * n + t) - l);
    ce[r] = eps > 0 ? (1 - eps) * nll + eps / n * smooth : nll;
    z[r] = s * l * l;
    weight_sum += wt;
    kept += 1;
  }
  std::vector<double> loss, zloss;
  if (reduction == kNone) {
    for (int64_t r = 0; r < rows; ++r) {
      loss.push_back(static_cast<double>(s != 0 ? ce[r] + z[r] : ce[r]));
      zloss.push_back(static_cast<double>(z[r]));
    }
  } else {
    long double total = 0.0L, z_total = 0.0L;
    for (int64_t r = 0; r < rows; ++r) total += ce[r], z_total += z[r];
    if (reduction == kMean) total /= weight_sum, z_total /= kept;
    loss.push_back(static_cast<double>(s != 0 ? total + z_total : total));
    zloss.push_back(static_cast<double>(z_total));
  }
  return {loss, log_prob, zloss, lse};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kInput], &target = in.tensors[kTarget], &w = in.tensors[kWeight];
  const int64_t reduction = in.attrs[kReduction].i, ignore = in.attrs[kIgnoreIndex].i;
  const double eps = fp32_of(in.attrs[kLabelSmoothing].f), s = fp32_of(in.attrs[kZlossScale].f);
  const int64_t rows = x.shape[0], n = x.shape[1];
  const std::vector<int64_t> loss_shape =
      reduction == kNone ? std::vector<int64_t>{rows} : std::vector<int64_t>{1};
  HostTensor loss(x.dtype, loss_shape), log_prob(x.dtype, x.shape), zloss(x.dtype, loss_shape),
      lse_out(x.dtype, {rows, 1});
  std::vector<double> ce(rows), z(rows), weight_of(rows);
  std::vector<float> shifted(n), e(n), lp(n);
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float max = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) {
      const float v = in_f32(x, r * n + j);
      nan |= std::isnan(v);
      if (v > max) max = v;
    }
    if (nan) max = std::numeric_limits<float>::quiet_NaN();
    for (int64_t j = 0; j < n; ++j) shifted[j] = in_f32(x, r * n + j) - max;
    exp_f32(shifted.data(), e.data(), n);
    const double sum = documented_row_sum(n, [&](int64_t j) { return static_cast<double>(e[j]); });
    const float s32 = static_cast<float>(sum);  // NaN or in [1, n]
    float log_hi = 0.0f;
    log_f32(&s32, &log_hi, 1);
    // log(S) = log(hi) + (S - hi) / hi in fp64 (the correction to hi's rounding), rounded once.
    const float log_sum = std::isfinite(s32)
                              ? static_cast<float>(static_cast<double>(log_hi) +
                                                   (sum - s32) / static_cast<double>(s32))
                              : log_hi;
    const float l = max + log_sum;
    lse_out.set_bits(r, narrow_result(l, x.dtype));
    for (int64_t j = 0; j < n; ++j) {
      lp[j] = shifted[j] - log_sum;
      log_prob.set_bits(r * n + j, narrow_result(lp[j], x.dtype));
    }
    const int64_t t = class_of(target, r, n, ignore);
    if (t == -1) continue;
    if (t == -2) {
      ce[r] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    const double nll = weight_at(w, t) * -static_cast<double>(lp[t]);
    if (eps > 0) {
      const double sw = documented_row_sum(
          n, [&](int64_t j) { return weight_at(w, j) * static_cast<double>(lp[j]); });
      ce[r] = (1.0 - eps) * nll + (eps / static_cast<double>(n)) * -sw;
    } else {
      ce[r] = nll;
    }
    const double ld = l;
    z[r] = s != 0 ? s * (ld * ld) : 0.0;
    weight_of[r] = weight_at(w, t);
    ++kept;
  }
  auto total = [&](const std::vector<double>& v) {
    return documented_row_sum(rows, [&](int64_t i) { return v[i]; });
  };
  if (reduction == kNone) {
    for (int64_t r = 0; r < rows; ++r) {
      loss.set_bits(r, once_bits(s != 0 ? ce[r] + z[r] : ce[r], x.dtype));
      zloss.set_bits(r, once_bits(z[r], x.dtype));
    }
  } else {
    double l = total(ce), zl = total(z);
    if (reduction == kMean) {
      l = l / total(weight_of);
      zl = zl / static_cast<double>(kept);
    }
    loss.set_bits(0, once_bits(s != 0 ? l + zl : l, x.dtype));
    zloss.set_bits(0, once_bits(zl, x.dtype));
  }
  return {loss, log_prob, zloss, lse_out};
}

// ---- The gradient ---------------------------------------------------------------------------

std::vector<std::vector<double>> grad_golden(const OpInputs& in) {
  const HostTensor &g = in.tensors[kGradLoss], &lp = in.tensors[kLogProb],
                   &target = in.tensors[kGTarget], &w = in.tensors[kGWeight],
                   &gz = in.tensors[kGradZloss], &lse = in.tensors[kLse];
  const int64_t reduction = in.attrs[kReduction].i, ignore = in.attrs[kIgnoreIndex].i;
  const long double eps = fp32_of(in.attrs[kLabelSmoothing].f),
                    s = fp32_of(in.attrs[kZlossScale].f);
  const int64_t rows = lp.shape[0], n = lp.shape[1];
  long double weight_sum = 0.0L, kept = 0.0L, class_weights = 0.0L;
  for (int64_t j = 0; j < n; ++j) class_weights += weight_at(w, j);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = class_of(target, r, n, ignore);
    if (t >= 0) weight_sum += weight_at(w, t), kept += 1;
  }
  std::vector<double> out(static_cast<std::size_t>(rows * n), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = class_of(target, r, n, ignore);
    if (t == -1) continue;
    const int64_t at = reduction == kNone ? r : 0;
    const long double gr = in_f64(g, at);
    const long double a = reduction == kMean ? gr / weight_sum : gr;
    const long double c1 =
        t >= 0 ? a * (1 - eps) * weight_at(w, t) : std::numeric_limits<long double>::quiet_NaN();
    const long double c2 = a * eps / n;
    long double c3 = 0.0L;
    if (s != 0) {
      long double gzr = absent(gz) ? gr : gr + in_f64(gz, at);
      if (reduction == kMean) gzr /= kept;
      c3 = 2 * s * in_f64(lse, r) * gzr;
    }
    for (int64_t j = 0; j < n; ++j) {
      const long double p = std::exp(static_cast<long double>(in_f64(lp, r * n + j)));
      long double v = p * (c1 + c2 * class_weights + c3);
      if (eps > 0) v -= c2 * weight_at(w, j);
      if (j == t) v -= c1;
      out[r * n + j] = static_cast<double>(v);
    }
  }
  return {out};
}

std::vector<HostTensor> grad_golden32(const OpInputs& in) {
  const HostTensor &g = in.tensors[kGradLoss], &lp = in.tensors[kLogProb],
                   &target = in.tensors[kGTarget], &w = in.tensors[kGWeight],
                   &gz = in.tensors[kGradZloss], &lse = in.tensors[kLse];
  const int64_t reduction = in.attrs[kReduction].i, ignore = in.attrs[kIgnoreIndex].i;
  const double eps = fp32_of(in.attrs[kLabelSmoothing].f), s = fp32_of(in.attrs[kZlossScale].f);
  const int64_t rows = lp.shape[0], n = lp.shape[1];
  HostTensor out(lp.dtype, lp.shape);  // zeros: the ignored rows
  std::vector<int64_t> cls(rows);
  std::vector<double> weight_of(rows, 0.0);
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    cls[r] = class_of(target, r, n, ignore);
    if (cls[r] >= 0) weight_of[r] = weight_at(w, cls[r]), ++kept;
  }
  const double weight_sum = documented_row_sum(rows, [&](int64_t i) { return weight_of[i]; });
  const double class_weights = absent(w)
                                   ? static_cast<double>(n)
                                   : documented_row_sum(n, [&](int64_t j) { return in_f64(w, j); });
  std::vector<float> v(n);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = cls[r];
    if (t == -1) continue;
    const int64_t at = reduction == kNone ? r : 0;
    const double gr = in_f64(g, at);
    const double a = reduction == kMean ? gr / weight_sum : gr;
    const double c1 =
        t >= 0 ? (a * (1.0 - eps)) * weight_of[r] : std::numeric_limits<double>::quiet_NaN();
    const double c2 = a * (eps / static_cast<double>(n));
    double big_a = c1;
    if (eps > 0) big_a = big_a + c2 * class_weights;
    if (s != 0) {
      double gzr = absent(gz) ? gr : gr + in_f64(gz, at);
      if (reduction == kMean) gzr = gzr / static_cast<double>(kept);
      big_a = big_a + ((2.0 * s) * in_f64(lse, r)) * gzr;
    }
    const float A = fp32_of(big_a), B = fp32_of(c1), D = fp32_of(c2);
    for (int64_t j = 0; j < n; ++j) v[j] = in_f32(lp, r * n + j);
    exp_f32(v.data(), v.data(), n);
    for (int64_t j = 0; j < n; ++j) {
      float o = v[j] * A;
      if (eps > 0) o = o - (absent(w) ? D : D * in_f32(w, j));
      if (j == t) {  // in fp64: (exp(lp) - 1) A + (A - B), less D w_t
        double p = in_f32(lp, r * n + j);
        exp_f64(&p, &p, 1);
        double o64 =
            (p - 1.0) * static_cast<double>(A) + (static_cast<double>(A) - static_cast<double>(B));
        if (eps > 0) {
          o64 =
              o64 - static_cast<double>(D) * (absent(w) ? 1.0 : static_cast<double>(in_f32(w, j)));
        }
        o = static_cast<float>(o64);
      }
      out.set_bits(r * n + j, narrow_result(o, lp.dtype));
    }
  }
  return {out};
}

}  // namespace

template <>
Goldens goldens<detail::CrossEntropyLossOp>() {
  return {golden, golden32, StandardKind::kSingleBm};
}

template <>
Goldens goldens<detail::CrossEntropyLossGradOp>() {
  return {grad_golden, grad_golden32, StandardKind::kSingleBm};
}

}  // namespace mantissa::precision
