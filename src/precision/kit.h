// The precision kit: case files, deterministic input generators, independent goldens, the
// single_bm / mixed / bitwise standards, error analysis and reports. A client of the public C++
// and C APIs; it shares no code with the kernels.
//
// Glossary
//   golden     the operator's formula evaluated in double, rounded once to the output dtype.
//   golden32   the formula in fp32 in the spec's exact grouping, rounded to nearest even: the
//              bitwise reference.
//   backend    a way of running the library's operator: "kernel" (C++ API), "aclnn" (two-phase C
//              API), "aclop" (op-by-name C API).
//   MERE/MARE  mean/max of rel_i = |a_i - g_i| / (|g_i| + 1e-7) over an output.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/dtype.h"

namespace mantissa::precision {

// ---- Host tensors ---------------------------------------------------------------------------

// An owned, contiguous buffer with a dtype and a shape (rank 0 = one element).
struct HostTensor {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType type, std::vector<int64_t> dims);

  int64_t numel() const noexcept;
  std::size_t element_size() const noexcept;
  // Raw element bits (fp32/int32: 32 bits; fp16/bf16: 16 bits; bool: 8 bits; int64: the low
  // 32 bits, see value()).
  uint32_t bits(int64_t i) const noexcept;
  void set_bits(int64_t i, uint32_t v) noexcept;
  // Element value: floats decoded exactly, integers converted.
  double value(int64_t i) const noexcept;
  void* data() noexcept { return bytes.data(); }
  const void* data() const noexcept { return bytes.data(); }
};

std::string shape_string(const std::vector<int64_t>& shape);

// An optional tensor left out: dtype kUndefined, no elements.
inline HostTensor absent_tensor() { return HostTensor(DType::kUndefined, {0}); }
inline bool absent(const HostTensor& t) noexcept { return t.dtype == DType::kUndefined; }

// ---- Case files -----------------------------------------------------------------------------

// kIntList, kBoolList: a list of values in `list` (bools as 0/1), as LayerNorm's
// normalized_shape and LayerNormGrad's output_mask; a case file writes them as a JSON list.
enum class AttrKind { kBool, kInt, kFloat, kIntList, kBoolList };

struct AttrValue {
  AttrKind kind = AttrKind::kFloat;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::vector<int64_t> list;
  double as_double() const noexcept {
    return kind == AttrKind::kFloat ? f : (kind == AttrKind::kInt ? static_cast<double>(i) : b);
  }
};

// A tensor generator. Values are drawn in double and rounded once to the tensor's dtype;
// special names are written as exact bit patterns.
struct GeneratorSpec {
  enum class Kind { kNormal, kUniform, kConst, kSpecial };
  Kind kind = Kind::kConst;
  double mean_lo = 0, mean_hi = 0, std_lo = 0, std_hi = 0;  // nd
  double lo = 0, hi = 0;                                    // uniform
  // const (one entry) and special (cycled): a number, or a special name such as "nan".
  struct Value {
    bool is_name = false;
    std::string name;
    double number = 0.0;
  };
  std::vector<Value> values;
};

struct InputSpec {
  std::string name;
  bool is_attr = false;
  DType dtype = DType::kUndefined;
  std::string dtype_text;
  std::vector<int64_t> shape;
  GeneratorSpec generator;  // tensors
  AttrValue attr;           // attrs
  bool required = true;
};

enum class StandardKind { kSingleBm, kMixed, kBitwise };
const char* standard_name(StandardKind kind) noexcept;

struct StandardSpec {
  StandardKind kind = StandardKind::kBitwise;
  std::string type;  // single_bm "type" label, informational
  // single_bm thresholds T per dtype (defaults: 2^-13, 2^-10, 2^-7).
  double fp32_error = 1.0 / 8192, fp16_error = 1.0 / 1024, bf16_error = 1.0 / 128;
  // mixed: overrides of the per-dtype defaults when set.
  std::optional<double> rtol, atol;
  double pass_ratio = 0.99;
  double threshold(DType dtype) const noexcept;
};

struct CaseSpec {
  std::string file;
  std::string id, name, op, version;
  StandardSpec standard;
  std::vector<InputSpec> inputs;
  const InputSpec* find_input(const std::string& input_name) const noexcept;
};

// One entry of a case file: a parsed case, or the error that stopped it (an error row).
// Limits that keep what a case file can ask for bounded: the elements of all tensors of one case
// together (memory: the kit holds inputs, goldens and every backend's outputs, about 100 bytes
// per element), and the nesting depth of the file (stack).
inline constexpr int64_t kMaxCaseElements = int64_t{1} << 24;
inline constexpr int kMaxCaseNesting = 64;

struct LoadedCase {
  std::string file;
  std::string id;  // "" when the entry has no usable id ("#<index>" is used in messages)
  std::optional<CaseSpec> spec;
  std::string error;
};

std::vector<LoadedCase> parse_case_text(const std::string& text, const std::string& file);
std::vector<LoadedCase> load_case_file(const std::string& path);
// Every *.json below `dir`, in sorted path order.
std::vector<LoadedCase> load_case_dir(const std::string& dir);

