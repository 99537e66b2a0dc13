// `mantissa bench`: times every element-wise operator variant and the bandwidth probe with the
// same access pattern, at sizes in cache and far out of it, and the per-call overhead of tiny
// calls. Prints a table; --json writes the records for scripts/bench_side_by_side.py.
#include "mantissa/bench_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/bench_cases.h"
#include "mantissa/mantissa.h"

namespace mantissa::tool {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::vector<int> threads{1, 2};
  std::vector<int64_t> sizes{4096, 65536, 1 << 20, 16 << 20, 0};  // 0: out of cache (>= 1 GB)
  std::string op_filter, dtype_filter, json_path;
  double min_seconds = 0.3;
  // --probe RMW,RO: only the probe, with that many read-modify-write and read-only streams of
  // each size in `sizes` (bytes per stream; 0: out of cache, at least 1 GB per pass).
  std::vector<int> probe;
};

// Calls per timed sample so that one sample lasts at least ~1 ms (tiny calls are timed in
// batches, big ones one by one).
template <class F>
int64_t batch_for(F&& fn) {
  fn();  // warm-up: first touch, thread start-up
  int64_t batch = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < batch; ++i) fn();
    if (std::chrono::duration<double>(Clock::now() - t0).count() >= 1e-3 || batch >= (1 << 20)) {
      return batch;
    }
    batch *= 4;
  }
}

