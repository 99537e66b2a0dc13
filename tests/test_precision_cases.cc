// The shipped case sets: every case passes on every backend, with the same bits from each
// backend (thread counts and SIMD targets: test_precision_cli.cc, through the tool).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "precision/kit.h"

namespace mantissa::testing {
using namespace mantissa::precision;

namespace {

std::string case_dir() {
  const char* src = std::getenv("MANTISSA_SOURCE_DIR");
  return std::string(src ? src : ".") + "/cases";
}

TEST(PrecisionShippedCases, AllPassOnEveryBackend) {
  CheckOptions opt;
  opt.case_dir = case_dir();
  // MANTISSA_CASES_BACKENDS=kernel (the sanitizer build): the kernel backend alone.
  const char* backends = std::getenv("MANTISSA_CASES_BACKENDS");
  const bool kernel_only = backends != nullptr && std::string(backends) == "kernel";
  opt.all_backends = !kernel_only;
  const CheckReport rep = run_check(opt);
  for (const CaseResult& r : rep.rows) {
    EXPECT_TRUE(r.verdict == Verdict::kPass || r.verdict == Verdict::kNotApplicable)
        << r.case_id << " (" << backend_name(r.backend) << "): " << r.reason;
    if (r.verdict == Verdict::kNotApplicable) {
      // Only SGD lacks an aclnn backend (upstream has no aclnnSGD), and only the operators of
      // several lists an op-by-name one.
      const bool many_lists = r.op == "FusedAdamw" || r.op == "FusedSgd";
      EXPECT_TRUE(r.op == "SGD" || many_lists) << r.op;
      EXPECT_EQ(r.backend, many_lists ? Backend::kAclop : Backend::kAclnn) << r.op;
    }
  }
  EXPECT_EQ(rep.failed, 0);
  EXPECT_EQ(rep.errors, 0);
  EXPECT_EQ(rep.zero_trust, 0);
  if (!kernel_only) {
    for (Backend b : {Backend::kKernel, Backend::kAclnn, Backend::kAclop}) {
      EXPECT_TRUE(std::any_of(rep.rows.begin(), rep.rows.end(), [&](const CaseResult& r) {
        return r.backend == b;
      })) << backend_name(b);
    }
  }
  // 18 ATK ApplyAdamD cases, and every operator has a set.
  std::map<std::string, int> per_op;
  int atk = 0;
  for (const CaseResult& r : rep.rows) {
    if (r.backend != Backend::kKernel) continue;
    ++per_op[r.op];
    atk += r.file.find("atk_apply_adam_d.json") != std::string::npos;
  }
  EXPECT_EQ(atk, 18);
  EXPECT_GT(per_op["AmpUpdateScale"], 0);
  EXPECT_GT(per_op["SGD"], 0);
  EXPECT_GT(per_op["ApplyAdamD"], 0);
  EXPECT_GT(per_op["FusedAdamw"], 0);
  EXPECT_GT(per_op["FusedSgd"], 0);
}

}  // namespace

}  // namespace mantissa::testing
