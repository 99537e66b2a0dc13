// mantissa train's pieces: the GEMM (against its normative fp32 order and an fp64 bound, the
// same bits on every target and thread count), the backward pass against an independent fp64
// computation (itself checked by finite differences), the CSV reader's refusals, the split and
// scaling, and whole runs: every mode trains, and the digest depends only on data, options and
// seed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "mantissa/runtime.h"
#include "target_support.h"
#include "trainer/graph.h"
#include "trainer/mlp/model.h"
#include "trainer/tensor.h"
#include "trainer/train.h"

namespace mantissa::train {
namespace {

using testing::for_each_target;
using testing::ThreadCountGuard;

TEST(TrainUnderflowCount, MatchesAScalarCount) {
  // Values around the fp16 and bf16 underflow thresholds, zeros and signs, at lengths around
  // the vector widths.
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> exponent(-30.0f, 2.0f);
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t n : {0, 1, 7, 16, 33, 1000}) {
      std::vector<float> src(static_cast<std::size_t>(n));
      std::vector<uint16_t> bits(src.size());
      int64_t want = 0;
      for (int64_t i = 0; i < n; ++i) {
        src[i] = (i % 5 == 0) ? 0.0f : std::exp2(exponent(rng)) * (i % 2 ? -1.0f : 1.0f);
        store_from_float(dtype, bits.data(), i, src[i]);
        want += (src[i] != 0.0f && load_as_float(dtype, bits.data(), i) == 0.0f) ? 1 : 0;
      }
      if (dtype == DType::kFloat16 && n == 1000) {
        EXPECT_GT(want, 0);
      }
      // The trainer's narrowing rounds and counts in one pass.
      std::vector<uint16_t> narrowed(src.size());
      trainer::UnderflowCount count;
      trainer::narrow(src.data(), dtype, narrowed.data(), n, &count);
      EXPECT_EQ(count.underflows, want) << n;
      EXPECT_EQ(count.values, n);
      EXPECT_EQ(narrowed, bits) << n;
    }
  }
}

// ---- Backward pass against an independent fp64 computation ---------------------------------

// A plain fp64 MLP with the same layers, written without the model's code.
struct Ref {
  std::vector<int64_t> widths;
  bool gelu = false;
  // Per Linear l: w [in, out], b [out]; per hidden layer: gamma, beta.
  std::vector<std::vector<double>> w, b, gamma, beta;

  static double act(double v, bool gelu) {
    if (!gelu) return v > 0 ? v : 0.0;
    return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  static double dact(double v, bool gelu) {
    if (!gelu) return v > 0 ? 1.0 : 0.0;
    const double c = std::sqrt(2.0 / M_PI);
    const double t = std::tanh(c * (v + 0.044715 * v * v * v));
    return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * v * v);
  }

