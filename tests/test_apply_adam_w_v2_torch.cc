// ApplyAdamWV2 against torch.optim.AdamW (real PyTorch, through /usr/bin/python3 and
// tests/adamw_torch_reference.py): a multi-step fp32 run from PyTorch's initial state (zero
// moments, step 0) stays within a rounding bound of PyTorch, computed per element and carried
// through the recurrence. Both are held to the bound against an fp64 run of the same steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/apply_adam_w_v2.h"

namespace mantissa::testing {

namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of fp32

std::string describe(const ApplyAdamWV2Params& p) {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "lr=%g beta1=%g beta2=%g weight_decay=%g eps=%g amsgrad=%d "
                "maximize=%d",
                p.lr, p.beta1, p.beta2, p.weight_decay, p.eps, p.amsgrad ? 1 : 0,
                p.maximize ? 1 : 0);
  return buf;
}

struct Trajectory {
  std::vector<float> p0;
  std::vector<std::vector<float>> grads;
};

// Gradients of magnitude in [1/16, 2] with random signs (never zero, so v > 0 from the first
// step and the bound on sqrt stays finite).
Trajectory make_trajectory(size_t n, int steps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.5f, 2.0f), gmag(0.0625f, 2.0f);
  Trajectory t;
  t.p0.resize(n);
  for (float& v : t.p0) v = (rng() & 1) ? mag(rng) : -mag(rng);
  t.grads.assign(steps, std::vector<float>(n));
  for (auto& step : t.grads) {
    for (float& v : step) v = (rng() & 1) ? gmag(rng) : -gmag(rng);
  }
  return t;
}

struct State {
  std::vector<float> p, m, v, max;
};

// The operator for the whole trajectory, from PyTorch's initial state.
State run_operator(const ApplyAdamWV2Params& params, const Trajectory& tr) {
  const auto n = static_cast<int64_t>(tr.p0.size());
  State s{tr.p0, std::vector<float>(tr.p0.size(), 0.0f), std::vector<float>(tr.p0.size(), 0.0f),
          std::vector<float>(tr.p0.size(), 0.0f)};
  int64_t step = 0;
  for (const auto& g_step : tr.grads) {
    std::vector<float> g = g_step;
    ApplyAdamWV2Tensors t{.var = TensorView(s.p.data(), DType::kFloat32, {n}),
                          .m = TensorView(s.m.data(), DType::kFloat32, {n}),
                          .v = TensorView(s.v.data(), DType::kFloat32, {n}),
                          .max_grad_norm = TensorView(s.max.data(), DType::kFloat32, {n}),
                          .grad = TensorView(g.data(), DType::kFloat32, {n}),
                          .step = TensorView(&step, DType::kInt64, {1})};
    const Status st = apply_adam_w_v2(t, params);
    EXPECT_TRUE(st.ok()) << st.message();
    ++step;  // the steps already taken
  }
  return s;
}

// The same steps in double (the reference both are measured against) and a per-element bound on
// the distance of any fp32 evaluation of them, with or without FMA, in either grouping, from it.
// Each fp32 rounding adds at most u times the magnitude of its result; every partial result is
// bounded by the sum of the absolute values of its terms; an inherited error e in an input is
// carried by the derivative of the step (first order). Per step, with exact values m, v, var:
//   m'   = b1 m + (1 - b1) g:        em' = b1 em + 6u (|m| + |g|)
//   v'   = b2 v + (1 - b2) g^2:      ev' = b2 ev + 6u (|v| + g^2)
//   vmax = max(max, v') (amsgrad):   emax' = max(emax, ev')   (max is 1-Lipschitz)
//   D    = sqrt(vmax / bc2) + eps:   eD = evmax / (2 sqrt(vmax bc2)) + 6u D
//   U    = (lr / bc1) m' / D:        eU = (lr / bc1)(em' / D + |m'| eD / D^2) + 6u |U|
//   var' = var (1 - lr wd) - U:      ew' = |1 - lr wd| ew + eU + 6u (|var| + |U|)
// (6u leaves a margin over the roundings either side does, its constants' included.)
struct Reference {
  std::vector<double> p, m, v, max;
  std::vector<double> ep, em, ev, emax;
};

