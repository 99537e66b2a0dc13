// Deterministic input generation: one splitmix64 stream per (seed, case id, input name), a
// Box-Muller normal written here, values rounded once to the tensor's dtype. Nothing depends on
// thread count or on the order of inputs in the file.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "precision/fp.h"
#include "precision/kit.h"

namespace mantissa::precision {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// splitmix64 (Steele, Lea, Flood): small, fast, and the same on every platform.
class Stream {
 public:
  Stream(uint64_t seed, const std::string& case_id, const std::string& input)
      : state_(mix64(seed ^ 0x6d616e7469737361ull) ^ mix64(fnv1a(case_id)) ^
               mix64(fnv1a(input) + 0x9e3779b97f4a7c15ull)) {}
  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    return mix64(state_);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal by Box-Muller (both values of a pair are used).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(angle);
    has_spare_ = true;
    return r * std::cos(angle);
  }

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

uint32_t value_bits(const GeneratorSpec::Value& v, DType dtype) {
  if (v.is_name) return *special_value_bits(v.name, dtype);
  return round_to_bits(v.number, dtype);
}

std::string case_error(const CaseSpec& c, const std::string& key, const std::string& msg) {
  return fmt::format("{}: case {}: key '{}': {}", c.file, c.id, key, msg);
}

}  // namespace

bool is_special_value_name(const std::string& name) noexcept {
  return special_value_bits(name, DType::kFloat32).has_value();
}

std::optional<uint32_t> special_value_bits(const std::string& raw, DType dtype) noexcept {
  bool negative = false;
  std::string name = raw;
  if (!name.empty() && (name[0] == '-' || name[0] == '+')) {
    negative = name[0] == '-';
    name = name.substr(1);
  }
  const uint32_t sign = negative ? 1u << (layout_of(dtype).width - 1) : 0u;
  if (name == "nan") return quiet_nan_bits(dtype, negative);
  if (name == "inf") return inf_bits(dtype, negative);
  if (name == "0.0" || name == "0") return sign;
  if (name == "denorm" || name == "min_subnormal") return min_subnormal_bits(dtype, negative);
  if (name == "max_subnormal") return min_normal_bits(dtype, negative) - 1u;
  if (name == "min_normal") return min_normal_bits(dtype, negative);
  if (name == "max") return max_finite_bits(dtype, negative);
  return std::nullopt;
}

namespace {
// Two elements per byte, element 2j in the low nibble of byte j.
bool packed4(DType d) {
  return d == DType::kInt4 || d == DType::kFloat4E2M1 || d == DType::kFloat4E1M2;
}
}  // namespace

HostTensor::HostTensor(DType type, std::vector<int64_t> dims)
    : dtype(type), shape(std::move(dims)) {
  const auto n = static_cast<std::size_t>(numel());
  bytes.assign(packed4(dtype) ? (n + 1) / 2 : n * element_size(), 0);
}

int64_t HostTensor::numel() const noexcept {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::size_t HostTensor::element_size() const noexcept {
  switch (dtype) {
    case DType::kInt64:
    case DType::kFloat64: return 8;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
    case DType::kFloat8E8M0:  // E8M0 scale codes: value() is the code (0..255)
    case DType::kFloat4E2M1:
    case DType::kFloat4E1M2:
    case DType::kInt4: return 1;  // two per byte (bits() and set_bits() take nibbles)
    default: return 4;
  }
}

uint32_t HostTensor::bits(int64_t i) const noexcept {
  if (packed4(dtype)) {  // element 2j in the low nibble of byte j
    return (bytes[static_cast<std::size_t>(i / 2)] >> (4 * (i & 1))) & 0x0Fu;
  }
  const std::size_t size = element_size();
  uint32_t v = 0;
  if (size == 8) std::memcpy(&v, bytes.data() + i * 8, 4);  // little-endian: the low half
  if (size == 4) std::memcpy(&v, bytes.data() + i * 4, 4);
  if (size == 2) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * 2, 2);
    v = h;
  }
  if (size == 1) v = bytes[static_cast<std::size_t>(i)];
  return v;
}

void HostTensor::set_bits(int64_t i, uint32_t v) noexcept {
  if (packed4(dtype)) {
    uint8_t& b = bytes[static_cast<std::size_t>(i / 2)];
    const int shift = 4 * static_cast<int>(i & 1);
    b = static_cast<uint8_t>((b & ~(0x0Fu << shift)) | ((v & 0x0Fu) << shift));
    return;
  }
  const std::size_t size = element_size();
  if (size == 4) std::memcpy(bytes.data() + i * 4, &v, 4);
  if (size == 2) {
    const auto h = static_cast<uint16_t>(v);
    std::memcpy(bytes.data() + i * 2, &h, 2);
  }
  if (size == 1) bytes[static_cast<std::size_t>(i)] = static_cast<uint8_t>(v);
}

