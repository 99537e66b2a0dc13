// Google Benchmark: the fused multi-tensor AdamW over (a) the 161 parameter shapes of
// torchvision's resnet50 (25 557 032 parameters) and (b) 300 small tensors, fp32 and bf16, beside
// the same elements as one tensor (the bytes/s target) and a loop of single-tensor calls.
//   bench_multi_tensor --benchmark_filter='resnet50'
// Bytes counted per element: var, m, v read and written and grad read: 7 x the dtype's size.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/mantissa.h"

namespace {

// torchvision.models.resnet50(): the shapes of model.parameters(), in order.
const std::vector<std::vector<int64_t>> kResnet50 = {
    {64, 3, 7, 7},      {64},   {64},   {64, 64, 1, 1},    {64},   {64},
    {64, 64, 3, 3},     {64},   {64},   {256, 64, 1, 1},   {256},  {256},
    {256, 64, 1, 1},    {256},  {256},  {64, 256, 1, 1},   {64},   {64},
    {64, 64, 3, 3},     {64},   {64},   {256, 64, 1, 1},   {256},  {256},
    {64, 256, 1, 1},    {64},   {64},   {64, 64, 3, 3},    {64},   {64},
    {256, 64, 1, 1},    {256},  {256},  {128, 256, 1, 1},  {128},  {128},
    {128, 128, 3, 3},   {128},  {128},  {512, 128, 1, 1},  {512},  {512},
    {512, 256, 1, 1},   {512},  {512},  {128, 512, 1, 1},  {128},  {128},
    {128, 128, 3, 3},   {128},  {128},  {512, 128, 1, 1},  {512},  {512},
    {128, 512, 1, 1},   {128},  {128},  {128, 128, 3, 3},  {128},  {128},
    {512, 128, 1, 1},   {512},  {512},  {128, 512, 1, 1},  {128},  {128},
    {128, 128, 3, 3},   {128},  {128},  {512, 128, 1, 1},  {512},  {512},
    {256, 512, 1, 1},   {256},  {256},  {256, 256, 3, 3},  {256},  {256},
    {1024, 256, 1, 1},  {1024}, {1024}, {1024, 512, 1, 1}, {1024}, {1024},
    {256, 1024, 1, 1},  {256},  {256},  {256, 256, 3, 3},  {256},  {256},
    {1024, 256, 1, 1},  {1024}, {1024}, {256, 1024, 1, 1}, {256},  {256},
    {256, 256, 3, 3},   {256},  {256},  {1024, 256, 1, 1}, {1024}, {1024},
    {256, 1024, 1, 1},  {256},  {256},  {256, 256, 3, 3},  {256},  {256},
    {1024, 256, 1, 1},  {1024}, {1024}, {256, 1024, 1, 1}, {256},  {256},
    {256, 256, 3, 3},   {256},  {256},  {1024, 256, 1, 1}, {1024}, {1024},
    {256, 1024, 1, 1},  {256},  {256},  {256, 256, 3, 3},  {256},  {256},
    {1024, 256, 1, 1},  {1024}, {1024}, {512, 1024, 1, 1}, {512},  {512},
    {512, 512, 3, 3},   {512},  {512},  {2048, 512, 1, 1}, {2048}, {2048},
    {2048, 1024, 1, 1}, {2048}, {2048}, {512, 2048, 1, 1}, {512},  {512},
    {512, 512, 3, 3},   {512},  {512},  {2048, 512, 1, 1}, {2048}, {2048},
    {512, 2048, 1, 1},  {512},  {512},  {512, 512, 3, 3},  {512},  {512},
    {2048, 512, 1, 1},  {2048}, {2048}, {1000, 2048},      {1000},
};

std::vector<std::vector<int64_t>> small_tensors() {
  std::vector<std::vector<int64_t>> s;
  for (int k = 0; k < 300; ++k) s.push_back({1024 * (1 + k % 16)});  // 1K..16K, 2 586 624 in all
  return s;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Buffers for every parameter of a list, filled with ordinary values.
struct Model {
  mantissa::DType dtype;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<uint8_t>> var, m, v, grad;
  int64_t elements = 0;

  Model(mantissa::DType d, std::vector<std::vector<int64_t>> s) : dtype(d), shapes(std::move(s)) {
    for (const auto& shape : shapes) {
      const int64_t n = numel(shape);
      elements += n;
      for (auto* b : {&var, &m, &v, &grad}) {
        b->emplace_back(static_cast<std::size_t>(n) * mantissa::dtype_size(d));
        for (int64_t i = 0; i < n; ++i) {
          const float x = b == &v ? 1e-4f : 0.01f * static_cast<float>((i * 7919) % 201 - 100);
          mantissa::store_from_float(d, b->back().data(), static_cast<std::size_t>(i), x);
        }
      }
    }
  }
  mantissa::TensorView view(std::vector<uint8_t>& b, std::size_t k) {
    return mantissa::TensorView(b.data(), dtype, std::span<const int64_t>(shapes[k]));
  }
  std::vector<mantissa::AdamWParamTensors> params() {
    std::vector<mantissa::AdamWParamTensors> p;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      p.push_back({view(var[k], k), view(m[k], k), view(v[k], k), std::nullopt, view(grad[k], k),
                   std::nullopt, std::nullopt});
    }
    return p;
  }
};

void finish(benchmark::State& state, const Model& model) {
  const int64_t bpe = 7 * static_cast<int64_t>(mantissa::dtype_size(model.dtype));
  state.SetBytesProcessed(state.iterations() * model.elements * bpe);
  state.SetItemsProcessed(state.iterations() * model.elements);
  (void)mantissa::set_num_threads(0);
}

// The fused step over the whole list.
void multi(benchmark::State& state, mantissa::DType d, std::vector<std::vector<int64_t>> shapes,
           int threads) {
  (void)mantissa::set_num_threads(threads);
  Model model(d, std::move(shapes));
  const auto params = model.params();
  mantissa::MultiAdamWParams p;
  p.step = 10;
  for (auto _ : state) {
    if (!mantissa::multi_tensor_adam_w(params, p).ok()) state.SkipWithError("failed");
  }
  finish(state, model);
}

// One ApplyAdamWV2 call per parameter (one parallel region each).
void loop(benchmark::State& state, mantissa::DType d, std::vector<std::vector<int64_t>> shapes,
          int threads) {
  (void)mantissa::set_num_threads(threads);
  Model model(d, std::move(shapes));
  const auto params = model.params();
  int64_t step = 10;
  const mantissa::TensorView step_view(&step, mantissa::DType::kInt64, {1});
  for (auto _ : state) {
    for (const auto& q : params) {
      const mantissa::ApplyAdamWV2Tensors t{q.var, q.m, q.v, std::nullopt, q.grad, step_view};
      if (!mantissa::apply_adam_w_v2(t, {}).ok()) state.SkipWithError("failed");
    }
  }
  finish(state, model);
}

void register_all() {
  for (mantissa::DType d : {mantissa::DType::kFloat32, mantissa::DType::kBFloat16}) {
    const char* dt = mantissa::dtype_short_name(d);
    struct List {
      const char* name;
      std::vector<std::vector<int64_t>> shapes;
    };
    int64_t resnet_total = 0;
    for (const auto& s : kResnet50) resnet_total += numel(s);
    const List lists[] = {{"resnet50", kResnet50},
                          {"resnet50_as_one_tensor", {{resnet_total}}},
                          {"small300", small_tensors()},
                          {"small300_as_one_tensor", {{int64_t{2586624}}}}};
    for (const List& l : lists) {
      for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(
            fmt::format("MultiAdamW/{}/{}/threads:{}", l.name, dt, threads).c_str(), multi, d,
            l.shapes, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(
            fmt::format("LoopAdamWV2/{}/{}/threads:{}", l.name, dt, threads).c_str(), loop, d,
            l.shapes, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
