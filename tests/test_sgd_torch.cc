// SGD against torch.optim.SGD: a plain C++ transcription of PyTorch's single-tensor update, and
// real PyTorch when /usr/bin/python3 can import it. With stat = 1 and accum = 0 at the start the
// operator follows PyTorch within a rounding bound computed per element; with momentum == 0,
// dampening > 0 and stat == 0 its step is (1 - dampening) times PyTorch's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/sgd.h"

namespace mantissa::testing {

namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of fp32

struct Config {
  float lr, momentum, dampening, weight_decay;
  bool nesterov;
};

std::string describe(const Config& c) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "lr=%g momentum=%g dampening=%g weight_decay=%g nesterov=%d",
                c.lr, c.momentum, c.dampening, c.weight_decay, c.nesterov ? 1 : 0);
  return buf;
}

// torch.optim.SGD's _single_tensor_sgd for one fp32 tensor, operation for operation:
// d_p = grad.add(p, alpha=wd); buf = clone(d_p) on the first step, else
// buf.mul_(m).add_(d_p, alpha=1 - dampening); d_p = d_p.add(buf, alpha=m) for nesterov, else
// d_p = buf; p.add_(d_p, alpha=-lr). Python computes 1 - dampening and -lr in double; the fp32
// kernel receives them as float.
struct TorchSgd {
  Config c;
  std::vector<float> buf;
  bool has_buf = false;

  void step(std::vector<float>& p, const std::vector<float>& g) {
    const auto alpha_damp = static_cast<float>(1.0 - static_cast<double>(c.dampening));
    const auto neg_lr = static_cast<float>(-static_cast<double>(c.lr));
    if (c.momentum != 0.0f && !has_buf) buf.assign(p.size(), 0.0f);
    for (size_t i = 0; i < p.size(); ++i) {
      float d_p = g[i];
      if (c.weight_decay != 0.0f) {
        const float scaled = c.weight_decay * p[i];
        d_p = d_p + scaled;
      }
      if (c.momentum != 0.0f) {
        if (!has_buf) {
          buf[i] = d_p;
        } else {
          const float b_m = buf[i] * c.momentum;
          const float scaled = alpha_damp * d_p;
          buf[i] = b_m + scaled;
        }
        if (c.nesterov) {
          const float scaled = c.momentum * buf[i];
          d_p = d_p + scaled;
        } else {
          d_p = buf[i];
        }
      }
      const float scaled = neg_lr * d_p;
      p[i] = p[i] + scaled;
    }
    if (c.momentum != 0.0f) has_buf = true;
  }
};

// The operator with fp32 tensors, stat = 1 and accum = 0 at the start (PyTorch's initial state).
struct OpSgd {
  Config c;
  std::vector<float> accum, stat;
  float lr, momentum;

  explicit OpSgd(const Config& config, size_t n)
      : c(config), accum(n, 0.0f), stat(n, 1.0f), lr(config.lr), momentum(config.momentum) {}
  void step(std::vector<float>& p, std::vector<float>& g) {
    const auto n = static_cast<int64_t>(p.size());
    SgdTensors t{TensorView(p.data(), DType::kFloat32, {n}),
                 TensorView(g.data(), DType::kFloat32, {n}),
                 TensorView(&lr, DType::kFloat32, {1}),
                 TensorView(accum.data(), DType::kFloat32, {n}),
                 TensorView(&momentum, DType::kFloat32, {1}),
                 TensorView(stat.data(), DType::kFloat32, {n}),
                 std::nullopt};
    const Status st = sgd(t, {c.dampening, c.weight_decay, c.nesterov});
    ASSERT_TRUE(st.ok()) << st.message();
  }
};

