// Matrix products side by side: mantissa, OpenBLAS (Debian's libopenblas-pthread, cblas_sgemm and
// cblas_sbgemm) and oneDNN (Debian's libdnnl 2.6, the matmul primitive) on the same shapes, the
// same operands and the same thread count, next to `peak`: a register-only FMA probe on the SIMD
// target mantissa dispatches to. Every benchmark reports "flops" as a rate (FLOP/s) and its peer
// as the label; scripts/bench_matmul.py runs this once per thread count and tabulates it.
//
//   bench_matmul --threads=N [--large] [Google Benchmark flags]
//   names: matmul/<fp32|bf16>/<mantissa|openblas|onednn>/<shape>  and  peak/fp32/fma/<T>thread(s)
//   shapes: MxKxN (self [M,K] @ mat2 [K,N]), MxKxN_transA / _transB (that operand a transposed
//   view, read in place), attentionBxMxKxN (B products, batch_matmul)
//
// --threads=N sets mantissa's threads, OpenBLAS's (openblas_set_num_threads) and the OpenMP
// runtime oneDNN runs on (omp_set_num_threads, looked up in the process as oneDNN brought it);
// the script also exports OMP_NUM_THREADS and OPENBLAS_NUM_THREADS so that no runtime starts more
// threads than that. --large adds the 4096^3 square; --print-context prints the context (BLAS
// kernels, oneDNN version and runtime, SIMD targets) as one JSON object and runs nothing. bf16
// benchmarks multiply bf16 operands into an fp32 out. Each benchmark checks 32 entries of its out
// against an fp64 product before timing and is skipped with an error when they disagree.
#ifndef MANTISSA_BENCH_MATMUL_CONSTANTS_
#define MANTISSA_BENCH_MATMUL_CONSTANTS_
#include <cstddef>