double HostTensor::value(int64_t i) const noexcept {
  if (is_float(dtype)) return decode_bits(bits(i), dtype);
  if (dtype == DType::kInt32) return static_cast<double>(static_cast<int32_t>(bits(i)));
  if (dtype == DType::kInt8) return static_cast<double>(static_cast<int8_t>(bits(i)));
  if (dtype == DType::kInt4) return static_cast<double>(static_cast<int>(bits(i) ^ 8u) - 8);
  if (is_fp4(dtype)) return decode_fp4(bits(i), dtype);
  if (is_fp8(dtype)) return decode_fp8(bits(i), dtype);
  if (dtype == DType::kInt64) {
    int64_t v;
    std::memcpy(&v, bytes.data() + i * 8, 8);
    return static_cast<double>(v);
  }
  return static_cast<double>(bits(i));
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string check_case_against_op(const CaseSpec& c, const OpEntry& op) {
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& s = c.inputs[i];
    const std::string key = fmt::format("inputs[{}]({})", i, s.name);
    const int ti = op.input_index(s.name), ai = op.attr_index(s.name);
    if (ti < 0 && ai < 0) {
      std::string known;
      for (const auto& t : op.inputs) known += (known.empty() ? "" : ", ") + t.name;
      for (const auto& a : op.attrs) known += ", " + a.name;
      return case_error(
          c, key + ".name",
          fmt::format("{} has no input or attr named \"{}\" (known: {})", op.name, s.name, known));
    }
    if (ti >= 0 && s.is_attr) return case_error(c, key + ".type", "is a tensor of " + op.name);
    if (ai >= 0 && !s.is_attr) return case_error(c, key + ".type", "is an attr of " + op.name);
  }
  for (const TensorSlot& slot : op.inputs) {
    const InputSpec* s = c.find_input(slot.name);
    if (!s) {
      if (slot.optional) continue;
      return case_error(c, "inputs", fmt::format("missing tensor \"{}\"", slot.name));
    }
    const std::string key = fmt::format("inputs({})", slot.name);
    switch (slot.kind) {
      case TensorSlot::Kind::kFloat:
        if (!is_float(s->dtype)) {
          return case_error(
              c, key + ".dtype",
              fmt::format("{} takes fp32, fp16 or bf16, got {}", op.name, s->dtype_text));
        }
        if (!slot.dtype_like.empty()) {
          const InputSpec* like = c.find_input(slot.dtype_like);
          if (like && like->dtype != s->dtype) {
            return case_error(
                c, key + ".dtype",
                fmt::format("{} differs from {}'s dtype", s->dtype_text, slot.dtype_like));
          }
        }
        break;
      case TensorSlot::Kind::kInt32:
        if (s->dtype != DType::kInt32) {
          return case_error(c, key + ".dtype", fmt::format("must be int32, got {}", s->dtype_text));
        }
        break;
      case TensorSlot::Kind::kOneOf: {
        const auto d = static_cast<uint32_t>(s->dtype);
        if (d >= 64 || ((slot.dtypes >> d) & 1u) == 0) {
          std::string allowed;
          for (uint32_t k = 0; k < 64; ++k) {
            if ((slot.dtypes >> k) & 1u) {
              allowed += (allowed.empty() ? "" : ", ") +
                         std::string(dtype_short_name(static_cast<DType>(k)));
            }
          }
          return case_error(c, key + ".dtype",
                            fmt::format("must be one of {}, got {}", allowed, s->dtype_text));
        }
        break;
      }
    }
    const int rank = static_cast<int>(s->shape.size());
    if (rank < slot.min_rank || rank > slot.max_rank) {
      return case_error(
          c, key + ".shape",
          fmt::format("rank {} outside [{}, {}]", rank, slot.min_rank, slot.max_rank));
    }
    int64_t n = 1;
    for (int64_t d : s->shape) n *= d;
    if (slot.shape == TensorSlot::Shape::kOneElement && n != 1) {
      return case_error(c, key + ".shape",
                        fmt::format("must hold one element, got {}", shape_string(s->shape)));
    }
    if (slot.shape == TensorSlot::Shape::kLike) {
      const InputSpec* like = c.find_input(slot.like);
      if (like && like->shape != s->shape) {
        return case_error(c, key + ".shape",
                          fmt::format("{} differs from {}'s {}", shape_string(s->shape), slot.like,
                                      shape_string(like->shape)));
      }
    }
  }
  for (const AttrSlot& slot : op.attrs) {
    const InputSpec* s = c.find_input(slot.name);
    const std::string key = fmt::format("inputs({})", slot.name);
    if (!s) {
      if (slot.required)
        return case_error(c, "inputs", fmt::format("missing attr \"{}\"", slot.name));
      continue;
    }
    if (s->attr.kind != slot.kind) {
      static const char* kNames[] = {"bool", "int32/int64", "fp32/fp64", "list of int32/int64",
                                     "list of bool"};
      return case_error(c, key + ".dtype",
                        fmt::format("{} takes a {} attr, got {}", op.name,
                                    kNames[static_cast<int>(slot.kind)], s->dtype_text));
    }
  }
  return "";
}