// A per-element bound on |operator - PyTorch| after each step, carried through the recurrence.
// u = 2^-24. Each fp32 rounding adds at most u times the magnitude of its result, and every
// partial result of a step is bounded by the sum of the absolute values of its terms:
//   grad:   both sides round p*wd and g + p*wd (2 roundings each):   eg = wd*ep + 4u*G,
//           G = |g| + wd*|p|.
//   buffer: first step (stat = 1, accum = 0): both equal grad, eb = eg. Later steps:
//           operator (a*m + grad) - grad*d (stat is 0, so grad*(1 - stat) is exact), PyTorch
//           b*m + fl(1 - d)*grad: at most 4 roundings each, plus the rounding of 1 - d, over
//           S = |m|*|b| + (1 + |d|)*G; inherited differences are scaled by |m| and |1 - d|:
//           eb' = |m|*eb + (1 + |d|)*eg + 10u*S.
//   params: at most 4 roundings per side over P = |p| + lr*(G + (1 + |m|)*|b'|):
//           ep' = ep + lr*(eb' + nesterov*(eg + |m|*eb')) + 10u*P.
// (10u leaves a margin over the 8u the counts give; FMA in PyTorch's kernels only removes
// roundings.) A wrong rule (dampening in the wrong place, a missing weight decay, the wrong
// nesterov term) is off by far more than this bound, which stays near 1e-6 relative.
struct Bound {
  std::vector<double> ep, eb;
  bool first = true;
  explicit Bound(size_t n) : ep(n, 0.0), eb(n, 0.0) {}
  // p_before and b_before are the operator's parameters and accum before the step, b_after its
  // accum after it.
  void step(const Config& c, const std::vector<float>& p_before, const std::vector<float>& g,
            const std::vector<float>& b_before, const std::vector<float>& b_after) {
    const double m = std::fabs(c.momentum), d = std::fabs(c.dampening), wd = c.weight_decay;
    const double lr = c.lr;
    for (size_t i = 0; i < ep.size(); ++i) {
      const double p = std::fabs(p_before[i]) + ep[i];
      const double big_g = std::fabs(g[i]) + wd * p;
      const double eg = wd * ep[i] + 4 * kU * big_g;
      if (c.momentum == 0.0f || first) {
        eb[i] = eg;  // the step uses grad itself (momentum 0), or buffer = grad (first step)
      } else {
        const double s = m * (std::fabs(b_before[i]) + eb[i]) + (1 + d) * big_g;
        eb[i] = m * eb[i] + (1 + d) * eg + 10 * kU * s;
      }
      const double b_new = std::fabs(b_after[i]) + eb[i];
      const double nest = c.nesterov ? 1.0 : 0.0;
      const double big_p = p + lr * (big_g + (1 + m) * b_new);
      ep[i] = ep[i] + lr * (eb[i] + nest * (eg + m * eb[i])) + 10 * kU * big_p;
    }
    first = false;
  }
};

struct Trajectory {
  std::vector<float> p0;
  std::vector<std::vector<float>> grads;
};

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

const Config kConfigs[] = {
    {0.05f, 0.9f, 0.0f, 0.0f, false},  {0.05f, 0.9f, 0.1f, 0.0f, false},
    {0.1f, 0.5f, 0.5f, 0.01f, false},  {0.05f, 0.9f, 0.0f, 0.01f, true},
    {0.02f, 0.99f, 0.3f, 0.0f, false}, {0.05f, 0.0f, 0.0f, 0.0f, false},
    {0.05f, 0.0f, 0.0f, 0.01f, false}, {0.05f, 0.0f, 0.3f, 0.0f, false},  // stat stays 1
};

