// INT8 calibration: validation of the quantize calls, the histogram, the threshold methods, the
// report, bias correction and the .npy reader. The kernels are in int8.cc.
#include "mantissa/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string_view>

#include "calib/int8.h"
#include "core/entry.h"
#include "core/validate.h"

namespace mantissa::calib {
namespace {

using detail::fail;

constexpr std::string_view kQuantize = "quantize_int8";
constexpr std::string_view kCalibrate = "calibrate";

// [outer, channels, inner] of x for the axis (channels 1 per tensor).
Status int8_geometry(std::string_view op, const TensorView& x, const TensorView& q,
                     std::span<const float> scales, const Int8Options& o,
                     detail::Int8KernelArgs* a) {
  if (!is_training_float(x.dtype)) {
    return fail(StatusCode::kParamInvalid, op, "x dtype {} is not FLOAT, FLOAT16 or BFLOAT16",
                dtype_name(x.dtype));
  }
  if (q.dtype != DType::kInt8) {
    return fail(StatusCode::kParamInvalid, op, "q dtype {} is not INT8", dtype_name(q.dtype));
  }
  if (!same_shape(x, q)) {
    return fail(StatusCode::kParamInvalid, op, "q shape {} differs from x shape {}",
                q.shape_string(), x.shape_string());
  }
  if (!x.numel() || !x.is_contiguous() || !q.is_contiguous()) {
    return fail(StatusCode::kParamInvalid, op, "x and q must be valid contiguous tensors");
  }
  if ((x.data == nullptr || q.data == nullptr) && *x.numel() > 0) {
    return fail(StatusCode::kParamNullptr, op, "x or q has no data");
  }
  if (memory_overlaps(x, q)) {
    return fail(StatusCode::kParamInvalid, op, "x and q overlap");
  }
  int64_t outer = 1, channels = 1, inner = 1;
  if (o.axis >= 0) {
    if (o.axis >= x.rank) {
      return fail(StatusCode::kParamInvalid, op, "axis {} is outside [0, {}) for x of shape {}",
                  o.axis, x.rank, x.shape_string());
    }
    for (int i = 0; i < o.axis; ++i) outer *= x.shape[i];
    channels = x.shape[o.axis];
    for (int i = o.axis + 1; i < x.rank; ++i) inner *= x.shape[i];
  } else {
    inner = *x.numel();
  }
  if (static_cast<int64_t>(scales.size()) != channels) {
    return fail(StatusCode::kParamInvalid, op, "{} scales for {} channels", scales.size(),
                channels);
  }
  for (std::size_t i = 0; i < scales.size(); ++i) {
    if (!std::isfinite(scales[i]) || !(scales[i] > 0.0f)) {
      return fail(StatusCode::kParamInvalid, op, "scales[{}] is {} but must be finite and > 0", i,
                  scales[i]);
    }
  }
  a->dtype = x.dtype;
  a->scales = scales.data();
  a->outer = outer;
  a->channels = channels;
  a->inner = inner;
  a->lo = o.allow_minus_128 ? int8_t{-128} : int8_t{-127};
  return {};
}

float element(const TensorView& x, int64_t i) {
  return load_as_float(x.dtype, x.data, static_cast<std::size_t>(i));
}

}  // namespace

Status quantize_int8(const TensorView& x, std::span<const float> scales, const TensorView& q,
                     const Int8Options& o) {
  return detail::guarded_entry("quantize_int8", [&]() -> Status {
    detail::Int8KernelArgs a;
    MANTISSA_RETURN_IF_ERROR(int8_geometry(kQuantize, x, q, scales, o, &a));
    if (*x.numel() == 0) return {};
    a.x = x.data;
    a.q = q.data;
    detail::quantize_int8_kernel(a);
    return {};
  });
}

Status dequantize_int8(const TensorView& q, std::span<const float> scales, const TensorView& x,
                       const Int8Options& o) {
  return detail::guarded_entry("dequantize_int8", [&]() -> Status {
    detail::Int8KernelArgs a;
    MANTISSA_RETURN_IF_ERROR(int8_geometry("dequantize_int8", x, q, scales, o, &a));
    if (*x.numel() == 0) return {};
    a.q = q.data;
    a.y = x.data;
    detail::dequantize_int8_kernel(a);
    return {};
  });
}

// ---- Histogram --------------------------------------------------------------------------------

// The range is the smallest power of two above every |x| seen, so the bin width is a power of
// two too: |x| / width is exact, every value is below the range (no clamping at the top), and
// merging bins in groups of 2^k when the range doubles k times gives exactly the bins a histogram
// built at the final range would have. The result does not depend on the data's order at all.
void Histogram::grow(double needed) {
  int e = 0;
  std::frexp(needed, &e);  // needed = m * 2^e, m in [0.5, 1): 2^e is the power above it
  const double r = std::ldexp(1.0, e);
  if (range_ == 0.0) {
    range_ = r;
    return;
  }
  int k = 0;
  while (std::ldexp(range_, k) < r) ++k;
  if (k == 0) return;
  std::vector<uint64_t> merged(kBins, 0);
  for (int i = 0; i < kBins; ++i) {
    merged[static_cast<std::size_t>(k >= 11 ? 0 : i >> k)] += counts_[static_cast<std::size_t>(i)];
  }
  counts_ = std::move(merged);
  range_ = r;
}

void Histogram::add(std::span<const float> values) {
  double batch_max = 0.0;
  for (float v : values) {
    if (std::isfinite(v)) batch_max = std::max(batch_max, static_cast<double>(std::fabs(v)));
  }
  if (batch_max > 0.0 && batch_max >= range_) grow(batch_max);
  absmax_ = std::max(absmax_, batch_max);
  const double width = range_ / kBins;
  for (float v : values) {
    if (!std::isfinite(v)) {
      ++nonfinite_;
      continue;
    }
    ++total_;
    const double a = std::fabs(static_cast<double>(v));
    const int bin =
        width > 0.0 ? static_cast<int>(std::min<double>(kBins - 1, std::floor(a / width))) : 0;
    ++counts_[static_cast<std::size_t>(bin)];
  }
}

Status Histogram::add(const TensorView& x) {
  if (!is_training_float(x.dtype) || !x.numel() || !x.is_contiguous() ||
      (x.data == nullptr && *x.numel() > 0)) {
    return fail(StatusCode::kParamInvalid, "Histogram",
                "x must be a contiguous FLOAT, FLOAT16 or BFLOAT16 tensor (dtype {}, shape {})",
                dtype_name(x.dtype), x.shape_string());
  }
  const int64_t n = *x.numel();
  std::vector<float> values(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = element(x, i);
  add(values);
  return {};
}

// ---- Thresholds -------------------------------------------------------------------------------

const char* method_name(Method m) {
  switch (m) {
    case Method::kMax: return "max";
    case Method::kPercentile: return "percentile";
    case Method::kEntropy: return "entropy";
  }
  return "?";
}

namespace {

// MXNet's _smooth_distribution: empty bins get eps, the nonzero ones give it up evenly. Returns
// false when every bin is empty.
bool smooth(std::vector<double>& p) {
  constexpr double kEps = 1e-4;
  std::size_t zeros = 0;
  for (double v : p) zeros += v == 0.0;
  const std::size_t nonzeros = p.size() - zeros;
  if (nonzeros == 0) return false;
  const double eps1 = kEps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& v : p) v += v == 0.0 ? kEps : -eps1;
  return true;
}

// KL(P || Q) after normalising both (scipy.stats.entropy).
double kl(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0.0, sq = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) sp += p[i], sq += q[i];
  double d = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i] / sp, qi = q[i] / sq;
    if (pi > 0.0) d += pi * std::log(pi / qi);
  }
  return d;
}

}  // namespace

