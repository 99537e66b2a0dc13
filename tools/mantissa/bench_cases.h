// Benchmark cases shared by `mantissa bench` and the Google Benchmark harness in bench/: each
// case owns its buffers and runs one operator call; it knows the bytes per element it moves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/dtype.h"

namespace mantissa::bench {

// Memory streams an operator variant touches per element. A read-modify-write stream is read and
// written; a write-only stream costs a read too (the cache line is fetched before it is written),
// so it counts as read-modify-write.
struct Traffic {
  int rmw_streams = 0;  // read and written (or written only: read for ownership)
  int ro_streams = 0;   // read only
  int64_t bytes_per_element(std::size_t element_size) const {
    return static_cast<int64_t>(element_size) * (2 * rmw_streams + ro_streams);
  }
};

struct OpCase {
  std::string op;  // CANN's op type: "SGD", "ApplyAdamD"
  DType dtype;
  std::string variant;  // the variant's name in its operator's declaration ("nesterov+wd")
  Traffic traffic;
  int variant_index = 0;  // into the operator's declared variants (typed enum values)
};

// Every element-wise case: each declared variant of each operator (ops/all_ops.h) x fp32, bf16,
// fp16.
std::vector<OpCase> elementwise_cases();

// A prepared call: buffers of n elements filled with realistic values; run() performs one step.
class PreparedCall {
 public:
  virtual ~PreparedCall() = default;
  virtual void run() = 0;
};
std::unique_ptr<PreparedCall> prepare(const OpCase& c, int64_t n);
// The elements a case's call processes for a requested n: n, or for a row-wise case (the
// cross-entropy vocabularies) n rounded down to whole rows (at least one).
int64_t case_elements(const OpCase& c, int64_t n);

// Per-call overhead cases on tiny inputs.
std::unique_ptr<PreparedCall> prepare_amp_update_scale_cpp();
std::unique_ptr<PreparedCall> prepare_amp_update_scale_aclnn();  // both aclnn phases per run()

// The bandwidth probe: the access pattern of an operator without its arithmetic. Each of the
// `rmw` streams does x_k[i] = x_k[i]*a + y[i] (y the sum of the read-only streams), over fp32
// arrays of `bytes_per_stream` bytes each, split into `threads` contiguous parts.
class Probe {
 public:
  Probe(Traffic traffic, int64_t bytes_per_stream);
  ~Probe();
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  void run(int threads);
  int64_t bytes_per_pass() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Parameter lists (a model's tensors, each its own allocation), for the multi-tensor passes.
using Shape = std::vector<int64_t>;
struct ListCase {
  std::string op;   // "unscale", "check-only", ...
  Traffic traffic;  // per element of the list, in elements of the list's dtype
  // Read-write streams of one byte per element besides `traffic` (8-bit optimizer state).
  int byte_streams = 0;
  int64_t bytes_per_element(std::size_t element_size) const {
    return traffic.bytes_per_element(element_size) + 2 * byte_streams;
  }
  // The probe moving the same bytes, read-write and read-only, per element: fp32 streams of
  // `stream_bytes` bytes per element of the list (the element size, or 2 with byte streams:
  // var, grad and two byte streams as 3 + 2 streams of 2 bytes for fp32, 2 + 1 for 16 bits).
  Traffic probe_traffic(std::size_t element_size, int64_t* stream_bytes) const;
};
std::vector<ListCase> list_cases();
// One call over tensors of these shapes in `dtype` (nullptr for an unknown op).
std::unique_ptr<PreparedCall> prepare_list(const std::string& op, DType dtype,
                                           const std::vector<Shape>& shapes);

// Smallest element count >= 64M whose pass moves at least 1 GB for this case.
int64_t out_of_cache_elements(int64_t bytes_per_element);

}  // namespace mantissa::bench
