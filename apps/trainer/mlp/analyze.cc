// The precision analysis (analyze.h): the mode's passes with their trace kept, an fp64 shadow of
// every layer written here as plain double loops (nothing shared with the 16-bit path but the
// weights, widened exactly), and the error statistics of docs/training.md.
#include "trainer/mlp/analyze.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "mantissa/dtype.h"
#include "trainer/mlp/common.h"

namespace mantissa::train {
namespace detail {
namespace {

using Vec = std::vector<double>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-5;  // LayerNorm's, as the model's forward

Vec widen64(const Buffer& b) {
  Vec v(static_cast<std::size_t>(b.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = load_as_float(b.dtype(), b.data(), i);
  return v;
}

Vec absolute(const Vec& v) {
  Vec a(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}

double norm(const Vec& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// ||m - s|| / ||s||; 0 when both are zero, +inf when only s is.
double rel_norm(const Vec& m, const Vec& s) {
  double d = 0.0;
  for (std::size_t i = 0; i < m.size(); ++i) d += (m[i] - s[i]) * (m[i] - s[i]);
  const double n = norm(s);
  if (n > 0) return std::sqrt(d) / n;
  return d > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

// The spacing of `dt` at |s| (subnormal spacing below the smallest normal).
double ulp_at(DType dt, double s) {
  const int p = dt == DType::kFloat16 ? 11 : dt == DType::kBFloat16 ? 8 : 24;
  const int emin = dt == DType::kFloat16 ? -14 : -126;
  int e = emin;
  if (s != 0.0) {
    std::frexp(std::fabs(s), &e);  // |s| = f 2^e, f in [0.5, 1)
    e = std::max(e - 1, emin);
  }
  return std::ldexp(1.0, e - (p - 1));
}

TensorError compare(std::string layer, std::string tensor, int depth, DType dt, const Vec& m,
                    const Vec& s) {
  TensorError t;
  t.layer = std::move(layer);
  t.tensor = std::move(tensor);
  t.depth = depth;
  t.count = static_cast<int64_t>(s.size());
  t.shadow_rms = s.empty() ? 0.0 : norm(s) / std::sqrt(double(s.size()));
  for (double v : s) t.shadow_max = std::max(t.shadow_max, std::fabs(v));
  const double floor = 1e-3 * t.shadow_rms;
  double sum = 0.0, sum2 = 0.0, ulp_sum = 0.0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double d = std::fabs(m[i] - s[i]);
    t.sign_flips += (m[i] > 0) != (s[i] > 0) ? 1 : 0;
    const double denom = std::max(std::fabs(s[i]), floor);
    const double e = denom > 0 ? d / denom : (d > 0 ? std::numeric_limits<double>::infinity() : 0);
    t.rel_error_max = std::max(t.rel_error_max, e);
    sum += e;
    sum2 += e * e;
    const double u = d / ulp_at(dt, std::max(std::fabs(s[i]), floor));
    t.ulp_max = std::max(t.ulp_max, u);
    ulp_sum += u;
  }
  const double n = std::max<double>(1.0, double(s.size()));
  t.rel_error_mean = sum / n;
  t.rel_error_rms = std::sqrt(sum2 / n);
  t.ulp_mean = ulp_sum / n;
  t.rel_error_norm = rel_norm(m, s);
  return t;
}

// Fills the propagation columns: inherited from the inputs, local = mode vs fp64 on the mode's
// inputs (ref), propagated = ref vs the shadow.
void propagate(TensorError* t, double inherited, const Vec& m, const Vec& ref, const Vec& s) {
  t->inherited = inherited;
  t->local = rel_norm(m, ref);
  t->propagated = rel_norm(ref, s);
  t->amplification = inherited > 0 ? t->propagated / inherited : kNaN;
}

// ---- fp64 layers ----------------------------------------------------------------------------

// y [rows, out] = x [rows, in] w [in, out] + b.
Vec linear(const Vec& x, const Vec& w, const Vec* b, int64_t rows, int64_t in, int64_t out) {
  Vec y(static_cast<std::size_t>(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < in; ++k) {
      const double xv = x[r * in + k];
      for (int64_t j = 0; j < out; ++j) y[r * out + j] += xv * w[k * out + j];
    }
    if (b) {
      for (int64_t j = 0; j < out; ++j) y[r * out + j] += (*b)[j];
    }
  }
  return y;
}
// dx [rows, in] = dy [rows, out] w^T.
Vec linear_dx(const Vec& dy, const Vec& w, int64_t rows, int64_t in, int64_t out) {
  Vec dx(static_cast<std::size_t>(rows * in), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < in; ++k) {
      double s = 0.0;
      for (int64_t j = 0; j < out; ++j) s += dy[r * out + j] * w[k * out + j];
      dx[r * in + k] = s;
    }
  }
  return dx;
}
// dw [in, out] = x^T dy.
Vec linear_dw(const Vec& x, const Vec& dy, int64_t rows, int64_t in, int64_t out) {
  Vec dw(static_cast<std::size_t>(in * out), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < in; ++k) {
      const double xv = x[r * in + k];
      for (int64_t j = 0; j < out; ++j) dw[k * out + j] += xv * dy[r * out + j];
    }
  }
  return dw;
}

void row_stats(const double* x, int64_t n, double* mean, double* var) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  *mean = s / double(n);
  double v = 0.0;
  for (int64_t i = 0; i < n; ++i) v += (x[i] - *mean) * (x[i] - *mean);
  *var = v / double(n);
}

Vec layer_norm64(const Vec& x, const Vec& g, const Vec& b, int64_t rows, int64_t n) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    row_stats(&x[r * n], n, &mean, &var);
    const double rstd = 1.0 / std::sqrt(var + kEps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = (x[r * n + i] - mean) * rstd * g[i] + b[i];
  }
  return y;
}
// dx and dgamma of y = xhat * g + b, xhat = (x - mean) * rstd.
void layer_norm_grad64(const Vec& dy, const Vec& x, const Vec& g, int64_t rows, int64_t n, Vec* dx,
                       Vec* dg) {
  dx->assign(x.size(), 0.0);
  dg->assign(static_cast<std::size_t>(n), 0.0);
  Vec xhat(static_cast<std::size_t>(n)), dxhat(static_cast<std::size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    row_stats(&x[r * n], n, &mean, &var);
    const double rstd = 1.0 / std::sqrt(var + kEps);
    double m1 = 0, m2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      xhat[i] = (x[r * n + i] - mean) * rstd;
      dxhat[i] = dy[r * n + i] * g[i];
      (*dg)[i] += dy[r * n + i] * xhat[i];
      m1 += dxhat[i];
      m2 += dxhat[i] * xhat[i];
    }
    m1 /= double(n);
    m2 /= double(n);
    for (int64_t i = 0; i < n; ++i) (*dx)[r * n + i] = rstd * (dxhat[i] - m1 - xhat[i] * m2);
  }
}

double gelu64(double x) {
  const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
double gelu_grad64(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

Vec activation64(Activation a, const Vec& x) {
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    y[i] = a == Activation::kRelu ? (x[i] > 0 ? x[i] : 0.0) : gelu64(x[i]);
  }
  return y;
}
Vec activation_grad64(Activation a, const Vec& x, const Vec& dy) {
  Vec dx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    dx[i] = a == Activation::kRelu ? (x[i] > 0 ? dy[i] : 0.0) : gelu_grad64(x[i]) * dy[i];
  }
  return dx;
}

// d(mean loss * scale)/dz of softmax cross-entropy, and the mean loss.
Vec loss_grad64(const Vec& z, const int32_t* labels, int64_t rows, int64_t c, double scale,
                double* mean_loss) {
  Vec g(z.size());
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* zr = &z[r * c];
    const double mx = *std::max_element(zr, zr + c);
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j) s += std::exp(zr[j] - mx);
    total += std::log(s) - (zr[labels[r]] - mx);
    for (int64_t j = 0; j < c; ++j) {
      const double p = std::exp(zr[j] - mx) / s;
      g[r * c + j] = (p - (j == labels[r] ? 1.0 : 0.0)) * scale / double(rows);
    }
  }
  *mean_loss = total / double(rows);
  return g;
}

