// Judging one case: generate, run the goldens and a backend, apply the standard, analyse errors,
// apply the zero-trust guard, estimate the condition number.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "precision/fp.h"
#include "precision/kit.h"

namespace mantissa::precision {
namespace {

// Rounds the raw fp64 golden once to each output's dtype.
std::vector<HostTensor> round_golden(const OpEntry& op, const OpInputs& in,
                                     const std::vector<std::vector<double>>& raw) {
  std::vector<HostTensor> out = op.make_outputs(in);
  for (std::size_t o = 0; o < out.size(); ++o) {
    HostTensor& t = out[o];
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = raw[o][static_cast<std::size_t>(i)];
      if (is_float(t.dtype)) {
        t.set_bits(i, round_to_bits(x, t.dtype));
      } else if (is_fp8(t.dtype)) {  // a quantized output: the kit's own FP8 rounding
        t.set_bits(i, round_to_fp8_saturating(x, t.dtype));
      } else if (is_fp4(t.dtype)) {  // FP4: the golden gives the code's value (see its op)
        t.set_bits(i, round_to_fp4(x, t.dtype, 0));
      } else {
        t.set_bits(i, static_cast<uint32_t>(static_cast<int32_t>(x)));
      }
    }
  }
  return out;
}

// An element is "trivial" when it is zero or bit-equal to the input it updates (`input` is
// null for an output that updates none).
int64_t trivial_count(const HostTensor& t, const HostTensor* input) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint32_t b = t.bits(i);
    const bool zero = is_float(t.dtype) ? t.value(i) == 0.0 : b == 0;
    if (zero || (input != nullptr && b == input->bits(i))) ++n;
  }
  return n;
}

bool passes_single_bm(const ErrorAnalysis& a, double threshold) {
  return a.nonfinite_mismatch == 0 && a.mere < threshold && a.mare < 10 * threshold;
}

void mixed_defaults(DType dtype, double& rtol, double& atol) {
  switch (dtype) {
    case DType::kFloat16: rtol = atol = 0x1.0p-9; break;
    case DType::kBFloat16: rtol = atol = 0x1.0p-6; break;
    default: rtol = 0x1.0p-10; atol = 0x1.0p-16;
  }
}

std::string float_text(double x) { return fmt::format("{:.3g}", x); }

}  // namespace

ErrorAnalysis analyze(const HostTensor& actual, const HostTensor& reference) {
  ErrorAnalysis a;
  const int64_t n = std::min(actual.numel(), reference.numel());
  const DType dtype = reference.dtype;
  const bool fl = is_float(dtype);
  double sum_abs = 0, sum_abs_sq = 0, sum_rel = 0, sum_mere = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t ab = actual.bits(i), gb = reference.bits(i);
    if (fl) {
      const bool an = bits_is_nan(ab, dtype), gn = bits_is_nan(gb, dtype);
      const bool ai = bits_is_inf(ab, dtype), gi = bits_is_inf(gb, dtype);
      a.nan_count += an;
      a.inf_count += ai;
      if (an || gn || ai || gi) {
        const bool match = (an && gn) || (ai && gi && ab == gb);
        if (!match) {
          ++a.nonfinite_mismatch;
          if (ai && !gn && !gi) ++a.overflow_count;
        }
        continue;
      }
    }
    const double av = actual.value(i), gv = reference.value(i);
    if (fl && av == 0.0 && gv != 0.0) ++a.underflow_count;
    const double abs_err = std::fabs(av - gv);
    const double mere_rel = abs_err / (std::fabs(gv) + 1e-7);
    const double rel = abs_err / std::max(std::fabs(gv), 1e-12);
    ++a.compared;
    sum_abs += abs_err;
    sum_abs_sq += abs_err * abs_err;
    sum_rel += rel;
    sum_mere += mere_rel;
    a.max_abs = std::max(a.max_abs, abs_err);
    a.max_rel = std::max(a.max_rel, rel);
    a.mare = std::max(a.mare, mere_rel);
    if (fl) a.max_ulp = std::max(a.max_ulp, ulp_distance(ab, gb, dtype));
    const int bucket = rel > 1e-2 ? 0 : rel > 1e-4 ? 1 : rel > 1e-6 ? 2 : rel > 1e-8 ? 3 : 4;
    ++a.buckets[bucket];
  }
  if (a.compared > 0) {
    const double c = static_cast<double>(a.compared);
    a.mean_abs = sum_abs / c;
    a.mean_rel = sum_rel / c;
    a.mere = sum_mere / c;
    a.std_abs = std::sqrt(std::max(0.0, sum_abs_sq / c - a.mean_abs * a.mean_abs));
  }
  return a;
}