// ---- Operators ------------------------------------------------------------------------------

struct TensorSlot {
  enum class Kind {
    kFloat,  // fp32, fp16 or bf16
    kInt32,
    kOneOf,  // one of `dtypes`
  };
  enum class Shape { kAny, kOneElement, kLike };
  TensorSlot() = default;
  // The common float or int32 slot (the dtype, set and optional fields keep their defaults).
  TensorSlot(std::string slot_name, Kind slot_kind, Shape slot_shape, std::string like_name,
             int lo_rank, int hi_rank)
      : name(std::move(slot_name)),
        kind(slot_kind),
        shape(slot_shape),
        like(std::move(like_name)),
        min_rank(lo_rank),
        max_rank(hi_rank) {}
  std::string name;
  Kind kind = Kind::kFloat;
  Shape shape = Shape::kAny;
  std::string like;  // for kLike: the input whose shape this one must have
  int min_rank = 0, max_rank = 8;
  // A tensor list: a case gives its elements as inputs named "<name>[0]", "<name>[1]", ... and
  // the op is instantiated per case with one slot per element (OpEntry::instantiate).
  bool list = false;
  std::string dtype_like;  // kFloat: the input whose dtype this one must have ("" = any float)
  uint64_t dtypes = 0;     // kOneOf: bit d set for DType d
  bool optional = false;   // a case may leave it out (its output is then not judged)
};

struct AttrSlot {
  std::string name;
  AttrKind kind = AttrKind::kFloat;
  AttrValue default_value;
  bool required = false;
};

struct OpInputs;

struct OutputSlot {
  std::string name;
  // Index of the input tensor this output updates (dtype and shape), or -1 for a new tensor
  // (a norm's y or rstd) whose dtype and shape `make` derives from the inputs.
  int counterpart = 0;
  std::function<HostTensor(const OpInputs&)> make;
  // A list of new tensors, one per element of input list slot `list_of` (-1: not a list),
  // element i made by make_element(inputs, i); OpEntry::instantiate expands it per case.
  int list_of = -1;
  std::function<HostTensor(const OpInputs&, std::size_t)> make_element = {};
};

// Generated inputs in the order of the op's tensor and attr slots. A list slot contributes its
// elements, in order; list_sizes holds the element count of each list slot, in slot order.
// Generated inputs in the order of the op's tensor and attr slots. An optional tensor a case
// leaves out is an absent HostTensor (see absent()).
struct OpInputs {
  std::vector<HostTensor> tensors;
  std::vector<AttrValue> attrs;
  std::vector<int64_t> list_sizes;
};

// Golden: raw double results per output (not yet rounded), one value per element.
using GoldenFn = std::function<std::vector<std::vector<double>>(const OpInputs&)>;
// Golden32: results already rounded to each output's dtype.
using Golden32Fn = std::function<std::vector<HostTensor>(const OpInputs&)>;
// A backend: runs the library's operator, fills the outputs. Returns "" or an error message.
using BackendFn = std::function<std::string(const OpInputs&, std::vector<HostTensor>& outputs)>;

enum class Backend { kKernel, kAclnn, kAclop };
const char* backend_name(Backend b) noexcept;
std::optional<Backend> backend_from_name(const std::string& name) noexcept;

struct OpEntry {
  std::string name;
  std::vector<TensorSlot> inputs;
  std::vector<AttrSlot> attrs;
  std::vector<OutputSlot> outputs;
  StandardKind default_standard = StandardKind::kBitwise;
  GoldenFn golden;
  Golden32Fn golden32;
  std::map<Backend, BackendFn> backends;

  int input_index(const std::string& n) const noexcept;
  bool has_lists() const noexcept;
  // The op for one case: each list slot replaced by one slot per element the case gives
  // ("<name>[i]"), and each output updating a list by one output per element. `list_sizes`
  // receives the element counts. An op without lists is returned as it is.
  OpEntry instantiate(const CaseSpec& c, std::vector<int64_t>& list_sizes) const;
  int attr_index(const std::string& n) const noexcept;
  // Output tensors shaped like their counterparts, or made by their `make` (contents zero).
  std::vector<HostTensor> make_outputs(const OpInputs& in) const;
};

// The operators the kit knows, by name.
const std::map<std::string, OpEntry>& registry();
const OpEntry* find_op(const std::string& name);

// ---- Generation -----------------------------------------------------------------------------

// Names accepted in "special" lists and "const" values: nan, -nan, inf, -inf, 0.0, -0.0, denorm
// (= min_subnormal), -denorm, max_subnormal, min_normal, max, and their negatives.
bool is_special_value_name(const std::string& name) noexcept;
// The bit pattern of a special name in `dtype` (fp32/fp16/bf16); nullopt when unknown.
std::optional<uint32_t> special_value_bits(const std::string& name, DType dtype) noexcept;

// Fills the op's inputs for a case. Deterministic from (case id, input name, seed); independent
// of thread count. Returns "" or an error naming file, case and key.
std::string generate_inputs(const CaseSpec& c, const OpEntry& op, uint64_t seed, OpInputs& out);
// Checks a case against the op's schema (names, kinds, dtypes, shapes). "" when fine.
std::string check_case_against_op(const CaseSpec& c, const OpEntry& op);