// Runs the operator for the trajectory and checks it against `torch_p` / `torch_buf` (the
// transcription's or real PyTorch's final state) with the bound.
void expect_within_bound(const Config& c, const Trajectory& tr, const std::vector<float>& torch_p,
                         const std::vector<float>* torch_buf, const char* against,
                         bool exact_when_same_operations) {
  const size_t n = tr.p0.size();
  OpSgd op(c, n);
  Bound bound(n);
  std::vector<float> p = tr.p0;
  for (const auto& g_step : tr.grads) {
    std::vector<float> g = g_step;
    const std::vector<float> p_before = p, b_before = op.accum;
    op.step(p, g);
    if (::testing::Test::HasFatalFailure()) return;
    bound.step(c, p_before, g_step, b_before, op.accum);
  }
  double worst = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double dp = std::fabs(static_cast<double>(p[i]) - torch_p[i]);
    worst = std::max(worst, dp / bound.ep[i]);
    ASSERT_LE(dp, bound.ep[i]) << against << " " << describe(c) << " p[" << i << "]: operator "
                               << p[i] << ", PyTorch " << torch_p[i];
    if (torch_buf && c.momentum != 0.0f) {
      const double db = std::fabs(static_cast<double>(op.accum[i]) - (*torch_buf)[i]);
      ASSERT_LE(db, bound.eb[i]) << against << " " << describe(c) << " accum[" << i
                                 << "]: operator " << op.accum[i] << ", PyTorch "
                                 << (*torch_buf)[i];
    }
  }
  // With momentum 0 (and stat 1 when dampening is set) the transcription does the very same
  // fp32 operations as the operator, so they agree bit for bit. (Real PyTorch may fuse
  // p + (-lr)*d_p into an FMA, so it is held to the bound only.)
  if (exact_when_same_operations && c.momentum == 0.0f) {
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[i], torch_p[i]) << against << " " << describe(c);
  }
  EXPECT_LE(worst, 1.0);
}

TEST(SgdVersusPyTorch, TranscriptionWithinRoundingBound) {
  uint64_t seed = 40;
  for (const Config& c : kConfigs) {
    const Trajectory tr = make_trajectory(2048, 12, ++seed);
    TorchSgd torch{c, {}, false};
    std::vector<float> p = tr.p0;
    for (const auto& g : tr.grads) torch.step(p, g);
    expect_within_bound(c, tr, p, c.momentum != 0.0f ? &torch.buf : nullptr, "transcription", true);
    if (HasFatalFailure()) return;
  }
}

// momentum == 0, dampening > 0, stat == 0: the operator still applies dampening, PyTorch does
// not, so the step here is (1 - dampening) times PyTorch's. The bound: each side's step has at
// most 4 roundings relative to lr*|g|*(1 + d), and each new parameter one rounding relative to
// itself.
void expect_scaled_step(float dampening, const std::vector<float>& p0, const std::vector<float>& g,
                        const std::vector<float>& op_p, const std::vector<float>& torch_p,
                        float lr) {
  for (size_t i = 0; i < p0.size(); ++i) {
    const double step_op = static_cast<double>(p0[i]) - op_p[i];
    const double step_torch = static_cast<double>(p0[i]) - torch_p[i];
    const double tol = 2 * kU * (std::fabs(op_p[i]) + std::fabs(torch_p[i])) +
                       8 * kU * lr * std::fabs(g[i]) * (1 + dampening);
    ASSERT_LE(std::fabs(step_op - (1.0 - dampening) * step_torch), tol)
        << "dampening " << dampening << " element " << i;
    // And the factor is really there: not PyTorch's step.
    ASSERT_GT(std::fabs(step_op - step_torch), tol) << "dampening " << dampening;
  }
}

TEST(SgdVersusPyTorch, ZeroMomentumDampeningScalesTheStep) {
  for (float dampening : {0.1f, 0.5f}) {
    const Trajectory tr = make_trajectory(1000, 1, 7);
    const Config c{0.05f, 0.0f, dampening, 0.0f, false};
    TorchSgd torch{c, {}, false};
    std::vector<float> torch_p = tr.p0;
    torch.step(torch_p, tr.grads[0]);

    OpSgd op(c, tr.p0.size());
    std::fill(op.stat.begin(), op.stat.end(), 0.0f);
    std::mt19937 rng(3);
    for (float& a : op.accum) a = static_cast<float>(rng() % 100) - 50.0f;  // finite: a*0 = 0
    const std::vector<float> accum_before = op.accum;
    std::vector<float> p = tr.p0, g = tr.grads[0];
    op.step(p, g);
    ASSERT_FALSE(HasFatalFailure());
    expect_scaled_step(dampening, tr.p0, tr.grads[0], p, torch_p, c.lr);
    EXPECT_EQ(op.accum, accum_before);  // momentum 0: accum and stat untouched
    EXPECT_EQ(op.stat, std::vector<float>(p.size(), 0.0f));
  }
}

