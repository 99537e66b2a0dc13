// The host runtime of the CANN-compatible C API. There is one "device", the host CPU: device
// memory is host memory (page-aligned mappings, below), and work enqueued on a stream runs when it
// is enqueued, so synchronising a stream has nothing left to wait for.
//
// Handles (streams, allocations) are kept in registries so that a stale or foreign pointer is
// rejected with an error code instead of being dereferenced or freed.
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
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

// The bytes after a device buffer hold this pattern until something writes them.
constexpr unsigned char kSlackPattern = 0xA5;

// Device memory: each allocation is an anonymous mapping of its own, sized as CANN sizes device
// buffers (the request rounded up to 32 bytes, plus 32) and rounded up to whole pages. A program
// that writes past what it asked for (CANN's own samples do: they rely on that slack and on the
// device memory pool) then writes into its mapping's spare bytes, never into the host heap; a
// write past the whole mapping faults instead of corrupting anything. The spare bytes hold
// kSlackPattern from allocation; aclrtFree checks them and, with MANTISSA_DEBUG_MEMORY=1 in the
// environment, reports on stderr how far past its size the buffer was written.
struct Allocation {
  size_t size = 0;    // requested
  size_t mapped = 0;  // the mapping's length
};

size_t page_size() {
  static const size_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

// The mapping's length for `size` bytes, or 0 when that overflows.
size_t mapped_length(size_t size) {
  const size_t page = page_size();
  if (size > static_cast<size_t>(PTRDIFF_MAX) - 2 * page - 64) return 0;
  const size_t padded = (size + 31) / 32 * 32 + 32;
  return (padded + page - 1) / page * page;
}

bool debug_memory() {
  static const bool on = [] {
    const char* v = std::getenv("MANTISSA_DEBUG_MEMORY");
    return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

struct Stream {
  // Nothing is ever pending: operators run at enqueue time. The object exists so that a stream
  // is a unique, checkable handle.
  char unused = 0;
};

struct RuntimeState {
  std::mutex mutex;
  bool initialized = false;
  std::unordered_set<const void*> streams;
  std::unordered_map<const void*, Allocation> allocations;
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

using mantissa::compat::Allocation;
using mantissa::compat::debug_memory;
using mantissa::compat::fail;
using mantissa::compat::kSlackPattern;
using mantissa::compat::mapped_length;
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
  const size_t mapped = mapped_length(size);
  void* p = mapped == 0
                ? MAP_FAILED
                : mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return fail(ACL_ERROR_BAD_ALLOC, fmt::format("aclrtMalloc: cannot allocate {} bytes", size));
  }
  std::memset(static_cast<unsigned char*>(p) + size, kSlackPattern, mapped - size);
  auto& s = state();
  try {
    std::lock_guard lock(s.mutex);
    s.allocations.emplace(p, Allocation{size, mapped});
  } catch (const std::bad_alloc&) {
    munmap(p, mapped);
    return fail(ACL_ERROR_BAD_ALLOC, fmt::format("aclrtMalloc: cannot allocate {} bytes", size));
  }
  *devPtr = p;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is null");
  auto& s = state();
  Allocation a;
  {
    std::lock_guard lock(s.mutex);
    const auto it = s.allocations.find(devPtr);
    if (it == s.allocations.end()) {
      return fail(
          ACL_ERROR_INVALID_PARAM,
          fmt::format("aclrtFree: {} was not returned by aclrtMalloc (or was freed)", devPtr));
    }
    a = it->second;
    s.allocations.erase(it);
  }
  if (debug_memory()) {
    // The last spare byte that no longer holds the pattern: how far past its size the buffer was
    // written (a written byte equal to the pattern goes unseen).
    const auto* bytes = static_cast<const unsigned char*>(devPtr);
    size_t end = a.mapped;
    while (end > a.size && bytes[end - 1] == kSlackPattern) --end;
    if (end > a.size) {
      std::fprintf(stderr,
                   "mantissa: aclrtFree: the device buffer %p of %zu bytes was written %zu bytes "
                   "past its end (MANTISSA_DEBUG_MEMORY)\n",
                   devPtr, a.size, end - a.size);
    }
  }
  munmap(devPtr, a.mapped);
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
