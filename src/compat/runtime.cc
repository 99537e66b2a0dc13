// The host runtime of the CANN-compatible C API. There is one "device", the host CPU: device
// memory is host memory aligned to 64 bytes, and work enqueued on a stream runs when it is
// enqueued, so synchronising a stream has nothing left to wait for.
//
// Handles (streams, allocations) are kept in registries so that a stale or foreign pointer is
// rejected with an error code instead of being dereferenced or freed.
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "acl/acl_rt.h"
#include "compat/compat_internal.h"
#include "core/runtime_internal.h"

namespace mantissa::compat {
namespace {

constexpr size_t kDeviceAlignment = 64;

struct Stream {
  // Nothing is ever pending: operators run at enqueue time. The object exists so that a stream
  // is a unique, checkable handle.
  char unused = 0;
};

struct RuntimeState {
  std::mutex mutex;
  bool initialized = false;
  std::unordered_set<const void*> streams;
  std::unordered_map<const void*, size_t> allocations;  // pointer -> requested size
};

RuntimeState& state() {
  static RuntimeState* s = new RuntimeState;  // never destroyed: usable during static teardown
  return *s;
}

aclError fail(aclError code, std::string message) {
  set_recent_error(std::move(message));
  return code;
}

}  // namespace

bool stream_is_usable(const void* stream) {
  if (stream == nullptr) return true;  // the default stream
  RuntimeState& s = state();
  std::lock_guard lock(s.mutex);
  return s.streams.count(stream) != 0;
}

}  // namespace mantissa::compat

using mantissa::compat::fail;
using mantissa::compat::kDeviceAlignment;
using mantissa::compat::state;

extern "C" {

aclError aclInit(const char* /*configPath*/) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.initialized) {
    return fail(ACL_ERROR_REPEAT_INITIALIZE,
                "aclInit: already initialized (call aclFinalize first)");
  }
  mantissa::detail::ensure_runtime_initialized();
  s.initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.initialized) return fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
  s.initialized = false;
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  if (deviceId != 0) {
    return fail(
        ACL_ERROR_INVALID_DEVICE,
        fmt::format("aclrtSetDevice: device {} does not exist (the host is device 0)", deviceId));
  }
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (deviceId != 0) {
    return fail(
        ACL_ERROR_INVALID_DEVICE,
        fmt::format("aclrtResetDevice: device {} does not exist (the host is device 0)", deviceId));
  }
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is null");
  *deviceId = 0;
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null");
  }
  auto* created = new (std::nothrow) mantissa::compat::Stream;
  if (created == nullptr) return fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream: out of memory");
  auto& s = state();
  try {
    std::lock_guard lock(s.mutex);
    s.streams.insert(created);
  } catch (const std::bad_alloc&) {
    delete created;
    return fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateStream: out of memory");
  }
  *stream = created;
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  if (stream == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: stream is null");
  }
  auto& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.streams.erase(stream) == 0) {
      return fail(ACL_ERROR_INVALID_RESOURCE_HANDLE,
                  fmt::format("aclrtDestroyStream: {} is not a live stream",
                              static_cast<const void*>(stream)));
    }
  }
  delete static_cast<mantissa::compat::Stream*>(stream);
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  if (!mantissa::compat::stream_is_usable(stream)) {
    return fail(ACL_ERROR_INVALID_RESOURCE_HANDLE,
                fmt::format("aclrtSynchronizeStream: {} is not a live stream",
                            static_cast<const void*>(stream)));
  }
  return ACL_SUCCESS;  // work ran when it was enqueued; its errors were returned then
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy /*policy*/) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is null");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size is 0");
  // No object may exceed PTRDIFF_MAX bytes; std::aligned_alloc wants a multiple of the
  // alignment.
  if (size > static_cast<size_t>(PTRDIFF_MAX) - kDeviceAlignment) {
    return fail(ACL_ERROR_BAD_ALLOC, fmt::format("aclrtMalloc: cannot allocate {} bytes", size));
  }
  const size_t rounded = (size + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
  void* p = std::aligned_alloc(kDeviceAlignment, rounded);
  if (p == nullptr) {
    return fail(ACL_ERROR_BAD_ALLOC, fmt::format("aclrtMalloc: cannot allocate {} bytes", size));
  }
  auto& s = state();
  try {
    std::lock_guard lock(s.mutex);
    s.allocations.emplace(p, size);
  } catch (const std::bad_alloc&) {
    std::free(p);
    return fail(ACL_ERROR_BAD_ALLOC, fmt::format("aclrtMalloc: cannot allocate {} bytes", size));
  }
  *devPtr = p;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is null");
  auto& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (s.allocations.erase(devPtr) == 0) {
      return fail(
          ACL_ERROR_INVALID_PARAM,
          fmt::format("aclrtFree: {} was not returned by aclrtMalloc (or was freed)", devPtr));
    }
  }
  std::free(devPtr);
  return ACL_SUCCESS;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  if (dst == nullptr || src == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM,
                fmt::format("aclrtMemcpy: {} is null", dst == nullptr ? "dst" : "src"));
  }
  if (count > destMax) {
    return fail(ACL_ERROR_INVALID_PARAM,
                fmt::format("aclrtMemcpy: count {} exceeds destMax {}", count, destMax));
  }
  const int k = static_cast<int>(kind);
  if (k < ACL_MEMCPY_HOST_TO_HOST || k > ACL_MEMCPY_DEVICE_TO_DEVICE) {
    return fail(ACL_ERROR_INVALID_PARAM,
                fmt::format("aclrtMemcpy: kind {} is not an aclrtMemcpyKind", k));
  }
  // Every kind is a host copy. memmove: overlapping ranges are copied as if through a buffer.
  if (count != 0) std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

}  // extern "C"
