// INT8 post-training calibration: symmetric INT8 quantization (per tensor and per channel), a
// streaming |x| histogram, thresholds by max, percentile and entropy (KL divergence), bias
// correction for a linear layer, and the per-tensor report. See docs/quantization.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa::calib {

// ---- Symmetric INT8 ---------------------------------------------------------------------------

// q = clamp(round_half_even(x / scale), lo, 127) with lo = -127, or -128 when allow_minus_128.
// x: FLOAT, FLOAT16 or BFLOAT16 (widened exactly); q: INT8 of x's shape; both contiguous.
// Per tensor: scales holds one value. Per channel along `axis`: scales holds shape[axis] values.
// Scales must be finite and > 0. NaN quantizes to 0. Vectorised; the same bits on every target
// and thread count.
struct Int8Options {
  int axis = -1;  // -1: per tensor; otherwise the channel axis (0 <= axis < rank)
  bool allow_minus_128 = false;
};
MANTISSA_API Status quantize_int8(const TensorView& x, std::span<const float> scales,
                                  const TensorView& q, const Int8Options& options = {});
// x = q * scale (fp32 product, rounded once to x's dtype).
MANTISSA_API Status dequantize_int8(const TensorView& q, std::span<const float> scales,
                                    const TensorView& x, const Int8Options& options = {});

// ---- The histogram ------------------------------------------------------------------------------

// |x| over 2048 bins of width range / 2048, the range the smallest power of two above every |x|
// seen. When a larger value arrives the range doubles as often as needed and the bins merge in
// groups of 2^k; with power-of-two widths the binning is exact, so the histogram is the same
// however the data is ordered or cut into batches. NaN and +-inf are counted apart and kept out
// of the bins; zeros go to bin 0.
class MANTISSA_API Histogram {
 public:
  static constexpr int kBins = 2048;
  Status add(const TensorView& x);           // FLOAT, FLOAT16 or BFLOAT16, contiguous
  void add(std::span<const float> values);   // the same, for host floats
  double absmax() const { return absmax_; }  // of the finite values
  double range() const { return range_; }    // a power of two; 0 until a nonzero value arrives
  double bin_width() const { return range_ / kBins; }
  const std::vector<uint64_t>& counts() const { return counts_; }
  uint64_t total() const { return total_; }  // finite values
  uint64_t nonfinite() const { return nonfinite_; }

 private:
  void grow(double needed);
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(kBins, 0);
  double range_ = 0.0, absmax_ = 0.0;
  uint64_t total_ = 0, nonfinite_ = 0;
};

// ---- Thresholds ---------------------------------------------------------------------------------

enum class Method { kMax, kPercentile, kEntropy };
MANTISSA_API const char* method_name(Method m);

struct Threshold {
  double threshold = 0.0;   // |x| mapped to 127
  double scale = 0.0;       // threshold / 127
  int bin = -1;             // entropy: the chosen candidate i (bins [0, i)); percentile: the bin
  double divergence = 0.0;  // entropy: KL(P || Q) at the chosen i
};

// max: threshold = absmax. percentile p in (0, 100]: the value below which p% of the finite
// |x| fall, interpolated linearly inside its bin (exact to one bin width). entropy: KL over the
// candidates i in [128, 2048] (see docs/quantization.md for every choice), threshold =
// (i + 0.5) * bin_width. An empty or all-zero histogram gives threshold 0 and scale 0.
// entropy_zero_bin_as_next: before the entropy search, bin 0 (exact zeros and the smallest
// values) takes bin 1's count, as NVIDIA's pytorch-quantization does; without it the zeros of a
// ReLU output dominate P and the search clips far too much.
MANTISSA_API Status choose_threshold(const Histogram& h, Method method, double percentile,
                                     Threshold* out, bool entropy_zero_bin_as_next = true);

// ---- The report
// ----------------------------------------------------------------------------------

struct TensorReport {
  std::string name;
  std::vector<int64_t> shape;
  Method method = Method::kMax;
  Threshold chosen;                    // per tensor (per channel: the largest channel threshold)
  std::vector<double> channel_scales;  // per channel only
  double clipped_fraction = 0.0;       // finite values with |x| > threshold, over all finite values
  double snr_db = 0.0;                 // 10 log10(sum x^2 / sum (x - deq(q(x)))^2)
  double mse = 0.0;                    // mean of (x - deq(q(x)))^2
  uint64_t nonfinite = 0;
};

struct CalibrateOptions {
  Method method = Method::kEntropy;
  double percentile = 99.99;
  int per_channel_axis = -1;             // -1: per tensor
  bool entropy_zero_bin_as_next = true;  // see choose_threshold
};

// Calibrates one tensor given as batches (each FLOAT, FLOAT16 or BFLOAT16 of one shape with the
// same trailing dims; per channel, the channel axis is counted in each batch's shape): the
// histogram over all batches, the threshold, then the error of quantizing every batch with it.
// `progress`, when set, is called after each batch with (batches done, batches).
MANTISSA_API Status calibrate_tensor(const std::string& name, std::span<const TensorView> batches,
                                     const CalibrateOptions& options, TensorReport* report,
                                     void (*progress)(std::size_t, std::size_t) = nullptr);

// ---- Bias correction
// -----------------------------------------------------------------------------

// A linear layer y = W x + b, W [out, in] FLOAT, quantized per output channel with `scales`
// (out values): the corrected bias b' = b + mean over the inputs of (W x - deq(q(W)) x), so the
// quantized layer's mean output matches the float one. inputs: [n, in] FLOAT. All in double.
MANTISSA_API Status correct_bias(const TensorView& weight, std::span<const float> scales,
                                 const TensorView& inputs, std::span<const float> bias,
                                 std::vector<float>* corrected);

// ---- .npy files ---------------------------------------------------------------------------------

struct NpyArray {
  DType dtype = DType::kFloat32;  // FLOAT ('<f4'; '<f8' is rounded to it) or FLOAT16 ('<f2')
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // C order
  TensorView view() { return TensorView(data.data(), dtype, shape); }
};
// Reads a NumPy .npy file (format 1.0, 2.0 or 3.0; little-endian float32, float64 or float16;
// C order; float64 values rounded to float32, nearest even). A malformed file (magic, version,
// header, dtype, Fortran order, a shape whose size overflows or disagrees with the file's length)
// gives 161002 naming the file and the problem, before anything is allocated for the data.
MANTISSA_API Status read_npy(const std::string& path, NpyArray* out);

}  // namespace mantissa::calib
