// SGD test support: typed buffers, input generators with special values, a plain scalar golden
// written from the spec (sharing no code with the kernel), and bitwise comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/ops/sgd.h"
#include "mantissa/runtime.h"
#include "op_support.h"
#include "target_support.h"

namespace mantissa::testing::sgd_support {

// A contiguous buffer of `n` elements of `dtype`, stored as raw bits.
struct Buffer {
  DType dtype = DType::kFloat32;
  size_t count = 0;
  std::vector<uint32_t> words;  // fp32 uses one word per element, fp16/bf16 half a word

  Buffer() = default;
  Buffer(DType d, size_t n) : dtype(d), count(n), words((n * dtype_size(d) + 3) / 4 + 1, 0u) {}

  void* data() { return words.data(); }
  const void* data() const { return words.data(); }
  size_t bytes() const { return count * dtype_size(dtype); }
  float get(size_t i) const { return load_as_float(dtype, words.data(), i); }
  void set(size_t i, float f) { store_from_float(dtype, words.data(), i, f); }
  uint32_t bits(size_t i) const {
    if (dtype == DType::kFloat32) return words[i];
    uint16_t h;
    std::memcpy(&h, reinterpret_cast<const unsigned char*>(words.data()) + 2 * i, 2);
    return h;
  }
  void set_bits(size_t i, uint32_t b) {
    if (dtype == DType::kFloat32) {
      words[i] = b;
    } else {
      const auto h = static_cast<uint16_t>(b);
      std::memcpy(reinterpret_cast<unsigned char*>(words.data()) + 2 * i, &h, 2);
    }
  }
  bool is_nan(size_t i) const {
    const uint32_t b = bits(i);
    if (dtype == DType::kFloat32) return (b & 0x7FFFFFFFu) > 0x7F800000u;
    return (b & 0x7FFFu) > (dtype == DType::kFloat16 ? 0x7C00u : 0x7F80u);
  }
  TensorView view() { return TensorView(data(), dtype, {static_cast<int64_t>(count)}); }
  // Byte-for-byte equality of the elements (the padding word is ignored).
  bool same_bytes(const Buffer& o) const {
    return count == o.count && dtype == o.dtype && std::memcmp(data(), o.data(), bytes()) == 0;
  }
};

inline const char* short_name(DType d) { return dtype_short_name(d); }

// Bit patterns of special values in each dtype.
struct Specials {
  uint32_t qnan, qnan_payload, neg_nan, pos_inf, neg_inf, neg_zero, min_sub, max_sub_neg,
      max_finite, min_normal;
};
inline Specials specials_of(DType d) {
  switch (d) {
    case DType::kFloat16:
      return {0x7E00, 0x7E2B, 0xFE01, 0x7C00, 0xFC00, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x0400};
    case DType::kBFloat16:
      return {0x7FC0, 0x7FC5, 0xFFC1, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x807F, 0x7F7F, 0x0080};
    default:
      return {0x7FC00000u, 0x7FC12345u, 0xFFC00001u, 0x7F800000u, 0xFF800000u,
              0x80000000u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu, 0x00800000u};
  }
}
inline std::vector<uint32_t> special_list(DType d) {
  const Specials s = specials_of(d);
  const uint32_t one = d == DType::kFloat32   ? 0x3F800000u
                       : d == DType::kFloat16 ? 0x3C00u
                                              : 0x3F80u;
  const uint32_t sign = d == DType::kFloat32 ? 0x80000000u : 0x8000u;
  return {s.qnan,    s.qnan_payload, s.neg_nan,    s.pos_inf,    s.neg_inf, 0u,        s.neg_zero,
          s.min_sub, s.max_sub_neg,  s.max_finite, s.min_normal, one,       one | sign};
}

// Fills `b` with values a training step sees (a spread of magnitudes and signs) mixed with
// special values and raw bit patterns. `stat_like` gives mostly 0 and 1, as stat holds.
inline void fill(Buffer& b, std::mt19937_64& rng, bool stat_like = false, int special_pct = 8) {
  const std::vector<uint32_t> specials = special_list(b.dtype);
  std::uniform_int_distribution<int> pct(0, 99);
  std::uniform_real_distribution<float> frac(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-10, 3);
  for (size_t i = 0; i < b.count; ++i) {
    const int r = pct(rng);
    if (r < special_pct) {
      b.set_bits(i, specials[rng() % specials.size()]);
    } else if (r < special_pct + 2) {  // any bit pattern of the dtype
      b.set_bits(i, b.dtype == DType::kFloat32 ? static_cast<uint32_t>(rng())
                                               : static_cast<uint32_t>(rng() & 0xFFFFu));
    } else if (stat_like && r < 60) {
      b.set(i, (rng() & 1) ? 1.0f : 0.0f);
    } else if (stat_like && r < 80) {
      b.set(i, std::uniform_real_distribution<float>(0.0f, 1.0f)(rng));
    } else {
      const float v = std::ldexp(frac(rng), expo(rng));
      b.set(i, (rng() & 1) ? -v : v);
    }
  }
}

// The inputs of one call. parameters/accum/stat are updated in place by the operator.
struct Case {
  DType dtype = DType::kFloat32;
  size_t n = 0;
  Buffer p, g, a, s, lr, m;
  Case() = default;
  Case(DType d, size_t count)
      : dtype(d), n(count), p(d, count), g(d, count), a(d, count), s(d, count), lr(d, 1), m(d, 1) {}
  SgdTensors tensors() {
    return {p.view(), g.view(), lr.view(), a.view(), m.view(), s.view(), std::nullopt};
  }
};

inline Case random_case(DType d, size_t n, uint64_t seed, float lr, uint32_t momentum_bits,
                        int special_pct = 8) {
  std::mt19937_64 rng(seed);
  Case c(d, n);
  fill(c.p, rng, false, special_pct);
  fill(c.g, rng, false, special_pct);
  fill(c.a, rng, false, special_pct);
  fill(c.s, rng, true, special_pct);
  c.lr.set(0, lr);
  c.m.set_bits(0, momentum_bits);
  return c;
}

// The reference: the precision kit's golden32 for SGD (the spec's grouping in fp32, one rounding
// per output), applied in place to c's buffers (accum and stat only when momentum != 0).
inline void golden_sgd(Case& c, const SgdParams& prm) {
  mantissa::testing::apply_golden32<detail::SgdOp>(c.tensors(), prm);
}

// The one NaN encoding the operator writes (the positive quiet NaN of the dtype).
inline uint32_t canonical_nan(DType d) {
  return d == DType::kFloat32 ? 0x7FC00000u : d == DType::kFloat16 ? 0x7E00u : 0x7FC0u;
}

// Index of the first element where an output differs from the golden, or npos. The golden keeps
// whatever NaN the hardware computes; the operator's contract is that every NaN it writes is the
// canonical NaN, so a NaN golden element requires exactly that encoding. Bits left untouched are
// compared with same_bytes instead.
inline constexpr size_t kNoDifference = static_cast<size_t>(-1);
inline size_t first_difference(const Buffer& got, const Buffer& want) {
  const uint32_t nan = canonical_nan(got.dtype);
  for (size_t i = 0; i < got.count && i < want.count; ++i) {
    if (want.is_nan(i) ? got.bits(i) == nan : got.bits(i) == want.bits(i)) continue;
    return i;
  }
  return got.count == want.count ? kNoDifference : std::min(got.count, want.count);
}

inline std::string describe_value(const char* name, const Buffer& b, size_t i) {
  char buf[120];
  std::snprintf(buf, sizeof(buf), "%s[%zu] = 0x%X (%.9g)", name, i, b.bits(i),
                static_cast<double>(b.get(i)));
  return buf;
}

inline std::string describe_inputs(const Case& c, size_t i) {
  char buf[300];
  std::snprintf(buf, sizeof(buf),
                "inputs[%zu]: p=0x%X g=0x%X accum=0x%X stat=0x%X lr=0x%X momentum=0x%X", i,
                c.p.bits(i), c.g.bits(i), c.a.bits(i), c.s.bits(i), c.lr.bits(0), c.m.bits(0));
  return buf;
}

// The momentum values every sweep covers, as bits of the dtype: 0, -0.0, the tiniest non-zero
// (1e-30 in fp32, the smallest subnormal in fp16/bf16), a normal value, NaN.
struct NamedBits {
  const char* name;
  uint32_t bits;
};
inline std::vector<NamedBits> momentum_values(DType d) {
  const Specials s = specials_of(d);
  const uint32_t tiny = d == DType::kFloat32 ? std::bit_cast<uint32_t>(1e-30f) : s.min_sub;
  Buffer nine(d, 1);
  nine.set(0, 0.9f);
  return {{"zero", 0u},
          {"negative zero", s.neg_zero},
          {"tiny", tiny},
          {"0.9", nine.bits(0)},
          {"NaN", s.qnan_payload}};
}

// Every attribute combination: nesterov x weight_decay {0, >0} x dampening {0, >0}, with
// nesterov only at dampening 0.
inline std::vector<SgdParams> attribute_combinations() {
  std::vector<SgdParams> out;
  for (bool nesterov : {false, true}) {
    for (float wd : {0.0f, 0.0125f}) {
      for (float d : {0.0f, 0.25f}) {
        if (nesterov && d != 0.0f) continue;
        out.push_back({d, wd, nesterov});
      }
    }
  }
  return out;
}

inline std::string describe(const SgdParams& p) {
  // Appended in place: a chain of `+` on temporaries trips GCC 12's -Warray-bounds (a false
  // positive in the inlined moves).
  std::string s = p.nesterov ? "nesterov=1" : "nesterov=0";
  s.append(" weight_decay=").append(std::to_string(p.weight_decay));
  s.append(" dampening=").append(std::to_string(p.dampening));
  return s;
}

// Runs `input` through the operator on every available SIMD target and each thread count and
// checks every output against the golden: parameters, accum and stat value for value, accum and
// stat byte for byte when momentum is zero, and every run byte for byte against the first one
// (the result may not depend on the target or the thread count).
inline void check_against_golden(const Case& input, const SgdParams& prm,
                                 const std::vector<int>& thread_counts) {
  Case want = input;
  golden_sgd(want, prm);
  const bool momentum_zero = input.m.get(0) == 0.0f;
  Case first;
  bool have_first = false;
  mantissa::testing::for_each_target([&](const std::string& target) {
    for (int threads : thread_counts) {
      ASSERT_TRUE(set_num_threads(threads).ok());
      Case got = input;
      const Status st = sgd(got.tensors(), prm);
      ASSERT_TRUE(st.ok()) << st.message();
      const std::string where = std::string(short_name(input.dtype)) + " " + describe(prm) +
                                " momentum=0x" + std::to_string(input.m.bits(0)) +
                                " n=" + std::to_string(input.n) + " target=" + target +
                                " threads=" + std::to_string(threads) + ": ";
      const std::pair<const char*, std::pair<const Buffer*, const Buffer*>> outputs[] = {
          {"parameters", {&got.p, &want.p}},
          {"accum", {&got.a, &want.a}},
          {"stat", {&got.s, &want.s}}};
      for (const auto& [name, bufs] : outputs) {
        if (momentum_zero && bufs.first != &got.p) continue;  // untouched: compared below
        const size_t i = first_difference(*bufs.first, *bufs.second);
        if (i == kNoDifference) continue;
        ADD_FAILURE() << where << "got " << describe_value(name, *bufs.first, i) << ", golden "
                      << describe_value(name, *bufs.second, i) << "; " << describe_inputs(input, i);
        return;
      }
      if (momentum_zero) {
        EXPECT_TRUE(got.a.same_bytes(input.a)) << where << "accum written with momentum 0";
        EXPECT_TRUE(got.s.same_bytes(input.s)) << where << "stat written with momentum 0";
      }
      if (!have_first) {
        first = got;
        have_first = true;
      } else {
        EXPECT_TRUE(got.p.same_bytes(first.p) && got.a.same_bytes(first.a) &&
                    got.s.same_bytes(first.s))
            << where << "bits differ from the first target/thread count";
      }
    }
  });
}

}  // namespace mantissa::testing::sgd_support