Status choose_threshold(const Histogram& h, Method method, double percentile, Threshold* out,
                        bool entropy_zero_bin_as_next) {
  if (out == nullptr) return fail(StatusCode::kParamNullptr, kCalibrate, "out is null");
  *out = Threshold{};
  const double width = h.bin_width();
  if (h.total() == 0 || h.absmax() == 0.0) return {};
  switch (method) {
    case Method::kMax: out->threshold = h.absmax(); break;
    case Method::kPercentile: {
      if (!(percentile > 0.0 && percentile <= 100.0)) {
        return fail(StatusCode::kParamInvalid, kCalibrate,
                    "percentile is {} but must lie in (0, 100]", percentile);
      }
      // numpy's percentile: the value of 0-based rank p/100 * (N - 1) among the sorted |x|. The
      // histogram locates the bin holding that rank's element (in integers, so no rounding of
      // the rank can skip a bin) and interpolates linearly inside it.
      const auto rank = static_cast<uint64_t>(
          std::floor(percentile / 100.0 * static_cast<double>(h.total() - 1) + 1e-9));
      uint64_t below = 0;
      for (int i = 0; i < Histogram::kBins; ++i) {
        const uint64_t c = h.counts()[static_cast<std::size_t>(i)];
        if (below + c > rank) {
          out->bin = i;
          const double within = (static_cast<double>(rank - below) + 0.5) / static_cast<double>(c);
          out->threshold = std::min(h.absmax(), (i + within) * width);
          break;
        }
        below += c;
      }
      break;
    }
    case Method::kEntropy: {
      constexpr int kLevels = 128;
      std::vector<uint64_t> hist = h.counts();
      if (entropy_zero_bin_as_next) hist[0] = hist[1];
      double best = std::numeric_limits<double>::infinity();
      int best_i = Histogram::kBins;
      std::vector<double> p, q;
      for (int i = kLevels; i <= Histogram::kBins; ++i) {
        // P: bins [0, i) with the mass beyond folded into bin i - 1.
        p.assign(hist.begin(), hist.begin() + i);
        double outliers = 0.0;
        for (int j = i; j < Histogram::kBins; ++j) outliers += static_cast<double>(hist[j]);
        p[static_cast<std::size_t>(i - 1)] += outliers;
        // Q: bins [0, i) without the fold, merged into 128 levels (groups of i / 128 bins, the
        // last group taking the remainder), each level spread evenly over the bins of its group
        // where P is nonzero.
        const int merged = i / kLevels;
        q.assign(static_cast<std::size_t>(i), 0.0);
        for (int level = 0; level < kLevels; ++level) {
          const int start = level * merged;
          const int stop = level == kLevels - 1 ? i : start + merged;
          double sum = 0.0, nonzero = 0.0;
          for (int j = start; j < stop; ++j) {
            sum += static_cast<double>(hist[static_cast<std::size_t>(j)]);
            nonzero += p[static_cast<std::size_t>(j)] != 0.0;
          }
          if (nonzero == 0.0) continue;
          for (int j = start; j < stop; ++j) {
            if (p[static_cast<std::size_t>(j)] != 0.0)
              q[static_cast<std::size_t>(j)] = sum / nonzero;
          }
        }
        if (!smooth(p)) continue;
        const double d = smooth(q) ? kl(p, q) : std::numeric_limits<double>::infinity();
        if (d < best) {  // the first minimum (np.argmin)
          best = d;
          best_i = i;
        }
      }
      out->bin = best_i;
      out->divergence = best;
      out->threshold = (best_i + 0.5) * width;
      break;
    }
  }
  out->scale = out->threshold / 127.0;
  return {};
}

