// The trainer's tensors and element-wise passes (tensor.h).
#include "trainer/tensor.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "mantissa/convert.h"

namespace mantissa::trainer {

namespace {

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

void Tensor::reset(DType dtype, std::vector<int64_t> shape) {
  ensure(dtype, std::move(shape));
  std::memset(words_.data(), 0, words_.size() * sizeof(uint32_t));
}

void Tensor::ensure(DType dtype, std::vector<int64_t> shape) {
  dtype_ = dtype;
  numel_ = count_of(shape);
  shape_ = std::move(shape);
  const auto words = static_cast<std::size_t>((bytes() + 3) / 4);
  if (words_.size() < words) words_.resize(words);
}

void Tensor::release() {
  shape_.clear();
  numel_ = 0;
  words_ = {};
}

TensorView Tensor::view() const { return view(shape_); }

TensorView Tensor::view(std::span<const int64_t> shape) const {
  return TensorView(const_cast<uint32_t*>(words_.data()), dtype_, shape);
}

void widen(const void* src, DType dtype, float* dst, int64_t n) {
  const auto count = static_cast<std::size_t>(n);
  switch (dtype) {
    case DType::kFloat16:
      convert_fp16_to_fp32(static_cast<const uint16_t*>(src), dst, count);
      break;
    case DType::kBFloat16:
      convert_bf16_to_fp32(static_cast<const uint16_t*>(src), dst, count);
      break;
    default:
      if (src != dst) std::memmove(dst, src, count * sizeof(float));
      break;
  }
}

void narrow(const float* src, DType dtype, void* dst, int64_t n, UnderflowCount* count) {
  const auto size = static_cast<std::size_t>(n);
  if (dtype == DType::kFloat32) {
    if (src != dst) std::memmove(dst, src, size * sizeof(float));
    if (count != nullptr && count->fp32_values) count->values += n;
    return;
  }
  auto* bits = static_cast<uint16_t*>(dst);
  if (dtype == DType::kFloat16) {
    convert_fp32_to_fp16(src, bits, size);
  } else {
    convert_fp32_to_bf16(src, bits, size);
  }
  if (count != nullptr) {
    // An integer count over the bit patterns (this file is compiled with -O3: vectorised).
    // (32-bit partial counts per block of 2^20 keep the vectors' lanes 32 bits wide.)
    uint64_t under = 0;
    for (int64_t b = 0; b < n; b += int64_t{1} << 20) {
      const int64_t e = std::min(n, b + (int64_t{1} << 20));
      uint32_t part = 0;
      for (int64_t i = b; i < e; ++i) {
        const uint32_t wide = std::bit_cast<uint32_t>(src[i]);
        part += static_cast<uint32_t>(((bits[i] & 0x7FFFu) == 0) & ((wide & 0x7FFFFFFFu) != 0));
      }
      under += part;
    }
    count->values += n;
    count->underflows += static_cast<int64_t>(under);
  }
}

int64_t count_equal(const void* a, const void* b, int64_t n, std::size_t element_size) {
  uint64_t same = 0;
  if (element_size == 4) {
    const auto* x = static_cast<const uint32_t*>(a);
    const auto* y = static_cast<const uint32_t*>(b);
    for (int64_t i = 0; i < n; ++i) same += static_cast<uint64_t>(x[i] == y[i]);
  } else {
    const auto* x = static_cast<const uint16_t*>(a);
    const auto* y = static_cast<const uint16_t*>(b);
    for (int64_t i = 0; i < n; ++i) same += static_cast<uint64_t>(x[i] == y[i]);
  }
  return static_cast<int64_t>(same);
}

void add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void scale(float* x, float factor, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * factor;
}

void cast(const Tensor& src, DType dtype, Tensor* dst, UnderflowCount* count) {
  dst->ensure(dtype, src.shape());
  if (src.dtype() == dtype) {
    std::memcpy(dst->data(), src.data(), static_cast<std::size_t>(src.bytes()));
  } else if (src.dtype() == DType::kFloat32) {
    narrow(src.f32(), dtype, dst->data(), src.numel(), count);
  } else if (dtype == DType::kFloat32) {
    widen(src.data(), src.dtype(), dst->f32(), src.numel());
  } else {  // fp16 <-> bf16: through fp32, exact then rounded once
    std::vector<float> wide(static_cast<std::size_t>(src.numel()));
    widen(src.data(), src.dtype(), wide.data(), src.numel());
    narrow(wide.data(), dtype, dst->data(), src.numel(), count);
  }
}

void accumulate(const void* src, DType dtype, float* acc, int64_t n) {
  if (dtype == DType::kFloat32) {
    const auto* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) acc[i] += s[i];
    return;
  }
  const auto* s = static_cast<const uint16_t*>(src);
  if (dtype == DType::kFloat16) {
    for (int64_t i = 0; i < n; ++i) acc[i] += fp16_bits_to_float(s[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += bf16_bits_to_float(s[i]);
  }
}

namespace {

// `inf` is the dtype's +inf bits: 0 < bits <= inf is x > 0 (bits with the sign set are <= 0, or
// NaN, which is kept). Branch-free: the sign of an activation is a coin flip for the branch
// predictor.
template <class T>
void relu_bits(const T* x, T* y, int64_t n, T sign, T inf) {
  for (int64_t i = 0; i < n; ++i) {
    const T magnitude = static_cast<T>(x[i] & ~sign);
    const T zero_it = static_cast<T>(((x[i] & sign) != 0) & (magnitude <= inf));
    y[i] = static_cast<T>(x[i] & static_cast<T>(zero_it - 1));
  }
}

template <class T>
void relu_grad_bits(const T* x, const T* dy, T* dx, int64_t n, T inf) {
  for (int64_t i = 0; i < n; ++i) {
    const T keep = static_cast<T>((x[i] != 0) & (x[i] <= inf));
    dx[i] = static_cast<T>(dy[i] & static_cast<T>(T{0} - keep));
  }
}

uint16_t inf16(DType d) { return d == DType::kFloat16 ? 0x7C00 : 0x7F80; }

}  // namespace

void relu(const void* x, DType dtype, void* y, int64_t n) {
  if (dtype == DType::kFloat32) {
    relu_bits<uint32_t>(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), n, 0x80000000u,
                        0x7F800000u);
  } else {
    relu_bits<uint16_t>(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), n, 0x8000,
                        inf16(dtype));
  }
}

void relu_grad(const void* x, const void* dy, DType dtype, void* dx, int64_t n) {
  if (dtype == DType::kFloat32) {
    relu_grad_bits<uint32_t>(static_cast<const uint32_t*>(x), static_cast<const uint32_t*>(dy),
                             static_cast<uint32_t*>(dx), n, 0x7F800000u);
  } else {
    relu_grad_bits<uint16_t>(static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(dy),
                             static_cast<uint16_t*>(dx), n, inf16(dtype));
  }
}

uint64_t fnv1a(const void* data, std::size_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex16(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace mantissa::trainer
