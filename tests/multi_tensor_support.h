// Test helpers for the multi-tensor optimizer steps: lists of parameters with their own buffers,
// byte snapshots, and the single-tensor operators called on each parameter as the reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/ops/apply_adam_d.h"
#include "mantissa/ops/apply_adam_w_v2.h"
#include "mantissa/ops/sgd.h"
#include "mantissa/optim.h"
#include "mantissa/tensor.h"

namespace mantissa::testing {

enum class Algo { kSgd, kAdamD, kAdamW };

struct Buf {
  DType dtype = DType::kFloat32;
  std::vector<uint8_t> bytes;
  void* data() { return bytes.empty() ? nullptr : bytes.data(); }
  void resize(DType d, int64_t n) {
    dtype = d;
    bytes.assign(static_cast<std::size_t>(n) * dtype_size(d), 0);
  }
  float get(int64_t i) const { return load_as_float(dtype, bytes.data(), static_cast<size_t>(i)); }
  void set(int64_t i, float f) { store_from_float(dtype, bytes.data(), static_cast<size_t>(i), f); }
};

// One parameter: var (parameters), s0 (accum / m), s1 (stat / v), s2 (max_grad_norm), grad,
// and the optional working copy and compensation buffer.
struct Param {
  std::vector<int64_t> shape;
  int64_t n = 0;
  Buf var, s0, s1, s2, grad, working, comp;
  bool has_working = false, has_comp = false;

  TensorView view(Buf& b) { return TensorView(b.data(), b.dtype, std::span<const int64_t>(shape)); }
  std::vector<Buf*> bufs() { return {&var, &s0, &s1, &s2, &grad, &working, &comp}; }
};

struct ParamList {
  std::vector<Param> params;

  std::vector<SgdParamTensors> sgd() {
    std::vector<SgdParamTensors> out;
    for (Param& p : params) {
      SgdParamTensors t{p.view(p.var), p.view(p.grad), p.view(p.s0),
                        p.view(p.s1),  std::nullopt,   std::nullopt};
      if (p.has_working) t.working = p.view(p.working);
      if (p.has_comp) t.compensation = p.view(p.comp);
      out.push_back(t);
    }
    return out;
  }
  std::vector<AdamDParamTensors> adam_d() {
    std::vector<AdamDParamTensors> out;
    for (Param& p : params) {
      AdamDParamTensors t{p.view(p.var),  p.view(p.s0), p.view(p.s1),
                          p.view(p.grad), std::nullopt, std::nullopt};
      if (p.has_working) t.working = p.view(p.working);
      if (p.has_comp) t.compensation = p.view(p.comp);
      out.push_back(t);
    }
    return out;
  }
  std::vector<AdamWParamTensors> adam_w(bool amsgrad) {
    std::vector<AdamWParamTensors> out;
    for (Param& p : params) {
      AdamWParamTensors t{p.view(p.var),  p.view(p.s0), p.view(p.s1), std::nullopt,
                          p.view(p.grad), std::nullopt, std::nullopt};
      if (amsgrad) t.max_grad_norm = p.view(p.s2);
      if (p.has_working) t.working = p.view(p.working);
      if (p.has_comp) t.compensation = p.view(p.comp);
      out.push_back(t);
    }
    return out;
  }
  // Every byte of every buffer, in order.
  std::vector<uint8_t> snapshot() {
    std::vector<uint8_t> all;
    for (Param& p : params) {
      for (Buf* b : p.bufs()) all.insert(all.end(), b->bytes.begin(), b->bytes.end());
    }
    return all;
  }
};

// The dtype forms: state dtype, grad dtype, working copy dtype (kInt32: none).
struct Form {
  DType state, grad;
  std::optional<DType> working;
};

// A parameter of `shape` in form f, filled for `algo` with values from rng.
inline Param make_param(std::vector<int64_t> shape, const Form& f, Algo algo, std::mt19937_64& rng,
                        bool comp = false) {
  Param p;
  p.shape = std::move(shape);
  p.n = 1;
  for (int64_t s : p.shape) p.n *= s;
  p.var.resize(f.state, p.n);
  p.s0.resize(f.state, p.n);
  p.s1.resize(f.state, p.n);
  p.s2.resize(f.state, p.n);
  p.grad.resize(f.grad, p.n);
  if (f.working) {
    p.has_working = true;
    p.working.resize(*f.working, p.n);
  }
  if (comp) {
    p.has_comp = true;
    p.comp.resize(DType::kBFloat16, p.n);
  }
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < p.n; ++i) {
    p.var.set(i, normal(rng));
    p.grad.set(i, 0.5f * normal(rng));
    p.s0.set(i, 0.1f * normal(rng));
    if (algo == Algo::kSgd) {
      p.s1.set(i, (rng() & 1) ? 1.0f : 0.0f);  // stat: first step or not
    } else {
      p.s1.set(i, 0.01f * std::fabs(normal(rng)));  // v >= 0
    }
    p.s2.set(i, 0.01f * std::fabs(normal(rng)));
    if (comp) p.comp.set(i, 0.001f * normal(rng));
    if (f.working) p.working.set(i, 12345.0f);
  }
  return p;
}