// ---- The report --------------------------------------------------------------------------------

Status calibrate_tensor(const std::string& name, std::span<const TensorView> batches,
                        const CalibrateOptions& o, TensorReport* report,
                        void (*progress)(std::size_t, std::size_t)) {
  return detail::guarded_entry("calibrate_tensor", [&]() -> Status {
    if (report == nullptr) return fail(StatusCode::kParamNullptr, kCalibrate, "report is null");
    if (batches.empty()) {
      return fail(StatusCode::kParamInvalid, kCalibrate, "{}: no batches", name);
    }
    const TensorView& first = batches[0];
    int64_t channels = 1;
    if (o.per_channel_axis < -1) {
      return fail(StatusCode::kParamInvalid, kCalibrate,
                  "{}: per-channel axis {} is neither -1 (per tensor) nor an axis in [0, {})", name,
                  o.per_channel_axis, first.rank);
    }
    if (o.per_channel_axis >= 0) {
      if (o.per_channel_axis >= first.rank) {
        return fail(StatusCode::kParamInvalid, kCalibrate,
                    "{}: per-channel axis {} is outside [0, {}) for shape {}", name,
                    o.per_channel_axis, first.rank, first.shape_string());
      }
      channels = first.shape[o.per_channel_axis];
    }
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const TensorView& x = batches[b];
      if (!is_training_float(x.dtype) || !x.numel() || !x.is_contiguous() ||
          (x.data == nullptr && *x.numel() > 0)) {
        return fail(StatusCode::kParamInvalid, kCalibrate,
                    "{}: batch {} is not a contiguous FLOAT, FLOAT16 or BFLOAT16 tensor", name, b);
      }
      if (o.per_channel_axis >= 0 &&
          (x.rank != first.rank || x.shape[o.per_channel_axis] != channels)) {
        return fail(StatusCode::kParamInvalid, kCalibrate,
                    "{}: batch {} shape {} has another channel count than batch 0 shape {}", name,
                    b, x.shape_string(), first.shape_string());
      }
    }
    TensorReport r;
    r.name = name;
    r.shape.assign(first.shape.begin(), first.shape.begin() + first.rank);
    r.method = o.method;

    // Histograms (one per channel per channel), then thresholds.
    std::vector<Histogram> hist(static_cast<std::size_t>(channels));
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const TensorView& x = batches[b];
      const int64_t n = *x.numel();
      if (channels == 1) {
        MANTISSA_RETURN_IF_ERROR(hist[0].add(x));
      } else {
        int64_t inner = 1;
        for (int i = o.per_channel_axis + 1; i < x.rank; ++i) inner *= x.shape[i];
        std::vector<std::vector<float>> per(static_cast<std::size_t>(channels));
        for (int64_t i = 0; i < n; ++i) {
          per[static_cast<std::size_t>((i / inner) % channels)].push_back(element(x, i));
        }
        for (int64_t c = 0; c < channels; ++c) hist[static_cast<std::size_t>(c)].add(per[c]);
      }
      if (progress) progress(b + 1, 2 * batches.size());
    }
    std::vector<float> scales(static_cast<std::size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      // Nothing to calibrate on: every value NaN or infinite.
      const Histogram& h = hist[static_cast<std::size_t>(c)];
      if (h.total() == 0 && h.nonfinite() > 0) {
        return fail(StatusCode::kParamInvalid, kCalibrate,
                    "{}{}: all {} values are NaN or infinite; no scale can be chosen", name,
                    channels > 1 ? fmt::format(" channel {}", c) : std::string(), h.nonfinite());
      }
      Threshold t;
      MANTISSA_RETURN_IF_ERROR(choose_threshold(hist[static_cast<std::size_t>(c)], o.method,
                                                o.percentile, &t, o.entropy_zero_bin_as_next));
      // An all-zero channel keeps scale 1 (any scale quantizes zeros to zero). A scale below
      // fp32's smallest subnormal (all values subnormal and tiny) becomes that subnormal: the
      // largest value then still maps to at most 127.
      float scale = t.scale > 0.0 ? static_cast<float>(t.scale) : 1.0f;
      if (!(scale > 0.0f)) {
        scale = std::numeric_limits<float>::denorm_min();
        t.scale = scale;
      }
      scales[static_cast<std::size_t>(c)] = scale;
      if (channels > 1) r.channel_scales.push_back(scales[static_cast<std::size_t>(c)]);
      if (c == 0 || t.threshold > r.chosen.threshold) r.chosen = t;
      r.nonfinite += hist[static_cast<std::size_t>(c)].nonfinite();
    }

    // The error of quantizing with those scales, batch by batch.
    double signal = 0.0, noise = 0.0, clipped = 0.0, count = 0.0;
    Int8Options io;
    io.axis = channels > 1 ? o.per_channel_axis : -1;
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const TensorView& x = batches[b];
      const int64_t n = *x.numel();
      std::vector<int8_t> q(static_cast<std::size_t>(n));
      std::vector<float> y(static_cast<std::size_t>(n));
      const TensorView qv(q.data(), DType::kInt8, std::span<const int64_t>(x.shape.data(), x.rank));
      const TensorView yv(y.data(), DType::kFloat32,
                          std::span<const int64_t>(x.shape.data(), x.rank));
      MANTISSA_RETURN_IF_ERROR(quantize_int8(x, scales, qv, io));
      MANTISSA_RETURN_IF_ERROR(dequantize_int8(qv, scales, yv, io));
      int64_t inner = 1;
      if (channels > 1) {
        for (int i = o.per_channel_axis + 1; i < x.rank; ++i) inner *= x.shape[i];
      }
      for (int64_t i = 0; i < n; ++i) {
        const double v = element(x, i);
        if (!std::isfinite(v)) continue;
        const double s =
            scales[static_cast<std::size_t>(channels > 1 ? (i / inner) % channels : 0)];
        const double e = v - y[static_cast<std::size_t>(i)];
        signal += v * v;
        noise += e * e;
        clipped += std::fabs(v) > 127.0 * s;
        count += 1.0;
      }
      if (progress) progress(batches.size() + b + 1, 2 * batches.size());
    }
    r.clipped_fraction = count > 0.0 ? clipped / count : 0.0;
    r.mse = count > 0.0 ? noise / count : 0.0;
    r.snr_db =
        noise > 0.0 ? 10.0 * std::log10(signal / noise) : std::numeric_limits<double>::infinity();
    *report = std::move(r);
    return {};
  });
}