namespace mantissa_bench {
// Independent accumulator vectors of the FMA probe.
constexpr std::size_t kProbeAccumulators = 12;
}  // namespace mantissa_bench
#endif  // MANTISSA_BENCH_MATMUL_CONSTANTS_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench_matmul.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa_bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// `iterations` rounds of one FMA into each of kProbeAccumulators independent vectors: no memory
// traffic, enough chains in flight to cover the FMA latency on every port. Returns their sum so
// that nothing is optimised away.
float FmaProbe(int64_t iterations) {
  const hn::ScalableTag<float> d;
  const auto mul = hn::Set(d, 0.99999994f);
  const auto add = hn::Set(d, 1e-7f);
  hn::Vec<decltype(d)> acc[kProbeAccumulators];
#pragma GCC unroll 16
  for (size_t j = 0; j < kProbeAccumulators; ++j) acc[j] = hn::Set(d, static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (size_t j = 0; j < kProbeAccumulators; ++j) acc[j] = hn::MulAdd(acc[j], mul, add);
  }
  auto sum = acc[0];
#pragma GCC unroll 16
  for (size_t j = 1; j < kProbeAccumulators; ++j) sum = hn::Add(sum, acc[j]);
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

// fp32 lanes of a vector on this target.
size_t FmaProbeLanes() { return hn::Lanes(hn::ScalableTag<float>()); }

// Highway's name of this target.
const char* FmaProbeTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace mantissa_bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "mantissa/mantissa.h"

#ifndef MANTISSA_BENCH_OPENBLAS
#define MANTISSA_BENCH_OPENBLAS 0
#endif
#ifndef MANTISSA_BENCH_OPENBLAS_SBGEMM
#define MANTISSA_BENCH_OPENBLAS_SBGEMM 0
#endif
#ifndef MANTISSA_BENCH_ONEDNN
#define MANTISSA_BENCH_ONEDNN 0
#endif
#if MANTISSA_BENCH_OPENBLAS
#include <cblas.h>
#endif
#if MANTISSA_BENCH_ONEDNN
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace mantissa_bench {

HWY_EXPORT(FmaProbe);
HWY_EXPORT(FmaProbeLanes);
HWY_EXPORT(FmaProbeTarget);

namespace {

// --- Options ---------------------------------------------------------------------------------

int g_threads = 1;
bool g_large = false;
bool g_print_context = false;

// Removes --threads=N, --large and --print-context from argv (before Google Benchmark sees them).
void parse_own_flags(int* argc, char** argv) {
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      g_threads = std::atoi(arg.c_str() + std::strlen("--threads="));
      if (g_threads < 1) {
        std::fprintf(stderr, "bench_matmul: --threads wants a count >= 1, got '%s'\n", argv[i]);
        std::exit(2);
      }
    } else if (arg == "--large") {
      g_large = true;
    } else if (arg == "--print-context") {
      g_print_context = true;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  argv[out] = nullptr;
}

// --- Shapes and operands -----------------------------------------------------------------------

struct Shape {
  std::string name;
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool batched = false;  // rank-3 operands, batch_matmul
  bool trans_a = false;  // self stored as [k, m], passed as its transposed view
  bool trans_b = false;  // mat2 stored as [n, k], passed as its transposed view
  double flops() const { return 2.0 * static_cast<double>(batch * m * n * k); }
};

Shape square(int64_t s) {
  return {std::to_string(s) + "x" + std::to_string(s) + "x" + std::to_string(s), 1, s, s, s};
}

Shape plain(int64_t m, int64_t k, int64_t n) {
  return {std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n), 1, m, k, n};
}

Shape attention(int64_t b, int64_t m, int64_t k, int64_t n) {
  Shape s{"attention" + std::to_string(b) + "x" + std::to_string(m) + "x" + std::to_string(k) +
              "x" + std::to_string(n),
          b, m, k, n};
  s.batched = true;
  return s;
}

std::vector<Shape> shapes() {
  std::vector<Shape> list;
  for (int64_t s : {256, 512, 1024, 2048}) list.push_back(square(s));
  if (g_large) list.push_back(square(4096));
  list.push_back(plain(4096, 128, 384));  // transformer: QKV-like projection
  list.push_back(plain(4096, 512, 128));
  list.push_back(plain(4096, 384, 128));         // backward-like
  list.push_back(attention(128, 128, 32, 128));  // scores: q @ k^T per head
  list.push_back(attention(128, 128, 128, 32));  // context: p @ v per head
  Shape ta = plain(1024, 1024, 1024);
  ta.name += "_transA";
  ta.trans_a = true;
  list.push_back(ta);
  Shape tb = plain(1024, 1024, 1024);
  tb.name += "_transB";
  tb.trans_b = true;
  list.push_back(tb);
  return list;
}

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

template <class T>
using Aligned = std::unique_ptr<T[], FreeDeleter>;

template <class T>
Aligned<T> allocate(int64_t count) {
  std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
  bytes = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  return Aligned<T>(static_cast<T*>(p));
}

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// fp32 -> bf16, to nearest with ties to even (the values here are finite).
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) { return bits_to_float(static_cast<uint32_t>(h) << 16); }

// The operands of one shape as stored (a transposed operand stored transposed), fp32 and bf16
// (the bf16 operands are the fp32 ones rounded), and an fp32 out. Built once per shape.
struct Operands {
  int64_t a_count = 0, b_count = 0, c_count = 0;
  Aligned<float> a32, b32, c;
  Aligned<uint16_t> a16, b16;
};

Operands& operands(const Shape& s) {
  static std::map<std::string, std::unique_ptr<Operands>> cache;
  auto& slot = cache[s.name];
  if (slot) return *slot;
  auto ops = std::make_unique<Operands>();
  ops->a_count = s.batch * s.m * s.k;
  ops->b_count = s.batch * s.k * s.n;
  ops->c_count = s.batch * s.m * s.n;
  ops->a32 = allocate<float>(ops->a_count);
  ops->b32 = allocate<float>(ops->b_count);
  ops->c = allocate<float>(ops->c_count);
  ops->a16 = allocate<uint16_t>(ops->a_count);
  ops->b16 = allocate<uint16_t>(ops->b_count);
  std::mt19937 rng(0x6d61746du);  // fixed: the same values in every run
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < ops->a_count; ++i) {
    ops->a32[i] = dist(rng);
    ops->a16[i] = to_bf16(ops->a32[i]);
  }
  for (int64_t i = 0; i < ops->b_count; ++i) {
    ops->b32[i] = dist(rng);
    ops->b16[i] = to_bf16(ops->b32[i]);
  }
  std::fill(ops->c.get(), ops->c.get() + ops->c_count, 0.0f);
  slot = std::move(ops);
  return *slot;
}