// ---- Condition estimates --------------------------------------------------------------------

double ratio(double num, double den) {
  return den > 0 ? num / den : std::numeric_limits<double>::infinity();
}

double layer_norm_condition(const Vec& x, int64_t rows, int64_t n) {
  double worst = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    row_stats(&x[r * n], n, &mean, &var);
    worst = std::max(worst, std::sqrt(mean * mean + var) / std::sqrt(var + kEps));
  }
  return worst;
}

double activation_condition(Activation a, const Vec& x) {
  if (a == Activation::kRelu) return 1.0;
  double num = 0.0, den = 0.0;
  for (double v : x) {
    const double d = v * gelu_grad64(v), y = gelu64(v);
    num += d * d;
    den += y * y;
  }
  return ratio(std::sqrt(num), std::sqrt(den));
}

double max_of(double a, double b) { return std::isnan(a) || a < b ? b : a; }

// Rounds v in place to `dt` through fp32 (RNE twice, as the modes store an fp32 result).
void round_to(DType dt, Vec* v) {
  for (double& x : *v) {
    const float f = static_cast<float>(x);
    uint32_t word = 0;
    store_from_float(dt, &word, 0, f);
    x = load_as_float(dt, &word, 0);
  }
}

struct ShadowRun {
  std::vector<Vec> activations;
  Vec grads;  // every weight gradient, backward order
  double loss = 0.0;
};

