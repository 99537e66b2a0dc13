// Scratch memory for an operator's call: the Workspace the caller lent when it is large and
// aligned enough, otherwise memory owned for the duration of the call. Allocation never throws:
// a failed allocation leaves data() null, and the operator reports it before writing anything.
#pragma once

#include <cstdint>
#include <memory>
#include <new>

#include "mantissa/workspace.h"

namespace mantissa::detail {

template <class T>
class Scratch {
 public:
  Scratch(Workspace ws, uint64_t count) {
    if (count == 0) return;
    const uint64_t bytes = count * sizeof(T);
    if (ws.data != nullptr && ws.size >= bytes &&
        reinterpret_cast<uintptr_t>(ws.data) % alignof(T) == 0) {
      data_ = static_cast<T*>(ws.data);
    } else {
      owned_.reset(new (std::nothrow) T[count]);
      data_ = owned_.get();
    }
  }
  // Null when `count` elements were asked for and could not be allocated (or none were asked
  // for).
  T* data() const noexcept { return data_; }

 private:
  std::unique_ptr<T[]> owned_;
  T* data_ = nullptr;
};

}  // namespace mantissa::detail
