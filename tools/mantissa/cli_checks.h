// Validators the tool's options share. CLI11's own let NaN through (Range and PositiveNumber
// compare, and every comparison with NaN is false) and convert "-1" or "1e23" to an unsigned
// integer by wrapping or saturating; these run on the text before any conversion.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace mantissa::tool {

// A finite number (no nan, inf or trailing text).
inline const CLI::Validator kFinite(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v)) {
        return "must be a finite number, got '" + text + "'";
      }
      return {};
    },
    "FINITE", "finite");

// A number that stays finite as an fp32 (options the trainer holds as float: 1e300 would
// become inf).
inline const CLI::Validator kFiniteFloat(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) ||
          std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
        return "must be a finite number within fp32's range, got '" + text + "'";
      }
      return {};
    },
    "FINITE", "finite_float");

// An unsigned 64-bit integer written in decimal digits (no sign, exponent or overflow).
inline const CLI::Validator kUint64(
    [](std::string& text) -> std::string {
      uint64_t v = 0;
      const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || err != std::errc() || end != text.data() + text.size()) {
        return "must be an integer in [0, 18446744073709551615], got '" + text + "'";
      }
      return {};
    },
    "UINT64", "uint64");

}  // namespace mantissa::tool
