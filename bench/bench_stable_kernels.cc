// Times one row-wise kernel (softmax, log-softmax, LayerNorm, RMSNorm; forward or backward) of
// mantissa or of oneDNN on inputs read from raw files, and optionally writes its outputs, so that
// scripts/bench_stable_kernels.py can put both next to PyTorch, in one run, on the same inputs
// (speed, and accuracy against an fp64 reference computed there).
//
//   bench_stable_kernels --impl mantissa|onednn --op softmax|log_softmax|layer_norm|rms_norm
//       --pass forward|backward --dtype fp32|bf16 --shape 4096x4096 --dim -1 --threads N
//       --inputs DIR [--outputs DIR] [--min-seconds 0.5]
//
// Inputs in DIR (raw, little-endian, the dtype's bits): x, and for the backward pass dy and the
// forward's results (y for softmax; mean and rstd as fp32 for the norms); g (weight, fp32) and
// b (bias, fp32) for the norms. The norms normalise the last dim. Prints one JSON object:
// {"seconds": median per call, "calls": N}. oneDNN takes its thread count from OMP_NUM_THREADS.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "mantissa/mantissa.h"

#if MANTISSA_BENCH_ONEDNN
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace {

struct Options {
  std::string impl = "mantissa", op = "softmax", pass = "forward", dtype = "fp32";
  std::vector<int64_t> shape{4096, 4096};
  int64_t dim = -1;
  int threads = 1;
  std::string inputs, outputs;
  double min_seconds = 0.5;
};

std::vector<int64_t> parse_shape(const std::string& s) {
  std::vector<int64_t> dims;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t x = s.find('x', start);
    dims.push_back(std::stoll(s.substr(start, x - start)));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return dims;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--impl")
      o.impl = v;
    else if (k == "--op")
      o.op = v;
    else if (k == "--pass")
      o.pass = v;
    else if (k == "--dtype")
      o.dtype = v;
    else if (k == "--shape")
      o.shape = parse_shape(v);
    else if (k == "--dim")
      o.dim = std::stoll(v);
    else if (k == "--threads")
      o.threads = std::stoi(v);
    else if (k == "--inputs")
      o.inputs = v;
    else if (k == "--outputs")
      o.outputs = v;
    else if (k == "--min-seconds")
      o.min_seconds = std::stod(v);
    else
      throw std::runtime_error("unknown option " + k);
  }
  return o;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A raw buffer of n elements of `bytes` each, read from DIR/name (or zeros).
std::vector<uint8_t> load(const std::string& dir, const char* name, int64_t n, int bytes) {
  std::vector<uint8_t> v(static_cast<std::size_t>(n * bytes));
  std::ifstream f(dir + "/" + name, std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size()))) {
    throw std::runtime_error(std::string("cannot read ") + dir + "/" + name);
  }
  return v;
}

void save(const std::string& dir, const char* name, const std::vector<uint8_t>& v) {
  if (dir.empty()) return;
  std::ofstream f(dir + "/" + name, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size()));
}

// Median seconds per call over batches that add up to at least min_seconds.
double time_calls(const std::function<void()>& call, double min_seconds, int& calls) {
  call();  // warm up: page in the outputs, build primitives
  std::vector<double> samples;
  double total = 0;
  calls = 0;
  while (samples.size() < 3 || (total < min_seconds && samples.size() < 200)) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples.push_back(s);
    total += s;
    ++calls;
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

void check(const mantissa::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.message());
}

struct Buffers {
  std::vector<uint8_t> x, dy, y, mean, rstd, g, b, out, dx, dg, db;
};