// ---- Comparison and analysis ----------------------------------------------------------------

struct ErrorAnalysis {
  double max_abs = 0, mean_abs = 0, max_rel = 0, mean_rel = 0, std_abs = 0;
  double mere = 0, mare = 0;
  uint64_t max_ulp = 0;
  // Buckets of relative error: severe > 1e-2, significant 1e-4..1e-2, moderate 1e-6..1e-4,
  // small 1e-8..1e-6, negligible < 1e-8.
  uint64_t buckets[5] = {0, 0, 0, 0, 0};
  uint64_t nan_count = 0, inf_count = 0, underflow_count = 0, overflow_count = 0;
  uint64_t nonfinite_mismatch = 0;  // positions where NaN/Inf do not match the reference
  uint64_t compared = 0;            // finite element pairs in the statistics
};

// Compares `actual` with `reference` (both in the output dtype).
ErrorAnalysis analyze(const HostTensor& actual, const HostTensor& reference);

struct OutputResult {
  std::string name;
  DType dtype = DType::kFloat32;
  int64_t numel = 0;
  StandardKind standard = StandardKind::kBitwise;
  bool pass = true;
  std::string reason;
  ErrorAnalysis vs_golden;      // kernel vs fp64 golden
  uint64_t bit_mismatches = 0;  // kernel vs golden32
  bool golden32_outside_single_bm = false;
  double mixed_pass_ratio = 1.0;
  bool zero_trust = false;  // kernel output trivially equal to its input or zero
  bool degenerate = false;  // the reference itself is mostly trivial
  // How much of its standard's limit the output uses, 1 at the limit: single_bm
  // max(MERE / T, MARE / 10T); mixed, the fraction of elements outside the tolerance over the
  // fraction allowed; bitwise (and integer outputs), 0 when bit-exact, else 1 + the fraction of
  // elements that differ. An output judged bitwise because golden32 is outside single_bm counts
  // as bitwise.
  double limit_used = 0;
};

enum class Verdict { kPass, kFail, kError, kNotApplicable };
const char* verdict_name(Verdict v) noexcept;

struct CaseResult {
  std::string file, case_id, name, op, version, dtype, standard;
  Backend backend = Backend::kKernel;
  Verdict verdict = Verdict::kError;
  std::string reason;
  std::vector<OutputResult> outputs;
  double mere = 0, mare = 0;
  uint64_t max_ulp = 0;
  double limit_used = 0;  // the largest OutputResult::limit_used
  std::optional<double> condition_number;
  bool golden32_outside_single_bm = false;
  bool zero_trust = false;
  bool degenerate = false;
  // Kernel outputs (kept so backends can be compared bit for bit).
  std::vector<HostTensor> actual;
};

// Zero-trust thresholds (see docs/precision_kit.md).
inline constexpr double kZeroTrustFraction = 0.5;  // "mostly": more than half the elements
inline constexpr int64_t kZeroTrustSlackDivisor = 32;

// Runs one case through one backend and judges it.
CaseResult run_case(const CaseSpec& c, const OpEntry& op, Backend backend, uint64_t seed);
// Runs one case through each backend in turn, judging each against goldens computed once; one
// row per backend, in order (a backend the operator lacks gives a not-applicable row).
std::vector<CaseResult> run_case(const CaseSpec& c, const OpEntry& op,
                                 const std::vector<Backend>& backends, uint64_t seed);
// Error row for a case that could not be loaded.
CaseResult error_row(const LoadedCase& lc);

// Perturbation condition-number estimate with the fp64 golden: inputs perturbed by a relative
// 2^-20 with deterministic signs; (|dy|/|y|) / (|dx|/|x|) in 2-norms over finite elements.
std::optional<double> condition_number(const OpEntry& op, const OpInputs& in);

// ---- Running a directory and reporting ------------------------------------------------------

struct CheckOptions {
  std::string case_dir;
  std::string op;       // "" = all
  std::string case_id;  // "" = all
  std::vector<Backend> backends{Backend::kKernel};
  bool all_backends = false;
  uint64_t seed = 0;
  // Cases run side by side on this many threads (0: one per hardware thread). The report is the
  // same for any count: rows stay in case order, and each operator call gives the same bits.
  int jobs = 0;
};

struct CheckReport {
  std::vector<CaseResult> rows;
  int passed = 0, failed = 0, errors = 0, not_applicable = 0;
  int golden32_outside_single_bm = 0, zero_trust = 0, degenerate = 0;
};

// Runs every selected case through every selected backend. With several backends, each
// backend's bits are also compared with the kernel backend's. `progress` (may be empty) is called
// after each case with (done, total), one call at a time, from the threads running the cases.
CheckReport run_check(const CheckOptions& opt,
                      const std::function<void(std::size_t, std::size_t)>& progress = {});

std::string repro_command(const CheckOptions& opt, const CaseResult& r);
// The machine-readable report.
std::string report_json(const CheckOptions& opt, const CheckReport& report);

}  // namespace mantissa::precision
