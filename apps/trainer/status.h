// What every file of the trainer shares: the early return on a failed call, and the status of a
// bad argument.
#pragma once

#include <string>
#include <utility>

#include "mantissa/status.h"

// Returns from the enclosing function when a call fails.
#define TRAINER_TRY(expr)            \
  do {                               \
    ::mantissa::Status st_ = (expr); \
    if (!st_.ok()) return st_;       \
  } while (false)

namespace mantissa::trainer {

inline Status invalid(std::string message) {
  return {StatusCode::kParamInvalid, std::move(message)};
}

}  // namespace mantissa::trainer
