// Google Benchmark: operators and the bandwidth probe, reporting bytes/s and elements/s.
//   bench_mantissa --benchmark_filter='SGD/fp32'      (names: op/dtype/variant/elements/threads)
// Bytes counted are the bytes each variant moves per element (bench_cases.h: Traffic), so the
// op and the probe with the same traffic are directly comparable.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <memory>
#include <set>
#include <string>

#include "mantissa/bench_cases.h"
#include "mantissa/mantissa.h"

namespace {

using mantissa::bench::OpCase;

const int64_t kSizes[] = {4096, 65536, 1 << 20, 16 << 20, 0};  // 0: out of cache, >= 1 GB/call

void run_op(benchmark::State& state, const OpCase& c, int64_t n, int threads) {
  if (!mantissa::set_num_threads(threads).ok()) state.SkipWithError("bad thread count");
  auto call = mantissa::bench::prepare(c, n);
  call->run();
  for (auto _ : state) call->run();
  const int64_t bpe = c.traffic.bytes_per_element(mantissa::dtype_size(c.dtype));
  state.SetBytesProcessed(state.iterations() * n * bpe);
  state.SetItemsProcessed(state.iterations() * n);
  (void)mantissa::set_num_threads(0);
}

void run_probe(benchmark::State& state, mantissa::bench::Traffic traffic, int64_t stream_bytes,
               int threads) {
  mantissa::bench::Probe probe(traffic, stream_bytes);
  probe.run(threads);
  for (auto _ : state) probe.run(threads);
  state.SetBytesProcessed(state.iterations() * probe.bytes_per_pass());
}

void run_small(benchmark::State& state, std::unique_ptr<mantissa::bench::PreparedCall> call) {
  (void)mantissa::set_num_threads(1);
  for (auto _ : state) call->run();
  state.SetItemsProcessed(state.iterations());
  (void)mantissa::set_num_threads(0);
}

void register_all() {
  std::set<std::string> probes;
  for (const OpCase& c : mantissa::bench::elementwise_cases()) {
    const int64_t bpe = c.traffic.bytes_per_element(mantissa::dtype_size(c.dtype));
    for (int64_t size : kSizes) {
      const int64_t n = mantissa::bench::case_elements(
          c, size > 0 ? size : mantissa::bench::out_of_cache_elements(bpe));
      for (int threads : {1, 2}) {
        const std::string name =
            fmt::format("{}/{}/{}/{}/threads:{}", c.op, mantissa::dtype_short_name(c.dtype),
                        c.variant, n, threads);
        benchmark::RegisterBenchmark(name.c_str(), run_op, c, n, threads)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
        const int64_t stream_bytes = n * static_cast<int64_t>(mantissa::dtype_size(c.dtype));
        const std::string probe =
            fmt::format("Probe/rmw{}_ro{}/{}B/threads:{}", c.traffic.rmw_streams,
                        c.traffic.ro_streams, stream_bytes, threads);
        if (!probes.insert(probe).second) continue;  // same streams and size: register once
        benchmark::RegisterBenchmark(probe.c_str(), run_probe, c.traffic, stream_bytes, threads)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
  benchmark::RegisterBenchmark("Overhead/AmpUpdateScale/cpp", [](benchmark::State& s) {
    run_small(s, mantissa::bench::prepare_amp_update_scale_cpp());
  });
  benchmark::RegisterBenchmark(
      "Overhead/AmpUpdateScale/aclnn_both_phases",
      [](benchmark::State& s) { run_small(s, mantissa::bench::prepare_amp_update_scale_aclnn()); });
  benchmark::RegisterBenchmark("Overhead/SGD/fp32/momentum/1024", [](benchmark::State& s) {
    run_small(
        s, mantissa::bench::prepare({"SGD", mantissa::DType::kFloat32, "momentum", {2, 2}}, 1024));
  });
  benchmark::RegisterBenchmark("Overhead/ApplyAdamD/fp32/default/1024", [](benchmark::State& s) {
    run_small(s, mantissa::bench::prepare(
                     {"ApplyAdamD", mantissa::DType::kFloat32, "default", {3, 1}}, 1024));
  });
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
