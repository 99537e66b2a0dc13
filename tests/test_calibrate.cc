// INT8 calibration: quantize/dequantize bit for bit against a scalar reference on every SIMD
// target and thread count; the histogram's re-binning; the threshold methods on constructed
// histograms; bias correction; malformed .npy files.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mantissa/calibrate.h"
#include "mantissa/dtype.h"
#include "mantissa/runtime.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
namespace calib = mantissa::calib;
namespace mt = mantissa::testing;

// The scalar reference of q = clamp(round_half_even(x / scale), lo, 127), NaN -> 0.
int8_t reference_q(float x, float scale, int lo) {
  if (std::isnan(x)) return 0;
  const float t = std::nearbyint(x / scale);  // the default rounding mode: ties to even
  return static_cast<int8_t>(std::min(127.0f, std::max(static_cast<float>(lo), t)));
}

std::vector<float> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = nd(rng);
  // Ties, specials, the clamp.
  const float specials[] = {0.5f,
                            1.5f,
                            2.5f,
                            -2.5f,
                            -0.5f,
                            126.5f,
                            127.5f,
                            -127.5f,
                            -128.5f,
                            1e30f,
                            -1e30f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -0.0f,
                            1e-30f};
  for (std::size_t i = 0; i < std::size(specials) && i < v.size(); ++i)
    v[i * 7 % v.size()] = specials[i];
  return v;
}

TEST(Int8, QuantizeAndDequantizeMatchTheScalarReferenceEverywhere) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  const std::vector<int64_t> shape{6, 5, 77};
  const int64_t n = 6 * 5 * 77;
  const std::vector<float> f = values(n, 1);
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    std::vector<uint8_t> x(static_cast<std::size_t>(n) * mantissa::dtype_size(d));
    for (int64_t i = 0; i < n; ++i)
      mantissa::store_from_float(d, x.data(), static_cast<std::size_t>(i), f[i]);
    const TensorView xv(x.data(), d, shape);
    for (int axis : {-1, 0, 1, 2}) {
      for (bool m128 : {false, true}) {
        SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " axis " + std::to_string(axis) +
                     (m128 ? " -128" : ""));
        const int64_t channels = axis < 0 ? 1 : shape[static_cast<std::size_t>(axis)];
        std::vector<float> scales(static_cast<std::size_t>(channels));
        for (int64_t c = 0; c < channels; ++c)
          scales[c] = 0.5f / static_cast<float>(c + 1) + 0.013f;
        int64_t inner = 1;
        for (int k = axis + 1; axis >= 0 && k < 3; ++k) inner *= shape[static_cast<std::size_t>(k)];
        std::vector<int8_t> ref(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const float s = scales[static_cast<std::size_t>(axis < 0 ? 0 : (i / inner) % channels)];
          ref[i] = reference_q(mantissa::load_as_float(d, x.data(), static_cast<std::size_t>(i)), s,
                               m128 ? -128 : -127);
        }
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          std::vector<int8_t> q(static_cast<std::size_t>(n), 99);
          const TensorView qv(q.data(), DType::kInt8, shape);
          ASSERT_TRUE(
              calib::quantize_int8(xv, scales, qv, {.axis = axis, .allow_minus_128 = m128}).ok());
          EXPECT_EQ(q, ref);
          // Dequantize: one fp32 product, rounded to the dtype.
          std::vector<uint8_t> y(x.size());
          const TensorView yv(y.data(), d, shape);
          ASSERT_TRUE(calib::dequantize_int8(qv, scales, yv, {.axis = axis}).ok());
          for (int64_t i = 0; i < n; ++i) {
            const float s = scales[static_cast<std::size_t>(axis < 0 ? 0 : (i / inner) % channels)];
            const float want = mantissa::round_to(d, static_cast<float>(q[i]) * s);
            ASSERT_EQ(mantissa::load_as_float(d, y.data(), static_cast<std::size_t>(i)), want) << i;
          }
        });
      }
    }
  }
}