std::optional<double> condition_number(const OpEntry& op, const OpInputs& in) {
  const auto y = op.golden(in);
  OpInputs p = in;
  double x_norm = 0, dx_norm = 0;
  uint64_t h = 0x243f6a8885a308d3ull;
  for (std::size_t k = 0; k < p.tensors.size(); ++k) {
    HostTensor& t = p.tensors[k];
    if (!is_float(t.dtype)) continue;
    // 2^-20 relative, or one ulp of the dtype where 2^-20 is below it (fp16, bf16).
    const double delta = std::max(0x1.0p-20, std::ldexp(1.0, -layout_of(t.dtype).mantissa_bits));
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = t.value(i);
      if (!std::isfinite(x)) continue;
      h = (h ^ static_cast<uint64_t>(i + 1)) * 0x100000001b3ull + k;
      const double sign = (h >> 33) & 1 ? 1.0 : -1.0;
      t.set_bits(i, round_to_bits(x * (1 + sign * delta), t.dtype));
      const double xp = t.value(i);
      if (!std::isfinite(xp)) {
        t.set_bits(i, in.tensors[k].bits(i));
        continue;
      }
      x_norm += x * x;
      dx_norm += (xp - x) * (xp - x);
    }
  }
  const auto yp = op.golden(p);
  double y_norm = 0, dy_norm = 0;
  for (std::size_t o = 0; o < y.size(); ++o) {
    for (std::size_t i = 0; i < y[o].size(); ++i) {
      if (!std::isfinite(y[o][i]) || !std::isfinite(yp[o][i])) continue;
      y_norm += y[o][i] * y[o][i];
      dy_norm += (yp[o][i] - y[o][i]) * (yp[o][i] - y[o][i]);
    }
  }
  if (x_norm == 0 || dx_norm == 0 || y_norm == 0) return std::nullopt;
  return std::sqrt(dy_norm / y_norm) / std::sqrt(dx_norm / x_norm);
}

CaseResult error_row(const LoadedCase& lc) {
  CaseResult r;
  r.file = lc.file;
  r.case_id = lc.id;
  r.verdict = Verdict::kError;
  r.reason = lc.error;
  return r;
}