// Element (b, i, j) of the logical self [b, m, k] and mat2 [b, k, n], from their storage.
int64_t a_index(const Shape& s, int64_t b, int64_t i, int64_t p) {
  return b * s.m * s.k + (s.trans_a ? p * s.m + i : i * s.k + p);
}
int64_t b_index(const Shape& s, int64_t b, int64_t p, int64_t j) {
  return b * s.k * s.n + (s.trans_b ? j * s.k + p : p * s.n + j);
}

// Compares 32 entries of out with fp64 products of the operands. "" when they agree.
std::string check_out(const Shape& s, const Operands& ops, bool bf16) {
  std::mt19937 rng(12345);
  for (int t = 0; t < 32; ++t) {
    const int64_t b = static_cast<int64_t>(rng() % static_cast<uint32_t>(s.batch));
    const int64_t i = static_cast<int64_t>(rng() % static_cast<uint32_t>(s.m));
    const int64_t j = static_cast<int64_t>(rng() % static_cast<uint32_t>(s.n));
    double ref = 0, mag = 0;
    for (int64_t p = 0; p < s.k; ++p) {
      const int64_t ia = a_index(s, b, i, p), ib = b_index(s, b, p, j);
      const double x = bf16 ? from_bf16(ops.a16[ia]) : ops.a32[ia];
      const double y = bf16 ? from_bf16(ops.b16[ib]) : ops.b32[ib];
      ref += x * y;
      mag += std::fabs(x * y);
    }
    const double got = ops.c[(b * s.m + i) * s.n + j];
    if (!(std::fabs(got - ref) <= 1e-4 * mag + 1e-6)) {
      char msg[200];
      std::snprintf(msg, sizeof msg, "wrong result at [%lld, %lld, %lld]: %.9g, expected %.9g",
                    static_cast<long long>(b), static_cast<long long>(i), static_cast<long long>(j),
                    got, ref);
      return msg;
    }
  }
  return "";
}

// One prepared call of a peer on one shape: `run` computes out (throws on failure).
struct Prepared {
  std::function<void()> run;
  std::string label;  // the peer, and what it chose where it says (oneDNN's implementation)
};

// --- mantissa --------------------------------------------------------------------------------

Prepared prepare_mantissa(const Shape& s, Operands& ops, bool bf16) {
  using mantissa::DType;
  using mantissa::TensorView;
  const DType in = bf16 ? DType::kBFloat16 : DType::kFloat32;
  void* a = bf16 ? static_cast<void*>(ops.a16.get()) : static_cast<void*>(ops.a32.get());
  void* b = bf16 ? static_cast<void*>(ops.b16.get()) : static_cast<void*>(ops.b32.get());
  Prepared p;
  p.label = "mantissa";
  if (s.batched) {
    const mantissa::BatchMatMulTensors t{
        TensorView(a, in, {s.batch, s.m, s.k}), TensorView(b, in, {s.batch, s.k, s.n}),
        TensorView(ops.c.get(), DType::kFloat32, {s.batch, s.m, s.n})};
    p.run = [t] {
      const mantissa::Status st = mantissa::batch_matmul(t);
      if (!st.ok()) throw std::runtime_error(st.message());
    };
    return p;
  }
  const int64_t a_dims[2] = {s.m, s.k}, b_dims[2] = {s.k, s.n};
  const int64_t a_strides[2] = {s.trans_a ? 1 : s.k, s.trans_a ? s.m : 1};
  const int64_t b_strides[2] = {s.trans_b ? 1 : s.n, s.trans_b ? s.k : 1};
  const mantissa::MatmulTensors t{TensorView(a, in, a_dims, a_strides),
                                  TensorView(b, in, b_dims, b_strides),
                                  TensorView(ops.c.get(), DType::kFloat32, {s.m, s.n})};
  p.run = [t] {
    const mantissa::Status st = mantissa::matmul(t);
    if (!st.ok()) throw std::runtime_error(st.message());
  };
  return p;
}

// --- OpenBLAS --------------------------------------------------------------------------------

