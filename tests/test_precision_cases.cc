// The shipped case sets: every case passes on every backend, with the same bits from each
// backend and for any thread count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "mantissa/runtime.h"
#include "precision/kit.h"

namespace mantissa::precision {
namespace {

std::string case_dir() {
  const char* src = std::getenv("MANTISSA_SOURCE_DIR");
  return std::string(src ? src : ".") + "/cases";
}

TEST(PrecisionShippedCases, AllPassOnEveryBackend) {
  CheckOptions opt;
  opt.case_dir = case_dir();
  opt.all_backends = true;
  const CheckReport rep = run_check(opt);
  for (const CaseResult& r : rep.rows) {
    EXPECT_TRUE(r.verdict == Verdict::kPass || r.verdict == Verdict::kNotApplicable)
        << r.case_id << " (" << backend_name(r.backend) << "): " << r.reason;
    if (r.verdict == Verdict::kNotApplicable) {
      // Only SGD lacks a backend (upstream has no aclnnSGD).
      EXPECT_EQ(r.op, "SGD");
      EXPECT_EQ(r.backend, Backend::kAclnn);
    }
  }
  EXPECT_EQ(rep.failed, 0);
  EXPECT_EQ(rep.errors, 0);
  EXPECT_EQ(rep.zero_trust, 0);
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
}

TEST(PrecisionShippedCases, SameBitsForAnyThreadCount) {
  CheckOptions opt;
  opt.case_dir = case_dir();
  ASSERT_TRUE(set_num_threads(1).ok());
  const CheckReport one = run_check(opt);
  ASSERT_TRUE(set_num_threads(3).ok());
  const CheckReport three = run_check(opt);
  ASSERT_TRUE(set_num_threads(0).ok());
  ASSERT_EQ(one.rows.size(), three.rows.size());
  for (std::size_t i = 0; i < one.rows.size(); ++i) {
    ASSERT_EQ(one.rows[i].actual.size(), three.rows[i].actual.size());
    for (std::size_t o = 0; o < one.rows[i].actual.size(); ++o) {
      EXPECT_EQ(one.rows[i].actual[o].bytes, three.rows[i].actual[o].bytes)
          << one.rows[i].case_id << " output " << o;
    }
  }
}

}  // namespace
}  // namespace mantissa::precision