// Sizes cycled through by the lists: empty, one element, vector tails, several chunks.
inline std::vector<int64_t> size_for(std::size_t k, std::size_t count) {
  static const int64_t kSizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 100, 257, 1000, 4099};
  if (count <= 3) {
    static const int64_t kSmall[] = {70001, 1, 0};
    return {kSmall[k % 3]};
  }
  if (k % 50 == 7) return {40000};  // a few tensors larger than one chunk
  if (k % 11 == 3) return {3, 5};
  return {kSizes[k % std::size(kSizes)]};
}

// A list of `count` parameters cycling through `forms`.
inline ParamList make_list(std::size_t count, const std::vector<Form>& forms, Algo algo,
                           uint64_t seed) {
  std::mt19937_64 rng(seed);
  ParamList l;
  for (std::size_t k = 0; k < count; ++k) {
    l.params.push_back(make_param(size_for(k, count), forms[k % forms.size()], algo, rng));
  }
  return l;
}

// A one-element tensor of dtype d holding f (rounded once).
struct Scalar {
  uint32_t storage = 0;
  TensorView view(DType d, float f) {
    store_from_float(d, &storage, 0, f);
    return TensorView(&storage, d, {1});
  }
};

// g' = (fp32(grad) / scale) * clip, as an fp32 buffer: the documented grouping.
inline Buf unscaled_grad(const Param& p, std::optional<float> scale, std::optional<float> clip) {
  Buf out;
  out.resize(DType::kFloat32, p.n);
  for (int64_t i = 0; i < p.n; ++i) {
    float g = p.grad.get(i);
    if (scale || clip) g = (g / scale.value_or(1.0f)) * clip.value_or(1.0f);
    out.set(i, g);
  }
  return out;
}

// The reference: the single-tensor operator on each non-empty parameter, in place. A 16-bit
// grad of an fp32 state is widened to fp32 first for SGD and ApplyAdamD (which take one dtype;
// widening is exact), and so is any grad when scale or clip is given (the fp32 g' above; only
// for fp32 state). The working copy becomes RNE(new var).
struct Hyper {
  MultiSgdParams sgd;
  MultiAdamDParams adam_d;
  MultiAdamWParams adam_w;
};