namespace {

// The case's description, shared by its rows.
CaseResult case_row(const CaseSpec& c, const OpEntry& op, Backend backend) {
  CaseResult r;
  r.file = c.file;
  r.case_id = c.id;
  r.name = c.name;
  r.op = c.op;
  r.version = c.version;
  r.backend = backend;
  r.standard = standard_name(c.standard.kind);
  // The case's float dtypes in slot order ("fp32", or "fp32/bf16" for a master-weight form).
  for (const TensorSlot& slot : op.inputs) {
    const InputSpec* s = c.find_input(slot.name);
    if (slot.kind != TensorSlot::Kind::kFloat || !s) continue;
    if (r.dtype.empty()) {
      r.dtype = s->dtype_text;
    } else if (("/" + r.dtype + "/").find("/" + s->dtype_text + "/") == std::string::npos) {
      r.dtype += "/" + s->dtype_text;
    }
  }
  return r;
}

// One backend's outputs judged against the goldens (r carries the case's description).
void judge(CaseResult& r, const CaseSpec& c, const OpEntry& op, const OpInputs& in,
           const std::vector<HostTensor>& golden, const std::vector<HostTensor>& g32,
           const std::optional<double>& condition, std::vector<HostTensor> actual) {
  const Backend backend = r.backend;
  r.condition_number = condition;
  if (actual.size() != golden.size()) {
    r.verdict = Verdict::kError;
    r.reason = fmt::format("{} backend returned {} outputs, expected {}", backend_name(backend),
                           actual.size(), golden.size());
    return;
  }
  std::vector<std::string> reasons;
  bool all_degenerate = !op.outputs.empty();
  std::vector<HostTensor> judged;  // the outputs judged, in order (r.outputs and r.actual agree)
  for (std::size_t o = 0; o < golden.size(); ++o) {
    OutputResult out;
    const HostTensor &a = actual[o], &g = golden[o], &b = g32[o];
    const int counterpart = op.outputs[o].counterpart;
    const HostTensor* input =
        counterpart < 0 ? nullptr : &in.tensors[static_cast<std::size_t>(counterpart)];
    if (input != nullptr && absent(*input)) continue;  // a tensor the case leaves out: not judged
    judged.push_back(a);
    out.name = op.outputs[o].name;
    out.dtype = g.dtype;
    out.numel = g.numel();
    out.standard = c.standard.kind;
    if (a.dtype != g.dtype || a.shape != g.shape) {
      out.pass = false;
      out.reason =
          fmt::format("{}: got {} {}, expected {} {}", out.name, dtype_short_name(a.dtype),
                      shape_string(a.shape), dtype_short_name(g.dtype), shape_string(g.shape));
      reasons.push_back(out.reason);
      r.outputs.push_back(out);
      all_degenerate = false;
      continue;
    }
    out.vs_golden = analyze(a, g);
    int64_t first = -1;
    for (int64_t i = 0; i < a.numel(); ++i) {
      if (a.bits(i) != b.bits(i)) {
        ++out.bit_mismatches;
        if (first < 0) first = i;
      }
    }
    const int hex_digits = static_cast<int>(g.element_size() * 2);
    const std::string bits_text =
        first < 0 ? std::string()
                  : fmt::format(
                        "{}: {} of {} elements differ in bits from golden32 (first at {}: "
                        "got 0x{:0{}x}, expected 0x{:0{}x})",
                        out.name, out.bit_mismatches, out.numel, first, a.bits(first), hex_digits,
                        b.bits(first), hex_digits);
    const double bitwise_used =
        out.bit_mismatches == 0
            ? 0.0
            : 1.0 + static_cast<double>(out.bit_mismatches) / static_cast<double>(out.numel);
    out.limit_used = bitwise_used;
    if (!is_float(g.dtype)) {
      // Integer outputs are exact under every standard.
      out.pass = out.bit_mismatches == 0 && out.vs_golden.max_abs == 0;
      if (!out.pass) out.reason = bits_text;
      if (!out.pass) out.limit_used = std::max(out.limit_used, 1.0);
    } else {
      switch (c.standard.kind) {
        case StandardKind::kBitwise:
          out.pass = out.bit_mismatches == 0;
          if (!out.pass) out.reason = bits_text;
          break;
        case StandardKind::kSingleBm: {
          const double t = c.standard.threshold(g.dtype);
          const ErrorAnalysis ref = analyze(b, g);
          if (!passes_single_bm(ref, t)) {
            // Even the spec-exact fp32 result misses single_bm (cancellation near zero): judge
            // the kernel bit for bit against golden32 instead.
            out.golden32_outside_single_bm = true;
            out.pass = out.bit_mismatches == 0;
            if (!out.pass) out.reason = bits_text + " (golden32 itself is outside single_bm)";
          } else {
            out.limit_used = std::max(out.vs_golden.mere / t, out.vs_golden.mare / (10 * t));
            if (out.vs_golden.nonfinite_mismatch) out.limit_used = std::max(out.limit_used, 1.0);
            out.pass = passes_single_bm(out.vs_golden, t);
            if (!out.pass) {
              out.reason = out.vs_golden.nonfinite_mismatch
                               ? fmt::format("{}: {} NaN/Inf positions differ from the golden",
                                             out.name, out.vs_golden.nonfinite_mismatch)
                               : fmt::format("{}: MERE {} (limit {}), MARE {} (limit {})", out.name,
                                             float_text(out.vs_golden.mere), float_text(t),
                                             float_text(out.vs_golden.mare), float_text(10 * t));
            }
          }
          break;
        }
        case StandardKind::kMixed: {
          double rtol, atol;
          mixed_defaults(g.dtype, rtol, atol);
          rtol = c.standard.rtol.value_or(rtol);
          atol = c.standard.atol.value_or(atol);
          int64_t ok = 0;
          for (int64_t i = 0; i < a.numel(); ++i) {
            const double av = a.value(i), gv = g.value(i);
            if (std::isfinite(av) && std::isfinite(gv)) {
              ok += std::fabs(av - gv) <= atol + rtol * std::fabs(gv);
            }
          }
          ok += static_cast<int64_t>((a.numel() - static_cast<int64_t>(out.vs_golden.compared)) -
                                     static_cast<int64_t>(out.vs_golden.nonfinite_mismatch));
          out.mixed_pass_ratio =
              a.numel() ? static_cast<double>(ok) / static_cast<double>(a.numel()) : 1.0;
          out.pass = out.vs_golden.nonfinite_mismatch == 0 &&
                     out.mixed_pass_ratio >= c.standard.pass_ratio;
          const double allowed = 1.0 - c.standard.pass_ratio, outside = 1.0 - out.mixed_pass_ratio;
          out.limit_used = allowed > 0 ? outside / allowed : (outside > 0 ? 1.0 + outside : 0.0);
          if (!out.pass) out.limit_used = std::max(out.limit_used, 1.0);
          if (!out.pass) {
            out.reason = fmt::format(
                "{}: {:.2f}% of elements within atol {} + rtol {} (need "
                "{:.2f}%), {} NaN/Inf mismatches",
                out.name, 100 * out.mixed_pass_ratio, float_text(atol), float_text(rtol),
                100 * c.standard.pass_ratio, out.vs_golden.nonfinite_mismatch);
          }
          break;
        }
      }
    }
    // Zero-trust guard: a kernel that leaves an output mostly zero or equal to its input, while
    // the reference changes clearly more elements, is flagged even if a tolerance would pass it.
    const int64_t n = out.numel;
    if (n > 0) {
      const int64_t k_triv = trivial_count(a, input), g_triv = trivial_count(b, input);
      out.degenerate = static_cast<double>(g_triv) > kZeroTrustFraction * static_cast<double>(n);
      const int64_t slack = std::max<int64_t>(1, n / kZeroTrustSlackDivisor);
      if (static_cast<double>(k_triv) > kZeroTrustFraction * static_cast<double>(n) &&
          k_triv - g_triv >= slack) {
        out.zero_trust = true;
        out.pass = false;
        const std::string z =
            fmt::format("{}: zero-trust: {} of {} elements are zero or unchanged (reference: {})",
                        out.name, k_triv, n, g_triv);
        out.reason = out.reason.empty() ? z : out.reason + "; " + z;
      }
    }
    all_degenerate = all_degenerate && (n == 0 || out.degenerate);
    if (!out.reason.empty()) reasons.push_back(out.reason);
    if (is_float(g.dtype)) {
      r.mere = std::max(r.mere, out.vs_golden.mere);
      r.mare = std::max(r.mare, out.vs_golden.mare);
      r.max_ulp = std::max(r.max_ulp, out.vs_golden.max_ulp);
    }
    if (out.zero_trust) out.limit_used = std::max(out.limit_used, 1.0);
    r.limit_used = std::max(r.limit_used, out.limit_used);
    r.golden32_outside_single_bm = r.golden32_outside_single_bm || out.golden32_outside_single_bm;
    r.zero_trust = r.zero_trust || out.zero_trust;
    r.outputs.push_back(std::move(out));
  }
  r.degenerate = all_degenerate;
  bool pass = true;
  for (const auto& out : r.outputs) pass = pass && out.pass;
  r.verdict = pass ? Verdict::kPass : Verdict::kFail;
  for (const auto& s : reasons) r.reason += (r.reason.empty() ? "" : "; ") + s;
  r.actual = std::move(judged);
}

}  // namespace

