// Test helpers: run a body on every available SIMD target (forced) and restore the default.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mantissa/runtime.h"

namespace mantissa::testing {

// Calls body(target_name) once per target this CPU supports among those compiled.
template <class Body>
void for_each_target(Body&& body) {
  const std::vector<std::string> targets = available_simd_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    ASSERT_TRUE(set_simd_target(target).ok()) << target;
    ASSERT_EQ(simd_target(), target);
    SCOPED_TRACE("SIMD target " + target);
    body(target);
  }
  ASSERT_TRUE(set_simd_target("auto").ok());
}

// Restores the default thread count when it goes out of scope.
struct ThreadCountGuard {
  ~ThreadCountGuard() { (void)set_num_threads(0); }
};

}  // namespace mantissa::testing