// The shadow's forward, loss and weight gradients; with round_layer in [0, layers] that layer's
// output, input gradient and weight gradient (layers: the logits' gradient) rounded to dt.
ShadowRun shadow_run(const Mlp& model, const Vec& x, const int32_t* labels, int64_t rows,
                     double scale, int round_layer, DType dt) {
  const std::vector<LayerSpec>& layers = model.layers();
  const std::span<const Parameter> params = model.params();
  const int nl = static_cast<int>(layers.size());
  auto weights = [&](int index) { return widen64(params[index].weights()); };
  ShadowRun run;
  run.activations.resize(static_cast<std::size_t>(nl));
  auto input = [&](int l) -> const Vec& { return l == 0 ? x : run.activations[l - 1]; };
  for (int l = 0; l < nl; ++l) {
    const LayerSpec& L = layers[l];
    Vec& y = run.activations[l];
    switch (L.kind) {
      case LayerKind::kLinear: {
        const Vec b = weights(L.bias);
        y = linear(input(l), weights(L.weight), &b, rows, L.in, L.out);
        break;
      }
      case LayerKind::kLayerNorm:
        y = layer_norm64(input(l), weights(L.weight), weights(L.bias), rows, L.in);
        break;
      case LayerKind::kActivation: y = activation64(L.activation, input(l)); break;
    }
    if (l == round_layer) round_to(dt, &y);
  }
  Vec dy = loss_grad64(run.activations.back(), labels, rows, model.classes(), scale, &run.loss);
  if (round_layer == nl) round_to(dt, &dy);
  for (int l = nl - 1; l >= 0; --l) {
    const LayerSpec& L = layers[l];
    Vec dx, gw;
    switch (L.kind) {
      case LayerKind::kLinear:
        gw = linear_dw(input(l), dy, rows, L.in, L.out);
        if (l > 0) dx = linear_dx(dy, weights(L.weight), rows, L.in, L.out);
        break;
      case LayerKind::kLayerNorm:
        layer_norm_grad64(dy, input(l), weights(L.weight), rows, L.in, &dx, &gw);
        break;
      case LayerKind::kActivation: dx = activation_grad64(L.activation, input(l), dy); break;
    }
    if (l == round_layer) {
      round_to(dt, &gw);
      round_to(dt, &dx);
    }
    run.grads.insert(run.grads.end(), gw.begin(), gw.end());
    dy = std::move(dx);
  }
  return run;
}

}  // namespace