  // Mean cross-entropy; when grads are given, the gradients in the layout of w, b, gamma, beta.
  double run(const std::vector<double>& x, const std::vector<int32_t>& y, int64_t rows,
             Ref* grads) const {
    const std::size_t layers = widths.size() - 1;
    std::vector<std::vector<double>> h(1, x), pre(layers), normed(layers), xhat(layers);
    std::vector<std::vector<double>> rstd(layers);
    for (std::size_t l = 0; l < layers; ++l) {
      const int64_t in = widths[l], out = widths[l + 1];
      std::vector<double> z(rows * out);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < out; ++j) {
          double s = b[l][j];
          for (int64_t i = 0; i < in; ++i) s += h[l][r * in + i] * w[l][i * out + j];
          z[r * out + j] = s;
        }
      }
      pre[l] = z;
      if (l + 1 == layers) {
        h.push_back(z);
        break;
      }
      std::vector<double> a(rows * out), xh(rows * out), n(rows * out);
      rstd[l].resize(rows);
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < out; ++j) mean += z[r * out + j] / out;
        for (int64_t j = 0; j < out; ++j)
          var += (z[r * out + j] - mean) * (z[r * out + j] - mean) / out;
        rstd[l][r] = 1.0 / std::sqrt(var + 1e-5);
        for (int64_t j = 0; j < out; ++j) {
          xh[r * out + j] = (z[r * out + j] - mean) * rstd[l][r];
          n[r * out + j] = xh[r * out + j] * gamma[l][j] + beta[l][j];
          a[r * out + j] = act(n[r * out + j], gelu);
        }
      }
      xhat[l] = xh;
      normed[l] = n;
      h.push_back(a);
    }
    const int64_t c = widths.back();
    double loss = 0;
    std::vector<double> dz(rows * c);
    for (int64_t r = 0; r < rows; ++r) {
      const double* z = &h.back()[r * c];
      double m = z[0];
      for (int64_t j = 1; j < c; ++j) m = std::max(m, z[j]);
      double s = 0;
      for (int64_t j = 0; j < c; ++j) s += std::exp(z[j] - m);
      loss += (std::log(s) - (z[y[r]] - m)) / rows;
      for (int64_t j = 0; j < c; ++j) {
        dz[r * c + j] = (std::exp(z[j] - m) / s - (j == y[r] ? 1.0 : 0.0)) / rows;
      }
    }
    if (grads == nullptr) return loss;
    *grads = *this;
    for (std::size_t l = layers; l-- > 0;) {
      const int64_t in = widths[l], out = widths[l + 1];
      if (l + 1 < layers) {  // through the activation and LayerNorm: dz holds d(activation out)
        std::vector<double> dn(rows * out), dpre(rows * out);
        for (int64_t i = 0; i < rows * out; ++i) dn[i] = dz[i] * dact(normed[l][i], gelu);
        for (int64_t j = 0; j < out; ++j) {
          double dg = 0, db = 0;
          for (int64_t r = 0; r < rows; ++r) {
            dg += dn[r * out + j] * xhat[l][r * out + j];
            db += dn[r * out + j];
          }
          grads->gamma[l][j] = dg;
          grads->beta[l][j] = db;
        }
        for (int64_t r = 0; r < rows; ++r) {
          double mg = 0, mgx = 0;
          for (int64_t j = 0; j < out; ++j) {
            const double g = dn[r * out + j] * gamma[l][j];
            mg += g / out;
            mgx += g * xhat[l][r * out + j] / out;
          }
          for (int64_t j = 0; j < out; ++j) {
            const double g = dn[r * out + j] * gamma[l][j];
            dpre[r * out + j] = rstd[l][r] * (g - mg - xhat[l][r * out + j] * mgx);
          }
        }
        dz = dpre;
      }
      for (int64_t i = 0; i < in; ++i) {
        for (int64_t j = 0; j < out; ++j) {
          double s = 0;
          for (int64_t r = 0; r < rows; ++r) s += h[l][r * in + i] * dz[r * out + j];
          grads->w[l][i * out + j] = s;
        }
      }
      for (int64_t j = 0; j < out; ++j) {
        double s = 0;
        for (int64_t r = 0; r < rows; ++r) s += dz[r * out + j];
        grads->b[l][j] = s;
      }
      std::vector<double> dh(rows * in, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < in; ++i) {
          double s = 0;
          for (int64_t j = 0; j < out; ++j) s += dz[r * out + j] * w[l][i * out + j];
          dh[r * in + i] = s;
        }
      }
      dz = dh;
    }
    return loss;
  }
};

std::vector<double> as_doubles(const detail::Buffer& buf) {
  std::vector<double> v(static_cast<std::size_t>(buf.numel()));
  for (int64_t i = 0; i < buf.numel(); ++i) v[i] = load_as_float(buf.dtype(), buf.data(), i);
  return v;
}

void expect_close(const detail::Buffer& got, const std::vector<double>& want,
                  const std::string& what, double rel) {
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (int64_t i = 0; i < got.numel(); ++i) {
    EXPECT_NEAR(load_as_float(got.dtype(), got.data(), i), want[i], rel * scale + 1e-9)
        << what << "[" << i << "]";
  }
}

class TrainBackward : public ::testing::TestWithParam<Activation> {};