std::vector<CaseResult> run_case(const CaseSpec& c, const OpEntry& op_in,
                                 const std::vector<Backend>& backends, uint64_t seed) {
  // An op with list inputs is instantiated for the case's list lengths.
  std::vector<int64_t> list_sizes;
  const OpEntry instance = op_in.instantiate(c, list_sizes);
  const OpEntry& op = instance;
  std::vector<CaseResult> rows;
  for (Backend b : backends) rows.push_back(case_row(c, op, b));
  if (c.op != op.name) {
    for (CaseResult& r : rows) {
      r.verdict = Verdict::kError;
      r.reason =
          fmt::format("{}: case {}: key 'op': \"{}\" is not {}", c.file, c.id, c.op, op.name);
    }
    return rows;
  }
  bool any_backend = false;
  for (CaseResult& r : rows) {
    if (op.backends.count(r.backend) == 0) {
      r.verdict = Verdict::kNotApplicable;
      r.reason = fmt::format("{} has no {} backend", op.name, backend_name(r.backend));
    } else {
      any_backend = true;
    }
  }
  if (!any_backend) return rows;
  // The inputs and the goldens once, for every backend: the fp64 golden is most of a case's time.
  OpInputs in;
  if (std::string err = generate_inputs(c, op, seed, in); !err.empty()) {
    for (CaseResult& r : rows) {
      if (r.verdict == Verdict::kNotApplicable) continue;
      r.verdict = Verdict::kError;
      r.reason = err;
    }
    return rows;
  }
  in.list_sizes = list_sizes;
  const std::vector<HostTensor> golden = round_golden(op, in, op.golden(in));
  const std::vector<HostTensor> g32 = op.golden32(in);
  const std::optional<double> condition = condition_number(op, in);
  for (CaseResult& r : rows) {
    if (r.verdict == Verdict::kNotApplicable) continue;
    std::vector<HostTensor> actual;
    if (std::string err = op.backends.at(r.backend)(in, actual); !err.empty()) {
      r.verdict = Verdict::kError;
      r.reason = fmt::format("{} backend failed: {}", backend_name(r.backend), err);
      continue;
    }
    judge(r, c, op, in, golden, g32, condition, std::move(actual));
  }
  return rows;
}

CaseResult run_case(const CaseSpec& c, const OpEntry& op, Backend backend, uint64_t seed) {
  return std::move(run_case(c, op, std::vector<Backend>{backend}, seed).front());
}

}  // namespace mantissa::precision
