// `mantissa check --case-dir DIR`: every case through the selected backends, one line per
// operator (or every row with --rows), a summary line, a JSON report with every row, a repro
// command per failure; non-zero exit on any failure or error row.
#ifdef MANTISSA_HAVE_PRECISION_KIT

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "mantissa/cli_checks.h"
#include "mantissa/commands.h"
#include "precision/kit.h"

namespace mantissa::tool {
namespace {

namespace pk = mantissa::precision;

struct CheckArgs {
  std::string case_dir, op, backend = "kernel", json_path, case_id;
  uint64_t seed = 0;
  int jobs = 0;
  bool rows = false;
};

std::string metric(double x, bool applicable) {
  return applicable ? fmt::format("{:.3e}", x) : std::string("-");
}

bool ran(const pk::CaseResult& r) {
  return r.verdict == pk::Verdict::kPass || r.verdict == pk::Verdict::kFail;
}

// Every row: case, operator, dtype, backend, standard, errors, verdict.
void print_rows(const pk::CheckReport& report) {
  fmt::print("{:<28} {:<15} {:<5} {:<7} {:<10} {:>10} {:>10} {:>8}  {}\n", "case", "op", "dtype",
             "backend", "standard", "MERE", "MARE", "max ulp", "verdict");
  for (const pk::CaseResult& r : report.rows) {
    std::string verdict = pk::verdict_name(r.verdict);
    if (r.golden32_outside_single_bm) verdict += " (bitwise: golden32 outside single_bm)";
    if (r.zero_trust) verdict += " (zero-trust)";
    fmt::print("{:<28} {:<15} {:<5} {:<7} {:<10} {:>10} {:>10} {:>8}  {}\n",
               r.case_id.empty() ? "?" : r.case_id, r.op.empty() ? "-" : r.op,
               r.dtype.empty() ? "-" : r.dtype, pk::backend_name(r.backend),
               r.standard.empty() ? "-" : r.standard, metric(r.mere, ran(r)),
               metric(r.mare, ran(r)), ran(r) ? std::to_string(r.max_ulp) : std::string("-"),
               verdict);
  }
}

// One line per operator: its cases and rows (case x backend), how many passed, the standards
// that judged them, and the worst row against its standard's limit.
void print_summary(const pk::CheckReport& report) {
  struct OpSummary {
    std::set<std::string> cases, standards, dtypes;
    int rows = 0, passed = 0, failed = 0;
    const pk::CaseResult* worst = nullptr;
  };
  std::map<std::string, OpSummary> ops;
  for (const pk::CaseResult& r : report.rows) {
    if (r.verdict == pk::Verdict::kNotApplicable) continue;
    OpSummary& s = ops[r.op.empty() ? "(unreadable case file)" : r.op];
    s.cases.insert(r.file + "#" + r.case_id);
    if (!r.standard.empty()) s.standards.insert(r.standard);
    if (!r.dtype.empty()) s.dtypes.insert(r.dtype);
    ++s.rows;
    (r.verdict == pk::Verdict::kPass ? s.passed : s.failed) += 1;
    if (ran(r) && (s.worst == nullptr || r.limit_used > s.worst->limit_used)) s.worst = &r;
  }
  const auto join = [](const std::set<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
    return out;
  };
  fmt::print("{:<31} {:>5} {:>5} {:>6} {:>6}  {:<34} {:<17} {:>6}  {}\n", "operator", "cases",
             "rows", "passed", "failed", "dtypes", "standards", "worst", "worst case (backend)");
  for (const auto& [name, s] : ops) {
    std::string worst = "-", where = "-";
    if (s.worst != nullptr) {
      worst = s.worst->limit_used == 0 ? std::string("exact")
                                       : fmt::format("{:.1f}%", 100 * s.worst->limit_used);
      where = fmt::format("{} ({})", s.worst->case_id, pk::backend_name(s.worst->backend));
    }
    fmt::print("{:<31} {:>5} {:>5} {:>6} {:>6}  {:<34} {:<17} {:>6}  {}\n", name, s.cases.size(),
               s.rows, s.passed, s.failed, join(s.dtypes), join(s.standards), worst, where);
  }
  fmt::print(
      "worst: the row's largest error as a share of its standard's limit (single_bm: MERE/T and "
      "MARE/10T; mixed: elements outside the tolerance over those allowed), or exact where every "
      "output matched its golden bit for bit; --rows prints every row\n");
}

int run_check_command(const CheckArgs& args) {
  pk::CheckOptions opt;
  opt.case_dir = args.case_dir;
  opt.op = args.op;
  opt.case_id = args.case_id;
  opt.seed = args.seed;
  opt.jobs = args.jobs;
  if (args.backend == "all") {
    opt.all_backends = true;
  } else {
    opt.backends = {*pk::backend_from_name(args.backend)};
  }
  const bool tty = isatty(fileno(stdout)) != 0;
  std::function<void(std::size_t, std::size_t)> progress;
  if (tty) {
    progress = [](std::size_t done, std::size_t total) {
      fmt::print("\r[{}/{}] checking...", done, total);
      std::fflush(stdout);
    };
  }
  const pk::CheckReport report = pk::run_check(opt, progress);
  if (tty) fmt::print("\r\033[K");

  if (args.rows) {
    print_rows(report);
  } else {
    print_summary(report);
  }
  bool any_failure_printed = false;
  for (const pk::CaseResult& r : report.rows) {
    if (r.verdict != pk::Verdict::kFail && r.verdict != pk::Verdict::kError) continue;
    if (!any_failure_printed) fmt::print("\nfailures:\n");
    any_failure_printed = true;
    fmt::print("{} {} ({}): {}\n  repro: {}\n", pk::verdict_name(r.verdict),
               r.case_id.empty() ? r.file : r.case_id, pk::backend_name(r.backend), r.reason,
               pk::repro_command(opt, r));
  }
  fmt::print("\n");
  if (report.errors) fmt::print("error rows (counted as failed): {}\n", report.errors);
  if (report.not_applicable) {
    fmt::print("not applicable (operator has no such backend): {}\n", report.not_applicable);
  }
  if (report.golden32_outside_single_bm) {
    fmt::print("golden32 itself outside single_bm (judged bitwise): {}\n",
               report.golden32_outside_single_bm);
  }
  if (report.zero_trust) fmt::print("zero-trust flags: {}\n", report.zero_trust);
  if (report.degenerate) {
    fmt::print("cases whose reference leaves outputs mostly unchanged: {}\n", report.degenerate);
  }
  fmt::print("{} passed, {} failed\n", report.passed, report.failed);

  if (!args.json_path.empty()) {
    std::ofstream out(args.json_path, std::ios::binary);
    out << pk::report_json(opt, report);
    out.flush();  // a full disk shows at the flush, not at the buffered write
    if (!out) {
      fmt::print(stderr, "mantissa check: cannot write {}\n", args.json_path);
      return 2;
    }
  }
  if (report.failed > 0) return 1;
  if (report.passed == 0) {
    fmt::print(stderr, "mantissa check: no case was checked (check --case-dir, --op, --case)\n");
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand(
      "check", "Check operators against independent goldens with the cases in a directory");
  cmd->add_option("--case-dir", args->case_dir, "Directory of case files (*.json, recursive)")
      ->required();
  cmd->add_option("--op", args->op, "Only cases of this operator (e.g. ApplyAdamD)");
  cmd->add_option("--backend", args->backend, "kernel, aclnn, aclop or all (default kernel)")
      ->check(CLI::IsMember({"kernel", "aclnn", "aclop", "all"}));
  cmd->add_option("--seed", args->seed, "Global seed of the input generators (default 0)")
      ->check(tool::kUint64);
  cmd->add_option("--jobs", args->jobs,
                  "Cases checked side by side (default: one per hardware thread; the report is "
                  "the same for any count)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--json", args->json_path, "Write the machine-readable report to this file");
  cmd->add_option("--case", args->case_id, "Only the case with this id");
  cmd->add_flag("--rows", args->rows,
                "Print every row (case x backend) instead of one line per operator");
  return [cmd, args]() -> int { return cmd->parsed() ? run_check_command(*args) : -1; };
}

}  // namespace mantissa::tool

#endif  // MANTISSA_HAVE_PRECISION_KIT