// ---- Bias correction
// ------------------------------------------------------------------------------

Status correct_bias(const TensorView& w, std::span<const float> scales, const TensorView& inputs,
                    std::span<const float> bias, std::vector<float>* corrected) {
  return detail::guarded_entry("correct_bias", [&]() -> Status {
    constexpr std::string_view op = "correct_bias";
    if (corrected == nullptr) return fail(StatusCode::kParamNullptr, op, "corrected is null");
    if (w.dtype != DType::kFloat32 || w.rank != 2 || inputs.dtype != DType::kFloat32 ||
        inputs.rank != 2 || !w.is_contiguous() || !inputs.is_contiguous()) {
      return fail(
          StatusCode::kParamInvalid, op,
          "weight [out, in] and inputs [n, in] must be contiguous FLOAT matrices (got {} {} "
          "and {} {})",
          dtype_name(w.dtype), w.shape_string(), dtype_name(inputs.dtype), inputs.shape_string());
    }
    const int64_t out = w.shape[0], in = w.shape[1], n = inputs.shape[0];
    if (inputs.shape[1] != in || static_cast<int64_t>(bias.size()) != out) {
      return fail(StatusCode::kParamInvalid, op,
                  "inputs {} and bias of {} values do not fit weight {}", inputs.shape_string(),
                  bias.size(), w.shape_string());
    }
    std::vector<int8_t> q(static_cast<std::size_t>(out * in));
    std::vector<float> wq(static_cast<std::size_t>(out * in));
    const TensorView qv(q.data(), DType::kInt8, {out, in}),
        wqv(wq.data(), DType::kFloat32, {out, in});
    MANTISSA_RETURN_IF_ERROR(quantize_int8(w, scales, qv, {.axis = 0}));
    MANTISSA_RETURN_IF_ERROR(dequantize_int8(qv, scales, wqv, {.axis = 0}));
    const auto* wp = static_cast<const float*>(w.data);
    const auto* xp = static_cast<const float*>(inputs.data);
    corrected->assign(bias.begin(), bias.end());
    if (n == 0) return {};
    for (int64_t o = 0; o < out; ++o) {
      double diff = 0.0;
      for (int64_t s = 0; s < n; ++s) {
        for (int64_t i = 0; i < in; ++i) {
          diff += (static_cast<double>(wp[o * in + i]) - wq[static_cast<std::size_t>(o * in + i)]) *
                  xp[s * in + i];
        }
      }
      (*corrected)[static_cast<std::size_t>(o)] = static_cast<float>(
          static_cast<double>(bias[static_cast<std::size_t>(o)]) + diff / static_cast<double>(n));
    }
    return {};
  });
}