Reference reference(const ApplyAdamWV2Params& params, const Trajectory& tr) {
  const size_t n = tr.p0.size();
  Reference r;
  r.p.assign(tr.p0.begin(), tr.p0.end());
  r.m.assign(n, 0.0);
  r.v.assign(n, 0.0);
  r.max.assign(n, 0.0);
  r.ep.assign(n, 0.0);
  r.em.assign(n, 0.0);
  r.ev.assign(n, 0.0);
  r.emax.assign(n, 0.0);
  const double lr = params.lr, b1 = params.beta1, b2 = params.beta2, wd = params.weight_decay,
               eps = params.eps;
  int t = 0;
  for (const auto& grads : tr.grads) {
    ++t;
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    for (size_t i = 0; i < n; ++i) {
      const double g = params.maximize ? -static_cast<double>(grads[i]) : grads[i];
      const double m = b1 * r.m[i] + (1 - b1) * g;
      const double v = b2 * r.v[i] + (1 - b2) * g * g;
      r.em[i] = b1 * r.em[i] + 6 * kU * (std::fabs(r.m[i]) + std::fabs(g));
      r.ev[i] = b2 * r.ev[i] + 6 * kU * (r.v[i] + g * g);
      double vmax = v, evmax = r.ev[i];
      if (params.amsgrad) {
        vmax = std::max(r.max[i], v);
        evmax = r.emax[i] = std::max(r.emax[i], r.ev[i]);
        r.max[i] = vmax;
      }
      const double d = std::sqrt(vmax / bc2) + eps;
      const double ed = evmax / (2 * std::sqrt(vmax * bc2)) + 6 * kU * d;
      const double u = (lr / bc1) * m / d;
      const double eu =
          (lr / bc1) * (r.em[i] / d + std::fabs(m) * ed / (d * d)) + 6 * kU * std::fabs(u);
      r.ep[i] = std::fabs(1 - lr * wd) * r.ep[i] + eu + 6 * kU * (std::fabs(r.p[i]) + std::fabs(u));
      r.p[i] = r.p[i] * (1 - lr * wd) - u;
      r.m[i] = m;
      r.v[i] = v;
    }
  }
  return r;
}

// `got` within the bound of the fp64 reference; returns the largest |got - ref| / bound.
double expect_near(const char* who, const char* what, const std::vector<float>& got,
                   const std::vector<double>& ref, const std::vector<double>& bound,
                   const ApplyAdamWV2Params& p) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    EXPECT_LE(d, bound[i]) << who << " " << what << "[" << i << "] " << got[i] << " vs fp64 "
                           << ref[i] << ": " << describe(p);
    if (d > bound[i]) return d / bound[i];
    worst = std::max(worst, d / bound[i]);
  }
  return worst;
}

ApplyAdamWV2Params config(float lr, float beta1, float beta2, float weight_decay, float eps,
                          bool amsgrad, bool maximize) {
  return {.lr = lr,
          .beta1 = beta1,
          .beta2 = beta2,
          .weight_decay = weight_decay,
          .eps = eps,
          .amsgrad = amsgrad,
          .maximize = maximize};
}

const ApplyAdamWV2Params kConfigs[] = {
    config(1e-3f, 0.9f, 0.999f, 1e-2f, 1e-8f, false, false),  // PyTorch's defaults
    config(1e-2f, 0.9f, 0.999f, 0.1f, 1e-8f, false, false),
    config(1e-3f, 0.8f, 0.99999f, 0.01f, 1e-6f, false, false),
    config(1e-3f, 0.9f, 0.999f, 1e-2f, 1e-8f, true, false),
    config(1e-3f, 0.9f, 0.999f, 1e-2f, 1e-8f, false, true),
    config(3e-3f, 0.5f, 0.9f, 0.0f, 1e-8f, true, true),
};

// The operator alone against fp64 (no PyTorch needed).
TEST(ApplyAdamWV2VersusPyTorch, OperatorWithinItsBoundOfFp64) {
  uint64_t seed = 40;
  for (const ApplyAdamWV2Params& p : kConfigs) {
    const Trajectory tr = make_trajectory(2048, 20, ++seed);
    const State s = run_operator(p, tr);
    const Reference r = reference(p, tr);
    EXPECT_LE(expect_near("operator", "var", s.p, r.p, r.ep, p), 1.0);
    EXPECT_LE(expect_near("operator", "m", s.m, r.m, r.em, p), 1.0);
    EXPECT_LE(expect_near("operator", "v", s.v, r.v, r.ev, p), 1.0);
    if (p.amsgrad) {
      EXPECT_LE(expect_near("operator", "max", s.max, r.max, r.emax, p), 1.0);
    }
  }
}