TEST(Int8, InvalidCallsAreRejected) {
  std::vector<float> x(8, 1.0f);
  std::vector<int8_t> q(8);
  const TensorView xv(x.data(), DType::kFloat32, {2, 4}), qv(q.data(), DType::kInt8, {2, 4});
  const float one = 1.0f, zero = 0.0f;
  EXPECT_EQ(calib::quantize_int8(xv, {&zero, 1}, qv).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(calib::quantize_int8(xv, {}, qv).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(calib::quantize_int8(xv, {&one, 1}, qv, {.axis = 1}).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(calib::quantize_int8(xv, {&one, 1}, qv, {.axis = 2}).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(calib::quantize_int8(xv, {&one, 1}, TensorView(q.data(), DType::kInt8, {8})).code(),
            StatusCode::kParamInvalid);
  EXPECT_EQ(calib::quantize_int8(qv, {&one, 1}, qv).code(), StatusCode::kParamInvalid);
  EXPECT_EQ(q, std::vector<int8_t>(8, 0));  // nothing written
}

TEST(Histogram, RebinningIsExactAndOrderFree) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> data(20000);
  for (auto& v : data) v = nd(rng);
  data[0] = 0.75f;      // the first batch's absmax below
  data[15000] = 40.0f;  // forces several doublings
  // The same first batch, then the rest in one piece or in many.
  calib::Histogram one, many;
  one.add(std::span<const float>(data.data(), 1));
  many.add(std::span<const float>(data.data(), 1));
  one.add(std::span<const float>(data.data() + 1, data.size() - 1));
  for (std::size_t i = 1; i < data.size(); i += 997) {
    many.add(std::span<const float>(data.data() + i, std::min<std::size_t>(997, data.size() - i)));
  }
  EXPECT_EQ(one.counts(), many.counts());
  EXPECT_EQ(one.range(), 64.0);  // the power of two above 40
  EXPECT_EQ(one.absmax(), 40.0);
  EXPECT_EQ(one.total(), data.size());
  // Re-binning is exact: each value lands where a histogram built at the final range puts it,
  // and the order of the data does not matter.
  calib::Histogram reversed;
  reversed.add(std::vector<float>(data.rbegin(), data.rend()));
  EXPECT_EQ(reversed.counts(), one.counts());
  uint64_t direct[calib::Histogram::kBins] = {};
  for (float v : data) {
    const double w = one.range() / calib::Histogram::kBins;
    direct[std::min<int>(calib::Histogram::kBins - 1, static_cast<int>(std::fabs(v) / w))]++;
  }
  for (int i = 0; i < calib::Histogram::kBins; ++i) EXPECT_EQ(one.counts()[i], direct[i]) << i;
  calib::Histogram h;
  const float nonfinite[] = {std::nanf(""), INFINITY, 0.0f};
  h.add(nonfinite);
  EXPECT_EQ(h.nonfinite(), 2u);
  EXPECT_EQ(h.total(), 1u);
}

TEST(Thresholds, MaxPercentileAndEntropyOnKnownData) {
  std::vector<float> data(100000);
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : data) v = nd(rng);
  calib::Histogram h;
  h.add(data);
  calib::Threshold t;
  ASSERT_TRUE(calib::choose_threshold(h, calib::Method::kMax, 0, &t).ok());
  float absmax = 0.0f;
  for (float v : data) absmax = std::max(absmax, std::fabs(v));
  EXPECT_EQ(t.threshold, absmax);
  EXPECT_EQ(t.scale, absmax / 127.0);
  // Percentile: within one bin of the exact order statistic.
  std::vector<float> sorted(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) sorted[i] = std::fabs(data[i]);
  std::sort(sorted.begin(), sorted.end());
  ASSERT_TRUE(calib::choose_threshold(h, calib::Method::kPercentile, 99.0, &t).ok());
  EXPECT_NEAR(t.threshold, sorted[99000], h.bin_width());
  EXPECT_EQ(calib::choose_threshold(h, calib::Method::kPercentile, 0.0, &t).code(),
            StatusCode::kParamInvalid);
  // Entropy on a normal sample clips a little: between the 99.9th percentile and the max.
  ASSERT_TRUE(calib::choose_threshold(h, calib::Method::kEntropy, 0, &t).ok());
  EXPECT_GE(t.bin, 128);
  EXPECT_LE(t.bin, calib::Histogram::kBins);
  EXPECT_GT(t.threshold, sorted[99900] * 0.8);
  EXPECT_LT(t.threshold, absmax);
  EXPECT_EQ(t.threshold, (t.bin + 0.5) * h.bin_width());
  // Empty and all-zero histograms: threshold 0.
  calib::Histogram zeros;
  const float z[] = {0.0f, 0.0f};
  zeros.add(z);
  ASSERT_TRUE(calib::choose_threshold(zeros, calib::Method::kEntropy, 0, &t).ok());
  EXPECT_EQ(t.threshold, 0.0);
}

TEST(Calibrate, ReportAndPerChannel) {
  // Channel c of [4, 1000] scaled by 10^c: per-channel scales follow, per-tensor SNR is worse.
  std::vector<float> x(4000);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 1000; ++i)
      x[c * 1000 + i] = nd(rng) * std::pow(10.0f, static_cast<float>(c));
  }
  const TensorView xv(x.data(), DType::kFloat32, {4, 1000});
  calib::TensorReport per_tensor, per_channel;
  ASSERT_TRUE(
      calib::calibrate_tensor("x", {&xv, 1}, {.method = calib::Method::kMax}, &per_tensor).ok());
  ASSERT_TRUE(calib::calibrate_tensor("x", {&xv, 1},
                                      {.method = calib::Method::kMax, .per_channel_axis = 0},
                                      &per_channel)
                  .ok());
  ASSERT_EQ(per_channel.channel_scales.size(), 4u);
  for (int c = 1; c < 4; ++c) {
    EXPECT_GT(per_channel.channel_scales[c], 5 * per_channel.channel_scales[c - 1]);
  }
  EXPECT_GT(per_channel.snr_db, per_tensor.snr_db);
  EXPECT_EQ(per_tensor.clipped_fraction, 0.0);  // max never clips
  EXPECT_GT(per_tensor.mse, 0.0);
  // SNR and MSE are what quantizing gives: recompute them here.
  std::vector<int8_t> q(4000);
  std::vector<float> y(4000);
  const float s = static_cast<float>(per_tensor.chosen.scale);
  ASSERT_TRUE(
      calib::quantize_int8(xv, {&s, 1}, TensorView(q.data(), DType::kInt8, {4, 1000})).ok());
  double signal = 0, noise = 0;
  for (int i = 0; i < 4000; ++i) {
    const double e = static_cast<double>(x[i]) - static_cast<double>(static_cast<float>(q[i]) * s);
    signal += static_cast<double>(x[i]) * x[i];
    noise += e * e;
  }
  EXPECT_DOUBLE_EQ(per_tensor.mse, noise / 4000);
  EXPECT_DOUBLE_EQ(per_tensor.snr_db, 10 * std::log10(signal / noise));
}