#if MANTISSA_BENCH_OPENBLAS
Prepared prepare_openblas(const Shape& s, Operands& ops, bool bf16) {
  const CBLAS_TRANSPOSE ta = s.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = s.trans_b ? CblasTrans : CblasNoTrans;
  const blasint m = static_cast<blasint>(s.m), n = static_cast<blasint>(s.n),
                k = static_cast<blasint>(s.k);
  const blasint lda = static_cast<blasint>(s.trans_a ? s.m : s.k);
  const blasint ldb = static_cast<blasint>(s.trans_b ? s.k : s.n);
  const int64_t batch = s.batch, a_step = s.m * s.k, b_step = s.k * s.n, c_step = s.m * s.n;
  float* c = ops.c.get();
  Prepared p;
  p.label = "openblas";
  if (!bf16) {
    const float* a = ops.a32.get();
    const float* b = ops.b32.get();
    // A batch is a loop of sgemm calls (OpenBLAS 0.3.21 has no cblas_sgemm_batch).
    p.run = [=] {
      for (int64_t i = 0; i < batch; ++i) {
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a + i * a_step, lda, b + i * b_step, ldb,
                    0.0f, c + i * c_step, n);
      }
    };
    return p;
  }
#if MANTISSA_BENCH_OPENBLAS_SBGEMM
  const bfloat16* a = ops.a16.get();
  const bfloat16* b = ops.b16.get();
  p.run = [=] {
    for (int64_t i = 0; i < batch; ++i) {
      cblas_sbgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a + i * a_step, lda, b + i * b_step, ldb,
                   0.0f, c + i * c_step, n);
    }
  };
#endif
  return p;
}
#endif

// --- oneDNN ----------------------------------------------------------------------------------

#if MANTISSA_BENCH_ONEDNN
dnnl::engine& dnnl_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& dnnl_stream() {
  static dnnl::stream strm(dnnl_engine());
  return strm;
}

// The primitive is created here, once; the call is execute + wait.
Prepared prepare_onednn(const Shape& s, Operands& ops, bool bf16) {
  using dnnl::memory;
  const memory::data_type in = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  memory::dims a_dims, b_dims, c_dims, a_strides, b_strides, c_strides;
  if (s.batched) {
    a_dims = {s.batch, s.m, s.k}, a_strides = {s.m * s.k, s.k, 1};
    b_dims = {s.batch, s.k, s.n}, b_strides = {s.k * s.n, s.n, 1};
    c_dims = {s.batch, s.m, s.n}, c_strides = {s.m * s.n, s.n, 1};
  } else {
    a_dims = {s.m, s.k}, a_strides = {s.trans_a ? 1 : s.k, s.trans_a ? s.m : 1};
    b_dims = {s.k, s.n}, b_strides = {s.trans_b ? 1 : s.n, s.trans_b ? s.k : 1};
    c_dims = {s.m, s.n}, c_strides = {s.n, 1};
  }
  const memory::desc a_md(a_dims, in, a_strides), b_md(b_dims, in, b_strides),
      c_md(c_dims, memory::data_type::f32, c_strides);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), dnnl_engine());
  const dnnl::matmul prim(pd);
  void* a = bf16 ? static_cast<void*>(ops.a16.get()) : static_cast<void*>(ops.a32.get());
  void* b = bf16 ? static_cast<void*>(ops.b16.get()) : static_cast<void*>(ops.b32.get());
  const std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(a_md, dnnl_engine(), a)},
      {DNNL_ARG_WEIGHTS, memory(b_md, dnnl_engine(), b)},
      {DNNL_ARG_DST, memory(c_md, dnnl_engine(), ops.c.get())}};
  Prepared p;
  p.label = std::string("onednn ") + pd.impl_info_str();
  p.run = [prim, args] {
    prim.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  };
  return p;
}
#endif

// --- Benchmarks ------------------------------------------------------------------------------