// ---- .npy ---------------------------------------------------------------------------------------

Status read_npy(const std::string& path, NpyArray* out) {
  constexpr std::string_view op = "read_npy";
  if (out == nullptr) return fail(StatusCode::kParamNullptr, op, "out is null");
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(StatusCode::kParamInvalid, op, "{}: cannot open", path);
  f.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(f.tellg());
  f.seekg(0);
  unsigned char lead[10];
  if (file_size < 10 || !f.read(reinterpret_cast<char*>(lead), 10)) {
    return fail(StatusCode::kParamInvalid, op, "{}: {} bytes is too short for a .npy file", path,
                file_size);
  }
  if (std::memcmp(lead, "\x93NUMPY", 6) != 0) {
    return fail(StatusCode::kParamInvalid, op, "{}: not a .npy file (wrong magic)", path);
  }
  const int major = lead[6];
  uint64_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = lead[8] | (uint64_t{lead[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    unsigned char more[2];
    if (!f.read(reinterpret_cast<char*>(more), 2)) {
      return fail(StatusCode::kParamInvalid, op, "{}: truncated header", path);
    }
    header_len =
        lead[8] | (uint64_t{lead[9]} << 8) | (uint64_t{more[0]} << 16) | (uint64_t{more[1]} << 24);
    offset = 12;
  } else {
    return fail(StatusCode::kParamInvalid, op, "{}: unsupported .npy version {}.{}", path, major,
                lead[7]);
  }
  if (header_len > 1 << 20 || offset + header_len > file_size) {
    return fail(StatusCode::kParamInvalid, op, "{}: header of {} bytes does not fit the file", path,
                header_len);
  }
  std::string header(static_cast<std::size_t>(header_len), '\0');
  if (!f.read(header.data(), static_cast<std::streamsize>(header_len))) {
    return fail(StatusCode::kParamInvalid, op, "{}: truncated header", path);
  }
  // The header is a Python dict literal, read as numpy reads it (every key once, exactly
  // 'descr', 'fortran_order' and 'shape'; a string, a bool and a tuple of integers):
  //   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   then spaces and a newline
  std::size_t at = 0;
  auto skip_spaces = [&] {
    while (at < header.size() && (header[at] == ' ' || header[at] == '\t')) ++at;
  };
  auto eat = [&](char c) {
    skip_spaces();
    if (at < header.size() && header[at] == c) {
      ++at;
      return true;
    }
    return false;
  };
  auto quoted = [&](std::string* text) {
    skip_spaces();
    if (at >= header.size() || (header[at] != '\'' && header[at] != '"')) return false;
    const char q = header[at];
    const auto end = header.find(q, at + 1);
    if (end == std::string::npos) return false;
    *text = header.substr(at + 1, end - at - 1);
    at = end + 1;
    return true;
  };
  auto malformed = [&](const char* what) {
    return fail(StatusCode::kParamInvalid, op, "{}: malformed header ({}): {}", path, what,
                header.substr(0, 200));
  };
  std::string descr, fortran, shape_text;
  std::vector<int64_t> shape;
  bool have_descr = false, have_fortran = false, have_shape = false;
  if (!eat('{')) return malformed("no '{'");
  while (!eat('}')) {
    std::string key;
    if (!quoted(&key) || !eat(':')) return malformed("a key is not a quoted string and ':'");
    skip_spaces();
    if (key == "descr" && !have_descr) {
      if (!quoted(&descr)) return malformed("'descr' is not a string");
      have_descr = true;
    } else if (key == "fortran_order" && !have_fortran) {
      for (const char* word : {"False", "True"}) {
        if (header.compare(at, std::strlen(word), word) == 0) {
          fortran = word;
          at += std::strlen(word);
        }
      }
      if (fortran.empty()) return malformed("'fortran_order' is not True or False");
      have_fortran = true;
    } else if (key == "shape" && !have_shape) {
      // A tuple: "()", "(5,)", "(2, 3)" or "(2, 3,)"; "(5)" is an integer, not a tuple.
      const std::size_t open = at;
      if (!eat('(')) return malformed("'shape' is not a tuple");
      bool comma = false;
      while (!eat(')')) {
        skip_spaces();
        std::size_t end = at;
        while (end < header.size() && header[end] >= '0' && header[end] <= '9') ++end;
        if (end == at || end - at > 15 || shape.size() >= static_cast<std::size_t>(kMaxRank)) {
          return malformed("'shape' holds something other than up to 8 integers");
        }
        shape.push_back(std::stoll(header.substr(at, end - at)));
        at = end;
        comma = eat(',');
        if (!comma) {
          if (!eat(')')) return malformed("'shape' lacks a ',' between its integers");
          break;
        }
      }
      if (shape.size() == 1 && !comma) return malformed("'shape' (n) is an integer, not a tuple");
      shape_text = header.substr(open, at - open);
      have_shape = true;
    } else {
      return fail(StatusCode::kParamInvalid, op, "{}: header key '{}' is unknown or repeated", path,
                  key);
    }
    if (!eat(',')) {
      if (!eat('}')) return malformed("no ',' or '}' after a value");
      break;
    }
  }
  skip_spaces();
  while (at < header.size() && (header[at] == '\n' || header[at] == ' ')) ++at;
  if (at != header.size()) return malformed("text after the dict");
  if (!have_descr || !have_fortran || !have_shape) {
    return malformed("'descr', 'fortran_order' and 'shape' are all required");
  }
  int element = 0;
  NpyArray a;
  if (descr == "<f4") {
    a.dtype = DType::kFloat32, element = 4;
  } else if (descr == "<f2") {
    a.dtype = DType::kFloat16, element = 2;
  } else if (descr == "<f8") {
    a.dtype = DType::kFloat32, element = 8;
  } else {
    return fail(StatusCode::kParamInvalid, op,
                "{}: dtype '{}' is not supported (little-endian float16, float32 or float64)", path,
                descr);
  }
  if (fortran != "False") {
    return fail(StatusCode::kParamInvalid, op, "{}: Fortran-ordered arrays are not supported",
                path);
  }
  uint64_t count = 1;
  for (const int64_t d : shape) {
    if (d != 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(d)) {
      return fail(StatusCode::kParamInvalid, op, "{}: shape {} is absurdly large", path,
                  shape_text);
    }
    count *= static_cast<uint64_t>(d);
  }
  a.shape = shape;
  const uint64_t data_bytes = count * static_cast<uint64_t>(element);
  const uint64_t data_offset = offset + header_len;
  if (file_size - data_offset != data_bytes) {
    return fail(StatusCode::kParamInvalid, op,
                "{}: shape {} needs {} bytes of data but the file holds {}", path, shape_text,
                data_bytes, file_size - data_offset);
  }
  std::vector<uint8_t> raw(static_cast<std::size_t>(data_bytes));
  if (!f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(data_bytes))) {
    return fail(StatusCode::kParamInvalid, op, "{}: truncated data", path);
  }
  if (element == 8) {
    a.data.resize(static_cast<std::size_t>(count * 4));
    for (uint64_t i = 0; i < count; ++i) {
      double d;
      std::memcpy(&d, raw.data() + i * 8, 8);
      const auto v = static_cast<float>(d);  // nearest even
      std::memcpy(a.data.data() + i * 4, &v, 4);
    }
  } else {
    a.data = std::move(raw);
  }
  *out = std::move(a);
  return {};
}

}  // namespace mantissa::calib
