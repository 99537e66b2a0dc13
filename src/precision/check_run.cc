// Running a case directory through the selected backends, and the machine-readable report.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "precision/kit.h"

namespace mantissa::precision {
namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,+") == std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// Compares a backend's output bits with the kernel backend's.
void compare_with_kernel(CaseResult& r, const CaseResult& kernel) {
  if (kernel.actual.size() != r.actual.size()) return;
  for (std::size_t o = 0; o < r.actual.size(); ++o) {
    if (r.actual[o].bytes != kernel.actual[o].bytes ||
        r.actual[o].shape != kernel.actual[o].shape) {
      const std::string why = fmt::format("{}: bits differ from the kernel backend",
                                          o < r.outputs.size() ? r.outputs[o].name : "output");
      r.verdict = Verdict::kFail;
      r.reason = r.reason.empty() ? why : r.reason + "; " + why;
    }
  }
}

// FNV-1a over an output's bytes: lets reports from different machines, thread counts and SIMD
// targets be compared bit for bit without storing the outputs.
std::string digest(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

nlohmann::json number_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

}  // namespace

CheckReport run_check(const CheckOptions& opt,
                      const std::function<void(std::size_t, std::size_t)>& progress) {
  CheckReport report;
  std::vector<Backend> backends = opt.backends;
  if (opt.all_backends) backends = {Backend::kKernel, Backend::kAclnn, Backend::kAclop};
  const std::vector<LoadedCase> loaded = load_case_dir(opt.case_dir);
  std::vector<const LoadedCase*> selected;
  for (const LoadedCase& lc : loaded) {
    if (!opt.case_id.empty() && lc.id != opt.case_id) continue;
    if (!opt.op.empty() && lc.spec && lc.spec->op != opt.op) continue;
    selected.push_back(&lc);
  }
  const std::size_t total = selected.size();
  // One case's rows: its backends in order, each compared with the kernel backend's bits.
  const auto run_one = [&](const LoadedCase& lc) {
    std::vector<CaseResult> rows;
    if (!lc.spec) {
      rows.push_back(error_row(lc));
    } else if (const OpEntry* op = find_op(lc.spec->op); op == nullptr) {
      LoadedCase bad = lc;
      std::string known;
      for (const auto& [name, e] : registry()) known += (known.empty() ? "" : ", ") + name;
      bad.error = fmt::format("{}: case {}: key 'op': unknown operator \"{}\" (known: {})", lc.file,
                              lc.id, lc.spec->op, known);
      rows.push_back(error_row(bad));
    } else {
      rows = run_case(*lc.spec, *op, backends, opt.seed);
      const CaseResult* kernel = nullptr;
      for (CaseResult& r : rows) {
        const bool ran = r.verdict == Verdict::kPass || r.verdict == Verdict::kFail;
        if (r.backend == Backend::kKernel) {
          if (ran) kernel = &r;
        } else if (kernel != nullptr && ran) {
          compare_with_kernel(r, *kernel);
        }
      }
    }
    return rows;
  };
  // Cases side by side: each thread takes the next case; the rows go to the case's slot.
  std::vector<std::vector<CaseResult>> per_case(total);
  std::atomic<std::size_t> next{0};
  std::mutex progress_mutex;
  std::size_t done = 0;
  std::exception_ptr failure;
  const auto work = [&] {
    try {
      for (std::size_t k; (k = next.fetch_add(1)) < total;) {
        per_case[k] = run_one(*selected[k]);
        const std::lock_guard<std::mutex> lock(progress_mutex);
        ++done;
        if (progress) progress(done, total);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      if (!failure) failure = std::current_exception();
      next.store(total);
    }
  };
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t jobs =
      std::min<std::size_t>(opt.jobs > 0 ? static_cast<std::size_t>(opt.jobs) : hardware, total);
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < jobs; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  for (std::vector<CaseResult>& rows : per_case) {
    for (CaseResult& r : rows) report.rows.push_back(std::move(r));
  }
  for (CaseResult& r : report.rows) {
    switch (r.verdict) {
      case Verdict::kPass: ++report.passed; break;
      case Verdict::kFail: ++report.failed; break;
      case Verdict::kError:
        ++report.errors;
        ++report.failed;  // an error row is a failure of the run
        break;
      case Verdict::kNotApplicable: ++report.not_applicable; break;
    }
    report.golden32_outside_single_bm += r.golden32_outside_single_bm;
    report.zero_trust += r.zero_trust;
    report.degenerate += r.degenerate && r.verdict != Verdict::kNotApplicable;
  }
  return report;
}

std::string repro_command(const CheckOptions& opt, const CaseResult& r) {
  return fmt::format("mantissa check --case-dir {} --case {} --backend {} --seed {}",
                     shell_quote(opt.case_dir), shell_quote(r.case_id.empty() ? "''" : r.case_id),
                     backend_name(r.backend), opt.seed);
}

std::string report_json(const CheckOptions& opt, const CheckReport& report) {
  using nlohmann::json;
  json cases = json::array();
  static const char* kBuckets[] = {"severe", "significant", "moderate", "small", "negligible"};
  for (const CaseResult& r : report.rows) {
    json c;
    c["file"] = r.file;
    c["id"] = r.case_id;
    c["name"] = r.name;
    c["op"] = r.op;
    c["version"] = r.version;
    c["dtype"] = r.dtype;
    c["backend"] = backend_name(r.backend);
    c["standard"] = r.standard;
    c["verdict"] = verdict_name(r.verdict);
    c["reason"] = r.reason;
    c["mere"] = number_or_null(r.mere);
    c["mare"] = number_or_null(r.mare);
    c["max_ulp"] = r.max_ulp;
    c["limit_used"] = number_or_null(r.limit_used);
    c["condition_number"] =
        r.condition_number ? number_or_null(*r.condition_number) : json(nullptr);
    c["golden32_outside_single_bm"] = r.golden32_outside_single_bm;
    c["zero_trust"] = r.zero_trust;
    c["degenerate"] = r.degenerate;
    if (r.verdict == Verdict::kFail || r.verdict == Verdict::kError) {
      c["repro"] = repro_command(opt, r);
    }
    json outs = json::array();
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const OutputResult& o = r.outputs[k];
      const ErrorAnalysis& a = o.vs_golden;
      json j;
      j["name"] = o.name;
      j["dtype"] = dtype_short_name(o.dtype);
      j["numel"] = o.numel;
      if (k < r.actual.size()) j["digest"] = digest(r.actual[k].bytes);
      j["pass"] = o.pass;
      j["reason"] = o.reason;
      j["bit_mismatches_vs_golden32"] = o.bit_mismatches;
      j["max_abs_error"] = number_or_null(a.max_abs);
      j["mean_abs_error"] = number_or_null(a.mean_abs);
      j["max_rel_error"] = number_or_null(a.max_rel);
      j["mean_rel_error"] = number_or_null(a.mean_rel);
      j["abs_error_std_dev"] = number_or_null(a.std_abs);
      j["mere"] = number_or_null(a.mere);
      j["mare"] = number_or_null(a.mare);
      j["max_ulp"] = a.max_ulp;
      j["limit_used"] = number_or_null(o.limit_used);
      json buckets;
      for (int b = 0; b < 5; ++b) buckets[kBuckets[b]] = a.buckets[b];
      j["error_buckets"] = buckets;
      j["nan"] = a.nan_count;
      j["inf"] = a.inf_count;
      j["underflow_to_zero"] = a.underflow_count;
      j["overflow"] = a.overflow_count;
      j["nonfinite_mismatch"] = a.nonfinite_mismatch;
      if (o.standard == StandardKind::kMixed) j["mixed_pass_ratio"] = o.mixed_pass_ratio;
      j["golden32_outside_single_bm"] = o.golden32_outside_single_bm;
      j["zero_trust"] = o.zero_trust;
      j["degenerate"] = o.degenerate;
      outs.push_back(std::move(j));
    }
    c["outputs"] = std::move(outs);
    cases.push_back(std::move(c));
  }
  json doc;
  doc["case_dir"] = opt.case_dir;
  doc["seed"] = opt.seed;
  doc["summary"] = {{"passed", report.passed},
                    {"failed", report.failed},
                    {"errors", report.errors},
                    {"not_applicable", report.not_applicable},
                    {"golden32_outside_single_bm", report.golden32_outside_single_bm},
                    {"zero_trust", report.zero_trust},
                    {"degenerate", report.degenerate}};
  doc["cases"] = std::move(cases);
  // Messages may quote a file's bytes or name, which need not be UTF-8: replaced, not thrown.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace mantissa::precision