// Threads of another runtime may still be spinning after its last call (OpenBLAS's for up to
// 2^28 cycles, OpenMP's a while): pause when the peer changes, outside the timing.
void settle_if_peer_changed(const std::string& peer) {
  static std::string last;
  if (peer != last) {
    last = peer;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

enum class Peer { kMantissa, kOpenBlas, kOneDnn };

const char* peer_name(Peer p) {
  switch (p) {
    case Peer::kMantissa: return "mantissa";
    case Peer::kOpenBlas: return "openblas";
    case Peer::kOneDnn: return "onednn";
  }
  return "?";
}

bool peer_available(Peer p, bool bf16) {
  switch (p) {
    case Peer::kMantissa: return true;
    case Peer::kOpenBlas:
      return MANTISSA_BENCH_OPENBLAS != 0 && (!bf16 || MANTISSA_BENCH_OPENBLAS_SBGEMM != 0);
    case Peer::kOneDnn: return MANTISSA_BENCH_ONEDNN != 0;
  }
  return false;
}

void run_matmul(benchmark::State& state, const Shape& s, Peer peer, bool bf16) {
  settle_if_peer_changed(peer_name(peer));
  Prepared p;
  try {
    Operands& ops = operands(s);
    switch (peer) {
      case Peer::kMantissa: p = prepare_mantissa(s, ops, bf16); break;
      case Peer::kOpenBlas:
#if MANTISSA_BENCH_OPENBLAS
        p = prepare_openblas(s, ops, bf16);
#endif
        break;
      case Peer::kOneDnn:
#if MANTISSA_BENCH_ONEDNN
        p = prepare_onednn(s, ops, bf16);
#endif
        break;
    }
    if (!p.run) {
      state.SkipWithError("peer not built");
      return;
    }
    std::fill(ops.c.get(), ops.c.get() + ops.c_count, std::nanf(""));
    p.run();  // warm up (pages, packing buffers, thread pools), then check
    const std::string wrong = check_out(s, ops, bf16);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) p.run();
  state.SetLabel(p.label);
  state.counters["flops"] =
      benchmark::Counter(s.flops(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = g_threads;
}

std::atomic<float> g_probe_sink{0.0f};

// The FMA probe on `threads` threads at once (std::threads, the caller waiting), each doing the
// same rounds; FLOP/s of all of them together.
void run_peak(benchmark::State& state, int threads) {
  settle_if_peer_changed("peak");
  constexpr int64_t kRounds = int64_t{1} << 22;  // per thread and iteration: milliseconds
  auto probe = HWY_DYNAMIC_DISPATCH(FmaProbe);
  const double lanes = static_cast<double>(HWY_DYNAMIC_DISPATCH(FmaProbeLanes)());
  for (auto _ : state) {
    if (threads == 1) {
      g_probe_sink.store(probe(kRounds), std::memory_order_relaxed);
      continue;
    }
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([probe] { g_probe_sink.store(probe(kRounds), std::memory_order_relaxed); });
    }
    for (auto& th : pool) th.join();
  }
  state.SetLabel(std::string("peak ") + HWY_DYNAMIC_DISPATCH(FmaProbeTarget)());
  state.counters["flops"] =
      benchmark::Counter(2.0 * lanes * static_cast<double>(kProbeAccumulators) *
                             static_cast<double>(kRounds) * threads,
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}

// --- Threads and context ---------------------------------------------------------------------

// The run's context: Google Benchmark's (in its report) and ours (--print-context).
std::vector<std::pair<std::string, std::string>>& context() {
  static std::vector<std::pair<std::string, std::string>> entries;
  return entries;
}

void add_context(const std::string& key, const std::string& value) {
  benchmark::AddCustomContext(key, value);
  context().emplace_back(key, value);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// One JSON object of the context, for scripts (which BLAS kernels, which SIMD target).
void print_context() {
  std::string out = "{";
  for (const auto& [key, value] : context()) {
    out += (out.size() > 1 ? ",\n " : "\n ") + json_string(key) + ": " + json_string(value);
  }
  std::printf("%s\n}\n", out.c_str());
}

// The OpenMP runtime oneDNN was linked with, found in the process (no OpenMP of our own: a second
// runtime would not be the one oneDNN asks). nullptr where there is none.
template <class Fn>
Fn omp_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

void set_threads_and_context() {
  const mantissa::Status st = mantissa::set_num_threads(g_threads);
  if (!st.ok()) {
    std::fprintf(stderr, "bench_matmul: %s\n", st.message().c_str());
    std::exit(2);
  }
  add_context("bench_threads", std::to_string(g_threads));
  add_context("mantissa_version", mantissa::version());
  add_context("mantissa_threads", std::to_string(mantissa::num_threads()));
  // simd_target() initialises mantissa's runtime, which picks the Highway target (shared with
  // this program through libhwy) the probe below dispatches to as well.
  add_context("mantissa_simd_target", mantissa::simd_target());
  add_context("fma_probe_target", HWY_DYNAMIC_DISPATCH(FmaProbeTarget)());
  add_context("fma_probe_lanes", std::to_string(HWY_DYNAMIC_DISPATCH(FmaProbeLanes)()));
  add_context("fma_probe_accumulators", std::to_string(kProbeAccumulators));
  add_context("mantissa_cpu_features", mantissa::cpu_features());
#if MANTISSA_BENCH_OPENBLAS
  openblas_set_num_threads(g_threads);
  add_context("openblas_config", openblas_get_config());
  add_context("openblas_corename", openblas_get_corename());
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  add_context("openblas_coretype_env", coretype != nullptr ? coretype : "");
  add_context("openblas_threads", std::to_string(openblas_get_num_threads()));
  const int par = openblas_get_parallel();
  add_context("openblas_parallel", par == 0 ? "sequential" : par == 1 ? "pthreads" : "openmp");
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) != 0 && info.dli_fname != nullptr) {
    add_context("openblas_library", info.dli_fname);
  }
  add_context("openblas_sbgemm", MANTISSA_BENCH_OPENBLAS_SBGEMM ? "yes" : "no");
#else
  add_context("openblas", "not built");
#endif
#if MANTISSA_BENCH_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  std::string version =
      std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  if (v->hash != nullptr && *v->hash != '\0' && std::strcmp(v->hash, "N/A") != 0) {
    version += std::string(" (") + v->hash + ")";
  }
  add_context("onednn_version", version);
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP          ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB        ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ        ? "sequential"
                        : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "threadpool"
                                                                    : "other";
  add_context("onednn_cpu_runtime", runtime);
  if (v->cpu_runtime == DNNL_RUNTIME_OMP) {
    using SetFn = void (*)(int);
    using GetFn = int (*)();
    auto set = omp_symbol<SetFn>("omp_set_num_threads");
    auto get = omp_symbol<GetFn>("omp_get_max_threads");
    if (set != nullptr) set(g_threads);
    add_context("onednn_omp_max_threads", get != nullptr ? std::to_string(get()) : "unknown");
    Dl_info omp_info;
    if (set != nullptr && dladdr(reinterpret_cast<void*>(set), &omp_info) != 0 &&
        omp_info.dli_fname != nullptr) {
      add_context("onednn_omp_library", omp_info.dli_fname);
    }
  }
  const char* isa = "other";
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: isa = "avx512_core_amx"; break;
    case dnnl::cpu_isa::avx512_core_bf16: isa = "avx512_core_bf16"; break;
    case dnnl::cpu_isa::avx512_core_vnni: isa = "avx512_core_vnni"; break;
    case dnnl::cpu_isa::avx512_core: isa = "avx512_core"; break;
    case dnnl::cpu_isa::avx2_vnni: isa = "avx2_vnni"; break;
    case dnnl::cpu_isa::avx2: isa = "avx2"; break;
    default: break;
  }
  add_context("onednn_effective_isa", isa);
#else
  add_context("onednn", "not built");
#endif
}

void register_all() {
  std::set<int> peak_threads{1, 2, g_threads};
  for (int t : peak_threads) {
    const std::string name = "peak/fp32/fma/" + std::to_string(t) + (t == 1 ? "thread" : "threads");
    benchmark::RegisterBenchmark(name.c_str(), run_peak, t)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  // Peer by peer, so that one runtime's idle threads meet another's work only at the switch.
  const std::vector<Shape> list = shapes();
  for (Peer peer : {Peer::kMantissa, Peer::kOpenBlas, Peer::kOneDnn}) {
    for (bool bf16 : {false, true}) {
      if (!peer_available(peer, bf16)) continue;
      for (const Shape& s : list) {
        const std::string name = std::string("matmul/") + (bf16 ? "bf16" : "fp32") + "/" +
                                 peer_name(peer) + "/" + s.name;
        benchmark::RegisterBenchmark(name.c_str(), run_matmul, s, peer, bf16)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace mantissa_bench

int main(int argc, char** argv) {
  mantissa_bench::parse_own_flags(&argc, argv);
  mantissa_bench::set_threads_and_context();
  if (mantissa_bench::g_print_context) {
    mantissa_bench::print_context();
    return 0;
  }
  mantissa_bench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#endif  // HWY_ONCE