std::string generate_inputs(const CaseSpec& c, const OpEntry& op, uint64_t seed, OpInputs& out) {
  if (std::string err = check_case_against_op(c, op); !err.empty()) return err;
  out.tensors.clear();
  out.attrs.clear();
  for (const TensorSlot& slot : op.inputs) {
    const InputSpec* spec = c.find_input(slot.name);
    if (!spec) {  // an optional tensor the case leaves out (checked above)
      out.tensors.push_back(absent_tensor());
      continue;
    }
    const InputSpec& s = *spec;
    HostTensor t(s.dtype, s.shape);
    const int64_t n = t.numel();
    const GeneratorSpec& g = s.generator;
    Stream rng(seed, c.id, s.name);
    if (is_fp8(s.dtype) || is_fp4(s.dtype)) {
      // FP8 (FP4) inputs: each value drawn as for a float tensor, then the kit's saturating
      // rounding (a name: NaN, or +-inf saturated; other special names are float formats' only).
      auto value = [&](std::size_t k) {
        const GeneratorSpec::Value& v = g.values[k % g.values.size()];
        if (!v.is_name) return v.number;
        if (v.name == "nan" || v.name == "-nan") return std::nan("");
        if (v.name == "inf") return std::numeric_limits<double>::infinity();
        if (v.name == "-inf") return -std::numeric_limits<double>::infinity();
        return -0.0;  // "-0.0", the one other name the case file accepts for FP8
      };
      double mean = 0.0, stddev = 0.0;
      if (g.kind == GeneratorSpec::Kind::kNormal) {
        mean = g.mean_lo + (g.mean_hi - g.mean_lo) * rng.uniform();
        stddev = g.std_lo + (g.std_hi - g.std_lo) * rng.uniform();
      }
      for (int64_t i = 0; i < n; ++i) {
        double v = 0.0;
        switch (g.kind) {
          case GeneratorSpec::Kind::kNormal: v = mean + stddev * rng.normal(); break;
          case GeneratorSpec::Kind::kUniform: v = g.lo + (g.hi - g.lo) * rng.uniform(); break;
          case GeneratorSpec::Kind::kConst:
          case GeneratorSpec::Kind::kSpecial: v = value(static_cast<std::size_t>(i)); break;
        }
        t.set_bits(
            i, is_fp4(s.dtype) ? round_to_fp4(v, s.dtype, 0) : round_to_fp8_saturating(v, s.dtype));
      }
    } else if (is_float(s.dtype)) {
      switch (g.kind) {
        case GeneratorSpec::Kind::kNormal: {
          const double mean = g.mean_lo + (g.mean_hi - g.mean_lo) * rng.uniform();
          const double stddev = g.std_lo + (g.std_hi - g.std_lo) * rng.uniform();
          for (int64_t i = 0; i < n; ++i) {
            t.set_bits(i, round_to_bits(mean + stddev * rng.normal(), s.dtype));
          }
          break;
        }
        case GeneratorSpec::Kind::kUniform:
          for (int64_t i = 0; i < n; ++i) {
            t.set_bits(i, round_to_bits(g.lo + (g.hi - g.lo) * rng.uniform(), s.dtype));
          }
          break;
        case GeneratorSpec::Kind::kConst:
        case GeneratorSpec::Kind::kSpecial:
          for (int64_t i = 0; i < n; ++i) {
            t.set_bits(
                i, value_bits(g.values[static_cast<std::size_t>(i) % g.values.size()], s.dtype));
          }
          break;
      }
    } else {
      // Integer tensors: int8, uint8, int32 or int64 (exact in double up to 2^53, the range
      // accepted here).
      const std::string key = fmt::format("inputs({}).range_values", s.name);
      const bool wide = s.dtype == DType::kInt64;
      double min = wide ? -0x1p53 : INT32_MIN, max = wide ? 0x1p53 : INT32_MAX;
      if (s.dtype == DType::kInt8) min = -128, max = 127;
      if (s.dtype == DType::kUInt8 || s.dtype == DType::kFloat8E8M0) min = 0, max = 255;
      const char* type = dtype_short_name(s.dtype);
      auto store = [&](int64_t i, double v) {
        if (wide) {
          const auto x = static_cast<int64_t>(v);
          std::memcpy(t.bytes.data() + i * 8, &x, 8);
        } else {
          t.set_bits(i, static_cast<uint32_t>(static_cast<int32_t>(v)));
        }
      };
      if (g.kind == GeneratorSpec::Kind::kConst) {
        const double v = g.values[0].number;
        if (v != std::floor(v) || v < min || v > max) {
          return case_error(c, key, fmt::format("{} is not an {} value", v, type));
        }
        for (int64_t i = 0; i < n; ++i) store(i, v);
      } else {
        const double lo = std::ceil(g.lo), hi = std::floor(g.hi);
        if (lo > hi || lo < min || hi > max) {
          return case_error(c, key, fmt::format("range holds no {} value", type));
        }
        for (int64_t i = 0; i < n; ++i) {
          store(i, std::min(hi, lo + std::floor((hi - lo + 1) * rng.uniform())));
        }
      }
    }
    out.tensors.push_back(std::move(t));
  }
  for (const AttrSlot& slot : op.attrs) {
    const InputSpec* s = c.find_input(slot.name);
    out.attrs.push_back(s ? s->attr : slot.default_value);
  }
  return "";
}

}  // namespace mantissa::precision