TEST_P(TrainBackward, MatchesFp64AndFiniteDifferences) {
  const std::vector<int64_t> widths{5, 7, 6, 3};
  const int64_t rows = 4;
  detail::Mlp model(widths, GetParam(), detail::precision_of(Mode::kFp32), Optimizer::kAdamW, 3);
  // LayerNorm weight and bias away from 1 and 0, so that their gradients matter.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& p : model.params()) {
    if (p.name.rfind("layernorm", 0) == 0) {
      for (int64_t i = 0; i < p.var.numel(); ++i) p.var.f32()[i] += 0.5f * dist(rng);
    }
  }
  std::vector<float> x(rows * widths[0]);
  for (float& v : x) v = 2.0f * dist(rng);
  const std::vector<int32_t> y{0, 2, 1, 2};
  ASSERT_TRUE(model.forward(x.data(), rows).ok());
  double loss = 0;
  int64_t correct = 0;
  ASSERT_TRUE(model.loss(y.data(), rows, 1.0f, &loss, &correct).ok());
  ASSERT_TRUE(model.backward().ok());

  Ref ref;
  ref.widths = widths;
  ref.gelu = GetParam() == Activation::kGelu;
  for (const auto& layer : model.layers()) {
    if (layer.kind == detail::LayerKind::kLinear) {
      ref.w.push_back(as_doubles(model.params()[layer.weight].var));
      ref.b.push_back(as_doubles(model.params()[layer.bias].var));
    } else if (layer.kind == detail::LayerKind::kLayerNorm) {
      ref.gamma.push_back(as_doubles(model.params()[layer.weight].var));
      ref.beta.push_back(as_doubles(model.params()[layer.bias].var));
    }
  }
  const std::vector<double> x64(x.begin(), x.end());
  Ref g;
  const double loss64 = ref.run(x64, y, rows, &g);
  EXPECT_NEAR(loss, loss64, 1e-5 * std::fabs(loss64));

  std::size_t li = 0, ni = 0;
  for (const auto& layer : model.layers()) {
    if (layer.kind == detail::LayerKind::kLinear) {
      expect_close(model.params()[layer.weight].grad, g.w[li], layer.name + ".weight", 1e-4);
      expect_close(model.params()[layer.bias].grad, g.b[li], layer.name + ".bias", 1e-4);
      ++li;
    } else if (layer.kind == detail::LayerKind::kLayerNorm) {
      expect_close(model.params()[layer.weight].grad, g.gamma[ni], layer.name + ".weight", 1e-4);
      expect_close(model.params()[layer.bias].grad, g.beta[ni], layer.name + ".bias", 1e-4);
      ++ni;
    }
  }

  // The graph's fp64 shadows (each layer's own, trainer/layers.cc) against the same reference:
  // the loss and every parameter's gradient, within fp64 summation-order noise.
  trainer::Graph& graph = model.graph();
  graph.value(graph.find("input")).shadow = x64;
  graph.shadow(model.context());
  trainer::ShadowGrads shadow_grads, local_grads;
  graph.shadow_backward(model.context(), &shadow_grads, &local_grads);
  const trainer::Shadow& losses = graph.value(graph.find("loss")).shadow;
  ASSERT_EQ(losses.size(), static_cast<std::size_t>(rows));
  double shadow_loss = 0;
  for (double v : losses) shadow_loss += v / rows;
  EXPECT_NEAR(shadow_loss, loss64, 1e-12 * std::fabs(loss64));
  auto expect_shadow = [&](const detail::Parameter& p, const std::vector<double>& want) {
    const trainer::Shadow& got = shadow_grads.at(&p);
    ASSERT_EQ(got.size(), want.size()) << p.name;
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12 * scale) << p.name << "[" << i << "]";
    }
  };
  li = ni = 0;
  for (const auto& layer : model.layers()) {
    if (layer.kind == detail::LayerKind::kLinear) {
      expect_shadow(model.params()[layer.weight], g.w[li]);
      expect_shadow(model.params()[layer.bias], g.b[li]);
      ++li;
    } else if (layer.kind == detail::LayerKind::kLayerNorm) {
      expect_shadow(model.params()[layer.weight], g.gamma[ni]);
      expect_shadow(model.params()[layer.bias], g.beta[ni]);
      ++ni;
    }
  }

  // The fp64 reference itself against central differences.
  auto fd = [&](std::vector<double>& v, std::size_t i) {
    const double h = 1e-6, keep = v[i];
    v[i] = keep + h;
    const double up = ref.run(x64, y, rows, nullptr);
    v[i] = keep - h;
    const double down = ref.run(x64, y, rows, nullptr);
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  for (std::size_t l = 0; l < ref.w.size(); ++l) {
    for (std::size_t i = 0; i < ref.w[l].size(); i += 3) {
      EXPECT_NEAR(fd(ref.w[l], i), g.w[l][i], 1e-7) << "w" << l << "[" << i << "]";
    }
    for (std::size_t i = 0; i < ref.b[l].size(); ++i) {
      EXPECT_NEAR(fd(ref.b[l], i), g.b[l][i], 1e-7) << "b" << l << "[" << i << "]";
    }
  }
  for (std::size_t l = 0; l < ref.gamma.size(); ++l) {
    for (std::size_t i = 0; i < ref.gamma[l].size(); ++i) {
      EXPECT_NEAR(fd(ref.gamma[l], i), g.gamma[l][i], 1e-7) << "gamma" << l << "[" << i << "]";
      EXPECT_NEAR(fd(ref.beta[l], i), g.beta[l][i], 1e-7) << "beta" << l << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, TrainBackward,
                         ::testing::Values(Activation::kRelu, Activation::kGelu));

// ---- Data -----------------------------------------------------------------------------------

class TrainData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mantissa_test_train_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // The load must fail, name "<path>:<line>:<column>:" and leave the output untouched.
  void expect_refused(const std::string& text, const std::string& where, const std::string& what) {
    const std::string path = write("bad.csv", text);
    Dataset d;
    d.source = "untouched";
    const Status st = load_dataset({.spec = path}, &d);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_NE(st.message().find(path + ":" + where + ":"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
    EXPECT_EQ(d.source, "untouched");
    EXPECT_TRUE(d.x_train.empty());
  }
  std::filesystem::path dir_;
};

std::string rows_csv(int64_t rows, int classes) {
  std::string s;
  for (int64_t r = 0; r < rows; ++r) {
    s += std::to_string(r % 7) + "," + std::to_string(0.5 * r) + "," + std::to_string(r % classes) +
         "\n";
  }
  return s;
}

TEST_F(TrainData, MalformedFilesAreRefusedWithLineAndColumn) {
  expect_refused("1,2,0\n1,2,1\n3,x,0\n", "3:2", "not a finite number: 'x'");
  expect_refused("1,2,0\n1,2,3,1\n", "2:4", "expected 3 columns, found 4");
  expect_refused("1,2,0\n1,1\n", "2:3", "expected 3 columns, found 2");
  expect_refused("f1,f2,label\n1,2,0\n1,2,1.5\n", "3:3", "the label must be an integer");
  expect_refused("1,2,0\n1,nan,1\n", "2:2", "not a finite number");
  expect_refused("1,2,0\n1,2,-1\n", "2:3", "the label must be an integer");
  Dataset d;
  EXPECT_FALSE(load_dataset({.spec = (dir_ / "missing.csv").string()}, &d).ok());
  EXPECT_FALSE(load_dataset({.spec = "synthetic:x"}, &d).ok());
  // One row per class: nothing left to train on.
  const Status few = load_dataset({.spec = write("few.csv", "1,2,0\n3,4,1\n")}, &d);
  EXPECT_FALSE(few.ok());
  EXPECT_NE(few.message().find("too few rows"), std::string::npos) << few.message();
}

// The header rule, said out loud: a first line with a non-number (or pandas' names 0..n-1) is a
// header under auto, and reported in Dataset::header; --header no reads it as data (a typo in a
// first data row is then the error it is); --header yes drops a numeric first line.
TEST_F(TrainData, HeaderRuleIsReportedAndCanBeOverridden) {
  const std::string data = rows_csv(40, 2);
  Dataset d;
  ASSERT_TRUE(load_dataset({.spec = write("named.csv", "x,y,label\n" + data)}, &d).ok());
  EXPECT_EQ(d.header, "x,y,label");
  EXPECT_EQ(d.train_rows() + d.test_rows(), 40);
  ASSERT_TRUE(load_dataset({.spec = write("pandas.csv", "0,1,2\n" + data)}, &d).ok());
  EXPECT_EQ(d.header, "0,1,2");
  EXPECT_EQ(d.train_rows() + d.test_rows(), 40);
  EXPECT_EQ(d.classes, 2);  // the header's "2" did not become a class
  ASSERT_TRUE(load_dataset({.spec = write("plain.csv", data)}, &d).ok());
  EXPECT_TRUE(d.header.empty());
  EXPECT_EQ(d.train_rows() + d.test_rows(), 40);
  // A typo in the first data row: auto takes it for a header (and says so); no refuses it.
  const std::string typo = write("typo.csv", "1.0,2.x,0\n" + data);
  ASSERT_TRUE(load_dataset({.spec = typo}, &d).ok());
  EXPECT_EQ(d.header, "1.0,2.x,0");
  const Status st = load_dataset({.spec = typo, .header = HeaderRule::kNo}, &d);
  EXPECT_NE(st.message().find(typo + ":1:2: not a finite number: '2.x'"), std::string::npos)
      << st.message();
  ASSERT_TRUE(
      load_dataset({.spec = write("numeric.csv", "9,9,1\n" + data), .header = HeaderRule::kYes}, &d)
          .ok());
  EXPECT_EQ(d.header, "9,9,1");
  EXPECT_EQ(d.train_rows() + d.test_rows(), 40);
}

// Finite values near fp64's largest: the standardisation scales such a column by a power of two
// first, so its features are finite (they were NaN), and a column of ordinary values keeps the
// bits it had.
TEST_F(TrainData, HugeFiniteValuesStandardiseToFiniteFeatures) {
  std::string text;
  for (int r = 0; r < 40; ++r) {
    text += std::to_string(r % 2 == 0 ? 9e307 : -8e307) + "," + std::to_string(0.25 * r) + "," +
            std::to_string(r % 2) + "\n";
  }
  Dataset d;
  ASSERT_TRUE(load_dataset({.spec = write("huge.csv", text)}, &d).ok());
  for (float v : d.x_train) EXPECT_TRUE(std::isfinite(v)) << v;
  // The huge column standardises to about +-1.
  EXPECT_NEAR(std::fabs(d.x_train[0]), 1.0f, 0.2f);
  EXPECT_TRUE(std::isfinite(d.column_mean[0]) && std::isfinite(d.column_scale[0]));
}

// The reader streams: a gzip file that inflates to a huge text is read line by line and stopped
// at the value limit, and a line longer than the limit is refused, without holding the inflated
// text.
TEST_F(TrainData, OversizedInputsAreRefusedWhileStreaming) {
  const std::string long_line = (dir_ / "long.csv.gz").string();
  {
    gzFile f = gzopen(long_line.c_str(), "wb9");
    ASSERT_NE(f, nullptr);
    std::string chunk(1 << 20, '1');
    for (int i = 0; i < 70; ++i) gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    gzclose(f);
  }
  Dataset d;
  const Status st = load_dataset({.spec = long_line}, &d);
  EXPECT_NE(st.message().find(long_line + ":1: a line longer than 64 MiB"), std::string::npos)
      << st.message();
}

TEST_F(TrainData, HeaderGzipSplitAndScaling) {
  const std::string text = "a,b,label\n" + rows_csv(100, 3);
  const std::string plain = write("plain.csv", text);
  const std::string gz = (dir_ / "packed.csv.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
  Dataset a, b;
  ASSERT_TRUE(load_dataset({.spec = plain, .test_fraction = 0.2, .seed = 9}, &a).ok());
  ASSERT_TRUE(load_dataset({.spec = gz, .test_fraction = 0.2, .seed = 9}, &b).ok());
  EXPECT_EQ(a.x_train, b.x_train);
  EXPECT_EQ(a.y_test, b.y_test);
  // The same file cut short at every tenth of its length, and without its 8-byte trailer (CRC
  // and length): each is refused as truncated, none is trained on in part.
  std::string packed;
  {
    std::ifstream in(gz, std::ios::binary);
    packed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_GT(packed.size(), 40u);
  std::vector<std::size_t> cuts;
  for (int k = 1; k < 10; ++k) cuts.push_back(packed.size() * k / 10);
  cuts.push_back(packed.size() - 8);
  cuts.push_back(packed.size() - 1);
  for (std::size_t cut : cuts) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(packed.size()));
    const std::string path = (dir_ / "cut.csv.gz").string();
    {
      std::ofstream o(path, std::ios::binary | std::ios::trunc);
      o.write(packed.data(), static_cast<std::streamsize>(cut));
    }
    Dataset c;
    const Status st = load_dataset({.spec = path, .test_fraction = 0.2, .seed = 9}, &c);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
  }
  EXPECT_EQ(a.features, 2);
  EXPECT_EQ(a.classes, 3);
  // Stratified: round(n_c * 0.2) test rows per class (34, 33, 33 rows: 7, 7, 7).
  std::vector<int> test_per_class(3, 0);
  for (int32_t y : a.y_test) ++test_per_class[y];
  EXPECT_EQ(test_per_class, (std::vector<int>{7, 7, 7}));
  EXPECT_EQ(a.train_rows() + a.test_rows(), 100);
  // Standardised with the training split: mean 0 and deviation 1 there.
  for (int64_t c = 0; c < a.features; ++c) {
    double s = 0, ss = 0;
    for (int64_t r = 0; r < a.train_rows(); ++r) s += a.x_train[r * a.features + c];
    const double mean = s / a.train_rows();
    for (int64_t r = 0; r < a.train_rows(); ++r) {
      ss += (a.x_train[r * a.features + c] - mean) * (a.x_train[r * a.features + c] - mean);
    }
    EXPECT_NEAR(mean, 0.0, 1e-6);
    EXPECT_NEAR(std::sqrt(ss / a.train_rows()), 1.0, 1e-5);
  }
  // Another seed, another split.
  Dataset c;
  ASSERT_TRUE(load_dataset({.spec = plain, .test_fraction = 0.2, .seed = 10}, &c).ok());
  EXPECT_NE(a.x_test, c.x_test);
}

// ---- Whole runs ---------------------------------------------------------------------------

TrainOptions small_options() {
  TrainOptions o;
  o.hidden = {24, 16};
  o.epochs = 3;
  o.batch_size = 32;
  o.seed = 11;
  o.lr = 0.01f;
  return o;
}

TEST(TrainRun, EveryModeLearnsAndIsReproducibleAcrossThreadsAndTargets) {
  ThreadCountGuard guard;
  Dataset data;
  ASSERT_TRUE(load_dataset({.spec = "synthetic:320", .seed = 4}, &data).ok());
  ASSERT_EQ(data.classes, 4);
  const TrainOptions o = small_options();
  for (Mode mode : all_modes()) {
    SCOPED_TRACE(mode_name(mode));
    ModeResult first;
    ASSERT_TRUE(train_model(data, mode, o, {}, &first).ok());
    EXPECT_GE(first.test_accuracy, 0.95);
    EXPECT_EQ(first.epochs.size(), 3u);
    EXPECT_LT(first.epochs.back().train_loss, first.epochs.front().train_loss);
    EXPECT_EQ(first.digest.size(), 16u);
    EXPECT_GT(first.state_bytes, 0);
    for_each_target([&](const std::string&) {
      for (int threads : {1, 2}) {
        ASSERT_TRUE(set_num_threads(threads).ok());
        ModeResult again;
        ASSERT_TRUE(train_model(data, mode, o, {}, &again).ok());
        EXPECT_EQ(again.digest, first.digest) << threads << " threads";
        EXPECT_EQ(again.test_loss, first.test_loss);
      }
    });
    TrainOptions other = o;
    other.seed = 12;
    ModeResult different;
    ASSERT_TRUE(train_model(data, mode, other, {}, &different).ok());
    EXPECT_NE(different.digest, first.digest);
  }
}

TEST(TrainRun, OptimizersActivationsAndClipping) {
  Dataset data;
  ASSERT_TRUE(load_dataset({.spec = "synthetic:256", .seed = 2}, &data).ok());
  for (Optimizer opt : {Optimizer::kAdamW, Optimizer::kAdam, Optimizer::kSgd}) {
    for (Activation act : {Activation::kRelu, Activation::kGelu}) {
      TrainOptions o = small_options();
      o.optimizer = opt;
      o.activation = act;
      if (opt == Optimizer::kSgd) o.lr = 0.1f;
      o.clip = 0.5;
      SCOPED_TRACE(std::string(optimizer_name(opt)) + " " + activation_name(act));
      ModeResult r;
      ASSERT_TRUE(train_model(data, Mode::kBf16Amp, o, {}, &r).ok());
      EXPECT_GE(r.test_accuracy, 0.9);
    }
  }
  TrainOptions bad = small_options();
  bad.batch_size = 0;
  ModeResult r;
  EXPECT_FALSE(train_model(data, Mode::kFp32, bad, {}, &r).ok());
}

}  // namespace
}  // namespace mantissa::train