std::vector<LayerSensitivity> sensitivity(const Mlp& model, const float* x, const int32_t* labels,
                                          int64_t rows, float loss_scale, DType dtype) {
  const std::vector<LayerSpec>& layers = model.layers();
  const int nl = static_cast<int>(layers.size());
  const Vec x64(x, x + rows * layers.front().in);
  const ShadowRun exact = shadow_run(model, x64, labels, rows, loss_scale, -1, dtype);
  std::vector<LayerSensitivity> out;
  for (int l = 0; l <= nl; ++l) {
    const ShadowRun r = shadow_run(model, x64, labels, rows, loss_scale, l, dtype);
    LayerSensitivity s;
    s.layer = l < nl ? layers[l].name : "loss";
    s.depth = l;
    s.loss_change = std::fabs(r.loss - exact.loss) / std::fabs(exact.loss);
    s.logits_error = rel_norm(r.activations.back(), exact.activations.back());
    s.grad_error = rel_norm(r.grads, exact.grads);
    for (int k = 1; k < nl; ++k) {
      if (layers[k].kind != LayerKind::kActivation) continue;
      const Vec &a = r.activations[k - 1], &b = exact.activations[k - 1];
      for (std::size_t i = 0; i < a.size(); ++i) s.mask_flips += (a[i] > 0) != (b[i] > 0) ? 1 : 0;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Status analyze_model(Mlp& model, const float* x, const int32_t* labels, int64_t rows,
                     float loss_scale, AnalysisReport* report, ShadowTrace* trace) {
  model.keep_trace(true);
  TRAINER_TRY(model.forward(x, rows));
  double mode_loss = 0.0;
  int64_t correct = 0;
  TRAINER_TRY(model.loss(labels, rows, loss_scale, &mode_loss, &correct));
  TRAINER_TRY(model.backward());

  const DType dt = model.precision().compute;
  const std::vector<LayerSpec>& layers = model.layers();
  const std::span<const Parameter> params = model.params();
  const int nl = static_cast<int>(layers.size());
  auto weights = [&](int index) { return widen64(params[index].weights()); };

  std::vector<TensorError> out;
  std::vector<Vec> S(nl), M(nl);  // shadow and mode outputs
  const Vec x_shadow(x, x + rows * layers.front().in);
  const Vec x_mode = widen64(model.input());
  auto input_of = [&](int l, bool shadow) -> const Vec& {
    if (l == 0) return shadow ? x_shadow : x_mode;
    return shadow ? S[l - 1] : M[l - 1];
  };

  // Forward.
  for (int l = 0; l < nl; ++l) {
    const LayerSpec& L = layers[l];
    const Vec& in_s = input_of(l, true);
    const Vec& in_m = input_of(l, false);
    M[l] = widen64(model.output(static_cast<std::size_t>(l)));
    Vec ref;
    double condition = 1.0;
    switch (L.kind) {
      case LayerKind::kLinear: {
        const Vec w = weights(L.weight), b = weights(L.bias);
        S[l] = linear(in_s, w, &b, rows, L.in, L.out);
        ref = linear(in_m, w, &b, rows, L.in, L.out);
        const Vec ab = absolute(b);
        condition =
            ratio(norm(linear(absolute(in_s), absolute(w), &ab, rows, L.in, L.out)), norm(S[l]));
        break;
      }
      case LayerKind::kLayerNorm: {
        const Vec g = weights(L.weight), b = weights(L.bias);
        S[l] = layer_norm64(in_s, g, b, rows, L.in);
        ref = layer_norm64(in_m, g, b, rows, L.in);
        condition = layer_norm_condition(in_s, rows, L.in);
        break;
      }
      case LayerKind::kActivation:
        S[l] = activation64(L.activation, in_s);
        ref = activation64(L.activation, in_m);
        condition = activation_condition(L.activation, in_s);
        break;
    }
    TensorError t = compare(L.name, "activation", l, dt, M[l], S[l]);
    propagate(&t, rel_norm(in_m, in_s), M[l], ref, S[l]);
    t.condition = condition;
    out.push_back(std::move(t));
  }

  // The loss's gradient.
  const int64_t c = model.classes();
  double shadow_loss = 0.0, unused = 0.0;
  Vec dy_s = loss_grad64(S.back(), labels, rows, c, loss_scale, &shadow_loss);
  Vec dy_m = widen64(model.loss_grad());
  {
    const Vec ref = loss_grad64(M.back(), labels, rows, c, loss_scale, &unused);
    TensorError t = compare("loss", "grad_input", nl, dt, dy_m, dy_s);
    propagate(&t, rel_norm(M.back(), S.back()), dy_m, ref, dy_s);
    t.condition = kNaN;
    out.push_back(std::move(t));
  }
  if (trace) {
    trace->activations = S;
    trace->loss_grad = dy_s;
    trace->loss = shadow_loss;
    trace->grad_inputs.assign(static_cast<std::size_t>(nl), {});
    trace->grad_weights.assign(static_cast<std::size_t>(nl), {});
  }

  // Backward, from the last layer.
  for (int l = nl - 1; l >= 0; --l) {
    const LayerSpec& L = layers[l];
    const Vec& in_s = input_of(l, true);
    const Vec& in_m = input_of(l, false);
    const double e_in = rel_norm(in_m, in_s), e_dy = rel_norm(dy_m, dy_s);
    Vec dx_s, dx_ref, gw_s, gw_ref;
    double cond_dx = 1.0, cond_dw = kNaN, inherited_dx = max_of(e_dy, e_in);
    switch (L.kind) {
      case LayerKind::kLinear: {
        const Vec w = weights(L.weight);
        gw_s = linear_dw(in_s, dy_s, rows, L.in, L.out);
        gw_ref = linear_dw(in_m, dy_m, rows, L.in, L.out);
        cond_dw =
            ratio(norm(linear_dw(absolute(in_s), absolute(dy_s), rows, L.in, L.out)), norm(gw_s));
        if (l > 0) {
          dx_s = linear_dx(dy_s, w, rows, L.in, L.out);
          dx_ref = linear_dx(dy_m, w, rows, L.in, L.out);
          cond_dx =
              ratio(norm(linear_dx(absolute(dy_s), absolute(w), rows, L.in, L.out)), norm(dx_s));
          inherited_dx = e_dy;  // the weights are the shadow's own
        }
        break;
      }
      case LayerKind::kLayerNorm: {
        const Vec g = weights(L.weight);
        layer_norm_grad64(dy_s, in_s, g, rows, L.in, &dx_s, &gw_s);
        layer_norm_grad64(dy_m, in_m, g, rows, L.in, &dx_ref, &gw_ref);
        cond_dx = cond_dw = layer_norm_condition(in_s, rows, L.in);
        break;
      }
      case LayerKind::kActivation:
        dx_s = activation_grad64(L.activation, in_s, dy_s);
        dx_ref = activation_grad64(L.activation, in_m, dy_m);
        cond_dx = activation_condition(L.activation, in_s);
        break;
    }
    if (!gw_s.empty()) {
      const Vec gw_m = widen64(params[L.weight].grad);
      TensorError t = compare(L.name, "grad_weight", l, dt, gw_m, gw_s);
      propagate(&t, max_of(e_dy, e_in), gw_m, gw_ref, gw_s);
      t.condition = cond_dw;
      out.push_back(std::move(t));
      if (trace) trace->grad_weights[l] = gw_s;
    }
    if (dx_s.empty()) break;  // the first Linear: no gradient for the data
    Vec dx_m = widen64(model.grad_input(static_cast<std::size_t>(l)));
    TensorError t = compare(L.name, "grad_input", l, dt, dx_m, dx_s);
    propagate(&t, inherited_dx, dx_m, dx_ref, dx_s);
    t.condition = cond_dx;
    out.push_back(std::move(t));
    if (trace) trace->grad_inputs[l] = dx_s;
    dy_s = std::move(dx_s);
    dy_m = std::move(dx_m);
  }

  report->rows = rows;
  report->loss_scale = loss_scale;
  report->loss = mode_loss;
  report->shadow_loss = shadow_loss;
  report->tensors = std::move(out);
  report->sensitivity_dtype = dt == DType::kFloat32 ? DType::kBFloat16 : dt;
  report->sensitivity = sensitivity(model, x, labels, rows, loss_scale, report->sensitivity_dtype);
  return {};
}

}  // namespace detail

Status analyze_precision(const Dataset& data, Mode mode, const TrainOptions& options,
                         AnalysisReport* report) {
  AnalysisReport r;
  ModeResult trained;
  auto after = [&](detail::Mlp& model, float loss_scale) {
    const int64_t rows = std::min(options.batch_size, data.train_rows());
    return detail::analyze_model(model, data.x_train.data(), data.y_train.data(), rows, loss_scale,
                                 &r);
  };
  TRAINER_TRY(detail::train_model_then(data, mode, options, {}, &trained, after));
  r.mode = mode;
  r.epochs = options.epochs;
  *report = std::move(r);
  return {};
}

}  // namespace mantissa::train