template <class F>
double sample(F&& fn, int64_t batch) {
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < batch; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(batch);
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Median seconds per call of fn, over samples filling min_seconds (at least 5 samples).
template <class F>
double time_per_call(F&& fn, double min_seconds) {
  const int64_t batch = batch_for(fn);
  std::vector<double> samples;
  double total = 0.0;
  while (samples.size() < 5 || (total < min_seconds && samples.size() < 400)) {
    samples.push_back(sample(fn, batch));
    total += samples.back() * static_cast<double>(batch);
  }
  return median(samples);
}

// The operator and the probe timed in alternation (A B A B ...), so that drifts of the machine's
// memory bandwidth (other tenants, frequency) hit both alike; medians of each. One untimed call
// before each sample restores that side's cache state (the other side's buffers evicted it), so
// sizes that fit in cache are timed warm, as a training loop would run them.
template <class A, class B>
std::pair<double, double> time_side_by_side(A&& a, B&& b, double min_seconds) {
  const int64_t batch_a = batch_for(a), batch_b = batch_for(b);
  std::vector<double> sa, sb;
  double total = 0.0;
  while (sa.size() < 5 || (total < 2 * min_seconds && sa.size() < 400)) {
    a();
    sa.push_back(sample(a, batch_a));
    b();
    sb.push_back(sample(b, batch_b));
    total += sa.back() * static_cast<double>(batch_a) + sb.back() * static_cast<double>(batch_b);
  }
  return {median(sa), median(sb)};
}

// Writes {"version", "simd_target", "records"} to path (nothing when path is empty); false when
// the file cannot be written.
bool write_records(const std::string& path, const nlohmann::json& records) {
  if (path.empty()) return true;
  std::ofstream out(path);
  out << nlohmann::json{{"version", version()},
                        {"simd_target", simd_target()},
                        {"records", records}}
             .dump(1)
      << "\n";
  out.flush();  // a full disk shows at the flush, not at the buffered write
  if (!out) {
    fmt::print(stderr, "mantissa bench: cannot write {}\n", path);
    return false;
  }
  return true;
}

// `mantissa bench --probe RMW,RO`: the probe alone, for scripts that time other libraries'
// calls against the machine's bandwidth with the same access pattern.
int run_probe(const BenchOptions& o) {
  if (o.probe.size() != 2 || o.probe[0] < 0 || o.probe[0] > 5 || o.probe[1] < 0 || o.probe[1] > 4 ||
      o.probe[0] + o.probe[1] == 0) {
    fmt::print(stderr,
               "mantissa bench: --probe takes RMW,RO: 0..5 read-modify-write and 0..4 read-only "
               "streams, at least one\n");
    return 2;
  }
  const bench::Traffic traffic{o.probe[0], o.probe[1]};
  nlohmann::json records = nlohmann::json::array();
  fmt::print("{:<10} {:>14} {:>3} {:>10} {:>10}\n", "streams", "bytes/stream", "thr", "time",
             "GB/s");
  for (int64_t size : o.sizes) {
    if (size < 0) {
      fmt::print(stderr, "mantissa bench: --sizes must not be negative (got {})\n", size);
      return 2;
    }
    // Bytes per stream: out of cache means the same bytes an fp32 operator case would move.
    const int64_t bytes =
        size > 0 ? size : bench::out_of_cache_elements(traffic.bytes_per_element(4)) * 4;
    bench::Probe probe(traffic, bytes);
    for (int threads : o.threads) {
      if (!set_num_threads(threads).ok()) continue;
      const double seconds = time_per_call([&] { probe.run(threads); }, o.min_seconds);
      const double gbps = static_cast<double>(probe.bytes_per_pass()) / seconds / 1e9;
      fmt::print("{:<10} {:>14} {:>3} {:>8.3f}ms {:>10.2f}\n",
                 fmt::format("{} rmw {} ro", traffic.rmw_streams, traffic.ro_streams), bytes,
                 threads, seconds * 1e3, gbps);
      std::fflush(stdout);
      records.push_back({{"op", "probe"},
                         {"rmw_streams", traffic.rmw_streams},
                         {"ro_streams", traffic.ro_streams},
                         {"bytes_per_stream", bytes},
                         {"threads", threads},
                         {"seconds", seconds},
                         {"probe_gbps", gbps}});
    }
  }
  (void)set_num_threads(0);
  return write_records(o.json_path, records) ? 0 : 1;
}

int run_bench(const BenchOptions& o) {
  if (!o.probe.empty()) return run_probe(o);
  nlohmann::json records = nlohmann::json::array();
  fmt::print("{}, SIMD target {}, hardware threads {}\n", version(), simd_target(), num_threads());
  fmt::print("{:<11} {:<5} {:<22} {:>10} {:>3} {:>10} {:>8} {:>9} {:>10} {:>7}\n", "op", "dtype",
             "variant", "elements", "thr", "time", "GB/s", "Gelem/s", "probe GB/s", "%probe");
  for (const bench::OpCase& c : bench::elementwise_cases()) {
    if (!o.op_filter.empty() && c.op != o.op_filter) continue;
    if (!o.dtype_filter.empty() && dtype_short_name(c.dtype) != o.dtype_filter) continue;
    const int64_t bpe = c.traffic.bytes_per_element(dtype_size(c.dtype));
    for (int64_t size : o.sizes) {
      const int64_t n =
          bench::case_elements(c, size > 0 ? size : bench::out_of_cache_elements(bpe));
      auto call = bench::prepare(c, n);
      // The probe moves the same bytes over the same streams (fp32 arrays of equal byte size).
      bench::Probe probe(c.traffic, n * static_cast<int64_t>(dtype_size(c.dtype)));
      for (int threads : o.threads) {
        if (!set_num_threads(threads).ok()) continue;
        const auto [seconds, probe_seconds] =
            time_side_by_side([&] { call->run(); }, [&] { probe.run(threads); }, o.min_seconds);
        const double probe_gbps = static_cast<double>(probe.bytes_per_pass()) / probe_seconds / 1e9;
        const double gbps = static_cast<double>(n * bpe) / seconds / 1e9;
        const double ratio = gbps / probe_gbps;
        fmt::print(
            "{:<11} {:<5} {:<22} {:>10} {:>3} {:>8.3f}ms {:>8.2f} {:>9.3f} {:>10.2f} {:>6.0f}%\n",
            c.op, dtype_short_name(c.dtype), c.variant, n, threads, seconds * 1e3, gbps,
            static_cast<double>(n) / seconds / 1e9, probe_gbps, ratio * 100.0);
        std::fflush(stdout);
        records.push_back({{"op", c.op},
                           {"dtype", dtype_short_name(c.dtype)},
                           {"variant", c.variant},
                           {"elements", n},
                           {"threads", threads},
                           {"seconds", seconds},
                           {"bytes_per_element", bpe},
                           {"gbps", gbps},
                           {"probe_gbps", probe_gbps}});
      }
    }
  }
  (void)set_num_threads(0);

  fmt::print("\nper-call overhead (median):\n");
  auto overhead = [&](const char* name, bench::PreparedCall& call) {
    const double seconds = time_per_call([&] { call.run(); }, o.min_seconds);
    fmt::print("  {:<44} {:>9.1f} ns\n", name, seconds * 1e9);
    records.push_back({{"op", name}, {"elements", 1}, {"threads", 1}, {"seconds", seconds}});
  };
  (void)set_num_threads(1);
  auto amp_cpp = bench::prepare_amp_update_scale_cpp();
  overhead("AmpUpdateScale, 1 element, C++ API", *amp_cpp);
  auto amp_aclnn = bench::prepare_amp_update_scale_aclnn();
  overhead("AmpUpdateScale, 1 element, both aclnn phases", *amp_aclnn);
  auto sgd_1k = bench::prepare({"SGD", DType::kFloat32, "momentum", {2, 2}}, 1024);
  overhead("SGD fp32 momentum, 1K elements", *sgd_1k);
  auto adam_1k = bench::prepare({"ApplyAdamD", DType::kFloat32, "default", {3, 1}}, 1024);
  overhead("ApplyAdamD fp32, 1K elements", *adam_1k);
  (void)set_num_threads(0);

  return write_records(o.json_path, records) ? 0 : 1;
}

// ---- `mantissa bench-list`: the multi-tensor passes over a model's parameter list.

struct ListOptions {
  std::vector<std::string> shape_files, ops, dtypes{"fp32", "bf16"};
  std::vector<int> threads{1, 2};
  std::string json_path;
  double min_seconds = 0.3;
};

// One tensor per line: its dimensions separated by commas or 'x' ("64,3,7,7"); '#' starts a
// comment. Returns an error message, or "" on success.
std::string read_shapes(const std::string& path, std::vector<bench::Shape>& shapes) {
  std::ifstream in(path);
  if (!in) return fmt::format("cannot read {}", path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    bench::Shape shape;
    std::string digits;
    bool any = false;
    for (char c : line + ",") {
      if (c >= '0' && c <= '9') {
        digits += c;
      } else if (c == ',' || c == 'x' || c == ' ' || c == '\t' || c == '\r') {
        if (digits.empty()) continue;
        if (digits.size() > 12) return fmt::format("{}:{}: dimension too large", path, number);
        shape.push_back(std::stoll(digits));
        digits.clear();
        any = true;
      } else {
        return fmt::format("{}:{}: unexpected '{}' in a shape", path, number, c);
      }
    }
    if (any) shapes.push_back(std::move(shape));
  }
  if (shapes.empty()) return fmt::format("{} lists no tensor", path);
  return "";
}

int run_list(const ListOptions& o) {
  nlohmann::json records = nlohmann::json::array();
  fmt::print("{}, SIMD target {}, hardware threads {}\n", version(), simd_target(), num_threads());
  fmt::print("{:<14} {:<11} {:<5} {:>7} {:>10} {:>3} {:>10} {:>8} {:>10} {:>7}\n", "list", "op",
             "dtype", "tensors", "elements", "thr", "time", "GB/s", "probe GB/s", "%probe");
  for (const std::string& file : o.shape_files) {
    std::vector<bench::Shape> shapes;
    if (const std::string error = read_shapes(file, shapes); !error.empty()) {
      fmt::print(stderr, "mantissa bench-list: {}\n", error);
      return 1;
    }
    int64_t elements = 0;
    for (const auto& s : shapes) {
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      elements += n;
    }
    std::string list = file.substr(file.find_last_of('/') + 1);
    list = list.substr(0, list.find('.'));
    for (const bench::ListCase& c : bench::list_cases()) {
      if (!o.ops.empty() && std::find(o.ops.begin(), o.ops.end(), c.op) == o.ops.end()) continue;
      for (const std::string& dtype_name : o.dtypes) {
        const DType dtype = dtype_name == "bf16"   ? DType::kBFloat16
                            : dtype_name == "fp16" ? DType::kFloat16
                                                   : DType::kFloat32;
        auto call = bench::prepare_list(c.op, dtype, shapes);
        const int64_t bpe = c.bytes_per_element(dtype_size(dtype));
        int64_t stream_bytes = 0;
        const bench::Traffic probe_traffic = c.probe_traffic(dtype_size(dtype), &stream_bytes);
        bench::Probe probe(probe_traffic, elements * stream_bytes);
        for (int threads : o.threads) {
          if (!set_num_threads(threads).ok()) continue;
          const auto [seconds, probe_seconds] =
              time_side_by_side([&] { call->run(); }, [&] { probe.run(threads); }, o.min_seconds);
          const double probe_gbps =
              static_cast<double>(probe.bytes_per_pass()) / probe_seconds / 1e9;
          const double gbps = static_cast<double>(elements * bpe) / seconds / 1e9;
          fmt::print(
              "{:<14} {:<11} {:<5} {:>7} {:>10} {:>3} {:>8.3f}ms {:>8.2f} {:>10.2f} {:>6.0f}%\n",
              list, c.op, dtype_short_name(dtype), shapes.size(), elements, threads, seconds * 1e3,
              gbps, probe_gbps, gbps / probe_gbps * 100.0);
          std::fflush(stdout);
          records.push_back({{"list", list},
                             {"op", c.op},
                             {"dtype", dtype_short_name(dtype)},
                             {"tensors", shapes.size()},
                             {"elements", elements},
                             {"threads", threads},
                             {"seconds", seconds},
                             {"bytes_per_element", bpe},
                             {"gbps", gbps},
                             {"probe_gbps", probe_gbps}});
        }
      }
    }
  }
  (void)set_num_threads(0);
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << nlohmann::json{{"version", version()},
                          {"simd_target", simd_target()},
                          {"records", records}}
               .dump(1)
        << "\n";
    out.flush();  // a full disk shows at the flush, not at the buffered write
    if (!out) {
      fmt::print(stderr, "mantissa bench-list: cannot write {}\n", o.json_path);
      return 1;
    }
  }
  return 0;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App& app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Time every operator variant and a bandwidth probe with the same access pattern");
  cmd->add_option("--threads", options->threads, "Thread counts to run")->delimiter(',');
  cmd->add_option("--sizes", options->sizes,
                  "Element counts; 0 means out of cache (at least 1 GB moved per call)")
      ->delimiter(',');
  cmd->add_option("--op", options->op_filter, "Only this operator (SGD, ApplyAdamD)");
  cmd->add_option("--dtype", options->dtype_filter, "Only this dtype (fp32, fp16, bf16)");
  cmd->add_option("--min-seconds", options->min_seconds, "Minimum timed seconds per measurement");
  cmd->add_option("--json", options->json_path, "Write the records as JSON");
  cmd->add_option("--probe", options->probe,
                  "Only the bandwidth probe: RMW,RO read-modify-write and read-only streams, "
                  "--sizes in bytes per stream (0: at least 1 GB per pass)")
      ->delimiter(',')
      ->expected(2);
  return [cmd, options] { return cmd->parsed() ? run_bench(*options) : -1; };
}

std::function<int()> add_bench_list_command(CLI::App& app) {
  auto options = std::make_shared<ListOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench-list",
      "Time the multi-tensor passes over parameter lists, against a bandwidth probe with the same "
      "streams over the same bytes");
  cmd->add_option("shapes", options->shape_files,
                  "Files listing one tensor shape per line (\"64,3,7,7\")")
      ->required()
      ->check(CLI::ExistingFile);
  std::string ops_help = "Passes to run (default all):";
  for (const auto& c : bench::list_cases()) ops_help += " " + c.op;
  cmd->add_option("--ops", options->ops, ops_help)->delimiter(',');
  cmd->add_option("--dtypes", options->dtypes, "fp32, bf16, fp16")->delimiter(',');
  cmd->add_option("--threads", options->threads, "Thread counts to run")->delimiter(',');
  cmd->add_option("--min-seconds", options->min_seconds, "Minimum timed seconds per measurement");
  cmd->add_option("--json", options->json_path, "Write the records as JSON");
  return [cmd, options] { return cmd->parsed() ? run_list(*options) : -1; };
}

}  // namespace mantissa::tool