// The call of one mantissa kernel; outputs into `buf`.
std::function<void()> mantissa_call(const Options& o, Buffers& buf) {
  using mantissa::TensorView;
  const mantissa::DType dt =
      o.dtype == "bf16" ? mantissa::DType::kBFloat16 : mantissa::DType::kFloat32;
  const int64_t n = o.shape.back();
  std::vector<int64_t> stats = o.shape;
  stats.back() = 1;
  auto tv = [&](std::vector<uint8_t>& v, mantissa::DType d, const std::vector<int64_t>& s) {
    return TensorView(v.data(), d, std::span<const int64_t>(s));
  };
  const std::vector<int64_t> ns{n};
  const bool fwd = o.pass == "forward";
  if (o.op == "softmax" || o.op == "log_softmax") {
    const bool log = o.op == "log_softmax";
    if (fwd) {
      mantissa::SoftmaxTensors t{tv(buf.x, dt, o.shape), tv(buf.out, dt, o.shape)};
      if (log) return [t, d = o.dim] { check(mantissa::log_softmax(t, {d})); };
      return [t, d = o.dim] { check(mantissa::softmax(t, {.dim = d})); };
    }
    mantissa::SoftmaxGradTensors t{tv(buf.dy, dt, o.shape), tv(buf.y, dt, o.shape),
                                   tv(buf.dx, dt, o.shape)};
    if (log) return [t, d = o.dim] { check(mantissa::log_softmax_grad(t, {d})); };
    return [t, d = o.dim] { check(mantissa::softmax_grad(t, {d})); };
  }
  const mantissa::DType f32 = mantissa::DType::kFloat32;
  if (o.op == "layer_norm") {
    if (fwd) {
      mantissa::LayerNormTensors t;
      t.input = tv(buf.x, dt, o.shape), t.out = tv(buf.out, dt, o.shape);
      t.weight = tv(buf.g, f32, ns), t.bias = tv(buf.b, f32, ns);
      t.mean = tv(buf.mean, f32, stats), t.rstd = tv(buf.rstd, f32, stats);
      return [t, n] { check(mantissa::layer_norm(t, {.normalized_shape = {n}, .eps = 1e-5})); };
    }
    mantissa::LayerNormGradTensors t;
    t.dy = tv(buf.dy, dt, o.shape), t.input = tv(buf.x, dt, o.shape);
    t.mean = tv(buf.mean, f32, stats), t.rstd = tv(buf.rstd, f32, stats);
    t.weight = tv(buf.g, f32, ns);
    t.dx = tv(buf.dx, dt, o.shape), t.dweight = tv(buf.dg, f32, ns), t.dbias = tv(buf.db, f32, ns);
    const mantissa::LayerNormGradParams p{.normalized_shape = {n}};
    auto ws = std::make_shared<std::vector<double>>(
        mantissa::layer_norm_grad_workspace_size(t, p) / sizeof(double) + 1);
    return [t, p, ws] {
      check(mantissa::layer_norm_grad(t, p, {ws->data(), ws->size() * sizeof(double)}));
    };
  }
  if (o.op == "rms_norm") {
    if (fwd) {
      mantissa::RmsNormTensors t{tv(buf.x, dt, o.shape), tv(buf.g, f32, ns),
                                 tv(buf.out, dt, o.shape), tv(buf.rstd, f32, stats)};
      return [t] { check(mantissa::rms_norm(t, {.epsilon = 1e-6})); };
    }
    mantissa::RmsNormGradTensors t{tv(buf.dy, dt, o.shape),  tv(buf.x, dt, o.shape),
                                   tv(buf.rstd, f32, stats), tv(buf.g, f32, ns),
                                   tv(buf.dx, dt, o.shape),  tv(buf.dg, f32, ns)};
    auto ws = std::make_shared<std::vector<double>>(
        mantissa::rms_norm_grad_workspace_size(t, {}) / sizeof(double) + 1);
    return [t, ws] {
      check(mantissa::rms_norm_grad(t, {}, {ws->data(), ws->size() * sizeof(double)}));
    };
  }
  throw std::runtime_error("mantissa: unknown op " + o.op);
}

