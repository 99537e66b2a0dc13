// Scratch memory a caller may lend an operator. An operator that needs scratch memory exposes
// its size (`<op>_workspace_size(...)`) and accepts a Workspace of at least that many bytes;
// given none, it allocates what it needs itself. Element-wise operators need none.
#pragma once

#include <cstdint>

namespace mantissa {

struct Workspace {
  void* data = nullptr;  // 64-byte aligned is best; any alignment works
  uint64_t size = 0;     // bytes
};

}  // namespace mantissa
