// What the trainer's files share: the status of a bad argument.
#pragma once

#include <string>
#include <utility>

#include "mantissa/status.h"

namespace mantissa::train {

inline Status invalid(std::string message) {
  return {StatusCode::kParamInvalid, std::move(message)};
}

}  // namespace mantissa::train