inline void reference_step(Algo algo, ParamList& l, const Hyper& h,
                           std::optional<float> scale = std::nullopt,
                           std::optional<float> clip = std::nullopt) {
  for (Param& p : l.params) {
    if (p.n == 0) continue;
    const DType dt = p.var.dtype;
    Buf g32;
    TensorView grad = p.view(p.grad);
    if (scale || clip || (dt == DType::kFloat32 && p.grad.dtype != dt && algo != Algo::kAdamW)) {
      ASSERT_EQ(dt, DType::kFloat32);
      g32 = unscaled_grad(p, scale, clip);
      grad = p.view(g32);
    }
    if (algo == Algo::kSgd) {
      Scalar lr, m;
      SgdTensors t{p.view(p.var),
                   grad,
                   lr.view(dt, h.sgd.learning_rate),
                   p.view(p.s0),
                   m.view(dt, h.sgd.momentum),
                   p.view(p.s1),
                   std::nullopt};
      ASSERT_TRUE(sgd(t, {h.sgd.dampening, h.sgd.weight_decay, h.sgd.nesterov}).ok());
    } else if (algo == Algo::kAdamD) {
      Scalar b1p, b2p, lr, b1, b2, eps;
      ApplyAdamDTensors t;
      t.var = p.view(p.var);
      t.m = p.view(p.s0);
      t.v = p.view(p.s1);
      t.grad = grad;
      t.beta1_power = b1p.view(dt, h.adam_d.beta1_power);
      t.beta2_power = b2p.view(dt, h.adam_d.beta2_power);
      t.lr = lr.view(dt, h.adam_d.lr);
      t.beta1 = b1.view(dt, h.adam_d.beta1);
      t.beta2 = b2.view(dt, h.adam_d.beta2);
      t.epsilon = eps.view(dt, h.adam_d.epsilon);
      ASSERT_TRUE(apply_adam_d(t, {false, h.adam_d.use_nesterov}).ok());
    } else {
      int64_t step = h.adam_w.step;
      ApplyAdamWV2Tensors t{p.view(p.var), p.view(p.s0), p.view(p.s1),
                            std::nullopt,  grad,         TensorView(&step, DType::kInt64, {1})};
      if (h.adam_w.hyper.amsgrad) t.max_grad_norm = p.view(p.s2);
      ASSERT_TRUE(apply_adam_w_v2(t, h.adam_w.hyper).ok());
    }
    if (p.has_working) {
      for (int64_t i = 0; i < p.n; ++i) p.working.set(i, p.var.get(i));
    }
  }
}

inline Status multi_step(Algo algo, ParamList& l, const Hyper& h, const FusedStepOptions& o = {}) {
  if (algo == Algo::kSgd) {
    const auto t = l.sgd();
    return multi_tensor_sgd(t, h.sgd, o);
  }
  if (algo == Algo::kAdamD) {
    const auto t = l.adam_d();
    return multi_tensor_apply_adam_d(t, h.adam_d, o);
  }
  const auto t = l.adam_w(h.adam_w.hyper.amsgrad);
  return multi_tensor_adam_w(t, h.adam_w, o);
}

// Where two lists first differ: "params[k] buffer b element i", or "" when bitwise equal.
inline std::string first_difference(ParamList& a, ParamList& b) {
  for (std::size_t k = 0; k < a.params.size(); ++k) {
    auto ba = a.params[k].bufs(), bb = b.params[k].bufs();
    for (std::size_t j = 0; j < ba.size(); ++j) {
      if (ba[j]->bytes != bb[j]->bytes) {
        const std::size_t size = dtype_size(ba[j]->dtype);
        for (std::size_t i = 0; i * size < ba[j]->bytes.size(); ++i) {
          if (std::memcmp(ba[j]->bytes.data() + i * size, bb[j]->bytes.data() + i * size, size)) {
            return "params[" + std::to_string(k) + "] buffer " + std::to_string(j) + " element " +
                   std::to_string(i) + " (got " + std::to_string(ba[j]->get(i)) + ", want " +
                   std::to_string(bb[j]->get(i)) + ")";
          }
        }
        return "params[" + std::to_string(k) + "] buffer " + std::to_string(j) + " size";
      }
    }
  }
  return "";
}

}  // namespace mantissa::testing