// ------------------------------------------------------------------------------------------
// Real PyTorch.

std::filesystem::path reference_script() {
  if (const char* src = std::getenv("MANTISSA_SOURCE_DIR")) {
    return std::filesystem::path(src) / "tests" / "adamw_torch_reference.py";
  }
  return std::filesystem::path(__FILE__).parent_path() / "adamw_torch_reference.py";
}

bool torch_importable() {
  return std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
}

void write_floats(const std::filesystem::path& path, const std::vector<float>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
}

std::vector<float> read_floats(const std::filesystem::path& path, size_t n) {
  std::vector<float> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * 4));
  EXPECT_EQ(static_cast<size_t>(f.gcount()), n * 4) << path;
  return v;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("mantissa_adamw_torch_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

TEST(ApplyAdamWV2VersusPyTorch, RealTorchOptimAdamW) {
  if (!torch_importable()) {
    GTEST_SKIP() << "PyTorch is not importable by /usr/bin/python3 (install python3-torch); "
                    "the comparison with real torch.optim.AdamW did not run";
  }
  const std::filesystem::path script = reference_script();
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  TempDir tmp;
  std::vector<Trajectory> trajectories;
  std::string command = "/usr/bin/python3 '" + script.string() + "'";
  uint64_t seed = 90;
  for (size_t k = 0; k < std::size(kConfigs); ++k) {
    const ApplyAdamWV2Params& p = kConfigs[k];
    trajectories.push_back(make_trajectory(1024, 16, ++seed));
    const Trajectory& tr = trajectories.back();
    const std::filesystem::path dir = tmp.path / ("case" + std::to_string(k));
    std::filesystem::create_directories(dir);
    std::vector<float> grads;
    for (const auto& g : tr.grads) grads.insert(grads.end(), g.begin(), g.end());
    write_floats(dir / "p.bin", tr.p0);
    write_floats(dir / "grads.bin", grads);
    std::ofstream cfg(dir / "config.txt");
    char line[300];
    std::snprintf(line, sizeof(line), "%zu %zu %.17g %.17g %.17g %.17g %.17g %d %d\n", tr.p0.size(),
                  tr.grads.size(), static_cast<double>(p.lr), static_cast<double>(p.beta1),
                  static_cast<double>(p.beta2), static_cast<double>(p.weight_decay),
                  static_cast<double>(p.eps), p.amsgrad ? 1 : 0, p.maximize ? 1 : 0);
    cfg << line;
    command += " '" + dir.string() + "'";
  }
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  for (size_t k = 0; k < std::size(kConfigs); ++k) {
    const ApplyAdamWV2Params& p = kConfigs[k];
    const Trajectory& tr = trajectories[k];
    const size_t n = tr.p0.size();
    const std::filesystem::path dir = tmp.path / ("case" + std::to_string(k));
    const State torch{read_floats(dir / "p_out.bin", n), read_floats(dir / "m.bin", n),
                      read_floats(dir / "v.bin", n), read_floats(dir / "max.bin", n)};
    const State op = run_operator(p, tr);
    const Reference r = reference(p, tr);
    // PyTorch and the operator each within the bound of fp64, so within twice it of each other.
    EXPECT_LE(expect_near("torch.optim.AdamW", "var", torch.p, r.p, r.ep, p), 1.0);
    EXPECT_LE(expect_near("torch.optim.AdamW", "m", torch.m, r.m, r.em, p), 1.0);
    EXPECT_LE(expect_near("torch.optim.AdamW", "v", torch.v, r.v, r.ev, p), 1.0);
    double worst = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double d = std::fabs(static_cast<double>(op.p[i]) - torch.p[i]);
      ASSERT_LE(d, 2 * r.ep[i]) << "var[" << i << "]: operator " << op.p[i] << ", PyTorch "
                                << torch.p[i] << ": " << describe(p);
      worst = std::max(worst, d / (2 * r.ep[i]));
      if (p.amsgrad) {
        ASSERT_LE(std::fabs(static_cast<double>(op.max[i]) - torch.max[i]), 2 * r.emax[i]);
      }
    }
    // The two agree far more closely than a wrong rule would allow: a missing bias correction,
    // weight decay applied to the gradient (Adam's L2), or eps inside the square root each move
    // var by orders of magnitude more than this bound.
    std::printf("[ info ] %s: max |operator - torch| / bound = %.3f\n", describe(p).c_str(), worst);
  }
}

}  // namespace

}  // namespace mantissa::testing
