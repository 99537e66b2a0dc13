// A double for the tool's JSON output: the number itself, or "nan", "inf" or "-inf" (JSON has no
// non-finite numbers).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>

namespace mantissa::tool {

inline nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

}  // namespace mantissa::tool