#if MANTISSA_BENCH_ONEDNN
// The call of one oneDNN primitive (softmax_v2, layer_normalization); oneDNN has no RMSNorm.
// oneDNN keeps the variance where mantissa and PyTorch keep rstd: the backward pass gets
// var = 1 / rstd^2 - eps, computed here once.
std::function<void()> onednn_call(const Options& o, Buffers& buf) {
  using namespace dnnl;
  static engine eng(engine::kind::cpu, 0);
  static stream strm(eng);
  const auto dt = o.dtype == "bf16" ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::dims dims(o.shape.begin(), o.shape.end());
  // Row-major strides, as the raw buffers hold the data.
  memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  const memory::desc md(dims, dt, strides);
  auto mem = [&](const memory::desc& d, std::vector<uint8_t>& v) {
    return memory(d, eng, v.data());
  };
  const bool fwd = o.pass == "forward";
  const int axis = static_cast<int>(o.dim < 0 ? o.dim + static_cast<int64_t>(dims.size()) : o.dim);
  if (o.op == "softmax" || o.op == "log_softmax") {
    const algorithm alg = o.op == "softmax" ? algorithm::softmax_accurate : algorithm::softmax_log;
    auto fd = softmax_v2_forward::desc(prop_kind::forward_training, alg, md, md, axis);
    auto fpd = softmax_v2_forward::primitive_desc(fd, eng);
    if (fwd) {
      auto p = std::make_shared<softmax_v2_forward>(fpd);
      auto args = std::make_shared<std::unordered_map<int, memory>>(std::unordered_map<int, memory>{
          {DNNL_ARG_SRC, mem(md, buf.x)}, {DNNL_ARG_DST, mem(md, buf.out)}});
      return [p, args] {
        p->execute(strm, *args);
        strm.wait();
      };
    }
    auto bd = softmax_v2_backward::desc(alg, md, md, md, axis);
    auto bpd = softmax_v2_backward::primitive_desc(bd, eng, fpd);
    auto p = std::make_shared<softmax_v2_backward>(bpd);
    auto args = std::make_shared<std::unordered_map<int, memory>>(std::unordered_map<int, memory>{
        {DNNL_ARG_DST, mem(md, buf.y)},
        {DNNL_ARG_DIFF_DST, mem(md, buf.dy)},
        {DNNL_ARG_DIFF_SRC, mem(md, buf.dx)}});
    return [p, args] {
      p->execute(strm, *args);
      strm.wait();
    };
  }
  if (o.op == "layer_norm") {
    const int64_t n = o.shape.back();
    const memory::desc sd({n}, memory::data_type::f32, memory::format_tag::a);
    memory::dims stat_dims(dims.begin(), dims.end() - 1);
    memory::dims stat_strides(stat_dims.size(), 1);
    for (std::size_t i = stat_dims.size(); i-- > 1;) {
      stat_strides[i - 1] = stat_strides[i] * stat_dims[i];
    }
    const memory::desc std_d(stat_dims, memory::data_type::f32, stat_strides);
    const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
    auto fd =
        layer_normalization_forward::desc(prop_kind::forward_training, md, std_d, 1e-5f, flags);
    auto fpd = layer_normalization_forward::primitive_desc(fd, eng);
    if (fwd) {
      auto p = std::make_shared<layer_normalization_forward>(fpd);
      auto args = std::make_shared<std::unordered_map<int, memory>>(std::unordered_map<int, memory>{
          {DNNL_ARG_SRC, mem(md, buf.x)},
          {DNNL_ARG_DST, mem(md, buf.out)},
          {DNNL_ARG_SCALE, mem(sd, buf.g)},
          {DNNL_ARG_SHIFT, mem(sd, buf.b)},
          {DNNL_ARG_MEAN, mem(std_d, buf.mean)},
          {DNNL_ARG_VARIANCE, mem(std_d, buf.rstd)}});
      return [p, args] {
        p->execute(strm, *args);
        strm.wait();
      };
    }
    // The variance from rstd.
    auto* r = reinterpret_cast<float*>(buf.rstd.data());
    for (std::size_t i = 0; i < buf.rstd.size() / 4; ++i) r[i] = 1.0f / (r[i] * r[i]) - 1e-5f;
    auto bd = layer_normalization_backward::desc(prop_kind::backward, md, md, std_d, 1e-5f, flags);
    auto bpd = layer_normalization_backward::primitive_desc(bd, eng, fpd);
    auto p = std::make_shared<layer_normalization_backward>(bpd);
    auto args = std::make_shared<std::unordered_map<int, memory>>(std::unordered_map<int, memory>{
        {DNNL_ARG_SRC, mem(md, buf.x)},
        {DNNL_ARG_DIFF_DST, mem(md, buf.dy)},
        {DNNL_ARG_MEAN, mem(std_d, buf.mean)},
        {DNNL_ARG_VARIANCE, mem(std_d, buf.rstd)},
        {DNNL_ARG_SCALE, mem(sd, buf.g)},
        {DNNL_ARG_SHIFT, mem(sd, buf.b)},
        {DNNL_ARG_DIFF_SRC, mem(md, buf.dx)},
        {DNNL_ARG_DIFF_SCALE, mem(sd, buf.dg)},
        {DNNL_ARG_DIFF_SHIFT, mem(sd, buf.db)}});
    return [p, args] {
      p->execute(strm, *args);
      strm.wait();
    };
  }
  throw std::runtime_error("oneDNN has no " + o.op);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    check(mantissa::set_num_threads(o.threads));
    const int bytes = o.dtype == "bf16" ? 2 : 4;
    const int64_t count = numel(o.shape), n = o.shape.back(), rows = count / n;
    const bool fwd = o.pass == "forward", norm = o.op == "layer_norm" || o.op == "rms_norm";
    Buffers buf;
    buf.x = load(o.inputs, "x", count, bytes);
    if (norm) {
      buf.g = load(o.inputs, "g", n, 4);
      buf.b = load(o.inputs, "b", n, 4);
    }
    buf.mean.assign(static_cast<std::size_t>(rows * 4), 0);
    buf.rstd.assign(static_cast<std::size_t>(rows * 4), 0);
    if (!fwd) {
      buf.dy = load(o.inputs, "dy", count, bytes);
      if (norm) {
        if (o.op == "layer_norm") buf.mean = load(o.inputs, "mean", rows, 4);
        buf.rstd = load(o.inputs, "rstd", rows, 4);
      } else {
        buf.y = load(o.inputs, "y", count, bytes);
      }
      buf.dx.assign(static_cast<std::size_t>(count * bytes), 0);
      buf.dg.assign(static_cast<std::size_t>(n * 4), 0);
      buf.db.assign(static_cast<std::size_t>(n * 4), 0);
    } else {
      buf.out.assign(static_cast<std::size_t>(count * bytes), 0);
    }
    std::function<void()> call;
    if (o.impl == "mantissa") {
      call = mantissa_call(o, buf);
#if MANTISSA_BENCH_ONEDNN
    } else if (o.impl == "onednn") {
      call = onednn_call(o, buf);
#endif
    } else {
      throw std::runtime_error("implementation " + o.impl + " is not built");
    }
    int calls = 0;
    const double seconds = time_calls(call, o.min_seconds, calls);
    if (fwd) {
      save(o.outputs, "out", buf.out);
      save(o.outputs, "mean", buf.mean);
      save(o.outputs, "rstd", buf.rstd);
    } else {
      save(o.outputs, "dx", buf.dx);
      save(o.outputs, "dg", buf.dg);
      save(o.outputs, "db", buf.db);
    }
    std::printf("{\"seconds\": %.9g, \"calls\": %d}\n", seconds, calls);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_stable_kernels: %s\n", e.what());
    return 1;
  }
}