// ------------------------------------------------------------------------------------------
// Real PyTorch, through /usr/bin/python3 and tests/sgd_torch_reference.py.

std::filesystem::path reference_script() {
  if (const char* src = std::getenv("MANTISSA_SOURCE_DIR")) {
    return std::filesystem::path(src) / "tests" / "sgd_torch_reference.py";
  }
  return std::filesystem::path(__FILE__).parent_path() / "sgd_torch_reference.py";
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
           ("mantissa_sgd_torch_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

TEST(SgdVersusPyTorch, RealTorchOptimSgd) {
  if (!torch_importable()) {
    GTEST_SKIP() << "PyTorch is not importable by /usr/bin/python3 (install python3-torch); "
                    "the comparison with real torch.optim.SGD did not run";
  }
  const std::filesystem::path script = reference_script();
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  TempDir tmp;

  struct Job {
    Config c;
    Trajectory tr;
    std::filesystem::path dir;
  };
  std::vector<Job> jobs;
  uint64_t seed = 90;
  for (const Config& c : kConfigs) jobs.push_back({c, make_trajectory(1024, 8, ++seed), {}});
  for (float d : {0.1f, 0.5f}) {  // one step, momentum 0, dampening ignored by PyTorch
    jobs.push_back({{0.05f, 0.0f, d, 0.0f, false}, make_trajectory(1024, 1, ++seed), {}});
  }
  std::string command = "/usr/bin/python3 '" + script.string() + "'";
  for (size_t k = 0; k < jobs.size(); ++k) {
    Job& j = jobs[k];
    j.dir = tmp.path / ("case" + std::to_string(k));
    std::filesystem::create_directories(j.dir);
    const size_t n = j.tr.p0.size();
    std::vector<float> grads;
    for (const auto& g : j.tr.grads) grads.insert(grads.end(), g.begin(), g.end());
    write_floats(j.dir / "p.bin", j.tr.p0);
    write_floats(j.dir / "grads.bin", grads);
    std::ofstream cfg(j.dir / "config.txt");
    char line[256];
    std::snprintf(line, sizeof(line), "%zu %zu %.17g %.17g %.17g %.17g %d\n", n, j.tr.grads.size(),
                  static_cast<double>(j.c.lr), static_cast<double>(j.c.momentum),
                  static_cast<double>(j.c.dampening), static_cast<double>(j.c.weight_decay),
                  j.c.nesterov ? 1 : 0);
    cfg << line;
    command += " '" + j.dir.string() + "'";
  }
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  for (size_t k = 0; k < jobs.size(); ++k) {
    const Job& j = jobs[k];
    const size_t n = j.tr.p0.size();
    const std::vector<float> torch_p = read_floats(j.dir / "p_out.bin", n);
    const std::vector<float> torch_buf = read_floats(j.dir / "buf.bin", n);
    if (k < std::size(kConfigs)) {
      expect_within_bound(j.c, j.tr, torch_p, &torch_buf, "torch.optim.SGD", false);
    } else {
      OpSgd op(j.c, n);
      std::fill(op.stat.begin(), op.stat.end(), 0.0f);
      std::vector<float> p = j.tr.p0, g = j.tr.grads[0];
      op.step(p, g);
      ASSERT_FALSE(HasFatalFailure());
      expect_scaled_step(j.c.dampening, j.tr.p0, j.tr.grads[0], p, torch_p, j.c.lr);
    }
    if (HasFatalFailure()) return;
  }
}

}  // namespace

}  // namespace mantissa::testing