// A tensor (or channel) with no finite value is refused, naming it; one of subnormal values only
// gets a positive fp32 scale that maps its largest value to at most 127 (a scale below fp32's
// smallest subnormal becomes that subnormal).
TEST(Calibrate, AllNaNIsRefusedAndAllSubnormalGetsAUsableScale) {
  std::vector<float> nan(64, std::numeric_limits<float>::quiet_NaN());
  nan[3] = std::numeric_limits<float>::infinity();
  const TensorView nv(nan.data(), DType::kFloat32, {4, 16});
  calib::TensorReport r;
  Status st = calib::calibrate_tensor("acts", {&nv, 1}, {}, &r);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("acts: all 64 values are NaN or infinite"), std::string::npos)
      << st.message();
  // Per channel: one channel of NaN among finite ones.
  std::vector<float> mixed(64, 1.5f);
  for (int i = 16; i < 32; ++i) mixed[i] = std::numeric_limits<float>::quiet_NaN();
  const TensorView mv(mixed.data(), DType::kFloat32, {4, 16});
  st = calib::calibrate_tensor("w", {&mv, 1}, {.per_channel_axis = 0}, &r);
  EXPECT_NE(st.message().find("w channel 1: all 16 values are NaN or infinite"), std::string::npos)
      << st.message();
  for (float top : {1e-40f, 3e-43f, 1e-45f}) {
    SCOPED_TRACE(top);
    std::vector<float> tiny(64);
    for (int i = 0; i < 64; ++i) tiny[i] = top * static_cast<float>(i % 8) / 7.0f;
    const TensorView tv(tiny.data(), DType::kFloat32, {64});
    ASSERT_TRUE(calib::calibrate_tensor("tiny", {&tv, 1}, {.method = calib::Method::kMax}, &r).ok())
        << calib::calibrate_tensor("tiny", {&tv, 1}, {.method = calib::Method::kMax}, &r).message();
    const float s = static_cast<float>(r.chosen.scale);
    EXPECT_GT(s, 0.0f);
    std::vector<int8_t> q(64);
    ASSERT_TRUE(calib::quantize_int8(tv, {&s, 1}, TensorView(q.data(), DType::kInt8, {64})).ok());
    EXPECT_LE(*std::max_element(q.begin(), q.end()), 127);
    EXPECT_GT(*std::max_element(q.begin(), q.end()), 0);
    EXPECT_TRUE(std::isfinite(r.snr_db) || r.mse == 0.0);
  }
}

