// AntiMxQuant in the kit: golden (the exact product in double) and golden32 (the documented
// fp32 product rounded once), written from the contract with the kit's own FP8 decoding (fp.h)
// and the scale as ldexp.
#include <cmath>
#include <cstdint>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kX, kMxScale };
enum { kAxis, kDstType };

// The factor of each element of x: 2^(code - 127) of its block (NaN for 0xFF).
std::vector<double> factors(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kMxScale];
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = in.attrs[kAxis].i;
  if (axis < 0) axis += rank;
  int64_t outer = 1, length = 1, inner = 1;
  for (int64_t k = 0; k < rank; ++k) {
    const int64_t d = x.shape[static_cast<std::size_t>(k)];
    (k < axis ? outer : k == axis ? length : inner) *= d;
  }
  const int64_t pairs = ((length + 31) / 32 + 1) / 2;
  std::vector<double> f(static_cast<std::size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t l = 0; l < length; ++l) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t b = l / 32;
        const uint32_t code = s.bits(((o * pairs + b / 2) * inner + i) * 2 + b % 2);
        f[static_cast<std::size_t>((o * length + l) * inner + i)] =
            code == 0xFF ? std::nan("") : std::ldexp(1.0, static_cast<int>(code) - 127);
      }
    }
  }
  return f;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor& x = in.tensors[kX];
  std::vector<double> f = factors(in);
  for (int64_t i = 0; i < x.numel(); ++i) f[static_cast<std::size_t>(i)] *= x.value(i);
  return {f};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor& x = in.tensors[kX];
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  const std::vector<double> f = factors(in);
  HostTensor y(dst, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    // Both operands are fp32 values (an FP8 value, a power of two down to 2^-127): one product.
    const float v =
        static_cast<float>(x.value(i)) * static_cast<float>(f[static_cast<std::size_t>(i)]);
    y.set_bits(i, narrow_result(v, dst));
  }
  return {y};
}

}  // namespace

template <>
Goldens goldens<detail::AntiMxQuantOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
