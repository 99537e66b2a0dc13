// A registry of live C handles (tensors, scalars, lists, arrays), looked up without dereferencing.
//
// Each registered handle gets a serial number, never reissued in the life of the process. A list
// that owns handles records their serial numbers, so a handle destroyed by the caller and a new
// one allocated at the same address are told apart: the list never destroys or reads the new one.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace mantissa::compat {

template <class T>
class HandleRegistry {
 public:
  // Registers `handle`; returns its serial number (never 0). Throws std::bad_alloc.
  uint64_t add(const T* handle) {
    std::lock_guard lock(mutex_);
    const uint64_t issued = ++issued_;
    live_.emplace(handle, issued);
    return issued;
  }

  // The serial number of a live handle; 0 when `handle` is not live.
  uint64_t serial(const T* handle) const noexcept {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(handle);
    return it == live_.end() ? 0 : it->second;
  }

  bool is_live(const T* handle) const noexcept { return serial(handle) != 0; }

  // Unregisters `handle` when it is live and, if `expected` is non-zero, registered under that
  // serial number. Returns whether it was unregistered (the caller then deletes it).
  bool remove(const T* handle, uint64_t expected = 0) noexcept {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(handle);
    if (it == live_.end() || (expected != 0 && it->second != expected)) return false;
    live_.erase(it);
    return true;
  }

 private:
  mutable std::mutex mutex_;
  uint64_t issued_ = 0;  // serial numbers handed out so far
  std::unordered_map<const T*, uint64_t> live_;
};

}  // namespace mantissa::compat