TEST(Calibrate, BiasCorrectionRestoresTheMeanOutput) {
  const int64_t out = 8, in = 16, n = 200;
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(out * in), x(n * in), b(out);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng) + 0.5f;  // a nonzero mean input, so the bias shift matters
  for (auto& v : b) v = nd(rng);
  std::vector<float> scales(out);
  for (int64_t o = 0; o < out; ++o) {
    float m = 0;
    for (int64_t i = 0; i < in; ++i) m = std::max(m, std::fabs(w[o * in + i]));
    scales[o] = m / 63.0f;  // coarse, so the correction is visible
  }
  std::vector<float> corrected;
  ASSERT_TRUE(calib::correct_bias(TensorView(w.data(), DType::kFloat32, {out, in}), scales,
                                  TensorView(x.data(), DType::kFloat32, {n, in}), b, &corrected)
                  .ok());
  std::vector<int8_t> q(out * in);
  std::vector<float> wq(out * in);
  ASSERT_TRUE(calib::quantize_int8(TensorView(w.data(), DType::kFloat32, {out, in}), scales,
                                   TensorView(q.data(), DType::kInt8, {out, in}), {.axis = 0})
                  .ok());
  for (int64_t i = 0; i < out * in; ++i) wq[i] = static_cast<float>(q[i]) * scales[i / in];
  for (int64_t o = 0; o < out; ++o) {
    double mean_float = 0, mean_quant = 0;
    for (int64_t s = 0; s < n; ++s) {
      double yf = b[o], yq = corrected[o];
      for (int64_t i = 0; i < in; ++i) {
        yf += static_cast<double>(w[o * in + i]) * x[s * in + i];
        yq += static_cast<double>(wq[o * in + i]) * x[s * in + i];
      }
      mean_float += yf / n;
      mean_quant += yq / n;
    }
    EXPECT_NEAR(mean_quant, mean_float, 1e-5 * (1 + std::fabs(mean_float))) << o;
    EXPECT_NE(corrected[o], b[o]);
  }
}

// A .npy file from a header dict and raw data.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const std::size_t lead = major == 1 ? 10 : 12;
  while ((lead + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t len = header.size();
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>((len >> 8) & 0xFF);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

TEST(Npy, ReadsAndRejects) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mantissa_npy_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  std::string six(24, '\0');
  const float vals[] = {1, 2, 3, 4, 5, 6};
  std::memcpy(six.data(), vals, 24);
  calib::NpyArray a;
  ASSERT_TRUE(
      calib::read_npy(
          write("ok.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six)),
          &a)
          .ok());
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(a.data.data(), vals, 24), 0);
  ASSERT_TRUE(
      calib::read_npy(
          write("v2.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, 2)),
          &a)
          .ok());
  const double d[] = {0.1, -2.5};
  std::string d8(16, '\0');
  std::memcpy(d8.data(), d, 16);
  ASSERT_TRUE(
      calib::read_npy(
          write("f8.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", d8)), &a)
          .ok());
  EXPECT_EQ(a.dtype, DType::kFloat32);
  float back[2];
  std::memcpy(back, a.data.data(), 8);
  EXPECT_EQ(back[0], 0.1f);
  EXPECT_EQ(back[1], -2.5f);

  const struct {
    std::string name, bytes, message;
  } bad[] = {
      {"magic.npy", "not a numpy file at all", "wrong magic"},
      {"short.npy", "\x93NUM", "too short"},
      {"version.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", six, 7),
       "version 7"},
      {"dtype.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", six),
       "'<i8' is not supported"},
      {"bigendian.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", six),
       "'>f4'"},
      {"fortran.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six),
       "Fortran"},
      {"truncated.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", six),
       "needs 28 bytes"},
      {"absurd.npy",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000), }", six),
       "absurdly large"},
      {"noshape.npy", npy("{'descr': '<f4', 'fortran_order': False}", six), "malformed header"},
      {"badshape.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", six),
       "'shape' holds something other than up to 8 integers"},
      // Dicts numpy refuses: a repeated key, an unknown key, a shape without commas, an integer
      // shape; and a 'shape' spoofed inside another value, which must not be read as the key.
      {"repeated.npy",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'shape': (2, 3), }", six),
       "'shape' is unknown or repeated"},
      {"unknown.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", six),
       "'x' is unknown"},
      {"nocomma.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1 6), }", six),
       "lacks a ','"},
      {"integer.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", six),
       "is an integer, not a tuple"},
      {"spoofed.npy",
       npy("{'descr': \"<f4', 'shape': (2, 3)\", 'fortran_order': False, 'shape': (6,), }", six),
       "is not supported"},
      {"header.npy", std::string("\x93NUMPY\x01\x00\xff\xff", 10) + "{}", "does not fit"},
  };
  for (const auto& c : bad) {
    SCOPED_TRACE(c.name);
    const mantissa::Status st = calib::read_npy(write(c.name, c.bytes), &a);
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_NE(st.message().find(c.name), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
  }
  EXPECT_EQ(calib::read_npy((dir / "missing.npy").string(), &a).code(), StatusCode::kParamInvalid);
  std::filesystem::remove_all(dir);
}

}  // namespace

}  // namespace mantissa::testing
