// A byte stream read as the choices of a fuzz target: integers in ranges, with the stream's end
// read as zeros (so every input is a valid sequence of choices).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mantissa::fuzz {

class Input {
 public:
  Input(const uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  uint8_t byte() { return i_ < n_ ? p_[i_++] : 0; }
  // A value in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    uint64_t v = 0;
    for (int k = 0; k < 4; ++k) v = (v << 8) | byte();
    return lo + static_cast<int64_t>(v % static_cast<uint64_t>(hi - lo + 1));
  }
  bool flag() { return byte() & 1; }
  // The bytes not consumed yet.
  const uint8_t* rest() const { return p_ + (i_ < n_ ? i_ : n_); }
  std::size_t rest_size() const { return i_ < n_ ? n_ - i_ : 0; }

 private:
  const uint8_t* p_;
  std::size_t n_, i_ = 0;
};

// The bytes as a file in memory, named by a path the loaders can open (no disk involved).
class MemFile {
 public:
  MemFile(const uint8_t* data, std::size_t size) {
    fd_ = memfd_create("fuzz", 0);
    if (fd_ >= 0 && size > 0) {
      std::size_t done = 0;
      while (done < size) {
        const ssize_t w = write(fd_, data + done, size - done);
        if (w <= 0) break;
        done += static_cast<std::size_t>(w);
      }
    }
  }
  ~MemFile() {
    if (fd_ >= 0) close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_ = -1;
};

}  // namespace mantissa::fuzz
