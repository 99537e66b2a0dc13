// ApplyAdamD test references written independently of the library: an fp32 golden in the
// spec's grouping, an fp64 golden rounded once to the output dtype, their own RNE rounding and
// widening, a portable normal generator, the single_bm standard and a run-on-every-target helper.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "conversion_support.h"
#include "mantissa/ops/apply_adam_d.h"
#include "mantissa/runtime.h"
#include "op_support.h"
#include "target_support.h"

namespace mantissa::testing::adam_support {

using mantissa::DType;

// ---------------------------------------------------------------------------------------------
// Rounding and widening: the test references of conversion_support.h (double arithmetic and
// nearbyint; nothing shared with the library).

// double -> fp16 / bf16 bits, rounded once (RNE); NaN -> quiet NaN with the sign of x.
inline uint16_t double_to_fp16(double x) { return mantissa::testing::reference_double_to_fp16(x); }
inline uint16_t double_to_bf16(double x) { return mantissa::testing::reference_double_to_bf16(x); }

inline double fp16_to_double(uint16_t h) {
  return std::bit_cast<float>(mantissa::testing::reference_fp16_to_fp32_bits(h));
}

inline double bf16_to_double(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// ---------------------------------------------------------------------------------------------
// Host buffers of one dtype, values kept as the raw storage (uint32 for fp32, uint16 otherwise).

struct Buffer {
  DType dtype = DType::kFloat32;
  std::vector<unsigned char> bytes;

  Buffer() = default;
  Buffer(DType d, size_t n) : dtype(d), bytes(n * elem_size(d)) {}
  static size_t elem_size(DType d) { return d == DType::kFloat32 ? 4 : 2; }
  size_t size() const { return bytes.size() / elem_size(dtype); }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }

  uint32_t bits(size_t i) const {
    if (dtype == DType::kFloat32) {
      uint32_t b;
      std::memcpy(&b, bytes.data() + 4 * i, 4);
      return b;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return h;
  }
  void set_bits(size_t i, uint32_t b) {
    if (dtype == DType::kFloat32) {
      std::memcpy(bytes.data() + 4 * i, &b, 4);
    } else {
      const auto h = static_cast<uint16_t>(b);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  // The exact value of element i.
  double get(size_t i) const {
    switch (dtype) {
      case DType::kFloat16: return fp16_to_double(static_cast<uint16_t>(bits(i)));
      case DType::kBFloat16: return bf16_to_double(static_cast<uint16_t>(bits(i)));
      default: return std::bit_cast<float>(bits(i));
    }
  }
  // Stores x rounded once (RNE) to the dtype.
  void set(size_t i, double x) { set_bits(i, encode(dtype, x)); }

  static uint32_t encode(DType d, double x) {
    switch (d) {
      case DType::kFloat16: return double_to_fp16(x);
      case DType::kBFloat16: return double_to_bf16(x);
      default: return std::bit_cast<uint32_t>(static_cast<float>(x));
    }
  }
};

// Encodes an fp32 result of the fp32 golden into the dtype. A computed NaN is the canonical
// quiet NaN (the library's rule for every value an operator computes).
inline uint32_t encode_f32_result(DType d, float f) {
  if (std::isnan(f)) {
    return d == DType::kFloat32 ? 0x7FC00000u : d == DType::kFloat16 ? 0x7E00u : 0x7FC0u;
  }
  const uint32_t b = std::bit_cast<uint32_t>(f);
  if (d == DType::kFloat32) return b;
  return Buffer::encode(d, static_cast<double>(f));  // a float is exactly a double
}

// ---------------------------------------------------------------------------------------------
// The operator's inputs.

struct Scalars {
  double beta1_power = 0.9, beta2_power = 0.999, lr = 0.001, beta1 = 0.9, beta2 = 0.999,
         epsilon = 1e-7;
};

struct Problem {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  Buffer var, m, v, grad;
  Buffer beta1_power, beta2_power, lr, beta1, beta2, epsilon;  // one element each

  Problem() = default;
  Problem(DType d, std::vector<int64_t> dims, const Scalars& s) : dtype(d), shape(std::move(dims)) {
    size_t n = 1;
    for (int64_t k : shape) n *= static_cast<size_t>(k);
    var = m = v = grad = Buffer(d, n);
    set_scalars(s);
  }
  void set_scalars(const Scalars& s) {
    auto one = [&](double x) {
      Buffer b(dtype, 1);
      b.set(0, x);
      return b;
    };
    beta1_power = one(s.beta1_power);
    beta2_power = one(s.beta2_power);
    lr = one(s.lr);
    beta1 = one(s.beta1);
    beta2 = one(s.beta2);
    epsilon = one(s.epsilon);
  }
  size_t size() const { return var.size(); }

  mantissa::TensorView view(Buffer& b) const {
    return mantissa::TensorView(b.data(), dtype, std::span<const int64_t>(shape));
  }
  static mantissa::TensorView scalar_view(Buffer& b) {
    return mantissa::TensorView(b.data(), b.dtype, std::span<const int64_t>());
  }
  // In-place tensors over this problem's buffers.
  mantissa::ApplyAdamDTensors tensors() {
    mantissa::ApplyAdamDTensors t;
    t.var = view(var);
    t.m = view(m);
    t.v = view(v);
    t.grad = view(grad);
    t.beta1_power = scalar_view(beta1_power);
    t.beta2_power = scalar_view(beta2_power);
    t.lr = scalar_view(lr);
    t.beta1 = scalar_view(beta1);
    t.beta2 = scalar_view(beta2);
    t.epsilon = scalar_view(epsilon);
    return t;
  }
};

struct Outputs {
  Buffer var, m, v;
};

// ---------------------------------------------------------------------------------------------
// Goldens.

// The reference: the precision kit's golden32 for ApplyAdamD (fp32 in the spec's grouping, no
// FMA, one RNE rounding per output), applied in place to a copy of the problem.
inline Outputs golden32(const Problem& p, bool nesterov) {
  Problem q = p;
  mantissa::ApplyAdamDParams params;
  params.use_nesterov = nesterov;
  mantissa::testing::apply_golden32<mantissa::detail::ApplyAdamDOp>(q.tensors(), params);
  return {q.var, q.m, q.v};
}

// fp64 from the formula, rounded once from double to the output dtype.
inline Outputs golden64(const Problem& p, bool nesterov) {
  const double beta1_power = p.beta1_power.get(0), beta2_power = p.beta2_power.get(0),
               lr = p.lr.get(0), beta1 = p.beta1.get(0), beta2 = p.beta2.get(0),
               epsilon = p.epsilon.get(0);
  const double lr_t = lr * std::sqrt(1.0 - beta2_power) / (1.0 - beta1_power);
  Outputs o{Buffer(p.dtype, p.size()), Buffer(p.dtype, p.size()), Buffer(p.dtype, p.size())};
  for (size_t i = 0; i < p.size(); ++i) {
    const double var = p.var.get(i), m = p.m.get(i), v = p.v.get(i), grad = p.grad.get(i);
    const double m_out = m + (1.0 - beta1) * (grad - m);
    const double v_out = v + (1.0 - beta2) * (grad * grad - v);
    const double numerator = nesterov ? m_out * beta1 + (1.0 - beta1) * grad : m_out;
    const double var_out = var - lr_t * numerator / (epsilon + std::sqrt(v_out));
    o.var.set(i, var_out);
    o.m.set(i, m_out);
    o.v.set(i, v_out);
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// Inputs: a fixed-seed engine and Box-Muller (std::normal_distribution differs across standard
// libraries).

class Normal {
 public:
  explicit Normal(uint64_t seed) : engine_(seed) {}
  double uniform01() {  // (0, 1]
    return (static_cast<double>(engine_() >> 11) + 1.0) * 0x1.0p-53;
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  double normal(double mean, double stddev) {
    const double u1 = uniform01(), u2 = uniform01();
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    return mean + stddev * z;
  }
  // Fills b from N(mean, std) with mean and std drawn from the given ranges (ATK's "nd").
  void fill_nd(Buffer& b, double mean_lo, double mean_hi, double std_lo, double std_hi,
               bool positive = false) {
    const double mean = uniform(mean_lo, mean_hi), stddev = uniform(std_lo, std_hi);
    for (size_t i = 0; i < b.size(); ++i) {
      double x = normal(mean, stddev);
      while (positive && !(Buffer::encode(b.dtype, x) != 0 && x > 0)) x = normal(mean, stddev);
      b.set(i, x);
    }
  }

 private:
  std::mt19937_64 engine_;
};

// The upstream core-case distributions.
inline void fill_core(Problem& p, uint64_t seed) {
  Normal g(seed);
  g.fill_nd(p.var, -1.0, 1.0, 0.1, 0.5);
  g.fill_nd(p.m, -0.5, 0.5, 0.05, 0.2);
  g.fill_nd(p.v, 0.5, 1.0, 0.01, 0.05, /*positive=*/true);
  g.fill_nd(p.grad, -0.5, 0.5, 0.05, 0.3);
}

// ---------------------------------------------------------------------------------------------
// Running the operator.

// Runs out of place (fresh output buffers) and returns the outputs; inputs untouched.
inline Outputs run_separate(Problem& p, bool nesterov, bool use_locking = false) {
  Outputs o{Buffer(p.dtype, p.size()), Buffer(p.dtype, p.size()), Buffer(p.dtype, p.size())};
  auto t = p.tensors();
  t.var_out = p.view(o.var);
  t.m_out = p.view(o.m);
  t.v_out = p.view(o.v);
  mantissa::ApplyAdamDParams params;
  params.use_nesterov = nesterov;
  params.use_locking = use_locking;
  const mantissa::Status st = mantissa::apply_adam_d(t, params);
  EXPECT_TRUE(st.ok()) << st.message();
  return o;
}

// Runs in place on a copy of the problem and returns the updated var, m, v.
inline Outputs run_in_place(const Problem& p, bool nesterov) {
  Problem q = p;
  auto t = q.tensors();
  mantissa::ApplyAdamDParams params;
  params.use_nesterov = nesterov;
  const mantissa::Status st = mantissa::apply_adam_d(t, params);
  EXPECT_TRUE(st.ok()) << st.message();
  return Outputs{q.var, q.m, q.v};
}

// Index of the first element whose bits differ, or -1.
inline int64_t first_bit_mismatch(const Buffer& a, const Buffer& b) {
  if (a.size() != b.size()) return 0;
  if (std::memcmp(a.data(), b.data(), a.bytes.size()) == 0) return -1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.bits(i) != b.bits(i)) return static_cast<int64_t>(i);
  }
  return -1;
}

inline std::string describe_mismatch(const char* what, const Buffer& got, const Buffer& want) {
  const int64_t i = first_bit_mismatch(got, want);
  if (i < 0) return {};
  char text[256];
  std::snprintf(text, sizeof text, "%s[%lld]: got 0x%08x (%.9g), want 0x%08x (%.9g)", what,
                static_cast<long long>(i), got.bits(i), got.get(i), want.bits(i), want.get(i));
  return text;
}

// Bit equality of all three outputs; an empty string when equal.
inline std::string compare_bits(const Outputs& got, const Outputs& want) {
  std::string s = describe_mismatch("var", got.var, want.var);
  if (s.empty()) s = describe_mismatch("m", got.m, want.m);
  if (s.empty()) s = describe_mismatch("v", got.v, want.v);
  return s;
}

// ---------------------------------------------------------------------------------------------
// The single_bm standard: rel_i = |a - g| / (|g| + 1e-7); pass when MERE < T and MARE < 10 T.
// NaN passes only against NaN, an infinity only against the same infinity, at the same position.

inline double single_bm_threshold(DType d) {
  switch (d) {
    case DType::kFloat16: return 0x1.0p-10;
    case DType::kBFloat16: return 0x1.0p-7;
    default: return 0x1.0p-13;
  }
}

struct BmResult {
  bool pass = true;
  double mere = 0.0, mare = 0.0;
  std::string reason;
};

inline BmResult single_bm(const Buffer& actual, const Buffer& golden) {
  BmResult r;
  const double t = single_bm_threshold(golden.dtype);
  double sum = 0.0;
  size_t count = 0;
  for (size_t i = 0; i < golden.size(); ++i) {
    const double a = actual.get(i), g = golden.get(i);
    if (std::isnan(a) || std::isnan(g) || std::isinf(a) || std::isinf(g)) {
      const bool same = (std::isnan(a) && std::isnan(g)) || (std::isinf(a) && a == g);
      if (!same) {
        r.pass = false;
        r.reason = "non-finite mismatch at " + std::to_string(i);
      }
      continue;
    }
    const double rel = std::fabs(a - g) / (std::fabs(g) + 1e-7);
    sum += rel;
    ++count;
    r.mare = std::max(r.mare, rel);
  }
  r.mere = count ? sum / static_cast<double>(count) : 0.0;
  if (r.mere >= t || r.mare >= 10.0 * t) {
    r.pass = false;
    r.reason = "MERE " + std::to_string(r.mere) + " MARE " + std::to_string(r.mare) +
               " (T = " + std::to_string(t) + ")";
  }
  return r;
}

// Restores the default SIMD target and thread count when it goes out of scope.
struct RuntimeReset {
  ~RuntimeReset() {
    (void)mantissa::set_simd_target("");
    (void)mantissa::set_num_threads(0);
  }
};

// Copies elements [begin, begin + n) of `pool` into a problem of shape [n].
inline Problem slice(const Problem& pool, size_t begin, size_t n) {
  Problem p;
  p.dtype = pool.dtype;
  p.shape = {static_cast<int64_t>(n)};
  const size_t es = Buffer::elem_size(pool.dtype);
  const auto part = [&](const Buffer& b) {
    Buffer out(pool.dtype, n);
    std::memcpy(out.data(), b.bytes.data() + begin * es, n * es);
    return out;
  };
  p.var = part(pool.var);
  p.m = part(pool.m);
  p.v = part(pool.v);
  p.grad = part(pool.grad);
  p.beta1_power = pool.beta1_power;
  p.beta2_power = pool.beta2_power;
  p.lr = pool.lr;
  p.beta1 = pool.beta1;
  p.beta2 = pool.beta2;
  p.epsilon = pool.epsilon;
  return p;
}

// A bit-exactness sweep against golden32 over every dtype x use_nesterov x available SIMD
// target x thread count.
struct SweepPlan {
  std::vector<size_t> sizes;  // each run separate and in place
  std::vector<int> threads;
  Scalars scalars;
  size_t big = 0;                         // 0: none; else run separate on every thread count
  std::vector<int> big_in_place_threads;  // thread counts that also run `big` in place
  uint64_t seed = 1;
};

inline void run_sweep(const SweepPlan& plan) {
  RuntimeReset reset;
  size_t pool_size = plan.big;
  for (size_t n : plan.sizes) pool_size = std::max(pool_size, 4 * n);
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Problem pool(dtype, {static_cast<int64_t>(pool_size)}, plan.scalars);
    fill_core(pool, plan.seed + static_cast<uint64_t>(dtype));
    std::vector<Problem> problems;
    for (size_t n : plan.sizes) problems.push_back(slice(pool, 3 * n, n));  // a slice per size
    Problem big;
    if (plan.big) big = slice(pool, 0, plan.big);
    for (bool nesterov : {false, true}) {
      std::vector<Outputs> goldens;
      for (const Problem& p : problems) goldens.push_back(golden32(p, nesterov));
      const Outputs big_golden = plan.big ? golden32(big, nesterov) : Outputs{};
      mantissa::testing::for_each_target([&](const std::string& target) {
        for (int threads : plan.threads) {
          ASSERT_TRUE(mantissa::set_num_threads(threads).ok());
          const std::string where = std::string(mantissa::dtype_name(dtype)) +
                                    (nesterov ? " nesterov " : " plain ") + target + " threads " +
                                    std::to_string(threads) + " n ";
          for (size_t k = 0; k < problems.size(); ++k) {
            const std::string at = where + std::to_string(problems[k].size());
            ASSERT_EQ(compare_bits(run_separate(problems[k], nesterov), goldens[k]), "")
                << at << " (separate outputs)";
            ASSERT_EQ(compare_bits(run_in_place(problems[k], nesterov), goldens[k]), "")
                << at << " (in place)";
          }
          if (!plan.big) continue;
          ASSERT_EQ(compare_bits(run_separate(big, nesterov), big_golden), "")
              << where << big.size() << " (separate outputs)";
          if (std::find(plan.big_in_place_threads.begin(), plan.big_in_place_threads.end(),
                        threads) != plan.big_in_place_threads.end()) {
            ASSERT_EQ(compare_bits(run_in_place(big, nesterov), big_golden), "")
                << where << big.size() << " (in place)";
          }
        }
      });
    }
  }
}

}  // namespace mantissa::testing::adam_support
