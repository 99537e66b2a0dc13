// The nesting depth of JSON text, for the readers that parse JSON from outside (case files,
// precision policies, the loss scaler's saved state, checkpoints): nlohmann's dump() recurses once
// per level, and error messages echo values with it, so text nested deeper than a reader's limit
// is refused before it is parsed (a 100k-deep value would otherwise overflow the stack).
#pragma once

#include <algorithm>
#include <string_view>

namespace mantissa::detail {

// The deepest nesting of arrays and objects in JSON text (brackets inside strings skipped).
inline int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

// The limit of the library's own JSON readers (policies, the loss scaler's state): their
// documents nest three or four levels.
inline constexpr int kMaxJsonNesting = 64;

}  // namespace mantissa::detail
