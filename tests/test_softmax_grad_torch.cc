// SoftmaxGrad and LogSoftmaxGrad against PyTorch's autograd (torch.softmax / torch.log_softmax
// backward, through /usr/bin/python3 and tests/softmax_grad_torch_reference.py), on PyTorch's own
// forward output: every fp32 result of the operators is within 1 ulp of the float64 formula
// computed by numpy on the same inputs, and never further from it than PyTorch's result by more
// than 1 ulp. The run prints both worst cases (PyTorch computes in fp32 and loses many ulp where
// the formula cancels).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mantissa/ops/softmax_grad.h"

namespace mantissa::testing {

namespace {

std::filesystem::path reference_script() {
  if (const char* src = std::getenv("MANTISSA_SOURCE_DIR")) {
    return std::filesystem::path(src) / "tests" / "softmax_grad_torch_reference.py";
  }
  return std::filesystem::path(__FILE__).parent_path() / "softmax_grad_torch_reference.py";
}

bool torch_importable() {
  return std::system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") == 0;
}

template <class T>
void write_values(const std::filesystem::path& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(T)));
}

template <class T>
std::vector<T> read_values(const std::filesystem::path& path, std::size_t n) {
  std::vector<T> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(T)));
  EXPECT_EQ(static_cast<std::size_t>(f.gcount()), n * sizeof(T)) << path;
  return v;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("mantissa_softmax_grad_torch_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// |got - want| in units of the fp32 spacing at want.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double up = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity());
  return std::fabs(static_cast<double>(got) - want) / (up - std::fabs(static_cast<double>(w)));
}

struct Job {
  bool log;
  int64_t dim;
  std::vector<int64_t> shape;
  float offset;  // dy = offset + U[-1, 1)
  std::filesystem::path dir;
  std::size_t n = 0;
};

TEST(SoftmaxGradVersusPyTorch, Autograd) {
  if (!torch_importable()) {
    GTEST_SKIP() << "PyTorch and numpy are not importable by /usr/bin/python3; the comparison "
                    "with torch.softmax / torch.log_softmax autograd did not run";
  }
  const std::filesystem::path script = reference_script();
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  TempDir tmp;
  std::vector<Job> jobs;
  for (bool log : {false, true}) {
    for (float offset : {0.0f, 100.0f}) {
      jobs.push_back({log, -1, {8, 1000}, offset, {}});
      jobs.push_back({log, 0, {300, 4, 5}, offset, {}});
      jobs.push_back({log, 1, {3, 257, 7}, offset, {}});
    }
  }
  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> logits(-8, 8), unit(-1, 1);
  std::string command = "/usr/bin/python3 '" + script.string() + "'";
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    Job& j = jobs[k];
    j.dir = tmp.path / ("case" + std::to_string(k));
    std::filesystem::create_directories(j.dir);
    j.n = 1;
    for (int64_t d : j.shape) j.n *= static_cast<std::size_t>(d);
    std::vector<float> x(j.n), dy(j.n);
    for (float& v : x) v = logits(rng);
    for (float& v : dy) v = j.offset + unit(rng);
    write_values(j.dir / "x.bin", x);
    write_values(j.dir / "dy.bin", dy);
    std::ofstream cfg(j.dir / "config.txt");
    cfg << (j.log ? 1 : 0) << " " << j.dim << " " << j.shape.size();
    for (int64_t d : j.shape) cfg << " " << d;
    cfg << "\n";
    command += " '" + j.dir.string() + "'";
  }
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  for (const Job& j : jobs) {
    SCOPED_TRACE(std::string(j.log ? "log_softmax" : "softmax") + " dim " + std::to_string(j.dim) +
                 " offset " + std::to_string(j.offset));
    std::vector<float> dy = read_values<float>(j.dir / "dy.bin", j.n);
    std::vector<float> y = read_values<float>(j.dir / "y.bin", j.n);
    const std::vector<float> torch_grad = read_values<float>(j.dir / "grad.bin", j.n);
    const std::vector<double> ref = read_values<double>(j.dir / "ref.bin", j.n);
    std::vector<float> out(j.n, 7.0f);
    const SoftmaxGradTensors t{.grad_output = TensorView(dy.data(), DType::kFloat32, j.shape),
                               .output = TensorView(y.data(), DType::kFloat32, j.shape),
                               .out = TensorView(out.data(), DType::kFloat32, j.shape)};
    const Status s = j.log ? log_softmax_grad(t, {.dim = j.dim}) : softmax_grad(t, {.dim = j.dim});
    ASSERT_TRUE(s.ok()) << s.message();
    double worst = 0, worst_torch = 0;
    for (std::size_t i = 0; i < j.n; ++i) {
      const double ours = ulps(out[i], ref[i]), theirs = ulps(torch_grad[i], ref[i]);
      worst = std::max(worst, ours);
      worst_torch = std::max(worst_torch, theirs);
      ASSERT_LE(ours, 1.0) << i;
      ASSERT_LE(ours, theirs + 1.0) << i;
    }
    std::printf("%s dim %lld offset %g: mantissa max %.2f ulp, PyTorch max %.1f ulp\n",
                j.log ? "log_softmax" : "softmax", static_cast<long long>(j.dim),
                static_cast<double>(j.offset), worst, worst_torch);
  }
}

}  // namespace

}  // namespace mantissa::testing
