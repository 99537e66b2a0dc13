// The per-channel parameters of the quantize operators (Quantize, AscendQuantV3): the scale and
// the optional offset (zero point), read once into fp32 (the kernels' form), and the channel
// geometry. The caller has validated the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/rows.h"
#include "mantissa/dtype.h"
#include "mantissa/tensor.h"

namespace mantissa::detail {

struct QuantChannels {
  int64_t channels = 1;
  // Element i's channel is (i / inner) % channels: inner is the product of the dims after the
  // axis (with one channel, the whole tensor is one run).
  int64_t inner = 1;
  std::vector<float> scale;
  std::vector<float> offset;  // empty without an offset
  const float* offset_or_null() const noexcept { return offset.empty() ? nullptr : offset.data(); }
};

// Element i of a small parameter tensor (fp32/fp16/bf16, or an integer zero point) as fp32.
inline float param_as_float(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kInt8: return static_cast<float>(static_cast<const int8_t*>(t.data)[i]);
    case DType::kUInt8: return static_cast<float>(static_cast<const uint8_t*>(t.data)[i]);
    case DType::kInt32: return static_cast<float>(static_cast<const int32_t*>(t.data)[i]);
    default: return load_as_float(t.dtype, t.data, static_cast<std::size_t>(i));
  }
}

// Throws std::bad_alloc (the entry's guard reports it) before anything is written.
inline QuantChannels quant_channels(const TensorView& x, int64_t numel, int64_t axis,
                                    const TensorView& scale,
                                    const std::optional<TensorView>& offset) {
  QuantChannels q;
  q.channels = scale.shape[0];
  q.inner = q.channels == 1 ? numel : rows_over_dim(std::span(x.shape.data(), x.rank), axis).inner;
  q.scale.resize(static_cast<std::size_t>(q.channels));
  if (offset) q.offset.resize(q.scale.size());
  for (int64_t c = 0; c < q.channels; ++c) {
    q.scale[c] = param_as_float(scale, c);
    if (offset) q.offset[c] = param_as_float(*offset, c);
  }
  return q;
}

}  // namespace mantissa::detail
